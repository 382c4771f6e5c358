//! Two runs compared (issue 16) over the shapes a side takes: session folders, a run the store
//! recorded (its loop's executions told apart in its stored lines), a captured log.

use std::time::{Duration, SystemTime};

use studio_core::compare::sides::{CapturedLog, Source};
use studio_core::compare::{compare, Change, Options, RunDiff};
use studio_core::protocol::Stream;
use studio_core::store::{NewRun, RunOutcome, Store, StoreLocation};
use studio_core::{SessionId, Status, Workspace};

use crate::harness::{capture, copy_tree};

/// The nodes in the order the folders' times give (copies share their times): sorted.
fn sorted(diff: &RunDiff) -> Vec<String> {
    let mut nodes = described(diff);
    nodes.sort();
    nodes
}

fn described(diff: &RunDiff) -> Vec<String> {
    diff.nodes
        .iter()
        .map(|n| format!("{}#{} {:?}", n.name, n.occurrence, n.change))
        .collect()
}

fn lines(diff: &studio_core::compare::text::TextDiff) -> Vec<String> {
    diff.hunks
        .iter()
        .flat_map(|h| &h.lines)
        .map(|l| format!("{}{}", serde_json::to_value(l.op).unwrap().as_str().unwrap(), l.text))
        .collect()
}

/// A workspace holding the session folders of these captures.
fn workspace_of(captures: &[&str]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::TempDir::new().unwrap();
    for name in captures {
        copy_tree(
            &capture(name).join("cwd/.zibby/output/sessions"),
            &dir.path().join(".zibby/output/sessions"),
        );
    }
    let workspace = Workspace::open(dir.path()).unwrap();
    (dir, workspace)
}

#[test]
fn two_session_folders_compare_node_by_node_escapes_aside() {
    let (dir, workspace) = workspace_of(&[
        "head-bb10e85-02-pipeline-markers",
        "head-bb10e85-02-pipeline-markers-color",
        "head-bb10e85-03-conditional-routing-markers",
    ]);
    let store = Store::open(&StoreLocation::memory()).unwrap();
    let folder = |id: &str| Source::resolve(&store, &workspace, id).unwrap();
    let (plain, color, routing) = (
        folder("1795952464415_3prb"),
        folder("1795952465695_g686"),
        folder("1795952466311_utp4"),
    );
    assert!(matches!(plain, Source::Folder { .. }));

    let same = compare(None, &plain, &color, &Options::default()).unwrap();
    assert_eq!(sorted(&same), ["execute#0 Same", "plan#0 Same", "report#0 Same"]);
    assert_eq!(same.a.session_id.as_deref(), Some("1795952464415_3prb"));

    let other = compare(None, &plain, &routing, &Options::default()).unwrap();
    assert_eq!(
        sorted(&other),
        [
            "draft#0 Added",
            "execute#0 Removed",
            "plan#0 Removed",
            "report#0 Removed",
            "review#0 Added",
            "ship#0 Added"
        ]
    );

    // One node's output changed in B's folder: shown as its lines, the changed words marked.
    let execute = dir
        .path()
        .join(".zibby/output/sessions/1795952465695_g686/execute/raw_stream_output.txt");
    let text = std::fs::read_to_string(&execute).unwrap();
    let first = text.lines().next().unwrap().to_owned();
    std::fs::write(&execute, text.replacen(&first, &format!("{first} and more"), 1)).unwrap();
    let changed = compare(None, &plain, &color, &Options::default()).unwrap();
    assert_eq!(sorted(&changed), ["execute#0 Changed", "plan#0 Same", "report#0 Same"]);
    let output = &changed.nodes.iter().find(|n| n.name == "execute").unwrap().output;
    assert_eq!(lines(output)[..2], [format!("-{first}"), format!("+{first} and more")]);
    let marked: Vec<&str> = output.hunks[0].lines[1]
        .words
        .as_ref()
        .unwrap()
        .iter()
        .filter(|w| w.changed)
        .map(|w| w.text.as_str())
        .collect();
    assert_eq!(marked.concat().trim(), "and more");

    let unknown = Source::resolve(&store, &workspace, "1795952464415_none").unwrap_err();
    assert!(unknown.to_string().contains("1795952464415_none"), "{unknown}");
}

