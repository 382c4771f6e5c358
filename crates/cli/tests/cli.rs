//! `zstudio` as a user runs it: the real binary, real folders, real captures on stdin.

mod common;
// `zstudio export` and `zstudio import` (tests/cli/share.rs).
#[path = "cli/share.rs"]
mod share;
// Budgets: a run stopped by its own, the day's that refuses the next (tests/cli/budgets.rs).
#[path = "cli/budgets.rs"]
mod budgets;
// `zstudio tag`, `untag`, `note`, `view` and the filters of `sessions` (tests/cli/tags.rs).
#[path = "cli/tags.rs"]
mod tags;
// `zstudio export --otlp` and `zstudio otlp push` (tests/cli/otlp.rs).
#[path = "cli/otlp.rs"]
mod otlp;
#[path = "cli/otlp_phoenix.rs"]
mod otlp_phoenix;
// A flood of node ends exported live, every span received (tests/cli/otlp_flood.rs).
#[path = "cli/otlp_flood.rs"]
mod otlp_flood;
// `zstudio sessions --limit` from the store's catalogue (tests/cli/catalogue.rs).
#[path = "cli/catalogue.rs"]
mod catalogue;
// Each session folder's reads counted by inotify, as the core's start-up test counts them.
#[path = "../../core/tests/it/folder_reads.rs"]
mod folder_reads;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use common::{agent_binary, captures};

/// A workspace whose `.zibby/studio.toml` is `agents_toml`.
fn workspace_with_agents(agents_toml: &str) -> TempDir {
    let workspace = TempDir::new().unwrap();
    std::fs::create_dir_all(workspace.path().join(".zibby")).unwrap();
    std::fs::write(workspace.path().join(".zibby/studio.toml"), agents_toml).unwrap();
    workspace
}

/// One data folder for every command of this test binary: its store and its trash. Tests keep
/// apart by using workspaces of their own.
fn data_home() -> &'static Path {
    static DATA: std::sync::OnceLock<TempDir> = std::sync::OnceLock::new();
    DATA.get_or_init(|| TempDir::new().unwrap()).path()
}

fn zstudio(args: &[&str], stdin: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command.args(args);
    command.env_remove("ZIBBY_STUDIO_DB").env("XDG_DATA_HOME", data_home());
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
fn parse_of_a_ci_log_without_markers_reads_its_nodes_from_the_timeline() {
    let capture = captures().join("head-bb10e85-02-pipeline-plain");
    let output = zstudio(&["parse", "--exit-code", "0"], Some(&capture.join("stdout.txt")));
    let text = text_of(&output);
    assert!(text.starts_with("status    success\n"), "{text}");
    let nodes: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).map(str::trim).collect();
    assert_eq!(
        nodes,
        [
            "success     plan (5ms)",
            "success     execute (1ms)",
            "success     report (1ms)"
        ]
    );
}

#[test]
fn parse_without_an_exit_code_is_unknown_unless_the_stream_stopped() {
    let slow = captures().join("head-bb10e85-90-slow-sigterm/stdout.txt");
    assert_eq!(
        json_of(&zstudio(&["parse", "--json"], Some(&slow)))["status"],
        "unknown"
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

/// One log, one answer: the same captured log of a failed run reads the same in `parse`,
/// `diff --log` and `import`, without its exit status (`unknown`: its end was not recorded) and
/// with it and its stderr (`error`, and why), and every one of them takes both.
#[test]
fn a_log_reads_the_same_in_parse_diff_and_import() {
    let capture = captures().join("head-bb10e85-91-throw-custom-throw");
    let (stdout, stderr) = (capture.join("stdout.txt"), capture.join("stderr.txt"));
    let (stdout_arg, stderr_arg) = (stdout.to_str().unwrap(), stderr.to_str().unwrap());
    let status_of_import = |extra: &[&str]| {
        let workspace = TempDir::new().unwrap();
        let root = workspace.path().to_str().unwrap();
        let mut args = vec!["import", stdout_arg, "-w", root, "--json"];
        args.extend_from_slice(extra);
        let imported = json_of(&zstudio(&args, None));
        let id = imported["session_id"].as_str().unwrap().to_owned();
        let sessions = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
        let session = sessions
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id.as_str())
            .unwrap()
            .clone();
        session["status"].as_str().unwrap().to_owned()
    };
    let status_of_diff = |extra: &[&str]| {
        let mut args = vec![
            "diff",
            "--json",
            "--exit-zero",
            "--log",
            stdout_arg,
            "--log",
            stdout_arg,
        ];
        args.extend_from_slice(extra);
        let diff = json_of(&zstudio(&args, None));
        assert_eq!(diff["a"]["status"], diff["b"]["status"]);
        diff["a"]["status"].as_str().unwrap().to_owned()
    };
    let status_of_parse = |extra: &[&str]| {
        let mut args = vec!["parse", "--json"];
        args.extend_from_slice(extra);
        json_of(&zstudio(&args, Some(&stdout)))["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    let unrecorded = [status_of_parse(&[]), status_of_diff(&[]), status_of_import(&[])];
    assert_eq!(
        unrecorded,
        ["unknown", "unknown", "unknown"],
        "a log whose end was not recorded"
    );

    let ended = [
        status_of_parse(&["--exit-code", "1", "--stderr", stderr_arg]),
        status_of_diff(&[
            "--exit-code",
            "1",
            "--exit-code",
            "1",
            "--stderr",
            stderr_arg,
            "--stderr",
            stderr_arg,
        ]),
        status_of_import(&["--exit-code", "1", "--stderr", stderr_arg]),
    ];
    assert_eq!(ended, ["error", "error", "error"], "a log whose exit status is given");

    let once = zstudio(
        &["diff", "--log", stdout_arg, "--log", stdout_arg, "--exit-code", "1"],
        None,
    );
    assert!(!once.status.success());
    assert!(String::from_utf8_lossy(&once.stderr).contains("once for each --log"));
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
fn an_unknown_session_is_an_error_naming_it_for_every_command_that_reads_one() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    for args in [
        &["show", "1777000000000_none", "-w", root][..],
        &["logs", "1777000000000_none", "-w", root][..],
        &["runs", "--session", "1777000000000_none", "-w", root][..],
        &["tail", "1777000000000_none", "-w", root][..],
        &["delete", "1777000000000_none", "--yes", "-w", root][..],
        &["pin", "1777000000000_none", "-w", root][..],
    ] {
        let stderr = fails_saying(args, "no session `1777000000000_none`");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
    }
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

/// An I/O error says the system's reason once (the core's error says it, and gives it as its
/// cause too).
#[test]
fn an_io_error_says_the_systems_reason_once() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    for args in [
        &["import", "/nonexistent/run.log", "-w", root][..],
        &["parse", "--stderr", "/nonexistent/stderr.txt"][..],
    ] {
        let output = zstudio(args, None);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("No such file or directory").count(),
            1,
            "{args:?}: the reason once: {stderr}"
        );
    }
}

#[test]
fn a_hostile_workspace_is_refused_by_name_and_nothing_outside_it_is_touched() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let outside = TempDir::new().unwrap();
    let victim = outside.path().join("1795952522957_vij4");
    std::fs::rename(
        workspace.path().join(".zibby/output/sessions/1795952522957_vij4"),
        &victim,
    )
    .unwrap();
    std::os::unix::fs::symlink(
        &victim,
        workspace.path().join(".zibby/output/sessions/1795952522957_vij4"),
    )
    .unwrap();

    for args in [
        &["delete", "1795952522957_vij4", "--yes", "-w", root][..],
        &["show", "1795952522957_vij4", "-w", root][..],
    ] {
        fails_saying(args, "is a symbolic link");
    }
    assert!(
        victim.join(".session-info.json").is_file(),
        "the folder behind the link is intact"
    );
    // The listing shows it with its problem, and the other session as before.
    let sessions = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    let linked = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "1795952522957_vij4")
        .expect("listed");
    assert_eq!(linked["status"], "unknown");
    assert_eq!(sessions.as_array().unwrap().len(), 2);

    // Escape sequences in a session's files are shown, never sent to the terminal.
    let other = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] != "1795952522957_vij4")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let info = workspace
        .path()
        .join(".zibby/output/sessions")
        .join(&other)
        .join(".session-info.json");
    std::fs::write(&info, "{\"currentNode\": \"evil\\u001b]52;c;ZXZpbA==\\u0007\"}").unwrap();
    let shown = text_of(&zstudio(&["show", &other, "-w", root], None));
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    assert!(shown.contains("current   evil\\u001b]52;c;ZXZpbA==\\u0007"), "{shown}");
    let listed = text_of(&zstudio(&["sessions", "-w", root], None));
    assert!(
        !listed.contains('\u{1b}') && listed.contains("evil\\u001b]52"),
        "{listed}"
    );

    // A sessions folder that is a link is refused as a whole, naming it.
    let sessions_dir = workspace.path().join(".zibby/output/sessions");
    std::fs::rename(&sessions_dir, outside.path().join("sessions")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("sessions"), &sessions_dir).unwrap();
    let refused = zstudio(&["sessions", "-w", root], None);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(".zibby/output/sessions is a symbolic link"), "{stderr}");
}

/// Runs `zstudio` expecting it to fail (exit 1) with `text` on stderr; returns the stderr.
fn fails_saying(args: &[&str], text: &str) -> String {
    let output = zstudio(args, None);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    // `diff` exits as diff(1): 1 says the runs differ, trouble is 2.
    let trouble = if args.first() == Some(&"diff") { 2 } else { 1 };
    assert_eq!(output.status.code(), Some(trouble), "{args:?}: {stderr}");
    assert!(stderr.contains(text), "{args:?}: {stderr}");
    stderr
}

