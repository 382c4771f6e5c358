//! The test agent behaves like the engine: what it prints parses to the timeline it was asked
//! for, it honours stop files, and replaying a capture gives the capture's own timeline.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use studio_core::timeline::{read_capture, Exit, RunEnd, RunTimeline};
use studio_core::{Status, Workspace};
use tempfile::TempDir;

fn agent() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zibby-test-agent"))
}

fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/zibby-captures")
}

fn end_of(output: &Output) -> RunEnd {
    let exit = match (output.status.code(), output.status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        _ => unreachable!("a process ends with a code or a signal"),
    };
    RunEnd {
        exit,
        signalled_by_studio: false,
    }
}

fn timeline_of(output: &Output) -> RunTimeline {
    read_capture(&output.stdout, &output.stderr, Some(end_of(output)))
}

fn nodes(timeline: &RunTimeline) -> Vec<(String, Status, usize)> {
    timeline
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.status, n.depth))
        .collect()
}

/// Runs the agent pinned to a session folder of `workspace`, as the studio would.
fn run_pinned(workspace: &Path, id: &str, args: &[&str]) -> (Output, PathBuf) {
    let session = workspace.join(".zibby/output/sessions").join(id);
    let output = agent()
        .args(args)
        .current_dir(workspace)
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .env("ZIBBY_PIN_SESSION_PATH", "1")
        .env("ZIBBY_SESSION_PATH", &session)
        .env("ZIBBY_SESSION_ID", id)
        .output()
        .unwrap();
    (output, session)
}

#[test]
fn replaying_every_capture_gives_the_timeline_of_the_capture_itself() {
    for entry in std::fs::read_dir(captures()).unwrap() {
        let capture = entry.unwrap().path();
        if !capture.is_dir() {
            continue;
        }
        let output = agent()
            .arg("replay")
            .arg(&capture)
            .args(["--speed", "50"])
            .output()
            .unwrap();
        let replayed = timeline_of(&output);
        let status: i32 = std::fs::read_to_string(capture.join("exit_code.txt"))
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let original = read_capture(
            &std::fs::read(capture.join("stdout.txt")).unwrap(),
            &std::fs::read(capture.join("stderr.txt")).unwrap(),
            Some(RunEnd {
                exit: Exit::from_shell_status(status),
                signalled_by_studio: false,
            }),
        );
        assert_eq!(
            output.stdout,
            std::fs::read(capture.join("stdout.txt")).unwrap(),
            "{}",
            capture.display()
        );
        assert_eq!(nodes(&replayed), nodes(&original), "{}", capture.display());
        assert_eq!(replayed.status, original.status, "{}", capture.display());
    }
}

#[test]
fn a_run_prints_the_timeline_it_was_given_and_writes_its_session_folder() {
    let workspace = TempDir::new().unwrap();
    let (output, session) = run_pinned(
        workspace.path(),
        "1795952600000_abcd",
        &["--nodes", "plan:20,act:20", "--layout", "documented"],
    );
    let timeline = timeline_of(&output);
    assert_eq!(timeline.status, Status::Success);
    assert_eq!(timeline.session_id.as_deref(), Some("1795952600000_abcd"));
    assert_eq!(
        nodes(&timeline),
        [("plan".into(), Status::Success, 0), ("act".into(), Status::Success, 0)]
    );
    for file in [
        ".session-info.json",
        "result.json",
        "events.json",
        "plan/raw_stream_output.txt",
        "nodes/act/prompt.txt",
    ] {
        assert!(session.join(file).is_file(), "{file} missing");
    }
    let read = Workspace::open(workspace.path())
        .unwrap()
        .read_session(
            &studio_core::SessionId::parse("1795952600000_abcd").unwrap(),
            SystemTime::now(),
        )
        .unwrap();
    assert_eq!(read.status, Status::Success);
    assert_eq!(read.current_node.as_deref(), Some("act"));
    assert!(read.problems.is_empty(), "{:?}", read.problems);
}