/// Records a run as the runner does: spans per execution, output lines with their node's name.
fn record_run(store: &Store, workspace: &Workspace, session: &SessionId, script: &[(&str, &[&str])]) -> String {
    let start = SystemTime::now();
    let run = store
        .run_insert(
            workspace,
            &NewRun {
                session,
                agent: None,
                command: &["agent".to_owned()],
                replayed_node: None,
                prompt: None,
                started_at: start,
            },
        )
        .unwrap();
    let run_span = store.span_start(&run, None, "run", "run", 0, start).unwrap();
    let mut writer = store.output_writer(&run).unwrap();
    for (step, (node, printed)) in script.iter().enumerate() {
        let at = start + Duration::from_millis(10 * step as u64);
        let span = store.span_start(&run, Some(run_span), node, "node", 0, at).unwrap();
        // The markers are not stored; the timeline's lines are.
        writer
            .append(Stream::Stdout, 0, Some(node), &format!("┌ {node}"))
            .unwrap();
        for line in *printed {
            writer
                .append(Stream::Stdout, 0, Some(node), &format!("│ {line}"))
                .unwrap();
        }
        writer.append(Stream::Stdout, 0, Some(node), "└ done 3ms").unwrap();
        writer.append(Stream::Stdout, 0, None, "").unwrap();
        store
            .span_end(span, Status::Success, at + Duration::from_millis(5))
            .unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    store
        .run_finish(
            &run,
            &RunOutcome {
                status: Status::Success,
                exit_code: Some(0),
                error: None,
                stopped_by: None,
                ended_at: start + Duration::from_secs(1),
            },
        )
        .unwrap();
    run
}

#[test]
fn a_recorded_runs_loop_is_told_apart_execution_by_execution_and_against_a_log() {
    let (_dir, workspace) = workspace_of(&[]);
    let store = Store::open(&StoreLocation::memory()).unwrap();
    let session = SessionId::parse("1795952466311_loop").unwrap();
    let a = record_run(
        &store,
        &workspace,
        &session,
        &[
            ("draft", &["v1"]),
            ("review", &["needs work"]),
            ("revise", &["v2"]),
            ("review", &["ok"]),
        ],
    );
    let b = record_run(
        &store,
        &workspace,
        &session,
        &[
            ("draft", &["v1"]),
            ("review", &["needs work"]),
            ("revise", &["v3"]),
            ("review", &["still not"]),
            ("review", &["ok"]),
        ],
    );
    let a = Source::resolve(&store, &workspace, &a).unwrap();
    let latest = Source::resolve(&store, &workspace, session.as_str()).unwrap();
    assert!(matches!(&latest, Source::Run { run } if run.id == b));
    let diff = compare(Some(&store), &a, &latest, &Options::default()).unwrap();
    assert_eq!(
        described(&diff),
        [
            "draft#0 Same",
            "review#0 Same",
            "revise#0 Changed",
            "review#1 Changed",
            "review#2 Added"
        ]
    );
    assert_eq!(lines(&diff.nodes[3].output), ["-ok", "+still not"]);
    assert_eq!(lines(&diff.nodes[4].output), ["+ok"]);
    let review = diff.nodes[1].a.as_ref().unwrap();
    assert_eq!((review.started_ms, review.elapsed_ms), (Some(10), Some(5)));
    assert_eq!(diff.a.elapsed_ms, Some(1000));
    // Outside the nodes: the blank line after each, one more in B.
    assert_eq!(lines(&diff.output).iter().filter(|l| l.starts_with('+')).count(), 1);

    // A run against a captured log of the same workflow's other branch.
    let log = capture("head-bb10e85-03-conditional-routing-markers").join("stdout.txt");
    let against_log = compare(
        Some(&store),
        &a,
        &Source::Log(CapturedLog::stdout(log)),
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        described(&against_log),
        [
            "draft#0 Changed",
            "review#0 Changed",
            "revise#0 Removed",
            "review#1 Removed",
            "ship#0 Added"
        ]
    );
    assert_eq!(against_log.b.run_id, None);
    assert_eq!(
        against_log
            .nodes
            .iter()
            .filter(|n| n.change == Change::Changed)
            .map(|n| n.prompt.is_none())
            .collect::<Vec<_>>(),
        [true, true],
        "a log has no folder: no prompts are compared"
    );
}

#[test]
fn many_lines_shown_are_read_by_reading_on_and_a_few_where_they_are() {
    let dir = tempfile::TempDir::new().unwrap();
    let log = |name: &str, word: &str| {
        let mut text = String::from("__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"big\"}\n┌ big\n");
        for i in 0..3_000 {
            text.push_str(&format!("│ line {i} {word}\n"));
        }
        text.push_str(
            "└ done 1s\n__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_end\",\"node\":\"big\"}\ntail without newline",
        );
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Source::Log(CapturedLog::stdout(path))
    };
    let (a, b) = (log("a.log", "old"), log("b.log", "new"));
    // Every line changed: 6,000 lines shown, past what is read line by line.
    let all = Options {
        limits: studio_core::compare::text::Limits {
            hunk_lines: 10_000,
            ..Default::default()
        },
        ..Options::default()
    };
    let many = compare(None, &a, &b, &all).unwrap();
    let shown = lines(&many.nodes[0].output);
    assert_eq!(shown.len(), 6_000);
    assert_eq!(
        (shown[0].as_str(), shown[5_999].as_str()),
        ("-line 0 old", "+line 2999 new")
    );
    // A few: read where the first read found them, the same text.
    let few = compare(None, &a, &b, &Options::default()).unwrap();
    assert_eq!(lines(&few.nodes[0].output)[..2], ["-line 0 old", "-line 1 old"]);
    let outside = compare(None, &a, &log("c.log", "old"), &Options::default()).unwrap();
    assert!(!outside.output.changed && outside.nodes[0].change == Change::Same);
}

/// Two captured logs whose `plan` node printed different agent results (the engine's wrapped
/// stream, and a one-line result): each side prices its nodes as `show` and `runs` do, logs
/// and the same logs imported as runs alike, and says what B cost more or less.
#[test]
fn each_side_prices_its_nodes_as_show_and_runs_do() {
    use studio_core::cost::{self, change_label};
    let usage_fixture = |name: &str| {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/usage")
            .join(name)
    };
    let (log_a, log_b) = (
        usage_fixture("stdout-wrapped.txt"),
        usage_fixture("stdout-one-line.txt"),
    );
    let stream = cost::read_node_usage(&usage_fixture("claude-code-stream-json.jsonl")).unwrap();
    let result = cost::read_node_usage(&usage_fixture("claude-code-json.json")).unwrap();

    let check = |diff: &RunDiff, what: &str| {
        let plan = diff.nodes.iter().find(|n| n.name == "plan").unwrap();
        let side_usage = |side: &Option<studio_core::compare::NodeSide>| side.as_ref().unwrap().usage.clone();
        assert_eq!(side_usage(&plan.a).as_ref(), Some(&stream), "{what}: A's plan");
        assert_eq!(side_usage(&plan.b).as_ref(), Some(&result), "{what}: B's plan");
        assert_eq!(
            plan.cost_change,
            change_label(
                stream.cost_usd,
                stream.tokens.as_ref(),
                result.cost_usd,
                result.tokens.as_ref()
            ),
            "{what}"
        );
        assert!(
            plan.cost_change.as_deref().unwrap().starts_with('−'),
            "{what}: B cost less"
        );
        let write = diff.nodes.iter().find(|n| n.name == "write").unwrap();
        assert_eq!(
            (side_usage(&write.a), write.cost_change.clone()),
            (None, None),
            "{what}"
        );
        let total_a = diff.a.usage.clone().unwrap();
        assert_eq!(
            (total_a.nodes, total_a.nodes_priced, total_a.cost_usd),
            (2, 1, stream.cost_usd),
            "{what}"
        );
        assert!(
            total_a.label.ends_with("(1 of 2 nodes priced)"),
            "{what}: {}",
            total_a.label
        );
        // Lower bounds are not subtracted: only the tokens' change is said.
        assert!(
            diff.cost_change.as_deref().unwrap().ends_with("tokens"),
            "{what}: {:?}",
            diff.cost_change
        );
        assert!(!diff.cost_change.as_deref().unwrap().contains('$'), "{what}");
    };
    let logs = compare(
        None,
        &Source::Log(CapturedLog::stdout(log_a.clone())),
        &Source::Log(CapturedLog::stdout(log_b.clone())),
        &Options::default(),
    )
    .unwrap();
    check(&logs, "two logs");

    // The same logs imported as runs: the sides are what `zstudio runs` says of them.
    let (_root, workspace, store) = crate::harness::empty_workspace_with_store();
    let a = crate::harness::import_log(&store, &workspace, &log_a);
    let b = crate::harness::import_log(&store, &workspace, &log_b);
    let side = |id: &SessionId| Source::resolve(&store, &workspace, id.as_str()).unwrap();
    let runs_diff = compare(
        Some(&store),
        &side(&a.session_id),
        &side(&b.session_id),
        &Options::default(),
    )
    .unwrap();
    check(&runs_diff, "two imported runs");
    let mut runs = store.runs(&workspace, None).unwrap();
    store.with_runs_usage(&workspace, &mut runs, SystemTime::now()).unwrap();
    let run_of = |id: &SessionId| runs.iter().find(|r| r.session_id == id.as_str()).unwrap().usage.clone();
    assert_eq!(runs_diff.a.usage, run_of(&a.session_id), "the diff and `runs` agree");
    assert_eq!(runs_diff.b.usage, run_of(&b.session_id));
}

/// A marker broken across lines is held back a line by the reader: the hunk still shows that
/// line's own text where it stands, in a log and in a recorded run alike (it was once read again
/// at the next line's place).
#[test]
fn a_line_the_reader_held_back_is_shown_with_its_own_text() {
    let log = |last: &str| {
        format!(
            "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"plan\"}}\n┌ plan\n│ one\n\
             __WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_\n│ {last}\n└ done 1ms\n\
             __WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_end\",\"node\":\"plan\"}}\n"
        )
    };
    let dir = tempfile::TempDir::new().unwrap();
    let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    std::fs::write(&a, log("two")).unwrap();
    std::fs::write(&b, log("TWO")).unwrap();
    let expected = [" one", " __WORKFLOW_GRAPH_LOG__{\"phase\":\"node_", "-two", "+TWO"];
    let logs = compare(
        None,
        &Source::Log(CapturedLog::stdout(a.clone())),
        &Source::Log(CapturedLog::stdout(b.clone())),
        &Options::default(),
    )
    .unwrap();
    let plan = logs.nodes.iter().find(|n| n.name == "plan").unwrap();
    assert_eq!(lines(&plan.output), expected, "two logs");

    let (_root, workspace, store) = crate::harness::empty_workspace_with_store();
    let (a, b) = (
        crate::harness::import_log(&store, &workspace, &a),
        crate::harness::import_log(&store, &workspace, &b),
    );
    let side = |id: &SessionId| Source::resolve(&store, &workspace, id.as_str()).unwrap();
    let runs = compare(
        Some(&store),
        &side(&a.session_id),
        &side(&b.session_id),
        &Options::default(),
    )
    .unwrap();
    let plan = runs.nodes.iter().find(|n| n.name == "plan").unwrap();
    assert_eq!(lines(&plan.output), expected, "two recorded runs");
}

/// A cross-machine comparison's scratch (two bundles and their imports, in the temporary
/// folder) left by a studio that was killed is removed when a studio starts; a live studio's
/// scratch, and a folder whose owner cannot be told, stay.
#[test]
fn the_scratch_of_a_comparison_whose_studio_was_killed_is_removed_at_start() {
    let temp = std::env::temp_dir();
    let me = studio_core::process::ProcessIdentity::of(std::process::id()).unwrap();
    let boot: String = me.boot_id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let killed = studio_core::process::ProcessIdentity::of(child.id()).unwrap();
    child.wait().unwrap();
    let unique = uuid::Uuid::now_v7().simple();
    let stale = temp.join(format!(
        "zibby-studio-compare-{boot}-{}-{}-{unique}a",
        killed.pid, killed.start_time
    ));
    let live = temp.join(format!(
        "zibby-studio-compare-{boot}-{}-{}-{unique}b",
        me.pid, me.start_time
    ));
    let unowned = temp.join(format!("zibby-studio-compare-{unique}c"));
    for folder in [&stale, &live, &unowned] {
        std::fs::create_dir_all(folder.join("workspace")).unwrap();
        std::fs::write(folder.join("a.zip"), b"PK").unwrap();
    }

    let store_dir = tempfile::tempdir().unwrap();
    let (studio, _) =
        studio_core::app::Studio::open(None, Ok(StoreLocation::File(store_dir.path().join("studio.sqlite"))));
    studio.shut_down();

    assert!(!stale.exists(), "a killed studio's scratch is removed");
    assert!(live.exists(), "a live studio's scratch stays");
    assert!(unowned.exists(), "a folder whose owner cannot be told stays");
    for folder in [&live, &unowned] {
        std::fs::remove_dir_all(folder).unwrap();
    }
}
