//! `zstudio --remote HOST:PATH watch` and `… run`: the real zstudio here, the same one served on
//! the host through the loopback sshd (through a relay where the link is to drop), the test
//! agent as the host's agent.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use test_servers::relay::Relay;
use test_servers::sshd::{HostEntry, Sshd};

use super::remote_workspace;

/// A host's workspace with two agents of the test agent, both trusted on the host: `slow`
/// prints 8 lines a node, `stubborn` ignores a graceful stop. Their nodes are the prompt.
pub struct Host {
    pub sshd: Sshd,
    pub workspace: PathBuf,
    pub data: PathBuf,
}

impl Host {
    pub fn start() -> Host {
        let sshd = Sshd::start();
        let workspace = remote_workspace(&sshd, "ws");
        let agent = super::common::agent_binary();
        std::fs::write(
            workspace.join(".zibby/studio.toml"),
            format!(
                "[[agent]]\nname = \"slow\"\nrun = [\"{agent}\", \"--nodes\", \"{{prompt}}\", \"--lines\", \"8\"]\n\
                 [[agent]]\nname = \"stubborn\"\nrun = [\"{agent}\", \"--nodes\", \"{{prompt}}\", \"--ignore-stop\"]\n"
            ),
        )
        .unwrap();
        let host = Host {
            data: sshd.home().join("data"),
            workspace,
            sshd,
        };
        // Trusted on the host, as its user would: once each, quickly.
        for agent in ["slow", "stubborn"] {
            let ran = host.here(&["run", "--agent", agent, "--trust", "--prompt", "a:10", "-w", host.ws()]);
            assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
        }
        host
    }

    pub fn ws(&self) -> &str {
        self.workspace.to_str().unwrap()
    }

    /// `zstudio ARGS` run on the host's side (its store), not through ssh.
    pub fn here(&self, args: &[&str]) -> Output {
        zstudio(args, &self.data).output().unwrap()
    }