fn text_of(output: &Output) -> String {
    assert!(
        output.status.success(),
        "zstudio failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn pins_are_kept_between_commands_and_list_first() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    // The fan-out session is the most recently updated; pin the other one.
    text_of(&zstudio(&["pin", "1795952522957_vij4", "-w", root], None));
    let sessions = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    assert_eq!(sessions[0]["id"], "1795952522957_vij4");
    assert_eq!(sessions[0]["pinned"], true);
    assert_eq!(sessions[1]["pinned"], false);
    let pins = json_of(&zstudio(&["pins", "--json", "-w", root], None));
    assert_eq!(pins[0]["session_id"], "1795952522957_vij4");
    let table = text_of(&zstudio(&["sessions", "-w", root], None));
    assert!(
        table.lines().nth(1).unwrap().starts_with("* ") && table.contains("1795952522957_vij4"),
        "{table}"
    );
    text_of(&zstudio(&["unpin", "1795952522957_vij4", "-w", root], None));
    assert_eq!(
        json_of(&zstudio(&["pins", "--json", "-w", root], None)),
        serde_json::json!([])
    );

    let output = zstudio(&["pin", "1795952522957_nope", "-w", root], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("1795952522957_nope"));
}

#[test]
fn a_memory_store_keeps_nothing_and_a_db_path_is_honoured() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    text_of(&zstudio(&["pin", "1795952522957_vij4", "--memory", "-w", root], None));
    assert_eq!(
        json_of(&zstudio(&["pins", "--json", "--memory", "-w", root], None)),
        serde_json::json!([])
    );
    let db = workspace.path().join("elsewhere.sqlite");
    text_of(&zstudio(
        &["pin", "1795952522957_vij4", "--db", db.to_str().unwrap(), "-w", root],
        None,
    ));
    assert!(db.is_file());
    let pins = json_of(&zstudio(
        &["pins", "--json", "--db", db.to_str().unwrap(), "-w", root],
        None,
    ));
    assert_eq!(pins.as_array().unwrap().len(), 1);
    assert_eq!(
        json_of(&zstudio(&["pins", "--json", "-w", root], None)),
        serde_json::json!([]),
        "the default store is another"
    );
}

#[test]
fn delete_asks_first_then_moves_the_folder_to_the_trash() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let folder = workspace.path().join(".zibby/output/sessions/1795952522957_vij4");
    let refused = zstudio(&["delete", "1795952522957_vij4", "-w", root], None);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--yes"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(folder.is_dir(), "nothing deleted without a yes");

    text_of(&zstudio(&["delete", "1795952522957_vij4", "--yes", "-w", root], None));
    assert!(!folder.exists());
    let trashed = std::fs::read_dir(data_home().join("Trash/files")).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("1795952522957_vij4")
    });
    assert!(trashed, "the folder is in the trash, not destroyed");
    let sessions = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    assert_eq!(sessions.as_array().unwrap().len(), 1);

    let hostile = zstudio(&["delete", "../../x", "--yes", "-w", root], None);
    assert_eq!(hostile.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&hostile.stderr).contains("invalid session id"));
}

#[test]
fn prune_reports_before_it_deletes_and_keeps_pinned_sessions() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let sessions = workspace.path().join(".zibby/output/sessions");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    for id in ["1795952522957_vij4", "1795952527924_osmf"] {
        for entry in walk(&sessions.join(id)) {
            std::fs::File::open(&entry).unwrap().set_modified(old).unwrap();
        }
    }
    text_of(&zstudio(&["pin", "1795952527924_osmf", "-w", root], None));
    let report = text_of(&zstudio(&["prune", "--keep-days", "7", "--dry-run", "-w", root], None));
    assert!(report.contains("would delete 1795952522957_vij4"), "{report}");
    assert!(!report.contains("1795952527924_osmf"), "pinned: {report}");
    assert!(
        sessions.join("1795952522957_vij4").is_dir(),
        "a dry run deletes nothing"
    );
    text_of(&zstudio(&["prune", "--keep-days", "7", "--yes", "-w", root], None));
    assert!(!sessions.join("1795952522957_vij4").exists());
    assert!(sessions.join("1795952527924_osmf").is_dir());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_owned()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all.extend(walk(&path));
        } else {
            all.push(path);
        }
    }
    all
}

#[test]
fn runs_logs_and_search_read_what_the_studio_recorded() {
    use studio_core::store::{Level, NewRun, Store, StoreLocation};
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let db = workspace.path().join("studio.sqlite");
    let store = Store::open(&StoreLocation::File(db.clone())).unwrap();
    let ws = studio_core::Workspace::open(workspace.path()).unwrap();
    let session = studio_core::SessionId::parse("1795952527924_osmf").unwrap();
    let command = vec!["zibby".to_owned(), "agent".to_owned(), "run".to_owned()];
    let run = store
        .run_insert(
            &ws,
            &NewRun {
                session: &session,
                agent: Some("fanout"),
                command: &command,
                replayed_node: None,
                prompt: Some("split the work"),
                started_at: std::time::SystemTime::now(),
            },
        )
        .unwrap();
    store
        .output_writer(&run)
        .unwrap()
        .append(
            studio_core::protocol::Stream::Stdout,
            5,
            Some("left"),
            "the xylophone answer",
        )
        .unwrap();
    store
        .log(
            &ws,
            &session,
            Some(&run),
            Level::Info,
            "run.started",
            "started fanout",
            serde_json::json!({"pid": 1}),
            std::time::SystemTime::now(),
        )
        .unwrap();
    drop(store);
    let dbs = db.to_str().unwrap();

    let runs = json_of(&zstudio(&["runs", "--json", "--db", dbs, "-w", root], None));
    assert_eq!(runs[0]["id"], run.as_str());
    // This very test process is the run's owner and still alive: not interrupted.
    assert_eq!(runs[0]["status"], "running");
    let logs = json_of(&zstudio(
        &["logs", "1795952527924_osmf", "--json", "--db", dbs, "-w", root],
        None,
    ));
    assert_eq!(logs[0]["event"], "run.started");
    let hits = json_of(&zstudio(
        &["search", "xylophone", "--json", "--db", dbs, "-w", root],
        None,
    ));
    assert_eq!(hits[0]["session_id"], "1795952527924_osmf");
    assert_eq!(hits[0]["node"], "left");
    assert_eq!(hits[0]["line"], 1);
    let refused = zstudio(
        &["delete", "1795952527924_osmf", "--yes", "--db", dbs, "-w", root],
        None,
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("stop it first"));
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn run_prints_one_json_object_per_event_and_exits_with_the_outcome() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let agent = agent_binary();
    let output = zstudio(
        &["run", "--json", "-w", root, "--", &agent, "--nodes", "plan:30,act:30"],
        None,
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = json_lines(&output);
    assert_eq!(events[0]["type"], "run_started");
    assert!(events[0]["pid"].is_u64() && events[0]["session_id"].is_string() && events[0]["run_id"].is_string());
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| *t != "output")
        .collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "node_begin",
            "node_end",
            "node_begin",
            "node_end",
            "run_finished"
        ]
    );
    let end = events.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["exit_code"].as_i64()),
        (Some("success"), Some(0))
    );
    assert!(end["elapsed_ms"].is_u64() && end.get("stopped_by").is_some());
    let node_end = events.iter().find(|e| e["type"] == "node_end").unwrap();
    assert_eq!(
        (node_end["node"].as_str(), node_end["status"].as_str()),
        (Some("plan"), Some("success"))
    );
    assert!(node_end["t_ms"].is_u64());
    let output_line = events.iter().find(|e| e["type"] == "output").unwrap();
    assert!(output_line["stream"].is_string() && output_line["line"].is_string());

    let failed = zstudio(
        &[
            "run", "--json", "-w", root, "--", &agent, "--nodes", "a:10", "--fail", "a",
        ],
        None,
    );
    assert_eq!(failed.status.code(), Some(1));
    let missing = zstudio(&["run", "-w", root, "--", "zibby-no-such-agent"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stdout).contains("command not found"));
}

#[test]
fn agents_of_the_workspace_run_and_replay_by_name() {
    let agent = agent_binary();
    let workspace = workspace_with_agents(&format!(
        "[[agent]]\nname = \"trip\"\nrun = [\"{agent}\", \"--nodes\", \"plan:10,book:10\"]\n\
         replay = [\"{agent}\", \"--nodes\", \"{{node}}:10\"]\n"
    ));
    let root = workspace.path().to_str().unwrap();
    // A file nobody trusted yet: refused without a terminal, saying what it would run.
    let refused = zstudio(
        &["run", "--json", "--agent", "trip", "--prompt", "Kyoto", "-w", root],
        None,
    );
    assert_eq!(refused.status.code(), Some(1));
    // With --json, the error is its code and its message (issue 41, point 8).
    let said: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(said["error"]["code"], "agents_untrusted", "{said}");
    let stderr = said["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        stderr.contains("is not trusted yet") && stderr.contains("--trust"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("[\"{agent}\", \"--nodes\", \"plan:10,book:10\"]")),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty(), "nothing ran");
    let first = zstudio(
        &[
            "run", "--json", "--agent", "trip", "--prompt", "Kyoto", "--trust", "-w", root,
        ],
        None,
    );
    let events = json_lines(&first);
    let session = events[0]["session_id"].as_str().unwrap().to_owned();
    let replay_args = [
        "run",
        "--json",
        "--agent",
        "trip",
        "--session",
        &session,
        "--node",
        "book",
        "-w",
        root,
    ];
    // The replay command is another launch: it was not shown, so it is not trusted yet.
    let untrusted = zstudio(&replay_args, None);
    assert!(String::from_utf8_lossy(&untrusted.stderr).contains("is not trusted yet"));
    let mut trusted_replay = replay_args.to_vec();
    trusted_replay.push("--trust");
    let replay = zstudio(&trusted_replay, None);
    let events = json_lines(&replay);
    assert_eq!(events[0]["session_id"], session.as_str());
    let nodes: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "node_begin")
        .map(|e| e["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["book"]);
    let runs = json_of(&zstudio(&["runs", "--json", "--session", &session, "-w", root], None));
    assert_eq!(runs[0]["replayed_node"], "book");
    // Trusted once: the same launch runs without asking; a changed command asks again.
    let same = zstudio(&["run", "--agent", "trip", "-w", root], None);
    assert!(same.status.success(), "{}", String::from_utf8_lossy(&same.stderr));
    let changed = std::fs::read_to_string(workspace.path().join(".zibby/studio.toml"))
        .unwrap()
        .replace("plan:10,book:10", "plan:10");
    std::fs::write(workspace.path().join(".zibby/studio.toml"), changed).unwrap();
    let again = zstudio(&["run", "--agent", "trip", "-w", root], None);
    assert!(String::from_utf8_lossy(&again.stderr).contains("is not trusted yet"));

    let unknown = zstudio(&["run", "--agent", "nope", "-w", root], None);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no agent `nope`"));
    std::fs::write(
        workspace.path().join(".zibby/studio.toml"),
        "[[agent]]\nname = \"x\"\nrun = []\n",
    )
    .unwrap();
    let bad = zstudio(&["run", "--agent", "x", "-w", root], None);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("studio.toml:3: run:"), "{stderr}");
}

/// Starts `zstudio run` in the background and waits until its agent is in its first node.
/// The lines of a `zstudio run --json` still to come.
type EventLines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

