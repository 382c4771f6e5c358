//! Usage and cost per node, from the agents' own formats (tests/fixtures/usage, written by hand
//! from each format's public documentation: its README), and the totals over a session's nodes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use studio_core::cost::{self, CostSource, NodeUsage};
use studio_core::protocol::{EventKind, Stream, StreamReader};
use studio_core::store::{Store, StoreLocation};
use studio_core::usage::{Tokens, UsageFormat};
use studio_core::Workspace;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/usage")
        .join(name)
}

fn node_usage(name: &str) -> Option<NodeUsage> {
    cost::read_node_usage(&fixture(name))
}

fn tokens(input: u64, cache_read: u64, cache_write: u64, output: u64, reasoning: Option<u64>) -> Tokens {
    Tokens {
        input,
        cache_read,
        cache_write,
        output,
        reasoning,
    }
}

#[test]
fn claude_code_stream_json_reports_its_cost_as_an_api_equivalent_estimate() {
    let usage = node_usage("claude-code-stream-json.jsonl").unwrap();
    assert_eq!(usage.format, UsageFormat::ClaudeCode);
    // Anthropic's input excludes the cache: taken as it is.
    assert_eq!(usage.tokens, Some(tokens(12, 27_520, 5_420, 258, None)));
    assert_eq!(
        usage.models,
        ["claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"]
    );
    assert_eq!((usage.turns, usage.duration_ms), (Some(4), Some(18_342)));
    assert_eq!(usage.cost_usd, Some(0.0482715));
    assert_eq!(usage.cost_source, CostSource::Reported);
    assert!(usage.api_equivalent);
    assert!(!usage.last_attempt_only);
}

#[test]
fn claude_code_json_is_one_result_document() {
    let usage = node_usage("claude-code-json.json").unwrap();
    assert_eq!(usage.format, UsageFormat::ClaudeCode);
    assert_eq!(usage.tokens, Some(tokens(3, 0, 2_048, 12, None)));
    assert_eq!(usage.models, ["claude-opus-4-5-20251101"]);
    assert_eq!((usage.cost_usd, usage.turns), (Some(0.0123), Some(1)));
}

#[test]
fn claude_code_before_1_0_22_named_its_cost_cost_usd() {
    let usage = node_usage("claude-code-pre-1.0.22.jsonl").unwrap();
    assert_eq!(usage.format, UsageFormat::ClaudeCode);
    assert_eq!(usage.cost_usd, Some(0.003156));
    assert_eq!(usage.cost_source, CostSource::Reported);
    assert_eq!(usage.tokens, None, "that version's result had no usage");
    assert_eq!((usage.turns, usage.duration_ms), (Some(2), Some(2_712)));
}

#[test]
fn a_truncated_stream_with_no_result_line_has_no_usage() {
    assert_eq!(node_usage("claude-code-truncated.jsonl"), None);
}

#[test]
fn codex_takes_the_last_running_total_never_a_sum() {
    let usage = node_usage("codex-exec-json.jsonl").unwrap();
    assert_eq!(usage.format, UsageFormat::Codex);
    // OpenAI's input includes the cache: the cached part is taken out.
    assert_eq!(usage.tokens, Some(tokens(51_310 - 48_896, 48_896, 0, 410, None)));
    assert!(usage.models.is_empty(), "exec --json names no model");
    assert_eq!((usage.cost_usd, usage.cost_source), (None, CostSource::Unknown));
}

#[test]
fn older_codex_token_count_events_are_read_with_the_model_of_the_first_line() {
    let usage = node_usage("codex-exec-json-token-count.jsonl").unwrap();
    assert_eq!(usage.format, UsageFormat::Codex);
    let expected = tokens(17_420 - 8_704, 8_704, 0, 655, Some(448));
    assert_eq!(usage.tokens, Some(expected));
    assert_eq!(usage.models, ["gpt-5"]);
    assert_eq!(usage.cost_source, CostSource::Estimated);
    // gpt-5 in the shipped table: $1.25/M input, $0.125/M cached, $10/M output (reasoning is
    // part of output).
    let estimate = 8_716.0 * 1.25e-6 + 8_704.0 * 1.25e-7 + 655.0 * 1e-5;
    assert!(
        (usage.cost_usd.unwrap() - estimate).abs() < 1e-9,
        "{:?}",
        usage.cost_usd
    );
    assert!(!usage.api_equivalent);
    assert!(!usage.last_attempt_only, "running totals of one run, not attempts");

    let info = node_usage("codex-exec-json-token-count-info.jsonl").unwrap();
    assert_eq!(
        info.tokens,
        Some(tokens(26_549 - 22_272, 22_272, 0, 1_590, Some(1_152)))
    );
    assert_eq!(info.models, ["gpt-5-codex"]);
    assert_eq!(info.cost_source, CostSource::Estimated);
}

