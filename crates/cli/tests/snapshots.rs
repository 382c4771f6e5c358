//! What `zstudio` prints for a person, pinned down: the human output of the main commands over the
//! captured sessions of `tests/fixtures/`, and every `--help`. The snapshots are in `snapshots/`
//! beside this file; after a deliberate change of wording, review them with `cargo insta review`
//! (or rerun with `INSTA_UPDATE=always` and read the diff).
//!
//! Everything that differs from one run to the next is replaced before comparing: the temporary
//! folders (`[WORKSPACE]`, `[DATA]`, `[AGENT]`), ages (`[AGE] ago`), times of day, run ids, pids
//! and durations. The session folders' modification times are set to one fixed instant, so that
//! their statuses and `updated` times do not depend on when the test runs.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use tempfile::TempDir;

use common::{agent_binary, captures};

/// 2026-01-01T00:00:00Z: every file and folder of a fixture workspace was last written then.
const FIXED_TIME: u64 = 1_767_225_600;

/// The captures whose sessions make the fixture workspace: a failed run, a fan-out, a run stopped
/// by SIGTERM, retries, conditional routing and a legacy engine's run.
const SESSIONS_OF: [&str; 6] = [
    "head-bb10e85-91-throw-custom-throw",
    "head-bb10e85-93-fanout-markers",
    "head-bb10e85-90-slow-sigterm",
    "v0.2.0-0ff4886-92-retries-custom-recovers",
    "head-bb10e85-03-conditional-routing-markers",
    "v0.1.4-9244367-01-hello-world-markers",
];

/// A workspace and a store of its own (`--db` in its data folder), so that no test sees another's.
struct Fixture {
    workspace: TempDir,
    data: TempDir,
}

impl Fixture {
    /// The sessions of [`SESSIONS_OF`], written at [`FIXED_TIME`].
    fn new() -> Fixture {
        let workspace = TempDir::new().unwrap();
        for name in SESSIONS_OF {
            let from = captures().join(name).join("cwd/.zibby/output/sessions");
            for session in std::fs::read_dir(from).unwrap() {
                let session = session.unwrap();
                let to = workspace
                    .path()
                    .join(".zibby/output/sessions")
                    .join(session.file_name());
                copy_dir(&session.path(), &to);
            }
        }
        set_times(&workspace.path().join(".zibby/output/sessions"));
        Fixture {
            workspace,
            data: TempDir::new().unwrap(),
        }
    }

    /// An empty workspace.
    fn empty() -> Fixture {
        Fixture {
            workspace: TempDir::new().unwrap(),
            data: TempDir::new().unwrap(),
        }
    }

    fn root(&self) -> &str {
        self.workspace.path().to_str().unwrap()
    }

    fn db(&self) -> String {
        self.data.path().join("studio.sqlite").to_str().unwrap().to_owned()
    }

    /// `zstudio COMMAND --workspace <it> --db <its store> ARGS...`.
    fn zstudio(&self, args: &[&str]) -> Output {
        let (root, db) = (self.root().to_owned(), self.db());
        let mut all: Vec<&str> = vec![args[0], "--workspace", &root, "--db", &db];
        all.extend(&args[1..]);
        zstudio(&all, None, self.data.path())
    }

    /// The human output of `zstudio ARGS` in this workspace, with what varies replaced.
    fn shown(&self, args: &[&str]) -> String {
        let output = self.zstudio(args);
        assert!(
            output.status.success(),
            "zstudio {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.stable(&String::from_utf8(output.stdout).unwrap())
    }

    /// `text` with this fixture's folders named instead of spelled out.
    fn stable(&self, text: &str) -> String {
        let workspace = self.workspace.path().canonicalize().unwrap();
        text.replace(workspace.to_str().unwrap(), "[WORKSPACE]")
            .replace(self.root(), "[WORKSPACE]")
            .replace(self.data.path().to_str().unwrap(), "[DATA]")
            .replace(&agent_binary(), "[AGENT]")
    }
}

fn zstudio(args: &[&str], stdin: Option<&Path>, data_home: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command.args(args);
    command
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", data_home)
        .env("TZ", "UTC");
    command.stdin(match stdin {
        Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
        None => Stdio::null(),
    });
    command.output().unwrap()
}

/// Copies `from` to `to`, each folder's entries in name order: with every time the same
/// ([`set_times`]), the nodes are then listed in the order their folders were made.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(from).unwrap().map(Result::unwrap).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Every file and folder under `dir` (and `dir`) last modified at [`FIXED_TIME`]; a folder after
/// its content.
fn set_times(dir: &Path) {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(FIXED_TIME);
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            set_times(&entry.path());
        } else {
            let file = std::fs::OpenOptions::new().write(true).open(entry.path()).unwrap();
            file.set_modified(at).unwrap();
        }
    }
    std::fs::File::open(dir).unwrap().set_modified(at).unwrap();
}

