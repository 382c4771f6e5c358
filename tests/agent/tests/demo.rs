//! The demo a first-time user opens: `fill-demo` gives a workspace sessions and the agent `demo`,
//! which the studio runs as a real process, follows node by node, and stops gracefully.

use std::path::Path;
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant, SystemTime};

use studio_core::app::Studio;
use studio_core::runner::RunEvent;
use studio_core::store::StoreLocation;
use studio_core::timeline::StoppedBy;
use studio_core::{agents, Status, Workspace};

/// Long enough for a loaded CI machine; nothing is timed, only waited for.
const PATIENCE: Duration = Duration::from_secs(60);

fn fill_demo(workspace: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_zibby-test-agent"))
        .arg("fill-demo")
        .arg(workspace)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn next_event(events: &Receiver<RunEvent>, deadline: Instant) -> RunEvent {
    let left = deadline.saturating_duration_since(Instant::now());
    events
        .recv_timeout(left)
        .unwrap_or_else(|e| panic!("no run event in time: {e}"))
}

#[test]
fn fill_demo_is_idempotent_sessions_when_empty_the_agents_file_when_absent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-workspace");
    let said = fill_demo(&root);
    assert!(said.contains("the agent `demo`"), "{said}");
    let workspace = Workspace::open(&root).unwrap();
    let sessions = workspace.list_sessions(SystemTime::now()).unwrap().len();
    assert_eq!(sessions, 5);
    let agents = agents::load(&root).unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0].name, "demo");
    let program = std::fs::canonicalize(env!("CARGO_BIN_EXE_zibby-test-agent")).unwrap();
    assert_eq!(
        Path::new(&agents[0].run[0]),
        program,
        "the test agent by its absolute path"
    );

    // Again: nothing added, nothing overwritten.
    std::fs::write(root.join(".zibby/studio.toml"), "# mine\n").unwrap();
    fill_demo(&root);
    assert_eq!(workspace.list_sessions(SystemTime::now()).unwrap().len(), sessions);
    assert_eq!(
        std::fs::read_to_string(root.join(".zibby/studio.toml")).unwrap(),
        "# mine\n"
    );

    // An older demo workspace, with sessions and no agents file, gets the file only.
    std::fs::remove_file(root.join(".zibby/studio.toml")).unwrap();
    fill_demo(&root);
    assert_eq!(workspace.list_sessions(SystemTime::now()).unwrap().len(), sessions);
    assert_eq!(agents::load(&root).unwrap()[0].name, "demo");
}

#[test]
fn the_demo_agent_runs_live_in_the_studio_and_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-workspace");
    fill_demo(&root);
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
        .trust_launch(&workspace, &launch.digest, SystemTime::now())
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