fn start_background_run(root: &str, agent_args: &[&str]) -> (std::process::Child, String, EventLines) {
    let (child, session, lines, _) = start_background_run_seen(root, agent_args);
    (child, session, lines)
}

/// `zstudio run --json` of the test agent, read up to its first `node_begin`: the child, the
/// session, the lines still to come, and the events read.
fn start_background_run_seen(root: &str, agent_args: &[&str]) -> (std::process::Child, String, EventLines, Vec<Value>) {
    use std::io::BufRead;
    let agent = agent_binary();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["run", "--json", "-w", root, "--", &agent])
        .args(agent_args)
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", data_home())
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut session = String::new();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "run_started" {
            session = event["session_id"].as_str().unwrap().to_owned();
        }
        let began = event["type"] == "node_begin";
        seen.push(event);
        if began {
            break;
        }
    }
    (child, session, lines, seen)
}

fn last_event(lines: EventLines) -> Value {
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    serde_json::from_str(rest.last().expect("a run_finished line")).unwrap()
}

#[test]
fn ctrl_c_stops_gracefully_and_the_exit_status_says_cancelled() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut child, _, lines) = start_background_run(root, &["--nodes", "a:600,b:600"]);
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let end = last_event(lines);
    assert_eq!(child.wait().unwrap().code(), Some(2));
    assert_eq!(
        (end["status"].as_str(), end["stopped_by"].as_str()),
        (Some("cancelled"), Some("graceful"))
    );
}

#[test]
fn stop_from_another_process_stops_the_run_gracefully_or_by_force() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut child, session, lines) = start_background_run(root, &["--nodes", "a:700,b:700"]);
    let stopped = zstudio(&["stop", &session, "-w", root], None);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    assert!(String::from_utf8_lossy(&stopped.stderr).contains("stopping: the current node finishes first"));
    assert!(
        String::from_utf8_lossy(&stopped.stdout).contains("cancelled"),
        "{}",
        String::from_utf8_lossy(&stopped.stdout)
    );
    let rest: Vec<Value> = lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    let stopping = rest
        .iter()
        .find(|e| e["type"] == "stopping")
        .expect("the followed run says it is stopping");
    assert_eq!(stopping["forced"], false);
    assert_eq!(stopping["elsewhere"], true, "asked from another process");
    assert_eq!(rest.last().unwrap()["stopped_by"], "graceful");
    assert_eq!(child.wait().unwrap().code(), Some(2));

    let (mut child, session, lines) = start_background_run(root, &["--nodes", "a:20000", "--ignore-stop"]);
    let started = std::time::Instant::now();
    let forced = zstudio(&["stop", &session, "--force", "-w", root], None);
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    let rest: Vec<Value> = lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    assert!(
        rest.iter().any(|e| e["type"] == "stopping" && e["forced"] == true),
        "a forced stop from elsewhere is heard as forced"
    );
    let end = rest.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["stopped_by"].as_str()),
        (Some("cancelled"), Some("forced"))
    );
    assert_eq!(child.wait().unwrap().code(), Some(2));
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}

#[test]
fn stop_force_never_signals_a_stranger_that_took_over_a_runs_process_group_id() {
    use std::os::unix::process::CommandExt;
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    // A store of its own: no other test's `zstudio runs` reconciles the forged record first.
    let db = workspace.path().join("own.sqlite");
    let db = db.to_str().unwrap();
    let agent = agent_binary();
    let ran = zstudio(
        &["run", "--json", "--db", db, "-w", root, "--", &agent, "--nodes", "a:10"],
        None,
    );
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let run_id = json_lines(&ran)[0]["run_id"].as_str().unwrap().to_owned();
    // The run's processes are gone; its process group id now belongs to a stranger (as after a
    // reboot): a sleep in a group of its own, started at another time than the record says.
    let mut stranger = Command::new("sleep").arg("600").process_group(0).spawn().unwrap();
    let pid = stranger.id();
    // Reaped the moment it ends, so that a signal to it shows (its id is not held by a zombie).
    let (ended_tx, ended) = std::sync::mpsc::channel();
    let reaper = std::thread::spawn(move || ended_tx.send(stranger.wait().unwrap()));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let started: i64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let changed = rusqlite::Connection::open(db)
        .unwrap()
        .execute(
            "UPDATE runs SET status = 'running', ended_at = NULL, owner_pid = NULL, pid = ?2, pgid = ?2,
             pgid_start_time = ?3 WHERE id = ?1",
            rusqlite::params![run_id, pid, started - 1],
        )
        .unwrap();
    assert_eq!(changed, 1);

    let stopped = zstudio(&["stop", &run_id, "--force", "--db", db, "-w", root], None);
    let signalled = ended.recv_timeout(std::time::Duration::from_secs(1)).ok();
    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    let _ = reaper.join();
    assert_eq!(
        signalled, None,
        "zstudio stop --force signalled a process that is not the run's"
    );
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(!stopped.status.success(), "{stderr}");
    // Settled when the store was opened (its leader is not the run's): not running.
    assert!(stderr.contains(&format!("run `{run_id}` is not running")), "{stderr}");
    let runs = json_of(&zstudio(&["runs", "--json", "--db", db, "-w", root], None));
    assert_eq!(runs[0]["status"], "interrupted", "{runs}");
}

#[test]
fn a_run_killed_by_someone_else_is_interrupted() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut child, session, lines) = start_background_run(root, &["--nodes", "a:20000"]);
    let runs = json_of(&zstudio(&["runs", "--json", "--session", &session, "-w", root], None));
    let pid = runs[0]["pid"].as_i64().unwrap();
    Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert_eq!(last_event(lines)["status"], "interrupted");
    assert_eq!(child.wait().unwrap().code(), Some(3));
}

#[test]
fn when_the_keeper_is_killed_its_agent_ends_too() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut child, session, lines) = start_background_run(root, &["--nodes", "a:20000", "--ignore-stop"]);
    let runs = json_of(&zstudio(&["runs", "--json", "--session", &session, "-w", root], None));
    let keeper = runs[0]["pid"].as_u64().unwrap() as u32;
    let agents = studio_core::process::descendants(keeper);
    assert_eq!(agents.len(), 1, "the keeper runs one agent: {agents:?}");
    Command::new("kill")
        .args(["-KILL", &keeper.to_string()])
        .status()
        .unwrap();
    assert_eq!(last_event(lines)["status"], "interrupted");
    assert_eq!(child.wait().unwrap().code(), Some(3));
    // Not left running out of reach: the agent ended with its keeper.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let running = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
    };
    while running(agents[0]) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let survived = running(agents[0]);
    if survived {
        let _ = Command::new("kill").args(["-KILL", &agents[0].to_string()]).status();
    }
    assert!(!survived, "the agent ran on after its keeper was killed");
}

/// Waits until the run of `session` is no longer running (as the store says, reconciled).
fn wait_until_finished(root: &str, session: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let runs = json_of(&zstudio(&["runs", "--json", "--session", session, "-w", root], None));
        if runs[0]["status"] != "running" || std::time::Instant::now() > deadline {
            return runs[0].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Issue 26, point 5: `--db repo/studio.db`, relative, given from the folder above a repository
/// that ships a link where the keeper's folder used to go (beside the store). The store path is
/// made absolute once (the keeper runs in the agent's folder, not the caller's), and the keeper's
/// folder is in the data folder: runs attached and detached succeed with their output, and
/// nothing is written through the link.
#[test]
fn a_relative_store_is_resolved_once_and_the_keeper_never_writes_through_the_workspace() {
    let base = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    std::fs::create_dir(base.path().join("repo")).unwrap();
    std::os::unix::fs::symlink(outside.path(), base.path().join("repo/runs")).unwrap();
    let agent = agent_binary();
    let from_above = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
        command
            .current_dir(base.path())
            .args(["--db", "repo/studio.db"])
            .args(args)
            .env_remove("ZIBBY_STUDIO_DB")
            .env("XDG_DATA_HOME", data_home())
            .stdin(Stdio::null());
        command.output().unwrap()
    };
    for detach in [false, true] {
        let mut args = vec!["run", "--json", "-w", "repo"];
        if detach {
            args.push("--detach");
        }
        args.extend(["--", &agent, "--nodes", "plan:50,write:50"]);
        let output = from_above(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let session = json_lines(&output)[0]["session_id"].as_str().unwrap().to_owned();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let run = loop {
            let runs = json_of(&from_above(&["runs", "--json", "--session", &session, "-w", "repo"]));
            if runs[0]["status"] != "running" || std::time::Instant::now() > deadline {
                break runs[0].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        };
        assert_eq!(run["status"], "success", "detached: {detach}: {run}");
        let tail = from_above(&["tail", &session, "-w", "repo"]);
        assert!(
            String::from_utf8_lossy(&tail.stdout).contains("write"),
            "detached: {detach}: its output was kept"
        );
        let logs = String::from_utf8_lossy(&from_above(&["logs", &session, "-w", "repo"]).stdout).into_owned();
        assert!(!logs.contains("SIGKILL"), "detached: {detach}: {logs}");
    }
    assert!(base.path().join("repo/studio.db").is_file());
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing was written through the link"
    );
}

/// Issue 26, point 3: what an agent inherits is what its prompt said. `inherit_env = "all"` (the
/// default) passes the studio's environment but its own variables; a list passes only those.
#[test]
fn an_agent_inherits_what_its_file_says_and_never_the_studios_own_variables() {
    let agent = agent_binary();
    let print = "\"--print-env\", \"CLOUD_TOKEN\", \"--print-env\", \"ZIBBY_STUDIO_SECRET\", \"--print-env\", \"HOME\"";
    let workspace = workspace_with_agents(&format!(
        "[[agent]]\nname = \"all\"\nrun = [\"{agent}\", \"--nodes\", \"a:10\", {print}]\n\n\
         [[agent]]\nname = \"some\"\nrun = [\"{agent}\", \"--nodes\", \"a:10\", {print}]\n\
         inherit_env = [\"CLOUD_TOKEN\", \"ZIBBY_STUDIO_SECRET\"]\n"
    ));
    let root = workspace.path().to_str().unwrap();
    let run = |name: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(["run", "--agent", name, "--trust", "-w", root])
            .env_remove("ZIBBY_STUDIO_DB")
            .env("XDG_DATA_HOME", data_home())
            .env("CLOUD_TOKEN", "t0ken")
            .env("ZIBBY_STUDIO_SECRET", "studio-only")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let all = run("all");
    assert!(all.contains("env CLOUD_TOKEN=t0ken"), "{all}");
    assert!(all.contains("env HOME="), "{all}");
    assert!(all.contains("env ZIBBY_STUDIO_SECRET unset"), "{all}");
    let some = run("some");
    assert!(some.contains("env CLOUD_TOKEN=t0ken"), "{some}");
    assert!(some.contains("env HOME unset"), "{some}");
    assert!(
        some.contains("env ZIBBY_STUDIO_SECRET unset"),
        "listed, still the studio's own: {some}"
    );
}

#[test]
fn a_detached_run_goes_on_without_the_studio_and_its_outcome_is_recorded_later() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let agent = agent_binary();
    let started = std::time::Instant::now();
    let output = zstudio(
        &[
            "run",
            "--detach",
            "--json",
            "-w",
            root,
            "--",
            &agent,
            "--nodes",
            "plan:600,write:600",
        ],
        None,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "--detach returns at once"
    );
    let events = json_lines(&output);
    let session = events[0]["session_id"].as_str().unwrap().to_owned();

    let runs = json_of(&zstudio(&["runs", "--json", "--session", &session, "-w", root], None));
    assert_eq!(
        (runs[0]["status"].as_str(), runs[0]["detached"].as_bool()),
        (Some("running"), Some(true))
    );
    let run = wait_until_finished(root, &session);
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["exit_code"], 0);
    let logs = json_of(&zstudio(&["logs", &session, "--json", "-w", root], None));
    assert!(
        logs.as_array().unwrap().iter().any(|l| l["event"] == "run.finished"),
        "{logs}"
    );
    // Issue 12, point 6: its nodes are logged like an attached run's, those the studio saw before
    // it left and those after.
    let nodes: Vec<String> = logs
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["event"].as_str().is_some_and(|e| e.starts_with("node.")))
        .map(|l| format!("{} {}", l["event"].as_str().unwrap(), l["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        nodes,
        [
            "node.begin plan",
            "node.end plan: success",
            "node.begin write",
            "node.end write: success"
        ],
        "{logs}"
    );
    // Output printed after the studio left was recorded from the keeper's files.
    assert!(
        search_finds(root, "RESULT", &session),
        "the run's last line is in the store"
    );
}

#[test]
fn a_detached_run_can_still_be_stopped() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let agent = agent_binary();
    let output = zstudio(
        &[
            "run",
            "--detach",
            "--json",
            "-w",
            root,
            "--",
            &agent,
            "--nodes",
            "a:800,b:800,c:800",
        ],
        None,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let session = json_lines(&output)[0]["session_id"].as_str().unwrap().to_owned();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stopped = zstudio(&["stop", &session, "-w", root], None);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let run = wait_until_finished(root, &session);
    assert_eq!(
        (run["status"].as_str(), run["stopped_by"].as_str()),
        (Some("cancelled"), Some("graceful")),
        "{run}"
    );
}

#[test]
fn a_run_whose_studio_is_killed_goes_on_and_is_finished_by_the_next_studio() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut child, session, _lines) = start_background_run(root, &["--nodes", "a:500,b:500"]);
    // The studio dies without a word (kill -9); the keeper and the agent go on.
    child.kill().unwrap();
    child.wait().unwrap();
    let run = wait_until_finished(root, &session);
    assert_eq!(
        (run["status"].as_str(), run["exit_code"].as_i64()),
        (Some("success"), Some(0)),
        "{run}"
    );
    // What the agent printed after the studio died was recorded from the keeper's files.
    assert!(
        search_finds(root, "RESULT", &session),
        "the run's last line is in the store"
    );
}