/// What differs from one run to the next in human output: ages, times, run ids, pids, durations.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"\b\d+[smhd] ago\b", "[AGE] ago"),
        (r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", "[TIME]"),
        (
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "[RUN_ID]",
        ),
        (r"\bpid \d+", "pid [PID]"),
        (r#""(pid|process_group|elapsed_ms|t_ms)":\d+"#, r#""$1":[N]"#),
        (r"(?m)^ *\d+\.\ds\b", "  [SECONDS]"),
        (r"\b\d+ ms\b", "[N] ms"),
        (r"\b\d+(\.\d+)?m?s\b", "[DURATION]"),
    ]
}

/// Snapshots the human output over the fixture workspace, with [`filters`] applied.
macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({ filters => filters(), prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

/// Snapshots exactly what is printed: no filter (parse and help have nothing that varies).
macro_rules! exact {
    ($name:expr, $text:expr) => {
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

#[test]
fn sessions_lists_the_fixture_sessions() {
    let fixture = Fixture::new();
    snapshot!("sessions", fixture.shown(&["sessions"]));
    snapshot!("sessions_empty", Fixture::empty().shown(&["sessions"]));
}

#[test]
fn show_prints_each_kind_of_session() {
    let fixture = Fixture::new();
    for (name, id) in [
        ("show_failed", "1795952522957_vij4"),
        ("show_fanout", "1795952527924_osmf"),
        ("show_sigterm", "1795952520676_54fl"),
        ("show_legacy", "1795952574902_xucf"),
    ] {
        snapshot!(name, fixture.shown(&["show", id]));
    }
}

#[test]
fn pins_and_a_pinned_session_first() {
    let fixture = Fixture::new();
    snapshot!("pin", fixture.shown(&["pin", "1795952527924_osmf"]));
    snapshot!("pins", fixture.shown(&["pins"]));
    snapshot!("sessions_pinned", fixture.shown(&["sessions"]));
    snapshot!("unpin", fixture.shown(&["unpin", "1795952527924_osmf"]));
}

#[test]
fn prune_dry_run_says_what_it_would_delete() {
    let fixture = Fixture::new();
    fixture.shown(&["pin", "1795952522957_vij4"]);
    snapshot!("prune_dry_run", fixture.shown(&["prune", "--keep", "2", "--dry-run"]));
}

#[test]
fn tail_prints_the_last_lines_of_a_session() {
    let fixture = Fixture::new();
    snapshot!("tail", fixture.shown(&["tail", "1795952527924_osmf", "-n", "8"]));
}

#[test]
fn parse_prints_the_timeline_of_each_kind_of_capture() {
    for (name, capture, exit) in [
        ("parse_plain", "head-bb10e85-02-pipeline-plain", Some("0")),
        ("parse_failed", "head-bb10e85-91-throw-custom-throw", Some("1")),
        ("parse_fanout", "head-bb10e85-93-fanout-markers", Some("0")),
        ("parse_retries", "v0.2.0-0ff4886-92-retries-custom-recovers", Some("0")),
        ("parse_sigterm", "head-bb10e85-90-slow-sigterm", Some("143")),
        ("parse_end_not_recorded", "head-bb10e85-90-slow-complete", None),
    ] {
        let dir = captures().join(capture);
        let stderr = dir.join("stderr.txt");
        let mut args = vec!["parse", "--stderr", stderr.to_str().unwrap()];
        if let Some(exit) = exit {
            args.extend(["--exit-code", exit]);
        }
        let data = TempDir::new().unwrap();
        let output = zstudio(&args, Some(&dir.join("stdout.txt")), data.path());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        exact!(name, String::from_utf8(output.stdout).unwrap());
    }
}

/// A run of the test agent, then what `runs`, `logs` and `search` say of it.
#[test]
fn run_runs_logs_and_search_of_a_studio_run() {
    let fixture = Fixture::empty();
    let agent = agent_binary();
    let output = fixture.zstudio(&["run", "--", &agent, "--nodes", "plan:0,act:0"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sessions = String::from_utf8(fixture.zstudio(&["sessions", "--json"]).stdout).unwrap();
    let sessions: serde_json::Value = serde_json::from_str(&sessions).unwrap();
    let session = sessions[0]["id"].as_str().unwrap().to_owned();
    // The new session's id is made of the time it began.
    let shown = |args: &[&str]| fixture.shown(args).replace(&session, "[SESSION_ID]");
    let run = fixture.stable(&String::from_utf8(output.stdout).unwrap());
    snapshot!("run", run.replace(&session, "[SESSION_ID]"));
    snapshot!("runs", shown(&["runs"]));
    snapshot!("logs", shown(&["logs", &session]));
    // Hits of different kinds come in the index's order of rows, which depends on how the run's
    // output was cut into blocks as it arrived: the same hits, sorted, so the snapshot holds.
    let mut hits: Vec<String> = shown(&["search", "plan"]).lines().map(str::to_owned).collect();
    hits.sort();
    snapshot!("search", hits.join("\n"));
    snapshot!("runs_of_a_session", shown(&["runs", "--session", &session]));
    snapshot!("show_of_a_studio_run", shown(&["show", &session]));
    snapshot!("runs_empty", Fixture::new().shown(&["runs"]));
}

#[test]
fn help_of_zstudio_and_of_each_command() {
    let data = TempDir::new().unwrap();
    let help = |args: &[&str]| {
        let output = zstudio(args, None, data.path());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    exact!("help", help(&["--help"]));
    for command in [
        "sessions", "show", "parse", "pin", "unpin", "pins", "runs", "logs", "search", "delete", "run", "stop",
        "prune", "watch", "tail", "keep", "diff", "export", "import", "open", "mcp", "otlp", "tag", "untag", "note",
        "view",
    ] {
        exact!(format!("help_{command}"), help(&[command, "--help"]));
    }
}

/// What a session is called: a run the studio started is named by its prompt (one line); a
/// session from elsewhere in the documented layout by its folder's first prompt.
#[test]
fn sessions_are_named_by_the_studio_else_by_their_folder() {
    let fixture = Fixture::empty();
    let agent = agent_binary();
    let output = fixture.zstudio(&[
        "run",
        "--prompt",
        "Plan a picnic\nfor Sunday, with a long list of everything we should bring along",
        "--",
        &agent,
        "--nodes",
        "plan:0",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let elsewhere = "1767225600000_docs";
    let folder = fixture.workspace.path().join(".zibby/output/sessions").join(elsewhere);
    let output = Command::new(&agent)
        .args(["--nodes", "draft:0", "--layout", "documented"])
        .args(["--prompt", "Summarise last week's support tickets"])
        .env("ZIBBY_PIN_SESSION_PATH", "1")
        .env("ZIBBY_SESSION_PATH", &folder)
        .current_dir(fixture.workspace.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    set_times(&fixture.workspace.path().join(".zibby/output/sessions"));
    let sessions = String::from_utf8(fixture.zstudio(&["sessions", "--json"]).stdout).unwrap();
    let sessions: serde_json::Value = serde_json::from_str(&sessions).unwrap();
    let ran = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .find(|id| *id != elsewhere)
        .unwrap()
        .to_owned();
    snapshot!(
        "sessions_named",
        fixture.shown(&["sessions"]).replace(&ran, "[SESSION_ID]")
    );
    snapshot!("show_named", fixture.shown(&["show", elsewhere]));
}