    /// The host's runs, newest first.
    pub fn runs(&self) -> Value {
        let output = self.here(&["runs", "-w", self.ws(), "--json"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The host's record of run `run_id` once it ended (at most 60 s).
    pub fn ended(&self, run_id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let runs = self.runs();
            let run = runs.as_array().unwrap().iter().find(|r| r["id"] == run_id).cloned();
            let run = run.unwrap_or_else(|| panic!("no run {run_id} on the host: {runs}"));
            if run["status"] != "running" {
                return run;
            }
            assert!(Instant::now() < deadline, "the run did not end on the host: {run}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `--remote HOST:PATH` of the workspace.
    pub fn remote(&self) -> String {
        format!("{}:{}", self.sshd.alias(), self.ws())
    }
}

/// `zstudio ARGS`, its store in `data`, no ssh config of the environment.
pub fn zstudio(args: &[&str], data: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command
        .args(args)
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("ZIBBY_STUDIO_SSH_CONFIG")
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::null());
    command
}

/// A zstudio started with its stdout piped, read line by line; killed (by its pid) when dropped.
struct Running {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Running {
    fn start(mut command: Command) -> Running {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap());
        Running { child, lines }
    }

    /// The next line of its stdout (`None` at its end).
    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        (self.lines.read_line(&mut line).unwrap() > 0).then_some(line)
    }

    /// Lines until one `matching`, all of them returned.
    fn until(&mut self, matching: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .line()
                .unwrap_or_else(|| panic!("ended before the line awaited: {seen:?}"));
            let found = matching(&line);
            seen.push(line);
            if found {
                return seen;
            }
        }
    }

    /// The rest of its stdout, its exit status and its stderr.
    fn finish(mut self) -> (Vec<String>, std::process::ExitStatus, String) {
        let mut rest = Vec::new();
        while let Some(line) = self.line() {
            rest.push(line);
        }
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        (rest, self.child.wait().unwrap(), stderr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_remote_run_is_followed_as_a_local_one_is_printed() {
    let host = Host::start();
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    let config = host.sshd.ssh_config().to_str().unwrap().to_owned();
    let args = |json: bool| {
        let mut args = vec![
            "--remote",
            remote.as_str(),
            "--ssh-config",
            config.as_str(),
            "run",
            "--agent",
            "slow",
            "--prompt",
            "plan:200,book:200",
        ];
        if json {
            args.push("--json");
        }
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let run = |json: bool| {
        let args = args(json);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        zstudio(&args, local.path()).output().unwrap()
    };
    let output = run(true);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let events: Vec<Value> = output
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"run_finished"), "{kinds:?}");
    assert_eq!(events.last().unwrap()["status"], "success");
    let lines: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| e["line"].as_str().unwrap())
        .collect();
    for node in ["plan", "book"] {
        for i in 1..=8 {
            let line = format!("{node}: working ({i}/8)");
            assert_eq!(
                lines.iter().filter(|l| l.contains(&line)).count(),
                1,
                "{line} in {lines:?}"
            );
        }
    }
    // The run is the host's: recorded in its store, its session there.
    let run_id = events[0]["run_id"].as_str().unwrap();
    assert_eq!(host.ended(run_id)["status"], "success");

    // For a person, as `run` prints: the start, the nodes, the lines, the end.
    let output = run(false);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.starts_with("run "), "{text}");
    // Each line after the start of its node, before its end.
    let at = |words: &str| text.find(words).unwrap_or_else(|| panic!("{words}: {text}"));
    assert!(at("┌ plan") < at("plan: working (1/8)"), "{text}");
    assert!(at("plan: working (8/8)") < at("└ plan: success"), "{text}");
    assert!(at("└ plan: success") < at("book: working (1/8)"), "{text}");
    assert!(
        text.contains("┌ plan") && text.contains("│ plan: working (1/8)"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("success, exit 0"), "{text}");
    assert!(files_under(local.path()).is_empty(), "{:?}", files_under(local.path()));
}

/// The link dropped mid-run: the follow here ends saying how to follow again; the run ends on
/// the host as it would have; nothing local was written.
#[test]
fn a_remote_run_outlives_a_dropped_link() {
    let host = Host::start();
    let mut relay = Relay::start(host.sshd.port());
    host.sshd.trust_port(relay.port());
    let config = host.sshd.write_ssh_config(
        "relay_config",
        &[HostEntry {
            port: relay.port(),
            ..host.sshd.host_entry()
        }],
    );
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    let mut following = Running::start(zstudio(
        &[
            "--remote",
            &remote,
            "--ssh-config",
            config.to_str().unwrap(),
            "--reconnect-for",
            "0",
            "run",
            "--agent",
            "slow",
            "--prompt",
            "plan:3000,book:1000",
            "--json",
        ],
        local.path(),
    ));
    let seen = following.until(|line| line.contains("plan: working (1/8)"));
    let started: Value = serde_json::from_str(&seen[0]).unwrap();
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    relay.kill();
    let (_, status, stderr) = following.finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("studio-test"), "{stderr}");
    assert!(stderr.contains(&format!("run --attach {run_id}")), "{stderr}");
    assert!(stderr.contains(&format!("stop {run_id}")), "{stderr}");

    let run = host.ended(&run_id);
    assert_eq!(run["status"], "success", "{run}");
    let session = host.here(&["show", run["session_id"].as_str().unwrap(), "-w", host.ws(), "--json"]);
    let session: Value = serde_json::from_slice(&session.stdout).unwrap();
    assert_eq!(session["status"], "success", "{session}");
    assert!(files_under(local.path()).is_empty(), "{:?}", files_under(local.path()));

    // Followed again, from its first line: every line once, and its end.
    let again = zstudio(
        &[
            "--remote",
            &remote,
            "--ssh-config",
            host.sshd.ssh_config().to_str().unwrap(),
            "run",
            "--attach",
            &run_id,
        ],
        local.path(),
    )
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    for i in 1..=8 {
        assert_eq!(text.matches(&format!("book: working ({i}/8)")).count(), 1, "{text}");
    }
    assert!(text.trim_end().ends_with("success, exit 0"), "{text}");
}

/// `run --detach` leaves the run on the host; `stop` asks the host to stop it gracefully, then
/// by force (the agent ignores the graceful stop); a followed run stopped gracefully ends
/// cancelled here too.
#[test]
fn a_live_remote_run_is_stopped_gracefully_or_by_force() {
    let host = Host::start();
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    let config = host.sshd.ssh_config().to_str().unwrap().to_owned();
    let remote_args = |args: &[&str]| {
        let mut all = vec!["--remote", remote.as_str(), "--ssh-config", config.as_str()];
        all.extend_from_slice(args);
        zstudio(&all, local.path())
    };
    let detached = remote_args(&["run", "--agent", "stubborn", "--prompt", "plan:60000", "--detach"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&detached.stdout);
    assert!(
        detached.status.success(),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );
    assert!(text.contains("left running on studio-test"), "{text}");
    let run_id = host.runs()[0]["id"].as_str().unwrap().to_owned();
    assert!(text.contains(&format!("run --attach {run_id}")), "{text}");
    assert_eq!(host.runs()[0]["status"], "running");

    // As a local stop: graceful, forced once the grace is over, the run's end printed.
    let stopped = remote_args(&["stop", &run_id, "--grace", "1"]).output().unwrap();
    let said = String::from_utf8_lossy(&stopped.stderr);
    assert!(said.starts_with("stopping: the current node finishes first"), "{said}");
    assert!(said.contains("force stopping"), "{said}");
    assert!(
        String::from_utf8_lossy(&stopped.stdout).ends_with(": cancelled (forced)\n"),
        "{}",
        String::from_utf8_lossy(&stopped.stdout)
    );
    assert_eq!(host.ended(&run_id)["status"], "cancelled");

    // Followed here, stopped gracefully from another terminal: the follow says so and ends as
    // `run` does for a cancelled run (2).
    // Short nodes: the stop is heard before the next one, however late it comes.
    let mut following = Running::start(remote_args(&[
        "run",
        "--agent",
        "slow",
        "--prompt",
        "plan:1500,b:1500,c:1500,d:1500,e:1500,f:1500,g:1500,h:1500",
    ]));
    following.until(|line| line.contains("plan: working (1/8)"));
    let run_id = host.runs()[0]["id"].as_str().unwrap().to_owned();
    let graceful = remote_args(&["stop", &run_id]).output().unwrap();
    assert!(
        graceful.status.success(),
        "{}",
        String::from_utf8_lossy(&graceful.stderr)
    );
    let (rest, status, stderr) = following.finish();
    assert_eq!(status.code(), Some(2), "{rest:?} {stderr}");
    assert!(rest.iter().any(|l| l.contains("stopping")), "{rest:?}");
    assert!(rest.last().unwrap().contains("cancelled"), "{rest:?}");
    assert_eq!(host.ended(&run_id)["status"], "cancelled");
}

#[test]
fn a_remote_workspace_is_watched_as_a_local_one() {
    let host = Host::start();
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    // A session there before the watch: said first, as a local watch's first scan says it.
    let capture = super::common::captures().join("head-bb10e85-02-pipeline-markers/stdout.txt");
    let before = host.here(&["import", capture.to_str().unwrap(), "-w", host.ws(), "--json"]);
    let before: Value = serde_json::from_slice(&before.stdout).unwrap();
    let before = before["session_id"].as_str().unwrap().to_owned();
    let config = host.sshd.ssh_config().to_str().unwrap().to_owned();
    let mut watching = Running::start(zstudio(
        &["--remote", &remote, "--ssh-config", &config, "watch", "--json"],
        local.path(),
    ));
    // Said on stderr once subscribed.
    let mut said = String::new();
    BufReader::new(watching.child.stderr.as_mut().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert!(said.starts_with(&format!("zstudio: watching {remote}")), "{said}");
    let first: Value = serde_json::from_str(&watching.line().expect("the watch ended")).unwrap();
    assert_eq!(first["type"], "session_added", "{first}");
    assert_eq!(first["session_id"], before.as_str(), "{first}");
    assert_eq!(first["workspace"], host.ws(), "{first}");
    let capture = super::common::captures().join("head-bb10e85-01-hello-world-markers/stdout.txt");
    let output = host.here(&["import", capture.to_str().unwrap(), "-w", host.ws(), "--json"]);
    let output: Value = serde_json::from_slice(&output.stdout).unwrap();
    let imported = output["session_id"].as_str().unwrap().to_owned();
    let added = loop {
        let line = watching.line().expect("the watch ended");
        let change: Value = serde_json::from_str(&line).unwrap();
        if change["session_id"] == imported.as_str() {
            break change;
        }
    };
    assert!(
        ["session_added", "session_updated"].contains(&added["type"].as_str().unwrap()),
        "{added}"
    );
    assert_eq!(added["workspace"], first["workspace"], "one workspace path for both");
    drop(watching);
}

/// Ctrl-C ends the following here, never the run: it says how to follow it again, exits 130,
/// and the run ends on the host as it would have.
#[test]
fn ctrl_c_leaves_a_remote_run_running() {
    let host = Host::start();
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    let config = host.sshd.ssh_config().to_str().unwrap().to_owned();
    let mut following = Running::start(zstudio(
        &[
            "--remote",
            &remote,
            "--ssh-config",
            &config,
            "run",
            "--agent",
            "slow",
            "--prompt",
            "plan:2000,book:500",
        ],
        local.path(),
    ));
    following.until(|line| line.contains("plan: working (1/8)"));
    let run_id = host.runs()[0]["id"].as_str().unwrap().to_owned();
    let pid = following.child.id().to_string();
    let signalled = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(signalled.success());
    let (_, status, stderr) = following.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("the run goes on on studio-test"), "{stderr}");
    assert!(stderr.contains(&format!("run --attach {run_id}")), "{stderr}");
    assert_eq!(host.ended(&run_id)["status"], "success");
}

/// An agent the host's studio does not trust yet: refused without a terminal, saying what it
/// would run; trusted on the host with `--trust`, and run; not asked about again.
#[test]
fn a_remote_agent_is_trusted_on_the_host_with_trust() {
    let host = Host::start();
    let agent = super::common::agent_binary();
    let agents_file = host.workspace.join(".zibby/studio.toml");
    let mut agents = std::fs::read_to_string(&agents_file).unwrap();
    agents.push_str(&format!(
        "[[agent]]\nname = \"fresh\"\nrun = [\"{agent}\", \"--nodes\", \"{{prompt}}\"]\n"
    ));
    std::fs::write(&agents_file, agents).unwrap();
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    let config = host.sshd.ssh_config().to_str().unwrap().to_owned();
    let run = |trust: bool| {
        let mut args = vec![
            "--remote",
            &remote,
            "--ssh-config",
            &config,
            "run",
            "--agent",
            "fresh",
            "--prompt",
            "a:10",
        ];
        if trust {
            args.push("--trust");
        }
        zstudio(&args, local.path()).output().unwrap()
    };
    let refused = run(false);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("studio-test") && stderr.contains("not trusted"),
        "{stderr}"
    );
    assert!(stderr.contains("--trust") && stderr.contains(&agent), "{stderr}");
    // The agent would inherit the host server's environment, not this shell's.
    assert!(stderr.contains("studio server on this host"), "{stderr}");
    assert_eq!(host.runs()[0]["agent"], "stubborn", "nothing ran");

    let trusted = run(true);
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let again = run(false);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(host.runs()[0]["agent"], "fresh");
    assert_eq!(host.runs()[1]["agent"], "fresh");
}

/// Issue 44, point 4: the host's studio holds a remote run to its agent's budget (its runner
/// enforces it), and the client hears it: `budget_reached`, then the run stopped by its budget.
#[test]
fn the_hosts_studio_stops_a_remote_run_past_its_budget() {
    let host = Host::start();
    let agent = super::common::agent_binary();
    let agents_file = host.workspace.join(".zibby/studio.toml");
    let mut agents = std::fs::read_to_string(&agents_file).unwrap();
    agents.push_str(&format!(
        "[[agent]]\nname = \"spender\"\nrun = [\"{agent}\", \"--nodes\", \"plan:300,write:300\", \
         \"--usage\", \"plan=claude-code,write=claude-code\"]\nmax_cost_usd = 0.000001\n"
    ));
    std::fs::write(&agents_file, agents).unwrap();
    let local = tempfile::tempdir().unwrap();
    let remote = host.remote();
    let config = host.sshd.ssh_config().to_str().unwrap().to_owned();
    let args = [
        "--remote",
        &remote,
        "--ssh-config",
        &config,
        "run",
        "--json",
        "--agent",
        "spender",
        "--trust",
    ];
    let output = zstudio(&args, local.path()).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["type"] == "budget_reached"), "{events:?}");
    let finished = events.iter().find(|e| e["type"] == "run_finished").unwrap();
    assert_eq!(finished["stopped_by"], "budget");
    let begun: Vec<_> = events.iter().filter(|e| e["type"] == "node_begin").collect();
    assert_eq!(begun.len(), 1, "write never started: {begun:?}");
}