#[test]
fn watch_reports_sessions_and_the_agents_file_as_they_appear_change_and_go() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut watch, changes) = spawn_watch(root);
    let wait_for = |what: &str, matches: &dyn Fn(&Value) -> bool| loop {
        let change = changes
            .recv_timeout(std::time::Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("no change: {what}"));
        if matches(&change) {
            return change;
        }
    };
    // Give the watcher its initial scan of the (missing) sessions folder.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let agent = agent_binary();
    let output = Command::new(&agent)
        .args(["--nodes", "a:100,b:100"])
        .current_dir(workspace.path())
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .output()
        .unwrap();
    assert!(output.status.success());
    let added = wait_for("session_added", &|c| c["type"] == "session_added");
    let session = added["session_id"].as_str().unwrap().to_owned();
    assert_eq!(added["summary"]["id"], session.as_str());
    assert!(added["workspace"]
        .as_str()
        .unwrap()
        .ends_with(workspace.path().file_name().unwrap().to_str().unwrap()));
    wait_for("output of node b", &|c| {
        c["type"] == "output_appended"
            && c["lines"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l.as_str() == Some("b finished: 100 ms of pretend work"))
    });
    std::fs::remove_dir_all(workspace.path().join(".zibby/output/sessions").join(&session)).unwrap();
    wait_for("session_removed", &|c| {
        c["type"] == "session_removed" && c["session_id"] == session.as_str()
    });
    // The agents file too: written, it is one `agents_changed` naming the workspace.
    std::fs::write(
        workspace.path().join(".zibby/studio.toml"),
        "[[agent]]\nname = \"a\"\nrun = [\"true\"]\n",
    )
    .unwrap();
    let changed = wait_for("agents_changed", &|c| c["type"] == "agents_changed");
    assert_eq!(changed["workspace"], added["workspace"]);
    watch.kill().unwrap();
    watch.wait().unwrap();
}

/// Issue 41, point 1: a run started outside the studio ends when it ends, whatever else works in
/// its workspace. A `zstudio watch` and a shell (with its `sleep`) started there just before the
/// run, and the `zstudio` asking from inside the workspace, all started near the session id's time
/// and kept the ended run `running` for about two minutes, and `stop` then left both stop files in
/// the finished folder for good.
#[test]
fn an_outside_run_ends_when_it_ends_whatever_else_works_in_its_workspace() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let in_workspace = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(args)
            .current_dir(workspace.path())
            .env_remove("ZIBBY_STUDIO_DB")
            .env("XDG_DATA_HOME", data_home())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Started from inside the workspace, as one would in a terminal there.
    let (mut watch, changes) = spawn_watch_in(root, workspace.path());
    let mut shell = Command::new("sh")
        .args(["-c", "sleep 120"])
        .current_dir(workspace.path())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));

    let ran = Command::new(agent_binary())
        .args(["--nodes", "plan:100,write:100"])
        .current_dir(workspace.path())
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .output()
        .unwrap();
    assert!(ran.status.success());
    let ended_at = std::time::Instant::now();

    let listed = json_of(&in_workspace(&["sessions", "--json", "-w", root]));
    let session = listed[0]["id"].as_str().unwrap().to_owned();
    assert_ne!(
        listed[0]["status"], "running",
        "asked from inside the workspace right after the end: {listed:#}"
    );
    let shown = json_of(&in_workspace(&["show", &session, "--json", "-w", root]));
    assert_ne!(shown["status"], "running", "{shown:#}");
    // The open watch hears the end too (it said `running` while the run went on).
    let mut watched = None;
    while ended_at.elapsed() < std::time::Duration::from_secs(10) {
        match changes.recv_timeout(std::time::Duration::from_millis(200)) {
            Ok(change) if change["session_id"] == session.as_str() && change["summary"].is_object() => {
                watched = Some(change["summary"]["status"].clone());
                if change["summary"]["status"] != "running" {
                    break;
                }
            }
            _ => {}
        }
    }
    assert!(
        watched.as_ref().is_some_and(|status| status != "running"),
        "the watch's last word on {session}: {watched:?}"
    );

    // A stop of the ended run is refused, and no stop file is left in its folder.
    let stopped = in_workspace(&["stop", &session, "--json", "-w", root]);
    let said = String::from_utf8_lossy(&stopped.stderr).into_owned() + &String::from_utf8_lossy(&stopped.stdout);
    assert!(!stopped.status.success(), "{said}");
    assert!(said.contains("has no run going"), "{said}");
    let folder = workspace.path().join(".zibby/output/sessions").join(&session);
    for name in [".zibby-stop", ".zibby-studio-stop"] {
        assert!(!folder.join(name).exists(), "{name} left in the ended run's folder");
    }
    for process in [&mut watch, &mut shell] {
        process.kill().unwrap();
        process.wait().unwrap();
    }
}

#[test]
fn tail_prints_the_last_lines_of_a_session() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    let output = zstudio(
        &["tail", "1795952527924_osmf", "--lines", "2", "--json", "-w", root],
        None,
    );
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines
        .iter()
        .all(|l| l["file"].as_str().unwrap().ends_with("raw_stream_output.txt") && l["line"].is_string()));
    let missing = zstudio(&["tail", "1795952527924_none", "-w", root], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("1795952527924_none"));
}

/// Whether `zstudio search WORD` finds a hit in `session`.
fn search_finds(root: &str, word: &str, session: &str) -> bool {
    let hits = json_of(&zstudio(&["search", word, "--json", "-w", root], None));
    hits.as_array().unwrap().iter().any(|h| h["session_id"] == session)
}