#[test]
fn gemini_json_counts_cached_and_thoughts_per_model() {
    let usage = node_usage("gemini-cli-json.json").unwrap();
    assert_eq!(usage.format, UsageFormat::GeminiCli);
    // prompt includes cached; thoughts are output beside candidates.
    let pro = tokens(24_939 - 21_263, 21_263, 0, 20 + 154, Some(154));
    let flash = tokens(8_965, 0, 0, 10 + 30, Some(30));
    let mut both = pro;
    both.add(&flash);
    assert_eq!(usage.tokens, Some(both));
    assert_eq!(usage.models, ["gemini-2.5-flash", "gemini-2.5-pro"]);
    assert_eq!(usage.turns, Some(3));
    assert_eq!(usage.cost_source, CostSource::Estimated);
    assert!(usage.cost_usd.unwrap() > 0.0);
}

#[test]
fn gemini_stream_json_takes_the_model_from_its_init_event() {
    let usage = node_usage("gemini-cli-stream-json.jsonl").unwrap();
    assert_eq!(usage.format, UsageFormat::GeminiCli);
    assert_eq!(usage.tokens, Some(tokens(12_210 - 8_000, 8_000, 0, 270, None)));
    assert_eq!(usage.models, ["gemini-2.5-flash"]);
    assert_eq!(usage.duration_ms, Some(2_410));
    // gemini-2.5-flash: $0.30/M input, $0.03/M cached, $2.50/M output.
    let estimate = 4_210.0 * 3e-7 + 8_000.0 * 3e-8 + 270.0 * 2.5e-6;
    assert!((usage.cost_usd.unwrap() - estimate).abs() < 1e-9);
}

#[test]
fn an_unknown_model_has_tokens_but_no_cost_never_zero() {
    let usage = node_usage("gemini-cli-stream-json-unknown-model.jsonl").unwrap();
    assert_eq!(usage.models, ["gemini-9-ultra-experimental"]);
    assert_eq!(usage.tokens.map(|t| t.total()), Some(1_050));
    assert_eq!(usage.cost_usd, None);
    assert_eq!(usage.cost_source, CostSource::Unknown);
    assert_eq!(usage.cost_label, "–");
}

#[test]
fn cursor_documents_no_usage_so_only_its_duration_is_known() {
    let usage = node_usage("cursor-stream-json.jsonl").unwrap();
    assert_eq!(usage.format, UsageFormat::Cursor);
    assert_eq!((usage.tokens, usage.cost_usd), (None, None));
    assert_eq!(usage.cost_source, CostSource::Unknown);
    assert_eq!(usage.duration_ms, Some(4_120));
}

#[test]
fn only_the_tail_of_a_long_stream_is_read() {
    let dir = tempfile::tempdir().unwrap();
    // 2 MB of events before the result: only the last 256 KiB are read, and they hold it.
    let filler =
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"....................\"}]}}\n";
    let mut text = filler.repeat(2_000_000 / filler.len());
    text.push_str(&"x".repeat(40_000)); // a long non-JSON line: past the first 16 KiB read
    text.push('\n');
    text.push_str(&std::fs::read_to_string(fixture("claude-code-json.json")).unwrap());
    let path = dir.path().join("raw_stream_output.txt");
    std::fs::write(&path, &text).unwrap();
    let usage = cost::read_node_usage(&path).unwrap();
    assert_eq!(usage.cost_usd, Some(0.0123));

    // A Gemini `json` document whose response alone is larger than the tail: its stats, read
    // from where the key last appears.
    let document = std::fs::read_to_string(fixture("gemini-cli-json.json")).unwrap();
    let huge = document.replacen("The repository has a README and a src folder.", &"y".repeat(600_000), 1);
    std::fs::write(&path, huge).unwrap();
    let usage = cost::read_node_usage(&path).unwrap();
    assert_eq!(usage.models, ["gemini-2.5-flash", "gemini-2.5-pro"]);
}

