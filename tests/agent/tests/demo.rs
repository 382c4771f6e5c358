//! The demo a first-time user opens: `fill-demo` has the studio (`zstudio`) run the agent `demo`
//! into a workspace and a store, so that every column and view has something real in it; and
//! `demo` is an agent the studio runs as a real process, follows node by node, and stops
//! gracefully.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use studio_core::app::Studio;
use studio_core::runner::{RunEvent, RunEvents};
use studio_core::store::StoreLocation;
use studio_core::timeline::StoppedBy;
use studio_core::{agents, Status, Workspace};

/// Long enough for a loaded CI machine; nothing is timed, only waited for.
const PATIENCE: Duration = Duration::from_secs(60);

/// `zstudio`, built beside the test agent (`cargo test --workspace` builds both).
fn zstudio() -> PathBuf {
    let zstudio = Path::new(env!("CARGO_BIN_EXE_zibby-test-agent")).with_file_name("zstudio");
    assert!(
        zstudio.is_file(),
        "{} is missing: fill-demo runs the demo through it; run `cargo test --workspace` (or `cargo build -p zstudio` first)",
        zstudio.display()
    );
    zstudio
}

/// `fill-demo WORKSPACE --db DB`, with the `zstudio` of this build: what it printed.
fn fill_demo(workspace: &Path, db: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_zibby-test-agent"))
        .arg("fill-demo")
        .arg(workspace)
        .arg("--db")
        .arg(db)
        .arg("--zstudio")
        .arg(zstudio())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// `zstudio ARGS --json` on the workspace and the store: what it printed, as JSON.
fn zstudio_json(workspace: &Path, db: &Path, args: &[&str]) -> Value {
    let output = Command::new(zstudio())
        .args(args)
        .arg("--json")
        .arg("-w")
        .arg(workspace)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "zstudio {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("zstudio {args:?} --json: {e}"))
}

fn next_event(events: &RunEvents, deadline: Instant) -> RunEvent {
    let left = deadline.saturating_duration_since(Instant::now());
    events
        .recv_timeout(left)
        .unwrap_or_else(|e| panic!("no run event in time: {e}"))
}

#[test]
fn fill_demo_is_idempotent_sessions_when_empty_the_agents_file_when_absent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-workspace");
    let db = dir.path().join("studio.sqlite");
    let said = fill_demo(&root, &db);
    assert!(said.contains("the agent `demo`"), "{said}");
    let workspace = Workspace::open(&root).unwrap();
    let sessions = workspace.list_sessions(SystemTime::now()).unwrap().len();
    assert_eq!(sessions, 7);
    let runs = zstudio_json(&root, &db, &["runs"]).as_array().unwrap().len();
    assert_eq!(runs, 7, "six sessions the studio ran, one of them twice");
    let agents = agents::load(&root).unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0].name, "demo");
    let program = std::fs::canonicalize(env!("CARGO_BIN_EXE_zibby-test-agent")).unwrap();
    assert_eq!(
        Path::new(&agents[0].run[0]),
        program,
        "the test agent by its absolute path"
    );

    // Again: nothing added, nothing overwritten, nothing run.
    std::fs::write(root.join(".zibby/studio.toml"), "# mine\n").unwrap();
    fill_demo(&root, &db);
    assert_eq!(workspace.list_sessions(SystemTime::now()).unwrap().len(), sessions);
    assert_eq!(zstudio_json(&root, &db, &["runs"]).as_array().unwrap().len(), runs);
    assert_eq!(
        std::fs::read_to_string(root.join(".zibby/studio.toml")).unwrap(),
        "# mine\n"
    );

    // An older demo workspace, with sessions and no agents file, gets the file only.
    std::fs::remove_file(root.join(".zibby/studio.toml")).unwrap();
    fill_demo(&root, &db);
    assert_eq!(workspace.list_sessions(SystemTime::now()).unwrap().len(), sessions);
    assert_eq!(agents::load(&root).unwrap()[0].name, "demo");
}

/// The session of the listing whose title begins with `title`.
fn titled<'a>(sessions: &'a [Value], title: &str) -> &'a Value {
    sessions
        .iter()
        .find(|s| s["title"].as_str().is_some_and(|t| t.starts_with(title)))
        .unwrap_or_else(|| panic!("no session titled {title}: {sessions:#?}"))
}