/// A run whose store and keeper files are on a full disk: a 2 MiB tmpfs in a mount namespace of
/// the test's own (`unshare`: no root needed where user namespaces are allowed, as on Debian).
#[test]
fn a_full_disk_never_ends_the_agent_and_the_loss_is_said() {
    let workspace = TempDir::new().unwrap();
    let full = TempDir::new().unwrap();
    let script = format!(
        // The data folder too: a store that is not the default one has its keeper's folders there.
        "mount -t tmpfs -o size=2m tmpfs '{full}' && XDG_DATA_HOME='{full}' exec '{zstudio}' run --json --db '{full}/studio.sqlite' -w '{root}' -- '{agent}' --nodes plan:10 --flood-mb 8",
        full = full.path().display(),
        zstudio = env!("CARGO_BIN_EXE_zstudio"),
        root = workspace.path().display(),
        agent = agent_binary(),
    );
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
        .env("XDG_DATA_HOME", data_home())
        .stdin(Stdio::null())
        .output()
        .expect("unshare (util-linux) runs this test's small full disk");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\nstderr: {stderr}")))
        .collect();
    let finished = events
        .iter()
        .find(|e| e["type"] == "run_finished")
        .unwrap_or_else(|| panic!("no run_finished; stderr: {stderr}"));
    assert_eq!(finished["status"], "success", "{finished}\nstderr: {stderr}");
    assert_eq!(
        finished["exit_code"], 0,
        "the agent was not ended by the full disk: {finished}"
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let said = events
        .iter()
        .filter(|e| e["type"] == "output" && e["stream"] == "stderr")
        .filter_map(|e| e["line"].as_str())
        .find(|line| line.contains("file is incomplete after"));
    assert!(said.is_some(), "the incomplete file is said in the run's output");
    let flood_done = events
        .iter()
        .filter(|e| e["type"] == "output")
        .filter_map(|e| e["line"].as_str())
        .any(|line| line.contains("flood done"));
    assert!(flood_done, "every line reached the studio live, the last one too");
}

/// Issue 12, point 9: `--memory` and detached runs leave nothing in the system's temp folder.
#[test]
fn runs_leave_nothing_in_the_temp_folder() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let tmp = TempDir::new().unwrap();
    let agent = agent_binary();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(args)
            .env_remove("ZIBBY_STUDIO_DB")
            .env("XDG_DATA_HOME", data_home())
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let memory = run(&[
        "run", "--memory", "--prompt", "secret", "-w", root, "--", &agent, "--nodes", "a:10",
    ]);
    assert!(memory.status.success(), "{}", String::from_utf8_lossy(&memory.stderr));
    let left = || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    };
    assert!(left().is_empty(), "--memory left {:?}", left());

    let refused = run(&["run", "--memory", "--detach", "-w", root, "--", &agent]);
    assert_eq!(refused.status.code(), Some(1));

    let detached = run(&[
        "run", "--detach", "--prompt", "secret", "-w", root, "--", &agent, "--nodes", "a:10",
    ]);
    assert!(
        detached.status.success(),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );
    // Settled by the next command that opens the store, once the agent has ended.
    let settled = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let runs: Value = serde_json::from_slice(&run(&["runs", "--json", "-w", root]).stdout).unwrap();
        runs[0]["status"] != "running"
    });
    assert!(settled, "the detached run was settled");
    assert!(left().is_empty(), "a detached run left {:?}", left());
}

/// A session's nodes as (name, status) pairs, from any surface's JSON.
fn node_pairs(nodes: &Value) -> Vec<(String, String)> {
    nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_owned(),
                n["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// What `run --json` told of a run: its status, and each node that began with the status its
/// last `node_end` gave it (`running` without one).
fn story_of(events: &[Value]) -> (String, Vec<(String, String)>) {
    let finished = events.iter().find(|e| e["type"] == "run_finished").unwrap();
    let ended = |name: &str| {
        events
            .iter()
            .rev()
            .find(|e| e["type"] == "node_end" && e["node"] == name)
            .map_or("running".to_owned(), |e| e["status"].as_str().unwrap().to_owned())
    };
    // A `node_discarded` takes back the last `node_begin` of its name (a title, not a node).
    let mut began: Vec<&str> = Vec::new();
    for event in events {
        let node = event["node"].as_str().unwrap_or_default();
        if event["type"] == "node_begin" {
            began.push(node);
        } else if event["type"] == "node_discarded" {
            if let Some(at) = began.iter().rposition(|n| *n == node) {
                began.remove(at);
            }
        }
    }
    let story = began.into_iter().map(|n| (n.to_owned(), ended(n))).collect();
    (finished["status"].as_str().unwrap().to_owned(), story)
}

/// `sessions`, `show` and `watch` give the same status and nodes for `session`, now and after its
/// files are made an hour older (all of the same time then); and, given `told` (what `run --json`
/// said), the same as it, with `logs` holding its ended nodes in order. Returns the nodes.
/// The nodes whose raw output `zstudio tail` prints for `session`, in the order it prints them
/// (a node's file is `<session>/<node>/raw_stream_output.txt`).
fn tailed_nodes(root: &str, session: &str) -> Vec<String> {
    let output = zstudio(&["tail", session, "-n", "1000000", "--json", "-w", root], None);
    assert!(
        output.status.success(),
        "tail {session}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut nodes: Vec<String> = Vec::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let file = serde_json::from_str::<Value>(line).unwrap()["file"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut parts = file.rsplit('/');
        let (name, node, owner) = (parts.next(), parts.next(), parts.next());
        if name == Some("raw_stream_output.txt") && owner == Some(session) {
            let node = node.unwrap_or_default().to_owned();
            if nodes.last() != Some(&node) {
                nodes.push(node);
            }
        }
    }
    nodes
}

fn surfaces_agree(root: &str, session: &str, told: Option<&(String, Vec<(String, String)>)>) -> Vec<(String, String)> {
    if let Some((_, story)) = told {
        let logs = json_of(&zstudio(&["logs", session, "--json", "-w", root], None));
        let logged: Vec<(String, String)> = logs
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["event"] == "node.end")
            .map(|l| {
                (
                    l["fields"]["node"].as_str().unwrap().to_owned(),
                    l["fields"]["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let ended: Vec<(String, String)> = story.iter().filter(|(_, s)| s != "running").cloned().collect();
        assert_eq!(logged, ended, "logs of {session}");
    }
    let read = |when: &str| {
        let listed = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
        let row = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == session)
            .unwrap()
            .clone();
        let shown = json_of(&zstudio(&["show", session, "--json", "-w", root], None));
        let watched = watched_summary(root, session);
        let seen = (row["status"].as_str().unwrap().to_owned(), node_pairs(&row["nodes"]));
        for (surface, value) in [("show", &shown), ("watch", &watched)] {
            assert_eq!(
                value["status"],
                seen.0.as_str(),
                "{surface} and sessions, {when}: {session}"
            );
            assert_eq!(
                node_pairs(&value["nodes"]),
                seen.1,
                "{surface} and sessions, {when}: {session}"
            );
        }
        if let Some(told) = told {
            assert_eq!(&seen, told, "sessions and run --json, {when}: {session}");
        }
        let tailed = tailed_nodes(root, session);
        let mut listed = seen.1.iter().map(|(name, _)| name.as_str());
        assert!(
            tailed.iter().all(|node| listed.any(|name| name == node)),
            "tail prints the nodes' output in the listing's order, {when}: {tailed:?} against {:?} ({session})",
            seen.1
        );
        seen
    };
    let now = read("now");
    make_older(&Path::new(root).join(".zibby/output/sessions").join(session), 3600);
    let later = read("an hour later");
    if told.is_some() {
        assert_eq!(later, now, "nothing changed but time: {session}");
    } else {
        // A run the studio knows nothing of is `running` only while it writes (issue 12, point 2).
        assert_eq!(
            later.1.iter().map(|n| &n.0).collect::<Vec<_>>(),
            now.1.iter().map(|n| &n.0).collect::<Vec<_>>()
        );
    }
    now.1
}

/// One elapsed time of a run everywhere (issue 12, point 3): `run --json`'s `elapsed_ms`, the
/// `elapsed_ms` of its end in `logs`, and its start to its end in `runs` (within a second: the
/// store records both ends a moment apart from the runner's clock; 118 against 119 ms here).
fn times_agree(root: &str, session: &str, events: &[Value]) {
    use studio_core::session::Timestamp;
    let elapsed = events.iter().find(|e| e["type"] == "run_finished").unwrap()["elapsed_ms"]
        .as_u64()
        .unwrap();
    let logs = json_of(&zstudio(&["logs", session, "--json", "-w", root], None));
    let logged = logs
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find_map(|l| l["fields"]["elapsed_ms"].as_u64())
        .expect("the run's end is logged with its elapsed time");
    assert_eq!(logged, elapsed, "logs and run --json: {session}");
    let runs = json_of(&zstudio(&["runs", "--json", "--session", session, "-w", root], None));
    let at = |field: &str| Timestamp::parse_rfc3339(runs[0][field].as_str().unwrap()).unwrap().0;
    let recorded = at("ended_at") - at("started_at");
    assert!(
        recorded.abs_diff(elapsed) <= 1_000,
        "runs says {recorded} ms from start to end, run --json {elapsed} ms: {session}"
    );
}

/// Issue 12's cross-surface check: `run --json`, `sessions`, `show`, `watch` and `logs` give the
/// same status and the same node names in the same order with the same statuses, and one elapsed
/// time (`times_agree`), now and after the session's files are made an hour older: live runs of the test agent (success, failure, a
/// stop file from outside, a forced stop), engine captures replayed through the studio (nodes
/// without folders; a log without markers, read from its human timeline; a crash), and a run
/// started from a terminal, which the studio did not see (its surfaces agree with each other).
#[test]
fn every_surface_tells_the_same_story_of_a_run_now_and_an_hour_later() {
    let agent = agent_binary();
    let capture = |name: &str| captures().join(name).to_str().unwrap().to_owned();
    let (plain, crash) = (
        capture("head-bb10e85-02-pipeline-plain"),
        capture("head-bb10e85-91-throw-custom-throw"),
    );
    let scenarios: [(&str, Vec<&str>); 5] = [
        ("success", vec!["--nodes", "plan:30,write:30,check:30"]),
        ("error", vec!["--nodes", "plan:30,boom:30,never:30", "--fail", "boom"]),
        // The stop file appears after `plan` (a stop from outside the studio): graceful.
        (
            "cancelled",
            vec!["--nodes", "plan:30,write:30,check:30", "--stop-after", "plan"],
        ),
        ("success", vec!["replay", &plain, "--speed", "20"]),
        ("error", vec!["replay", &crash, "--speed", "20"]),
    ];
    for (expected_status, agent_args) in scenarios {
        let workspace = TempDir::new().unwrap();
        let root = workspace.path().to_str().unwrap();
        let mut args = vec!["run", "--json", "-w", root, "--", &agent];
        args.extend_from_slice(&agent_args);
        let events = json_lines(&zstudio(&args, None));
        let session = events[0]["session_id"].as_str().unwrap().to_owned();
        let told = story_of(&events);
        assert_eq!(told.0, expected_status, "{agent_args:?}");
        assert!(!told.1.is_empty(), "{agent_args:?} has nodes");
        surfaces_agree(root, &session, Some(&told));
        times_agree(root, &session, &events);
    }

    // Forced: the node never finishes; `zstudio stop --force` from another process ends it.
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let (mut child, session, lines, mut events) =
        start_background_run_seen(root, &["--nodes", "a:20000,b:10", "--ignore-stop"]);
    let stopped = zstudio(&["stop", &session, "--force", "-w", root], None);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    events.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    child.wait().unwrap();
    let told = story_of(&events);
    assert_eq!(told.0, "cancelled");
    surfaces_agree(root, &session, Some(&told));
    times_agree(root, &session, &events);

    // From a terminal: the agent alone, printing markers, with no studio watching.
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let ran = Command::new(&agent)
        .args(["--nodes", "plan:30,write:30,check:30"])
        .current_dir(workspace.path())
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .output()
        .unwrap();
    assert!(ran.status.success());
    let listed = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    let session = listed[0]["id"].as_str().unwrap().to_owned();
    let nodes = surfaces_agree(root, &session, None);
    assert_eq!(
        nodes.iter().map(|n| n.0.as_str()).collect::<Vec<_>>(),
        ["plan", "write", "check"],
        "the folder's nodes in the order they ran"
    );
}

/// `zstudio watch --json` of `root`, and its changes as they are printed.
fn spawn_watch(root: &str) -> (std::process::Child, std::sync::mpsc::Receiver<Value>) {
    spawn_watch_in(root, Path::new("."))
}

/// [`spawn_watch`], the watch's working folder `cwd`.
fn spawn_watch_in(root: &str, cwd: &Path) -> (std::process::Child, std::sync::mpsc::Receiver<Value>) {
    use std::io::BufRead;
    let mut watch = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["watch", "--json", "-w", root])
        .current_dir(cwd)
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", data_home())
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let (sender, changes) = std::sync::mpsc::channel::<Value>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    (watch, changes)
}

/// The summary `zstudio watch --json` first reports of `session` (its initial scan).
fn watched_summary(root: &str, session: &str) -> Value {
    let (mut watch, changes) = spawn_watch(root);
    let summary = loop {
        let change = changes
            .recv_timeout(std::time::Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("watch reported nothing of {session}"));
        if change["type"] == "session_added" && change["session_id"] == session {
            break change["summary"].clone();
        }
    };
    watch.kill().unwrap();
    watch.wait().unwrap();
    summary
}

/// Sets every file and folder below `dir` (and `dir`) `seconds` older than now.
fn make_older(dir: &Path, seconds: u64) {
    let at = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds);
    for path in walk(dir).into_iter().chain([dir.to_owned()]) {
        let times = std::fs::FileTimes::new().set_modified(at).set_accessed(at);
        std::fs::File::open(&path).unwrap().set_times(times).unwrap();
    }
}

/// Issue 12, point 8: `tail` prints a session the studio ran from its stored output when the
/// folder has no output file, and follows it as it is stored.
#[test]
fn tail_prints_and_follows_the_stored_output_of_a_studio_run() {
    use std::io::BufRead;
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let lines = workspace.path().join("lines.txt");
    std::fs::write(&lines, "one\ntwo\nthree\n").unwrap();
    let events = json_lines(&zstudio(
        &["run", "--json", "-w", root, "--", "cat", lines.to_str().unwrap()],
        None,
    ));
    let session = events[0]["session_id"].as_str().unwrap().to_owned();
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        text_of(&zstudio(&["tail", &session, "-n", "2", "-w", root], None)),
        "two\nthree\n"
    );
    let json = json_lines(&zstudio(&["tail", &session, "--json", "-w", root], None));
    assert_eq!(json.len(), 3);
    assert_eq!(json[0]["run_id"], run_id.as_str());

    // Followed: a run printing a line every 100 ms (each node's `working` lines).
    let agent = agent_binary();
    let mut run = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args([
            "run", "--json", "-w", root, "--", &agent, "--nodes", "a:1500", "--lines", "15",
        ])
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", data_home())
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut run_events = std::io::BufReader::new(run.stdout.take().unwrap()).lines();
    let started: Value = serde_json::from_str(&run_events.next().unwrap().unwrap()).unwrap();
    let session = started["session_id"].as_str().unwrap().to_owned();
    let mut tail = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["tail", &session, "-f", "-n", "0", "-w", root])
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", data_home())
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let (lines_seen, seen) = std::sync::mpsc::channel();
    let tail_out = tail.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(tail_out).lines().map_while(Result::ok) {
            if lines_seen.send(line).is_err() {
                break;
            }
        }
    });
    // Bounded: a tail that never prints the line fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let followed = std::iter::from_fn(|| {
        seen.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .ok()
    })
    .find(|line| line.contains("a: working (15/15)"));
    let _ = tail.kill();
    let _ = tail.wait();
    assert!(
        followed.is_some(),
        "tail -f printed the run's last working line as it was stored"
    );
    for _ in run_events.by_ref() {}
    assert!(run.wait().unwrap().success());
}