/// The output lines of `node` in an engine's stdout, between its markers, as the studio stores
/// them (their `│ ` prefixes kept).
fn node_lines(stdout: &str, node: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut depth = 0usize;
    for event in StreamReader::read_all(Stream::Stdout, stdout.as_bytes()) {
        match &event.kind {
            EventKind::NodeBegin { node: n, .. } if n == node => depth += 1,
            EventKind::NodeEnd { node: n, .. } if n == node => depth = depth.saturating_sub(1),
            _ if depth > 0 => lines.push(event.text.into_owned()),
            _ => {}
        }
    }
    lines
}

#[test]
fn stdout_only_prefixes_and_wraps_are_undone() {
    let stdout = std::fs::read_to_string(fixture("stdout-wrapped.txt")).unwrap();
    let lines = node_lines(&stdout, "plan");
    assert!(lines.iter().any(|l| l.chars().count() == 120), "the fixture wraps");
    let usage = cost::node_output_usage(lines.iter().map(String::as_str)).unwrap();
    let from_file = node_usage("claude-code-stream-json.jsonl").unwrap();
    assert_eq!(usage, from_file, "the same stream, printed by the engine");

    let write = node_lines(&stdout, "write");
    assert_eq!(cost::node_output_usage(write.iter().map(String::as_str)), None);
}

#[test]
fn a_retried_node_counts_its_last_attempt_only_and_says_so() {
    let stdout = std::fs::read_to_string(fixture("stdout-retried.txt")).unwrap();
    let lines = node_lines(&stdout, "flaky");
    let usage = cost::node_output_usage(lines.iter().map(String::as_str)).unwrap();
    assert_eq!(usage.tokens, Some(tokens(2_000, 1_000, 0, 300, None)));
    assert!(usage.last_attempt_only);
}

/// An engine-layout session: one node folder per `(name, raw stream fixture)`, and nodes the
/// engine wrote no folder for (custom code) named by `.session-info.json`.
fn session(root: &Path, id: &str, nodes: &[(&str, Option<&str>)], current: &str) {
    let dir = root.join(".zibby/output/sessions").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, raw) in nodes {
        if let Some(raw) = raw {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            std::fs::copy(fixture(raw), dir.join(name).join("raw_stream_output.txt")).unwrap();
        }
    }
    let info = format!(
        r#"{{"sessionPath":"{}","currentNode":"{current}","config":{{}}}}"#,
        dir.display()
    );
    std::fs::write(dir.join(".session-info.json"), info).unwrap();
}

#[test]
fn a_sessions_total_over_partly_priced_nodes_is_a_lower_bound() {
    let root = tempfile::tempdir().unwrap();
    session(
        root.path(),
        "1795000000000_a",
        &[
            ("plan", Some("claude-code-json.json")),
            ("code", Some("codex-exec-json-token-count.jsonl")),
            ("guess", Some("gemini-cli-stream-json-unknown-model.jsonl")),
            ("custom", None),
        ],
        "custom",
    );
    let workspace = Workspace::open(root.path()).unwrap();
    let listed = workspace.list_sessions(SystemTime::now()).unwrap();
    let summary = &listed[0];
    let by_name = |name: &str| summary.nodes.iter().find(|n| n.name == name).unwrap();
    assert_eq!(by_name("custom").usage, None, "a custom-code node writes nothing");
    assert_eq!(by_name("plan").usage.as_ref().unwrap().cost_usd, Some(0.0123));
    let total = summary.usage.clone().unwrap();
    assert_eq!((total.nodes, total.nodes_with_usage, total.nodes_priced), (4, 3, 2));
    let code = by_name("code").usage.as_ref().unwrap().cost_usd.unwrap();
    assert!((total.cost_usd.unwrap() - (0.0123 + code)).abs() < 1e-12);
    assert!(!total.is_complete());
    assert!(
        total.label.starts_with("≥ $0.") && total.label.ends_with("(2 of 4 nodes priced)"),
        "{}",
        total.label
    );
    let full = workspace.read_session(&summary.id, SystemTime::now()).unwrap();
    assert_eq!(full.usage, summary.usage, "show and the listing agree");
}

#[test]
fn the_index_reads_a_raw_stream_again_when_an_attempt_rewrote_it() {
    let root = tempfile::tempdir().unwrap();
    session(
        root.path(),
        "1795000000000_b",
        &[("plan", Some("claude-code-json.json"))],
        "plan",
    );
    let workspace = Workspace::open(root.path()).unwrap();
    let store = Store::open(&StoreLocation::File(root.path().join("studio.db"))).unwrap();
    let cost_of = |store: &Store| {
        let rows = store.list_sessions(&workspace, SystemTime::now()).unwrap();
        rows[0].summary.usage.as_ref().and_then(|u| u.cost_usd)
    };
    assert_eq!(cost_of(&store), Some(0.0123));
    assert_eq!(cost_of(&store), Some(0.0123), "from the index");
    // The engine rewrites the file in place (the folders' times do not change).
    let raw = root
        .path()
        .join(".zibby/output/sessions/1795000000000_b/plan/raw_stream_output.txt");
    let retried = std::fs::read_to_string(fixture("claude-code-stream-json.jsonl")).unwrap();
    std::fs::write(&raw, retried).unwrap();
    assert_eq!(cost_of(&store), Some(0.0482715));
}

