//! `zstudio` as a user runs it: the real binary, real folders, real captures on stdin.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zibby-captures")
}

fn zstudio(args: &[&str], stdin: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command.args(args);
    command.stdin(match stdin {
        Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
        None => Stdio::null(),
    });
    command.output().unwrap()
}

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "zstudio failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A workspace holding the sessions of two captures.
fn fixture_workspace() -> TempDir {
    let dir = TempDir::new().unwrap();
    for name in ["head-bb10e85-91-throw-custom-throw", "head-bb10e85-93-fanout-markers"] {
        let from = captures().join(name).join("cwd/.zibby/output/sessions");
        for session in std::fs::read_dir(from).unwrap() {
            let session = session.unwrap();
            let to = dir.path().join(".zibby/output/sessions").join(session.file_name());
            copy_dir(&session.path(), &to);
        }
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn parse_prints_status_session_and_nodes_of_a_failed_run() {
    let capture = captures().join("head-bb10e85-91-throw-custom-throw");
    let stderr = capture.join("stderr.txt");
    let output = zstudio(
        &[
            "parse",
            "--json",
            "--exit-code",
            "1",
            "--stderr",
            stderr.to_str().unwrap(),
        ],
        Some(&capture.join("stdout.txt")),
    );
    let timeline = json_of(&output);
    assert_eq!(timeline["status"], "error");
    assert_eq!(timeline["session_id"], "1795952522957_vij4");
    assert_eq!(
        timeline["error"],
        "Error: Node 'explode' failed after 1 attempt(s): boom: simulated failure"
    );
    let nodes: Vec<(String, String, u64)> = timeline["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().into(),
                n["status"].as_str().unwrap().into(),
                n["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nodes,
        [
            ("prepare".into(), "success".into(), 0),
            ("explode".into(), "error".into(), 0)
        ]
    );
}

#[test]
fn parse_without_an_exit_code_is_running_unless_the_stream_stopped() {
    let slow = captures().join("head-bb10e85-90-slow-sigterm/stdout.txt");
    assert_eq!(
        json_of(&zstudio(&["parse", "--json"], Some(&slow)))["status"],
        "running"
    );
    assert_eq!(
        json_of(&zstudio(&["parse", "--json", "--exit-code", "143"], Some(&slow)))["status"],
        "interrupted"
    );
    let stopped = captures().join("head-bb10e85-90-slow-stop-pinned-session/stdout.txt");
    assert_eq!(
        json_of(&zstudio(&["parse", "--json"], Some(&stopped)))["status"],
        "cancelled"
    );
}

#[test]
fn parse_prints_a_readable_timeline() {
    let capture = captures().join("head-bb10e85-02-pipeline-markers");
    let output = zstudio(&["parse", "--exit-code", "0"], Some(&capture.join("stdout.txt")));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.starts_with("status    success\nsession   1795952464415_3prb\n"),
        "{text}"
    );
    assert!(text.contains("success     plan (5ms)"), "{text}");
}

#[test]
fn sessions_lists_the_documented_fields() {
    let workspace = fixture_workspace();
    let sessions = json_of(&zstudio(
        &["sessions", "--json", "--workspace", workspace.path().to_str().unwrap()],
        None,
    ));
    let sessions = sessions.as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    for session in sessions {
        for field in ["id", "path", "status", "current_node", "updated_at", "nodes"] {
            assert!(session.get(field).is_some(), "field {field} missing in {session}");
        }
    }
    let fanout = sessions.iter().find(|s| s["id"] == "1795952527924_osmf").unwrap();
    assert_eq!(fanout["current_node"], "join");
    assert_eq!(fanout["nodes"].as_array().unwrap().len(), 5);
    assert!(fanout["nodes"][0]["name"].is_string() && fanout["nodes"][0]["status"].is_string());

    let table = zstudio(&["sessions", "--workspace", workspace.path().to_str().unwrap()], None);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("1795952527924_osmf") && table.contains("1795952522957_vij4"),
        "{table}"
    );
}

#[test]
fn show_prints_one_session_without_its_config_unless_asked() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let session = json_of(&zstudio(&["show", "1795952522957_vij4", "--json", "-w", root], None));
    assert_eq!(session["id"], "1795952522957_vij4");
    assert_eq!(session["current_node"], "explode");
    assert!(session["info"].get("config").is_none());
    let with = json_of(&zstudio(
        &["show", "1795952522957_vij4", "--json", "--with-config", "-w", root],
        None,
    ));
    assert_eq!(with["info"]["config"], serde_json::json!({}));
}

#[test]
fn bad_input_gets_one_line_naming_it_and_a_failing_exit() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["show", "1795952522957_zzzz", "-w", root], "1795952522957_zzzz"),
        (&["show", "../../etc", "-w", root], "invalid session id `../../etc`"),
        (
            &["sessions", "-w", "/nonexistent/zibby-workspace"],
            "/nonexistent/zibby-workspace",
        ),
        (
            &["parse", "--stderr", "/nonexistent/stderr.txt"],
            "/nonexistent/stderr.txt",
        ),
    ];
    for (args, named) in cases {
        let output = zstudio(args, None);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?} should name {named}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line, got {stderr}");
    }
}