#[test]
fn inner_graphs_nest_and_failures_end_twice_like_the_engine() {
    let workspace = TempDir::new().unwrap();
    let (output, _) = run_pinned(
        workspace.path(),
        "1795952600001_nest",
        &["--nodes", "outer:10,>inner:10,>boom:10,after:10", "--fail", "boom"],
    );
    let timeline = timeline_of(&output);
    assert_eq!(timeline.status, Status::Error);
    assert_eq!(
        nodes(&timeline),
        [
            ("outer".into(), Status::Error, 0),
            ("inner".into(), Status::Success, 1),
            ("boom".into(), Status::Error, 1)
        ]
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.matches(r#"{"phase":"node_end","node":"boom"}"#).count(),
        2,
        "{stdout}"
    );
    assert!(timeline.error.unwrap().starts_with("Error: Node 'boom' failed"));
}

#[test]
fn a_stop_file_ends_the_run_after_the_current_node() {
    let workspace = TempDir::new().unwrap();
    let (output, session) = run_pinned(
        workspace.path(),
        "1795952600002_stop",
        &["--nodes", "a:10,b:10,c:10", "--stop-after", "a"],
    );
    let timeline = timeline_of(&output);
    assert_eq!(timeline.status, Status::Cancelled);
    assert_eq!(nodes(&timeline), [("a".into(), Status::Success, 0)]);
    assert!(
        !session.join(".zibby-stop").exists(),
        "the agent deletes the stop file it knows"
    );
}

#[test]
fn a_stale_legacy_stop_file_stops_before_the_first_node_and_stays() {
    let workspace = TempDir::new().unwrap();
    let session = workspace.path().join(".zibby/output/sessions/1795952600003_pre");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::write(session.join(".zibby-studio-stop"), "").unwrap();
    let (output, _) = run_pinned(workspace.path(), "1795952600003_pre", &["--nodes", "a:10"]);
    let timeline = timeline_of(&output);
    assert_eq!(timeline.status, Status::Cancelled);
    assert!(timeline.nodes.is_empty());
    assert!(
        session.join(".zibby-studio-stop").exists(),
        "a name the era does not know is never deleted"
    );
    let (output, _) = run_pinned(
        workspace.path(),
        "1795952600003_pre",
        &["--nodes", "a:10", "--ignore-stop"],
    );
    assert_eq!(timeline_of(&output).status, Status::Success, "--ignore-stop ignores it");
}

#[test]
fn without_the_gates_no_markers_are_printed_and_the_folder_is_its_own() {
    let workspace = TempDir::new().unwrap();
    let output = agent()
        .args(["--nodes", "a:5"])
        .current_dir(workspace.path())
        .env_remove("ZIBBY_EMIT_GRAPH_MARKERS")
        .env_remove("ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS")
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(!String::from_utf8_lossy(&output.stdout).contains("__WORKFLOW_GRAPH_LOG__"));
    let sessions = Workspace::open(workspace.path())
        .unwrap()
        .list_sessions(SystemTime::now())
        .unwrap();
    assert_eq!(sessions.len(), 1, "it made its own session folder");
    assert_eq!(
        Some(sessions[0].id.as_str()),
        timeline_of(&output).session_id.as_deref()
    );
}

#[test]
fn the_demo_fills_a_workspace_with_sessions_of_every_outcome() {
    let root = TempDir::new().unwrap();
    // Given relative to the current folder, as the README's command gives it; a store of the
    // test's own (never the user's).
    let output = agent()
        .arg("fill-demo")
        .arg("demo")
        .arg("--db")
        .arg(root.path().join("studio.sqlite"))
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sessions = Workspace::open(root.path().join("demo"))
        .unwrap()
        .list_sessions(SystemTime::now())
        .unwrap();
    assert_eq!(sessions.len(), 7);
    let statuses: std::collections::HashSet<_> = sessions.iter().map(|s| s.status).collect();
    for status in [Status::Success, Status::Error, Status::Cancelled] {
        assert!(statuses.contains(&status), "{status} among {statuses:?}");
    }
}

#[test]
fn bad_arguments_are_named() {
    let output = agent().args(["--nodes", "a:soon"]).output().unwrap();
    assert_eq!(output.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`soon`"));
}