#[test]
fn the_windows_listing_carries_each_sessions_total_and_leaves_node_usage_to_the_detail() {
    let root = tempfile::tempdir().unwrap();
    session(
        root.path(),
        "1795000000000_c",
        &[("plan", Some("claude-code-json.json")), ("custom", None)],
        "custom",
    );
    session(
        root.path(),
        "1795000000001_d",
        &[
            ("code", Some("codex-exec-json-token-count.jsonl")),
            ("guess", Some("gemini-cli-stream-json-unknown-model.jsonl")),
        ],
        "guess",
    );
    let db = tempfile::tempdir().unwrap();
    let (studio, _) =
        studio_core::app::Studio::open(Some(root.path()), Ok(StoreLocation::File(db.path().join("studio.db"))));
    let listing = studio.sessions(SystemTime::now()).unwrap();
    let rows: Vec<_> = listing
        .sessions
        .iter()
        .filter(|r| r.summary.id.as_str() == "1795000000000_c")
        .collect();
    // The workspace's total: every node of every session, 2 of 4 priced.
    let all = listing.usage.clone().unwrap();
    let other = listing
        .sessions
        .iter()
        .find(|r| r.summary.id.as_str() == "1795000000001_d")
        .unwrap();
    let other_cost = other.summary.usage.as_ref().unwrap().cost_usd.unwrap();
    assert_eq!((all.nodes, all.nodes_with_usage, all.nodes_priced), (4, 3, 2));
    assert!((all.cost_usd.unwrap() - (0.0123 + other_cost)).abs() < 1e-12);
    assert!(all.label.ends_with("(2 of 4 nodes priced)"), "{}", all.label);
    let total = rows[0].summary.usage.clone().unwrap();
    assert_eq!((total.cost_usd, total.nodes_priced, total.nodes), (Some(0.0123), 1, 2));
    assert!(rows[0].summary.nodes.iter().all(|n| n.usage.is_none()));
    let id = rows[0].summary.id.clone();
    let detail = studio
        .store()
        .unwrap()
        .read_session(&studio.workspace().unwrap(), &id, SystemTime::now())
        .unwrap();
    assert_eq!(detail.nodes[0].usage.as_ref().unwrap().cost_usd, Some(0.0123));
    studio.shut_down();
}

/// A captured log imported (as from CI): its nodes wrote no folders, and what they printed on
/// stdout is their usage, the same in the listing, `show`, `runs` and a bundle of it imported
/// elsewhere; a raw stream, once there, has the last word.
#[test]
fn a_captured_logs_nodes_are_priced_from_stdout_alike_everywhere() {
    use studio_core::share::{self, ImportOptions};
    let (root, workspace, store) = crate::harness::empty_workspace_with_store();
    let imported = crate::harness::import_log(&store, &workspace, &fixture("stdout-wrapped.txt"));
    let id = imported.session_id.clone();
    let expected = node_usage("claude-code-stream-json.jsonl").unwrap();
    let plan_of =
        |nodes: Vec<(String, Option<NodeUsage>)>| nodes.into_iter().find(|(n, _)| n == "plan").and_then(|(_, u)| u);

    let rows = store.list_sessions(&workspace, SystemTime::now()).unwrap();
    let row = rows.iter().find(|r| r.summary.id == id).unwrap();
    let listed = plan_of(
        row.summary
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.usage.clone()))
            .collect(),
    );
    assert_eq!(listed.as_ref(), Some(&expected), "the listing");
    let total = row.summary.usage.clone().unwrap();
    assert_eq!((total.nodes_with_usage, total.cost_usd), (1, expected.cost_usd));

    let shown = store.read_session(&workspace, &id, SystemTime::now()).unwrap();
    let shown_plan = plan_of(shown.nodes.iter().map(|n| (n.name.clone(), n.usage.clone())).collect());
    assert_eq!(shown_plan.as_ref(), Some(&expected), "show");
    assert_eq!(shown.usage, row.summary.usage, "show and the listing agree");

    let mut runs = store.runs(&workspace, Some(&id)).unwrap();
    store.with_runs_usage(&workspace, &mut runs, SystemTime::now()).unwrap();
    assert_eq!(runs[0].usage, row.summary.usage, "runs");

    // Exported and imported into another workspace and store: the same.
    let bundle = root.path().join("bundle.zip");
    share::export_session(&store, &workspace, &id, &bundle, false, SystemTime::now()).unwrap();
    let (_other, other_workspace, other_store) = crate::harness::empty_workspace_with_store();
    share::import(
        &other_store,
        &other_workspace,
        &bundle,
        &ImportOptions::default(),
        SystemTime::now(),
    )
    .unwrap();
    let there = other_store
        .read_session(&other_workspace, &id, SystemTime::now())
        .unwrap();
    assert_eq!(there.usage, row.summary.usage, "a bundle of it");

    // A raw stream written since is the node's word.
    let plan_dir = root
        .path()
        .join(".zibby/output/sessions")
        .join(id.as_str())
        .join("plan");
    std::fs::create_dir_all(&plan_dir).unwrap();
    std::fs::copy(fixture("claude-code-json.json"), plan_dir.join("raw_stream_output.txt")).unwrap();
    let shown = store.read_session(&workspace, &id, SystemTime::now()).unwrap();
    let shown_plan = plan_of(shown.nodes.iter().map(|n| (n.name.clone(), n.usage.clone())).collect());
    assert_eq!(shown_plan.and_then(|u| u.cost_usd), Some(0.0123));
}