/// An agent started through the keeper gets the default SIGPIPE: `yes | head -n 1` ends `yes`
/// quietly, as in a terminal (with SIGPIPE ignored, `yes` would fail with "Broken pipe").
#[test]
fn an_agent_through_the_keeper_gets_the_default_sigpipe() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let events = json_lines(&zstudio(
        &[
            "run",
            "--json",
            "--memory",
            "-w",
            root,
            "--",
            "sh",
            "-c",
            "yes | head -n 1",
        ],
        None,
    ));
    let lines: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "output")
        .filter_map(|e| e["line"].as_str())
        .collect();
    assert_eq!(lines, ["y"], "{events:?}");
}

// ---- zstudio diff (issue 16) ----

/// `zstudio diff … --json --exit-zero`, which must succeed.
fn diff_json(args: &[&str]) -> Value {
    let mut all = vec!["diff", "--json", "--exit-zero"];
    all.extend_from_slice(args);
    json_of(&zstudio(&all, None))
}

/// The nodes of a diff as `name#occurrence change a-status b-status`.
fn diffed_nodes(diff: &Value) -> Vec<String> {
    diff["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let status = |side: &Value| side["status"].as_str().unwrap_or("-").to_owned();
            format!(
                "{}#{} {} {} {}",
                n["name"].as_str().unwrap(),
                n["occurrence"],
                n["change"].as_str().unwrap(),
                status(&n["a"]),
                status(&n["b"])
            )
        })
        .collect()
}

/// The lines of every hunk of a text diff, as `op` + text.
fn hunk_lines(text_diff: &Value) -> Vec<String> {
    text_diff["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|h| h["lines"].as_array().unwrap().iter())
        .map(|l| format!("{}{}", l["op"].as_str().unwrap(), l["text"].as_str().unwrap()))
        .collect()
}

fn node_named<'a>(diff: &'a Value, name: &str, occurrence: u64) -> &'a Value {
    diff["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name && n["occurrence"] == occurrence)
        .unwrap_or_else(|| panic!("no node {name}#{occurrence} in {diff:#}"))
}

