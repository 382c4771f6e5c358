//! `zstudio serve --stdio` as a client speaks to it: the real binary, real folders and store, the
//! test agent as the agent; raw frames on its pipes, and `RemoteClient` over them.

// This binary uses the test agent alone, not the captures.
#[path = "serve/client.rs"]
mod client;
#[allow(dead_code)]
mod common;
// `zstudio mcp`, driven by the MCP SDK's client.
#[path = "serve/mcp.rs"]
mod mcp;
// `zstudio mcp`, driven by the official Python SDK's client (`.venv/mcp`, scripts/setup.sh).
#[path = "serve/mcp_python.rs"]
mod mcp_python;
#[path = "mcp_client/python.rs"]
mod mcp_python_client;
// The MCP SDK's own client.
#[path = "mcp_client/rust.rs"]
mod mcp_rust_client;
// The injection fixture.
#[path = "mcp_client/injection.rs"]
mod mcp_injection;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use common::agent_binary;

/// How long a test waits for one frame.
const FRAME_WAIT: Duration = Duration::from_secs(30);

/// A workspace and a store of its own, in one temporary folder.
pub struct Place {
    pub dir: TempDir,
}

impl Place {
    pub fn create() -> Place {
        let place = Place {
            dir: TempDir::new().unwrap(),
        };
        std::fs::create_dir_all(place.workspace().join(".zibby/output/sessions")).unwrap();
        place
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("store.sqlite")
    }

    /// `zstudio NAME -w WORKSPACE --db DB` (more arguments to add), as [`Place::zstudio`].
    pub fn command(&self, name: &str) -> Command {
        let mut command = self.zstudio();
        command
            .args([name, "-w"])
            .arg(self.workspace())
            .arg("--db")
            .arg(self.db());
        command
    }

    /// `zstudio`, its data folder in the place (the keeper's folders).
    pub fn zstudio(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
        command
            .env_remove("ZIBBY_STUDIO_DB")
            .env("XDG_DATA_HOME", self.dir.path().join("data"));
        command
    }

    /// The arguments that start the server on this place, its nonce last.
    pub fn serve_args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            "--stdio".into(),
            "-w".into(),
            self.workspace().display().to_string(),
            "--db".into(),
            self.db().display().to_string(),
        ]
    }

    /// `.zibby/studio.toml` with the agent `trip` (the test agent, two nodes of `millis` each),
    /// trusted through a first run of it.
    pub fn trusted_agent(&self, millis: u64) {
        let agent = agent_binary();
        std::fs::write(
            self.workspace().join(".zibby/studio.toml"),
            format!("[[agent]]\nname = \"trip\"\nrun = [\"{agent}\", \"--nodes\", \"plan:{millis},book:{millis}\"]\n"),
        )
        .unwrap();
        let trusted = self
            .zstudio()
            .args(["run", "--agent", "trip", "--prompt", "first", "--trust", "--json", "-w"])
            .arg(self.workspace())
            .arg("--db")
            .arg(self.db())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    }
}

/// A server spoken to in raw frames: its lines read by a thread.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Notifications read while waiting for a reply.
    pub notifications: Vec<Value>,
}