#[test]
fn the_demo_is_made_by_the_studio_with_something_in_every_column() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-workspace");
    let db = dir.path().join("studio.sqlite");
    let started = Instant::now();
    fill_demo(&root, &db);
    eprintln!("fill-demo took {:?}", started.elapsed());
    let listing = zstudio_json(&root, &db, &["sessions"]);
    let sessions = listing.as_array().unwrap();
    assert_eq!(sessions.len(), 7);

    // The studio's runs: named by their agent, their prompt a message, what they used priced.
    let ran: Vec<&Value> = sessions.iter().filter(|s| s["agent"] == "demo").collect();
    assert_eq!(ran.len(), 6, "{sessions:#?}");
    for session in &ran {
        assert!(session["messages"].as_i64().unwrap() >= 1, "{session:#}");
        assert!(session["usage"]["cost_usd"].as_f64().unwrap() > 0.0, "{session:#}");
    }
    // The run outside the studio: named by its folder's prompt, no agent and no messages known;
    // its nodes' usage is read from its folder all the same.
    let outside = titled(sessions, "Run in a terminal");
    assert!(outside["agent"].is_null() && outside["messages"] == 0, "{outside:#}");
    assert!(outside["usage"]["cost_usd"].as_f64().unwrap() > 0.0, "{outside:#}");

    // Continued and pinned: two prompts, two runs, listed first.
    let kyoto = titled(sessions, "Plan a three-day trip to Kyoto");
    assert_eq!(sessions[0]["id"], kyoto["id"], "the pinned session first");
    assert_eq!(
        (&kyoto["pinned"], &kyoto["messages"]),
        (&Value::Bool(true), &Value::from(2))
    );
    let id = kyoto["id"].as_str().unwrap();
    let runs = zstudio_json(&root, &db, &["runs", "--session", id]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    // Newest first: the earlier run against the later one.
    let compared = zstudio_json(
        &root,
        &db,
        // `diff` exits 1 when the runs differ, as diff(1) does; these do.
        &[
            "diff",
            "--exit-zero",
            runs[1]["id"].as_str().unwrap(),
            runs[0]["id"].as_str().unwrap(),
        ],
    );
    let changed: Vec<&str> = compared["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["change"] == "changed")
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert!(
        changed.contains(&"plan"),
        "the prompt the plan node printed changed: {changed:?}"
    );

    // Its nodes report usage as Claude Code (a cost of its own), Gemini CLI (estimated from the
    // price table) and Codex (no model named: no cost) print it.
    let shown = zstudio_json(&root, &db, &["show", id]);
    let usage: Vec<(String, String, String)> = shown["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| !n["usage"].is_null())
        .map(|n| {
            let usage = &n["usage"];
            let string = |v: &Value| v.as_str().unwrap().to_owned();
            (
                string(&n["name"]),
                string(&usage["format"]),
                string(&usage["cost_source"]),
            )
        })
        .collect();
    let expected = [
        ("plan", "claude_code", "reported"),
        ("search", "gemini_cli", "estimated"),
        ("read", "gemini_cli", "estimated"),
        ("write", "claude_code", "reported"),
        ("review", "codex", "unknown"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(usage, expected);
    let label = kyoto["usage"]["label"].as_str().unwrap();
    assert!(
        label.starts_with("≥ $") && label.ends_with("(4 of 6 nodes priced)"),
        "{label}"
    );

    // A failed run and a stopped one, each with its reason.
    let failed = titled(sessions, "Draft release notes");
    assert_eq!(failed["status"], "error");
    let failed_runs = zstudio_json(&root, &db, &["runs", "--session", failed["id"].as_str().unwrap()]);
    let error = failed_runs[0]["error"].as_str().unwrap();
    assert!(error.contains("issue #412, which does not exist"), "{error}");
    // Tagged and annotated: what to do before running it again.
    assert_eq!(failed["tags"], serde_json::json!(["release-2.1", "needs-review"]));
    assert_eq!(failed["has_note"], true);
    let listed = zstudio_json(&root, &db, &["sessions", "--tag", "needs-review"]);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed:#}");
    // Stopped by its budget: after the node that crossed it, the next never began.
    let capped = titled(sessions, "Compare three hosting providers");
    assert_eq!(capped["status"], "cancelled");
    let capped_id = capped["id"].as_str().unwrap();
    let capped_runs = zstudio_json(&root, &db, &["runs", "--session", capped_id]);
    assert_eq!(capped_runs[0]["stopped_by"], "budget");
    let capped_nodes: Vec<&Value> = capped["nodes"].as_array().unwrap().iter().map(|n| &n["name"]).collect();
    assert_eq!(capped_nodes, ["gather", "compare"], "recommend never began");
    let logged = zstudio_json(&root, &db, &["logs", capped_id]);
    let events: Vec<&str> = logged
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|line| line["event"].as_str())
        .collect();
    let at = |event: &str| {
        events
            .iter()
            .position(|e| *e == event)
            .unwrap_or_else(|| panic!("{event}: {events:?}"))
    };
    assert!(at("budget.warning") < at("budget.reached"), "{events:?}");

    let stopped = titled(sessions, "Translate the onboarding guide");
    assert_eq!(stopped["status"], "cancelled");
    let stopped_runs = zstudio_json(&root, &db, &["runs", "--session", stopped["id"].as_str().unwrap()]);
    assert_eq!(stopped_runs[0]["stopped_by"], "graceful");
    let nodes: Vec<&Value> = stopped["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["name"])
        .collect();
    assert_eq!(
        nodes,
        ["split", "translate"],
        "stopped during translate: merge never began"
    );

    // A long output that search finds words in.
    let links = titled(sessions, "Check the docs for broken links");
    let hits = zstudio_json(&root, &db, &["search", "proxy settings", "--limit", "100"]);
    let hits = hits.as_array().unwrap();
    assert!(
        hits.len() >= 4 && hits.iter().all(|hit| hit["session_id"] == links["id"]),
        "{hits:#?}"
    );
}

#[test]
fn the_demo_agent_reports_what_its_nodes_used() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_zibby-test-agent"))
        .args([
            "demo",
            "--nodes",
            "plan:10,research:10,write:10,review:10",
            "--prompt",
            "Plan a picnic",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sessions = Workspace::open(dir.path())
        .unwrap()
        .list_sessions(SystemTime::now())
        .unwrap();
    let [session] = sessions.as_slice() else {
        panic!("one session: {sessions:?}")
    };
    let costs: Vec<(&str, Option<String>)> = session
        .nodes
        .iter()
        .map(|node| {
            let usage = node
                .usage
                .as_ref()
                .unwrap_or_else(|| panic!("{} reported no usage", node.name));
            (node.name.as_str(), usage.cost_usd.map(|_| usage.cost_label.clone()))
        })
        .collect();
    assert_eq!(costs.len(), 4);
    assert!(costs[..3].iter().all(|(_, cost)| cost.is_some()), "{costs:?}");
    assert_eq!(costs[3], ("review", None), "Codex names no model: its cost is unknown");
}

#[test]
fn the_demo_agent_runs_live_in_the_studio_and_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-workspace");
    // The demo made in one store; the window opened on another, where the agent is not trusted.
    fill_demo(&root, &dir.path().join("demo.sqlite"));
    let store = StoreLocation::File(dir.path().join("studio.sqlite"));
    let (studio, events) = Studio::open(Some(&root), Ok(store));
    let (events, _output) = events.expect("a supervisor");
    let workspace = studio.workspace().unwrap();

    // Not trusted yet: the window asks first, showing exactly what would run.
    let untrusted = studio.run_agent("demo", Some("Plan a picnic".into()), None, None);
    let Err(studio_core::Error::AgentsUntrusted { launch }) = untrusted else {
        panic!("the demo agent runs only once trusted: {untrusted:?}")
    };
    assert_eq!(launch.argv[1..], ["demo", "--prompt", "{prompt}"]);
    studio
        .store()
        .unwrap()
        .trust_launch(&workspace, &launch, SystemTime::now())
        .unwrap();

    let started = studio
        .run_agent("demo", Some("Plan a picnic".into()), None, None)
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut begun = Vec::new();
    let mut ended = Vec::new();
    let mut coloured = false;
    // The first node begins and ends, the second begins: Stop is pressed during it.
    while !begun.iter().any(|n| n == "research") {
        match next_event(&events, deadline) {
            RunEvent::NodeBegin { node, .. } => begun.push(node),
            RunEvent::NodeEnd { node, status, .. } => ended.push((node, status)),
            RunEvent::Output { line, .. } => coloured |= line.contains("\x1b[1;36m"),
            RunEvent::RunFinished { status, .. } => panic!("the demo ended early: {status}"),
            _ => {}
        }
    }
    assert_eq!(begun, ["plan", "research"]);
    assert_eq!(ended, [("plan".to_owned(), Status::Success)]);
    assert!(coloured, "the demo's output is coloured");

    studio.stop(&started.run_id, false).unwrap();
    let finished = loop {
        match next_event(&events, deadline) {
            RunEvent::NodeBegin { node, .. } => begun.push(node),
            RunEvent::NodeEnd { node, status, .. } => ended.push((node, status)),
            RunEvent::RunFinished {
                status,
                stopped_by,
                exit_code,
                ..
            } => break (status, stopped_by, exit_code),
            _ => {}
        }
    };
    assert_eq!(
        finished,
        (Status::Cancelled, Some(StoppedBy::Graceful), Some(0)),
        "the stop file ended it after its node"
    );
    assert_eq!(begun, ["plan", "research"], "no node began after Stop");
    assert_eq!(
        ended,
        [
            ("plan".to_owned(), Status::Success),
            ("research".to_owned(), Status::Success)
        ],
        "the node under way finished first"
    );
    studio.shut_down();
}