#[test]
fn diff_of_two_logs_matches_retries_and_loops_by_name_and_occurrence() {
    let recovers = captures().join("v0.2.0-0ff4886-92-retries-custom-recovers/stdout.txt");
    // The same workflow exhausting its attempts, as the test agent prints it.
    let dir = TempDir::new().unwrap();
    let exhausts = dir.path().join("exhausts.stdout.txt");
    let agent = Command::new(agent_binary())
        .args(["--nodes", "flaky:5,after:5", "--fail", "flaky", "--lines", "1"])
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(agent.status.code(), Some(1));
    std::fs::write(&exhausts, &agent.stdout).unwrap();
    let diff = diff_json(&["--log", recovers.to_str().unwrap(), "--log", exhausts.to_str().unwrap()]);
    assert_eq!(
        diffed_nodes(&diff),
        ["flaky#0 changed success error", "after#0 removed success -"]
    );
    for side in ["a", "b"] {
        assert_eq!(
            diff[side],
            serde_json::json!({"session_id": null, "run_id": null, "status": "unknown", "elapsed_ms": null, "usage": null})
        );
    }
    let flaky = node_named(&diff, "flaky", 0);
    let keys: Vec<&str> = flaky.as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["name", "change", "a", "b", "output", "prompt", "result", "cost_change"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert_eq!(flaky["a"]["elapsed_ms"], 2, "the engine's `└ done 2ms`");
    let lines = hunk_lines(&flaky["output"]);
    assert!(lines.contains(&"-flaky custom attempt 3".to_owned()), "{lines:?}");
    assert!(lines.contains(&"+flaky: about to fail".to_owned()), "{lines:?}");
    let hunk = &flaky["output"]["hunks"][0];
    assert_eq!((hunk["a_start"].as_u64(), hunk["b_start"].as_u64()), (Some(1), Some(1)));
    // The removed node's output is shown as its lines, all removed.
    assert_eq!(hunk_lines(&node_named(&diff, "after", 0)["output"]), ["-◆ node: after"]);

    let routing = captures().join("head-bb10e85-03-conditional-routing-markers/stdout.txt");
    let revise = captures().join("../compare/conditional-routing-revise.stdout.txt");
    let diff = diff_json(&["--log", routing.to_str().unwrap(), "--log", revise.to_str().unwrap()]);
    assert_eq!(
        diffed_nodes(&diff),
        [
            "draft#0 same success success",
            "review#0 changed success success",
            "revise#0 added - success",
            "review#1 added - success",
            "ship#0 same success success",
        ]
    );
    assert_eq!(
        hunk_lines(&node_named(&diff, "review", 0)["output"]),
        ["+◆ verdict: needs work"]
    );
    // Durations alone are no change: draft took 4 ms in A and 3 ms in B.
    let draft = node_named(&diff, "draft", 0);
    assert_eq!(
        (draft["a"]["elapsed_ms"].as_u64(), draft["b"]["elapsed_ms"].as_u64()),
        (Some(4), Some(3))
    );
    let outside = hunk_lines(&diff["output"]);
    assert!(
        outside.contains(&"-3. ship".to_owned()) && outside.contains(&"+3. revise".to_owned()),
        "{outside:?}"
    );

    let only = diff_json(&[
        "--log",
        routing.to_str().unwrap(),
        "--log",
        revise.to_str().unwrap(),
        "--node",
        "review",
    ]);
    assert_eq!(
        diffed_nodes(&only),
        ["review#0 changed success success", "review#1 added - success"]
    );
    let differing = zstudio(
        &[
            "diff",
            "--log",
            routing.to_str().unwrap(),
            "--log",
            revise.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(differing.status.code(), Some(1), "as diff(1): 1 when the runs differ");
    let text = String::from_utf8(differing.stdout).unwrap();
    let same = zstudio(
        &[
            "diff",
            "--log",
            routing.to_str().unwrap(),
            "--log",
            routing.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(same.status.code(), Some(0), "as diff(1): 0 when they are the same");
    let kept = zstudio(
        &[
            "diff",
            "--exit-zero",
            "--log",
            routing.to_str().unwrap(),
            "--log",
            revise.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(kept.status.code(), Some(0), "--exit-zero keeps 0");
    assert!(
        text.contains("added    revise") && text.contains("+◆ content: Draft v2"),
        "{text}"
    );
    fails_saying(
        &[
            "diff",
            "--log",
            routing.to_str().unwrap(),
            "--log",
            revise.to_str().unwrap(),
            "--node",
            "nope",
        ],
        "no node `nope` in either run",
    );
    fails_saying(
        &["diff", "--log", routing.to_str().unwrap(), "--log", "/no/such.log"],
        "/no/such.log",
    );
    fails_saying(&["diff", "--log", routing.to_str().unwrap()], "--log is given twice");
}

#[test]
fn diff_of_two_live_runs_shows_added_removed_changed_and_same_nodes() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let agent = agent_binary();
    let run_in = |session: Option<&str>, args: &[&str]| -> (String, String) {
        let mut all = vec!["run", "--json", "-w", root];
        if let Some(session) = session {
            all.extend(["--session", session]);
        }
        all.extend(["--", &agent, "--layout", "documented", "--prompt", "same"]);
        all.extend_from_slice(args);
        let events = json_lines(&zstudio(&all, None));
        let started = &events[0];
        (
            started["session_id"].as_str().unwrap().to_owned(),
            started["run_id"].as_str().unwrap().to_owned(),
        )
    };
    let run = |args: &[&str]| run_in(None, args);
    let (a, _) = run(&["--nodes", "plan:10,check:10,research:10,write:10"]);
    let (b, b_run) = run(&["--nodes", "plan:10,check:10,outline:10,write:10", "--fail", "write"]);
    // B's check node decided otherwise: its result.json differs as data.
    let check = workspace
        .path()
        .join(".zibby/output/sessions")
        .join(&b)
        .join("nodes/check/result.json");
    std::fs::write(&check, r#"{"node": "check", "ok": false, "notes": ["too long"]}"#).unwrap();

    let diff = diff_json(&["-w", root, &a, &b]);
    assert_eq!(
        diffed_nodes(&diff),
        [
            "plan#0 same success success",
            "check#0 changed success success",
            "research#0 removed success -",
            "outline#0 added - success",
            "write#0 changed success error",
        ]
    );
    assert_eq!(diff["a"]["session_id"], a.as_str());
    assert_eq!(diff["b"]["run_id"], b_run.as_str());
    assert_eq!(
        (diff["a"]["status"].as_str(), diff["b"]["status"].as_str()),
        (Some("success"), Some("error"))
    );
    assert!(diff["a"]["elapsed_ms"].is_u64());
    let plan = node_named(&diff, "plan", 0);
    assert!(plan["a"]["elapsed_ms"].is_u64() && plan["b"]["started_ms"].is_u64());
    assert_eq!(plan["prompt"]["changed"], false);
    let check = node_named(&diff, "check", 0);
    assert_eq!(check["output"]["changed"], false);
    assert_eq!(
        check["result"]["paths"],
        serde_json::json!([
            {"path": "/notes", "change": "added", "a": null, "b": ["too long"]},
            {"path": "/ok", "change": "changed", "a": true, "b": false},
        ])
    );
    assert!(hunk_lines(&check["result"]).contains(&"-  \"ok\": true".to_owned()));
    let outline = node_named(&diff, "outline", 0);
    assert_eq!(
        hunk_lines(&outline["output"]),
        ["+◆ node: outline", "+outline: working (1/2)", "+outline: working (2/2)"]
    );
    assert!(hunk_lines(&outline["prompt"]).contains(&"+You are the outline step. Do your part.".to_owned()));
    assert!(hunk_lines(&node_named(&diff, "write", 0)["output"]).contains(&"+write: about to fail".to_owned()));

    // A run against the previous run of its session: the session continued with other nodes.
    let (continued, _) = run_in(Some(&a), &["--nodes", "plan:10,check:10"]);
    assert_eq!(continued, a);
    let runs = json_of(&zstudio(&["runs", "--json", "-w", root, "--session", &a], None));
    let (latest, previous) = (runs[0]["id"].as_str().unwrap(), runs[1]["id"].as_str().unwrap());
    let diff = diff_json(&["-w", root, previous, latest]);
    assert_eq!(
        diffed_nodes(&diff),
        [
            "plan#0 same success success",
            "check#0 same success success",
            "research#0 removed success -",
            "write#0 removed success -",
        ]
    );
    // The folder holds the latest run's files: the earlier run has none, so none are compared.
    assert!(node_named(&diff, "plan", 0)["prompt"].is_null() && node_named(&diff, "plan", 0)["result"].is_null());
    // A session id means its latest run.
    assert_eq!(diff_json(&["-w", root, previous, &a])["b"]["run_id"], latest);

    fails_saying(&["diff", "-w", root, &a, "1795952527924_none"], "1795952527924_none");
    fails_saying(&["diff", "-w", root, &a, "../x"], "../x");
}

/// `zstudio run --json` of the test agent with `nodes` in `root`, recorded in `db`, which must
/// succeed; the session's id.
fn run_test_agent(db: &str, root: &str, nodes: &str) -> String {
    let agent = agent_binary();
    let output = zstudio(
        &["run", "--json", "--db", db, "-w", root, "--", &agent, "--nodes", nodes],
        None,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    json_lines(&output)[0]["session_id"].as_str().unwrap().to_owned()
}

/// Issue 41.3: a recorded run and a session folder (a bucket's, a terminal run's) are compared
/// like with like, each from its folder's raw streams, not the folder's raw stream against the
/// stdout the store recorded.
#[test]
fn diff_of_a_recorded_run_and_a_copy_of_its_folder_finds_them_the_same() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let db = workspace.path().join("studio.sqlite");
    let dbs = db.to_str().unwrap();
    let recorded = run_test_agent(dbs, root, "plan:10,code:10,check:10");
    // The same folder under another id, as a bucket or a terminal run gives it: no run recorded.
    let sessions = workspace.path().join(".zibby/output/sessions");
    let copy = "1700000000000_copied";
    copy_dir(&sessions.join(&recorded), &sessions.join(copy));

    let diff = diff_json(&["--db", dbs, "-w", root, copy, &recorded]);
    assert_eq!(
        diffed_nodes(&diff),
        [
            "plan#0 same success success",
            "code#0 same success success",
            "check#0 same success success"
        ],
        "{diff:#}"
    );
    assert_eq!(diff["output"]["changed"], false, "{diff:#}");
    assert!(
        diff["a"]["run_id"].is_null() && diff["b"]["run_id"].is_string(),
        "{diff:#}"
    );
    // Two recorded runs are still compared by what the store recorded.
    let second = run_test_agent(dbs, root, "plan:10,code:10,check:10");
    let stored = diff_json(&["--db", dbs, "-w", root, &recorded, &second]);
    assert_eq!(diffed_nodes(&stored).len(), 3, "{stored:#}");
}

/// The usage fixtures (tests/fixtures/usage: the agents' formats, by hand from their docs).
fn usage_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/usage")
        .join(name)
}

#[test]
fn sessions_show_and_runs_carry_each_nodes_usage_and_honest_totals() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let db = workspace.path().join("studio.sqlite");
    let dbs = db.to_str().unwrap();
    // A real run of the test agent; then its nodes' raw streams hold what agents print.
    let session = run_test_agent(dbs, root, "plan:10,code:10,check:10");
    let folder = workspace.path().join(".zibby/output/sessions").join(&session);
    for (node, raw) in [
        ("plan", "claude-code-stream-json.jsonl"),
        ("code", "gemini-cli-stream-json-unknown-model.jsonl"),
    ] {
        std::fs::copy(usage_fixture(raw), folder.join(node).join("raw_stream_output.txt")).unwrap();
    }
    // `check` keeps the test agent's plain text: no usage.

    let sessions = json_of(&zstudio(&["sessions", "--json", "--db", dbs, "-w", root], None));
    let row = &sessions[0];
    let nodes = row["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    let plan = &nodes.iter().find(|n| n["name"] == "plan").unwrap()["usage"];
    assert_eq!(plan["format"], "claude_code");
    assert_eq!(plan["cost_usd"], 0.0482715);
    assert_eq!(plan["cost_source"], "reported");
    assert_eq!(plan["api_equivalent"], true);
    assert_eq!(plan["tokens"]["cache_read"], 27_520);
    let code = &nodes.iter().find(|n| n["name"] == "code").unwrap()["usage"];
    assert_eq!(code["cost_usd"], Value::Null, "an unknown model: no cost, never 0");
    assert_eq!(code["cost_source"], "unknown");
    assert_eq!(
        nodes.iter().find(|n| n["name"] == "check").unwrap()["usage"],
        Value::Null
    );
    assert_eq!(row["usage"]["nodes"], 3);
    assert_eq!(row["usage"]["nodes_priced"], 1);
    assert_eq!(row["usage"]["cost_usd"], 0.0482715);

    let table = text_of(&zstudio(&["sessions", "--db", dbs, "-w", root], None));
    assert!(table.contains("COST") && table.contains("≥ $0.0483"), "{table}");
    // One session: the workspace's total is that session's.
    assert!(
        table.contains("cost of all sessions: ≥ $0.0483 (1 of 3 nodes priced), "),
        "{table}"
    );

    let shown = json_of(&zstudio(&["show", &session, "--json", "--db", dbs, "-w", root], None));
    assert_eq!(shown["usage"], row["usage"], "show and sessions agree");
    assert_eq!(shown["nodes"][0]["usage"]["format"], "claude_code");
    let text = text_of(&zstudio(&["show", &session, "--db", dbs, "-w", root], None));
    assert!(text.contains("usage     ≥ $0.0483 (1 of 3 nodes priced)"), "{text}");
    assert!(
        text.contains("reported (API-equivalent)") && text.contains("API-equivalent estimate"),
        "{text}"
    );

    let runs = json_of(&zstudio(&["runs", "--json", "--db", dbs, "-w", root], None));
    assert_eq!(runs[0]["usage"], row["usage"], "the run ran every node");
    let runs_text = text_of(&zstudio(&["runs", "--db", dbs, "-w", root], None));
    assert!(runs_text.contains("≥ $0.0483 (1 of 3 nodes priced)"), "{runs_text}");
}

#[test]
fn diff_puts_each_nodes_cost_and_tokens_side_by_side() {
    let (a, b) = (
        usage_fixture("stdout-wrapped.txt"),
        usage_fixture("stdout-one-line.txt"),
    );
    let args = [
        "diff",
        "--exit-zero",
        "--log",
        a.to_str().unwrap(),
        "--log",
        b.to_str().unwrap(),
    ];
    let text = text_of(&zstudio(&args, None));
    let plan = text
        .lines()
        .find(|l| l.contains(" plan "))
        .unwrap_or_else(|| panic!("{text}"));
    // A: the wrapped stream ($0.0483, reported); B: the one-line result ($0.0123).
    assert!(
        plan.contains("A: success in 12300 ms · $0.0483") && plan.contains("B: success in 12300 ms · $0.0123"),
        "{plan}"
    );
    // 33,210 tokens against 2,063 (the fixtures' `result` events).
    assert!(plan.ends_with("(−$0.0360, −31,147 tokens)"), "{plan}");
    assert!(
        text.contains("A  log: unknown · ≥ $0.0483 (1 of 2 nodes priced), 33,210 tokens (in 12,"),
        "{text}"
    );
    // Two lower bounds are not subtracted: the tokens are.
    assert!(text.contains("B − A: −31,147 tokens\n"), "{text}");

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let diff = json_of(&zstudio(&json_args, None));
    let node = diff["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "plan")
        .unwrap()
        .clone();
    assert_eq!(node["a"]["usage"]["cost_usd"], 0.0482715);
    assert_eq!(node["b"]["usage"]["cost_label"], "$0.0123");
    assert_eq!(node["cost_change"], "−$0.0360, −31,147 tokens");
    assert_eq!(diff["a"]["usage"]["nodes_priced"], 1);
}

/// A run the studio did not start (the test agent run as from a terminal, in the workspace):
/// `--force` is refused with why, and a graceful stop writes the stop files, says what it cannot
/// do, and the run ends after its current node (the next one never starts).
#[test]
fn stop_asks_a_run_the_studio_did_not_start_to_stop_after_its_current_node() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let terminal = Command::new(agent_binary())
        .args(["run", "--nodes", "first:1500,second:1500,third:1500"])
        .current_dir(workspace.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sessions = workspace.path().join(".zibby/output/sessions");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let session = loop {
        let found = std::fs::read_dir(&sessions)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| e.path().join(".session-info.json").is_file());
        if let Some(entry) = found {
            break entry.file_name().to_string_lossy().into_owned();
        }
        assert!(std::time::Instant::now() < deadline, "the agent made no session folder");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };

    let forced = zstudio(&["stop", &session, "--force", "-w", root], None);
    assert!(!forced.status.success(), "a forced stop of an outside run is refused");
    let refusal = String::from_utf8_lossy(&forced.stderr);
    assert!(
        refusal.contains("not started by the studio") && refusal.contains("without --force"),
        "{refusal}"
    );
    assert!(
        !sessions.join(&session).join(".zibby-stop").exists(),
        "a refused stop writes nothing"
    );

    let asked = zstudio(&["stop", &session, "-w", root], None);
    let words = String::from_utf8_lossy(&asked.stdout);
    assert!(asked.status.success(), "{}", String::from_utf8_lossy(&asked.stderr));
    assert!(
        words.contains("stop before its next node") && words.contains("cannot force it"),
        "{words}"
    );
    let asked_json = zstudio(&["stop", &session, "-w", root, "--json"], None);
    assert!(asked_json.status.success(), "asking twice is no error");
    assert_eq!(json_of(&asked_json)["session_id"], session.as_str());

    let ran = terminal.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(stdout.contains("stopped"), "the engine saw the stop file: {stdout}");
    assert!(
        !sessions.join(&session).join("third").exists() && !stdout.contains("third"),
        "the run ended after its current node: {stdout}"
    );

    // Its process is gone: the session says it ended at once (not two minutes later), and there
    // is nothing left to stop.
    let folder = sessions.join(&session);
    assert!(
        folder.join(".zibby-studio-stop").exists(),
        "the engine removed only the name it knows (as the current engine does)"
    );
    let listed = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    assert_eq!(listed[0]["status"], "unknown", "{listed}");
    // Issue 41: no stop file of the studio's is left in the ended run's folder (it would end
    // the next run of an engine that knows that name at once); the listing that saw the end
    // removed it, keeping the folder's time.
    for name in [".zibby-stop", ".zibby-studio-stop"] {
        assert!(!folder.join(name).exists(), "{name} left in the ended run's folder");
    }
    // One someone else wrote stays.
    std::fs::write(folder.join(".zibby-stop"), "mine\n").unwrap();
    json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    assert!(
        folder.join(".zibby-stop").exists(),
        "a stop file of someone else's is not removed"
    );
    let over = zstudio(&["stop", &session, "-w", root], None);
    assert!(!over.status.success());
    assert!(
        String::from_utf8_lossy(&over.stderr).contains("has no run going"),
        "{}",
        String::from_utf8_lossy(&over.stderr)
    );
}

/// A command that cannot start (not found) says why once, and leaves no empty session behind.
#[test]
fn a_command_that_cannot_start_says_why_once_and_leaves_no_session() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let output = zstudio(&["run", "-w", root, "--", "/no/such/agent"], None);
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stdout);
    assert_eq!(said.matches("cannot start `/no/such/agent`").count(), 1, "{said}");
    assert!(said.contains("nothing kept"), "{said}");
    let sessions = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
    assert_eq!(sessions, serde_json::json!([]), "no `error 0/0` session is left");
    let runs = json_of(&zstudio(&["runs", "--json", "-w", root], None));
    assert_eq!(runs, serde_json::json!([]));
}

/// `[watch] sweep_bound` that is no duration in range stops `zstudio watch` at once, naming the
/// file, its line and the key.
#[test]
fn watch_refuses_a_sweep_bound_out_of_range_naming_the_file_and_key() {
    let workspace = workspace_with_agents("[watch]\nsweep_bound = \"2d\"\n");
    let root = workspace.path().to_str().unwrap();
    let out = zstudio(&["watch", "--json", "-w", root], None);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(".zibby/studio.toml:2: sweep_bound:"), "{said}");
    assert!(said.contains("between 1 s and 24 h"), "{said}");
}

/// A `zstudio watch` hears of a run's end that another process records, within a second, even
/// when the run's last folder write came well before its end (a failed last node writes no
/// folder): the store's runs are watched too.
#[test]
fn watch_hears_of_a_run_ended_by_another_process_within_a_second() {
    use std::io::BufRead;
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let mut watch = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["watch", "--json", "-w", root])
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", data_home())
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let (lines, heard) = std::sync::mpsc::channel::<(std::time::Instant, Value)>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = lines.send((std::time::Instant::now(), serde_json::from_str(&line).unwrap()));
        }
    });
    // The watcher is in place once it reports the first session (the run's own).
    let ran = zstudio(
        &[
            "run",
            "--json",
            "-w",
            root,
            "--",
            &agent_binary(),
            "--nodes",
            "a:100,b:600",
            "--fail",
            "b",
        ],
        None,
    );
    let ended = std::time::Instant::now();
    assert_eq!(ran.status.code(), Some(1), "{}", String::from_utf8_lossy(&ran.stderr));
    let deadline = ended + std::time::Duration::from_secs(10);
    let heard_error = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (at, change) = heard.recv_timeout(left).expect("watch said the run failed");
        if change["summary"]["status"] == "error" {
            break at;
        }
    };
    let _ = watch.kill();
    let _ = watch.wait();
    let delay = heard_error.saturating_duration_since(ended);
    assert!(
        delay < std::time::Duration::from_secs(1),
        "watch heard of the end {delay:?} after it"
    );
    eprintln!("watch heard of the run's end {delay:?} after it was recorded");
}