impl Server {
    /// Starts `zstudio serve --stdio --nonce test-nonce` on `place`.
    pub fn start(place: &Place) -> Server {
        let mut child = place
            .zstudio()
            .args(place.serve_args())
            .args(["--nonce", "test-nonce"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines,
            notifications: Vec::new(),
        }
    }

    /// Writes `text` (one or more lines) to the server.
    pub fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    pub fn request(&mut self, id: u64, method: &str, params: Value) {
        self.send(&format!("{}\n", json!({"id": id, "method": method, "params": params})));
    }

    /// The next line, as JSON.
    pub fn next_frame(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(FRAME_WAIT)
            .unwrap_or_else(|e| panic!("no frame from the server within {FRAME_WAIT:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
    }

    /// The next reply (notifications before it are kept in `notifications`).
    pub fn reply(&mut self) -> Value {
        loop {
            let frame = self.next_frame();
            if frame.get("method").is_some() && frame.get("id").is_none() {
                self.notifications.push(frame);
            } else {
                return frame;
            }
        }
    }

    /// The banner, then `hello` answered.
    pub fn greet(&mut self) -> Value {
        let banner = self.next_frame();
        self.request(0, "hello", json!({"protocol_version": 2}));
        let hello = self.reply();
        assert_eq!(hello["id"], 0, "{hello}");
        assert_eq!(hello["result"]["protocol_version"], 2, "{hello}");
        banner
    }

    /// Closes the server's input and waits for it to exit, at most `within`.
    pub fn end_input(&mut self, within: Duration) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait_exit(&mut self.child, within)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `child` to exit, at most `within`; panics past it.
pub fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `check` every 50 ms until it returns `Some`, at most `within`.
pub fn eventually<T>(within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The saved views a remote workspace's window saves, lists and deletes are the host's store's,
/// the same as its `zstudio view`'s; a run's own budget (the Run bar's) is held to a budget's rule.
#[test]
fn views_and_a_runs_budget_are_the_hosts() {
    let place = Place::create();
    place.trusted_agent(100);
    let mut server = Server::start(&place);
    server.greet();
    let filters = json!({"status": "error", "tags": ["nightly"]});
    server.request(1, "view_save", json!({"name": "nightly failures", "filters": filters}));
    let saved = server.reply();
    assert_eq!(saved["result"][0]["name"], "nightly failures", "{saved}");
    let listed = place.command("view").args(["list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["filters"], filters, "zstudio view lists it: {listed}");
    server.request(2, "view_save", json!({"name": " padded", "filters": {}}));
    assert_eq!(server.reply()["error"]["code"], "invalid_view_name");
    server.request(
        3,
        "view_save",
        json!({"name": "bad tag", "filters": {"tags": ["a\u{202e}b"]}}),
    );
    let refused = server.reply();
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.contains("tag")),
        "{refused}"
    );
    server.request(4, "view_delete", json!({"name": "nightly failures"}));
    assert_eq!(server.reply()["result"], json!([]));
    server.request(5, "views_list", json!({}));
    assert_eq!(server.reply()["result"], json!([]));
    server.request(
        6,
        "run_start",
        json!({"agent": "trip", "prompt": "p", "session_id": null, "max_cost_usd": -1.0}),
    );
    let refused = server.reply();
    assert_eq!(refused["error"]["code"], "invalid_request", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("a budget is a number of US dollars")),
        "{refused}"
    );
    let status = server.end_input(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_banner_comes_first_and_replies_carry_their_request_ids() {
    let place = Place::create();
    let mut server = Server::start(&place);
    let banner = server.greet();
    assert_eq!(banner["nonce"], "test-nonce");
    assert_eq!(banner["protocol_version"], 2);
    assert_eq!(banner["zstudio"], env!("CARGO_PKG_VERSION"));
    // Several requests at once, written in one go: each reply names its request.
    server.send(&format!(
        "{}\n{}\n{}\n",
        json!({"id": 7, "method": "workspace_get", "params": {}}),
        json!({"id": 8, "method": "sessions_list"}),
        json!({"id": 9, "method": "runs_list", "params": {"session_id": null}}),
    ));
    let mut replies: Vec<Value> = (0..3).map(|_| server.reply()).collect();
    replies.sort_by_key(|reply| reply["id"].as_u64());
    let root = std::fs::canonicalize(place.workspace()).unwrap();
    assert_eq!(
        replies[0]["result"]["root"],
        root.display().to_string(),
        "{}",
        replies[0]
    );
    // The listing is carried as a table (`remote::table`): no rows, no columns.
    assert_eq!(
        replies[1]["result"]["sessions"],
        json!({"rows": [], "columns": []}),
        "{}",
        replies[1]
    );
    assert_eq!(replies[2]["result"], json!([]), "{}", replies[2]);
    let status = server.end_input(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn errors_are_a_code_and_a_message() {
    let place = Place::create();
    place.trusted_agent(10);
    std::fs::write(
        place.workspace().join(".zibby/studio.toml"),
        format!(
            "[[agent]]\nname = \"trip\"\nrun = [\"{}\", \"--nodes\", \"other:1\"]\n",
            agent_binary()
        ),
    )
    .unwrap();
    let mut server = Server::start(&place);
    server.greet();
    server.request(1, "session_get", json!({"session_id": "../etc"}));
    let invalid = server.reply();
    assert_eq!(invalid["id"], 1);
    assert_eq!(invalid["error"]["code"], "invalid_session_id", "{invalid}");
    assert!(
        invalid["error"]["message"].as_str().unwrap().contains("../etc"),
        "{invalid}"
    );
    server.request(2, "run_stop", json!({"run_id": "no-such-run", "force": false}));
    let not_found = server.reply();
    assert_eq!(not_found["error"]["code"], "run_not_found", "{not_found}");
    // The agents file changed since it was trusted: refused, with the launch to show.
    server.request(
        3,
        "run_start",
        json!({"agent": "trip", "prompt": "p", "session_id": null}),
    );
    let untrusted = server.reply();
    assert_eq!(untrusted["error"]["code"], "agents_untrusted", "{untrusted}");
    assert_eq!(untrusted["error"]["details"]["agent"], "trip", "{untrusted}");
}

#[test]
fn a_bad_frame_is_answered_with_an_error_and_the_server_goes_on() {
    let place = Place::create();
    let mut server = Server::start(&place);
    server.next_frame();
    // Before `hello`, nothing else is answered but with an error.
    server.request(1, "sessions_list", json!({}));
    let early = server.reply();
    assert_eq!(early["id"], 1);
    assert_eq!(early["error"]["code"], "invalid_request", "{early}");
    assert!(early["error"]["message"].as_str().unwrap().contains("hello"), "{early}");
    server.request(2, "hello", json!({"protocol_version": 2}));
    assert_eq!(server.reply()["result"]["protocol_version"], 2);
    for (line, says) in [
        ("this is not json\n".to_owned(), "not JSON"),
        ("[1, 2]\n".to_owned(), "not a request"),
        (format!("{}\n", "x".repeat(3 << 20)), "more than 1048576 bytes"),
        (
            format!("{}\n", json!({"id": 5, "method": "no_such_method"})),
            "no method `no_such_method`",
        ),
        (
            format!(
                "{}\n",
                json!({"id": 6, "method": "search", "params": {"query": 3, "limit": 1}})
            ),
            "the parameters of `search`",
        ),
        (
            format!(
                "{}\n",
                json!({"id": 7, "method": "pin_add", "params": {"session_id": "a", "extra": 1}})
            ),
            "unknown field `extra`",
        ),
    ] {
        server.send(&line);
        let answered = server.reply();
        assert_eq!(answered["error"]["code"], "invalid_request", "{answered}");
        let message = answered["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message} should say {says}");
    }
    server.request(8, "workspace_get", json!({}));
    let still = server.reply();
    assert_eq!(still["id"], 8);
    assert!(still["result"]["root"].is_string(), "{still}");
    assert_eq!(server.end_input(Duration::from_secs(20)).code(), Some(0));
}

/// Issue 42, point 5: a file's chunk follows its request's line as raw bytes (`"data": N`). Only
/// `import_write` takes them; a chunk sent with another method or over the bound is refused and
/// its bytes skipped, never read as frames (bytes that look like a request included), and the
/// server goes on.
#[test]
fn data_after_a_request_line_is_taken_by_import_write_alone_and_skipped_otherwise() {
    let place = Place::create();
    let mut server = Server::start(&place);
    server.greet();
    let lookalike = format!("{}\n", json!({"id": 99, "method": "workspace_get"}));
    let with_data = |id: u64, method: &str, params: Value, data: &str| {
        format!(
            "{}\n{data}",
            json!({"id": id, "method": method, "params": params, "data": data.len()})
        )
    };
    server.send(&with_data(1, "workspace_get", json!({}), &lookalike));
    let refused = server.reply();
    assert_eq!(refused["id"], 1, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_request", "{refused}");
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("takes no data"),
        "{refused}"
    );
    let over = format!("{lookalike}{}", "x".repeat(1 << 20));
    server.send(&with_data(
        2,
        "import_write",
        json!({"import_id": "a", "offset": 0}),
        &over,
    ));
    let refused = server.reply();
    assert_eq!(refused["id"], 2, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 1048576"),
        "{refused}"
    );
    server.request(3, "import_open", json!({"name": "run.log", "size": lookalike.len()}));
    let opened = server.reply();
    let import_id = opened["result"]["import_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{opened}"))
        .to_owned();
    server.send(&with_data(
        4,
        "import_write",
        json!({"import_id": import_id, "offset": 0}),
        &lookalike,
    ));
    let written = server.reply();
    assert_eq!(written["id"], 4, "{written}");
    assert!(written["result"].is_null(), "{written}");
    server.request(5, "workspace_get", json!({}));
    let still = server.reply();
    assert_eq!(
        still["id"], 5,
        "nothing answered the bytes that looked like a request: {still}"
    );
    assert!(still["result"]["root"].is_string(), "{still}");
    assert_eq!(server.end_input(Duration::from_secs(20)).code(), Some(0));
}

#[test]
fn a_client_of_another_protocol_version_is_refused_and_the_server_exits() {
    let place = Place::create();
    // 1: a client of the build before the listing was carried as a table.
    for version in [999, 1] {
        let mut server = Server::start(&place);
        server.next_frame();
        server.request(1, "hello", json!({ "protocol_version": version }));
        let refused = server.reply();
        assert_eq!(refused["error"]["code"], "protocol_mismatch", "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&version.to_string()) && message.contains("version 2"),
            "{message}"
        );
        // It exits on its own, its input still open.
        let status = wait_exit(&mut server.child, Duration::from_secs(20));
        assert_eq!(status.code(), Some(1));
    }
}

/// The test agent's run (`agent_args`), through `zstudio run` on `place`, to its end (a failed
/// run too): its run id.
fn run_locally(place: &Place, agent_args: &[&str]) -> String {
    let output = place
        .command("run")
        .arg("--json")
        .arg("--")
        .arg(agent_binary())
        .args(agent_args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let first: Value = serde_json::from_slice(output.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    first["run_id"].as_str().unwrap().to_owned()
}

#[test]
fn output_is_read_by_pages_from_an_offset_never_whole() {
    let place = Place::create();
    let run_id = run_locally(&place, &["--nodes", "flood:0", "--flood-mb", "8"]);
    let mut server = Server::start(&place);
    server.greet();
    // A page far into the output: only the lines from there, at most the page's bound.
    server.request(
        1,
        "run_output",
        json!({"run_id": run_id, "from_seq": 40000, "limit": 100}),
    );
    let page = server.reply();
    let lines = page["result"]["lines"].as_array().unwrap_or_else(|| panic!("{page}"));
    assert_eq!(lines.len(), 100, "{page}");
    assert_eq!(lines[0]["seq"], 40000);
    assert_eq!(lines[99]["seq"], 40099);
    // A limit past the bound gets the bound: no reply holds the whole output.
    server.request(
        2,
        "run_output",
        json!({"run_id": run_id, "from_seq": 0, "limit": 10_000_000}),
    );
    let capped = server.reply();
    assert_eq!(
        capped["result"]["lines"].as_array().unwrap().len(),
        5000,
        "a page is at most 5,000 lines"
    );
    let total = capped["result"]["total"].as_u64().unwrap_or(0);
    assert!(total > 40100, "the output has {total} lines");
}

/// A finished session `id` in `place`'s workspace, as an engine writes one.
fn engine_session(place: &Place, id: &str) {
    let dir = place.workspace().join(".zibby/output/sessions").join(id);
    std::fs::create_dir_all(dir.join("plan")).unwrap();
    std::fs::write(dir.join("plan/raw_stream_output.txt"), "plan output\n").unwrap();
    let info = format!(
        r#"{{"sessionPath":"{}","sessionTimestamp":1799000000000,"currentNode":"plan","createdAt":"2026-12-02T12:00:00.000Z","config":{{}}}}"#,
        dir.display()
    );
    std::fs::write(dir.join(".session-info.json"), info).unwrap();
}

#[test]
fn a_session_made_as_changes_subscribe_is_answered_is_heard() {
    let place = Place::create();
    for i in 0..200 {
        engine_session(&place, &format!("1798000000000_{i:04}"));
    }
    let mut server = Server::start(&place);
    server.greet();
    // Listed first, as a window does: the folder index the watcher starts from.
    server.request(1, "sessions_list", json!({}));
    let listing = server.reply();
    assert_eq!(
        listing["result"]["sessions"]["rows"].as_array().map(Vec::len),
        Some(200),
        "{listing}"
    );
    server.request(2, "changes_subscribe", json!({}));
    assert_eq!(server.reply()["result"], Value::Null);
    // At once: the server's watcher may not be up yet (it starts behind the answer).
    engine_session(&place, "1799000000000_0001");
    let added = eventually(Duration::from_secs(20), "the new session's change", || {
        let next = server.next_frame();
        (next["method"] == "change" && next["params"]["session_id"] == "1799000000000_0001").then_some(next)
    });
    assert_eq!(added["params"]["type"], "session_added", "{added}");
}

#[test]
fn a_run_started_through_the_server_is_heard_and_outlives_it() {
    let place = Place::create();
    place.trusted_agent(1500);
    let mut server = Server::start(&place);
    server.greet();
    server.request(1, "changes_subscribe", json!({}));
    assert_eq!(server.reply()["result"], Value::Null);
    server.request(
        2,
        "run_start",
        json!({"agent": "trip", "prompt": "Kyoto", "session_id": null}),
    );
    let started = server.reply();
    let run_id = started["result"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let session = started["result"]["session_id"].as_str().unwrap().to_owned();
    // Its events come as notifications: the start and its first node.
    let begun = eventually(Duration::from_secs(20), "the run's node_begin", || {
        let next = server.next_frame();
        server.notifications.push(next);
        server
            .notifications
            .iter()
            .find(|n| {
                n["method"] == "run_event"
                    && n["params"]["type"] == "node_begin"
                    && n["params"]["run_id"] == run_id.as_str()
            })
            .cloned()
    });
    assert_eq!(begun["params"]["node"], "plan");
    assert!(
        server
            .notifications
            .iter()
            .any(|n| n["params"]["type"] == "run_started"),
        "{:?}",
        server.notifications
    );
    let change = eventually(Duration::from_secs(20), "a change of the new session", || {
        let next = server.next_frame();
        server.notifications.push(next);
        server
            .notifications
            .iter()
            .find(|n| n["method"] == "change" && n["params"]["session_id"] == session.as_str())
            .cloned()
    });
    assert!(
        change["params"]["type"].as_str().unwrap().starts_with("session_"),
        "{change}"
    );
    // The link drops mid-run: the server exits at once, and the run goes on to its end.
    let status = server.end_input(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
    let runs = || {
        let listed = place.command("runs").arg("--json").output().unwrap();
        let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
        runs.as_array()
            .unwrap()
            .iter()
            .find(|run| run["id"] == run_id.as_str())
            .cloned()
            .unwrap()
    };
    let left = runs();
    assert_eq!(left["status"], "running", "the server's end did not stop it: {left}");
    let finished = eventually(Duration::from_secs(30), "the detached run's end", || {
        Some(runs()).filter(|run| run["status"] == "success")
    });
    assert_eq!(finished["session_id"], session.as_str());
}

/// A shell script of the place's, made executable: what a remote shell or a server's stand-in
/// does.
pub fn script(place: &Place, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = place.dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}