/// The window's listing (totals only: the index parses no node's usage object it does not need)
/// gives every session the total the full listing gives, from a warm index too: sessions priced
/// by their raw streams, and one whose nodes' stdout usage the store lays over its folder.
#[test]
fn a_listing_of_totals_only_gives_the_totals_the_full_listing_gives() {
    use studio_core::store::index::{usage_of_sessions, NodeDetail};
    let (root, workspace, store) = crate::harness::empty_workspace_with_store();
    session(
        root.path(),
        "1795000000000_e",
        &[("plan", Some("claude-code-json.json")), ("custom", None)],
        "custom",
    );
    session(
        root.path(),
        "1795000000001_f",
        &[("code", Some("codex-exec-json-token-count.jsonl"))],
        "code",
    );
    let imported = crate::harness::import_log(&store, &workspace, &fixture("stdout-wrapped.txt"));
    // A day on: no session is taken for running (those are read afresh at every listing).
    let later = SystemTime::now() + std::time::Duration::from_secs(24 * 3600);
    let totals = |detail| {
        let rows = store.list_sessions_as(&workspace, later, detail).unwrap();
        let mut by_id: Vec<(String, Option<studio_core::cost::UsageTotal>)> = rows
            .iter()
            .map(|r| (r.summary.id.to_string(), r.summary.usage.clone()))
            .collect();
        by_id.sort_by(|a, b| a.0.cmp(&b.0));
        (by_id, usage_of_sessions(&rows), rows)
    };
    for round in ["first listing", "warm index"] {
        let (full, full_all, full_rows) = totals(NodeDetail::WithUsage);
        let (only, only_all, only_rows) = totals(NodeDetail::TotalsOnly);
        assert_eq!(full.len(), 3, "{round}");
        assert!(full.iter().all(|(_, usage)| usage.is_some()), "{round}: {full:?}");
        assert_eq!(only, full, "{round}");
        assert_eq!(only_all, full_all, "{round}");
        // The window's total, from the catalogue without making the rows, is the listing's.
        assert_eq!(store.catalogue_usage(&workspace).unwrap(), full_all, "{round}");
        let all = full_all.unwrap();
        assert_eq!((all.nodes, all.nodes_with_usage), (5, 3), "{round}");
        let nodes_with_usage = |rows: &[studio_core::store::SessionRow], id: &str| {
            let row = rows.iter().find(|r| r.summary.id.as_str() == id).unwrap();
            row.summary.nodes.iter().filter(|n| n.usage.is_some()).count()
        };
        assert_eq!(nodes_with_usage(&full_rows, "1795000000000_e"), 1, "{round}");
        // The log's session is laid over by the store: its nodes' usage is read in both.
        assert_eq!(nodes_with_usage(&only_rows, imported.session_id.as_str()), 1, "{round}");
        if round == "warm index" {
            assert_eq!(
                nodes_with_usage(&only_rows, "1795000000000_e"),
                0,
                "not parsed from the index"
            );
        }
    }
}