/// Issue 29: a run from a terminal (the test agent as a user runs it) whose middle node is a
/// custom code node (no folder, as the engine's) and whose last node fails. Once its process is
/// gone, `sessions` and `show` agree at once: it ended, how is not recorded (`unknown`), the
/// folder's nodes in the order they began (the failed one, named by `.session-info.json`, last),
/// and one sentence saying what is not known and how to get the full story. Two minutes later
/// (every file's time set back past the quiet window) they say the same.
#[test]
fn a_terminal_runs_end_and_nodes_read_the_same_in_sessions_and_show_after_two_minutes() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    let ran = Command::new(agent_binary())
        .args([
            "run",
            "--nodes",
            "fetch:200,process:200,publish:200",
            "--custom",
            "process",
        ])
        .args(["--fail", "publish"])
        .current_dir(workspace.path())
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(1), "the last node failed");

    let read = || {
        let mut listed = json_of(&zstudio(&["sessions", "--json", "-w", root], None));
        let session = listed[0]["id"].as_str().unwrap().to_owned();
        let mut shown = json_of(&zstudio(&["show", &session, "--json", "-w", root], None));
        let human = text_of(&zstudio(&["show", &session, "-w", root], None));
        // What time passing changes, and only that: how long ago it was written.
        listed[0].as_object_mut().unwrap().remove("updated_at");
        shown.as_object_mut().unwrap().remove("updated_at");
        (session, listed, shown, human)
    };
    let (session, listed, shown, human) = read();
    let row = &listed[0];
    assert_eq!(row["status"], "unknown", "{row}");
    let names = |nodes: &Value| -> Vec<(String, String)> {
        nodes
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["name"].as_str().unwrap().into(), n["status"].as_str().unwrap().into()))
            .collect()
    };
    assert_eq!(
        names(&row["nodes"]),
        [("fetch".into(), "success".into()), ("publish".into(), "unknown".into())],
        "{row}"
    );
    assert_eq!(names(&shown["nodes"]), names(&row["nodes"]), "show and sessions agree");
    assert_eq!(shown["status"], row["status"]);
    let not_known = row["not_known"].as_str().expect("it says what is not known");
    assert!(not_known.contains("zstudio run -- "), "{not_known}");
    assert_eq!(shown["not_known"], row["not_known"]);
    assert_eq!(human.matches("not known").count(), 1, "said once: {human}");
    let nodes_part = &human[human.find("\nnodes\n").expect("a nodes section")..];
    assert!(
        nodes_part.find("fetch").unwrap() < nodes_part.find("publish").unwrap(),
        "{human}"
    );

    // Two minutes on: every file of the session written 121 s earlier.
    let folder = workspace.path().join(".zibby/output/sessions").join(&session);
    let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(121);
    let mut pending = vec![folder];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        std::fs::File::open(&path).unwrap().set_modified(earlier).unwrap();
    }
    let (_, listed_later, shown_later, human_later) = read();
    assert_eq!(listed_later, listed, "sessions, two minutes on");
    assert_eq!(shown_later, shown, "show, two minutes on");
    assert_eq!(
        human_later
            .lines()
            .filter(|l| !l.starts_with("updated"))
            .collect::<Vec<_>>(),
        human.lines().filter(|l| !l.starts_with("updated")).collect::<Vec<_>>()
    );
}
