//! Issue 41, point 7: the workspace's server kept on the host between `--remote` commands
//! (`studio_core::remote::kept_server`), reached through the kept ssh master.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use test_servers::sshd::Sshd;

use super::cli::{json_of, processes_naming, session_on_host, zstudio};
use super::remote_workspace;

/// An `ssh` on the PATH that writes each of its runs down (one line a run) before it runs ssh.
struct CountedSsh {
    dir: tempfile::TempDir,
    path: String,
}

impl CountedSsh {
    fn new() -> CountedSsh {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        std::fs::write(
            &ssh,
            format!(
                "#!/bin/sh\n{{ printf '%s' \"$*\" | tr '\\n' ' '; echo; }} >> '{}'\nexec /usr/bin/ssh \"$@\"\n",
                dir.path().join("runs.txt").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
        CountedSsh { dir, path }
    }

    /// The runs since the last call.
    fn take(&self) -> Vec<String> {
        let runs = self.dir.path().join("runs.txt");
        let text = std::fs::read_to_string(&runs).unwrap_or_default();
        let _ = std::fs::remove_file(&runs);
        text.lines().map(str::to_owned).collect()
    }
}

/// The kept servers serving `ws` (`zstudio serve … --listen SOCKET --workspace WS`).
fn kept_servers(ws: &str) -> Vec<String> {
    processes_naming(&format!("--workspace {ws}"))
        .into_iter()
        .filter(|line| line.contains(" --listen "))
        .collect()
}

/// The sessions (a shell, a command) the host's sshd started so far.
fn host_sessions(sshd: &Sshd) -> usize {
    sshd.log().matches("Starting session:").count()
}

/// The files in `dir` whose name ends with one of `kinds`.
fn files_ending(dir: &Path, kinds: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| kinds.iter().any(|kind| path.to_string_lossy().ends_with(kind)))
        .collect()
}

/// A sequence of commands on a host's workspace holding one session, `ssh` counted, the
/// connection kept 10 s.
struct Sequence {
    sshd: Sshd,
    ws: String,
    id: String,
    local: tempfile::TempDir,
    ssh: CountedSsh,
}

impl Sequence {
    fn on(sshd: Sshd) -> Sequence {
        let ws = remote_workspace(&sshd, "ws").to_str().unwrap().to_owned();
        let id = session_on_host(&ws, &sshd.home().join("data"));
        Sequence {
            sshd,
            ws,
            id,
            local: tempfile::tempdir().unwrap(),
            ssh: CountedSsh::new(),
        }
    }

    /// The sequence on `sshd`, its first command run (`sessions`): what it printed, and the one
    /// kept server it left.
    fn started(sshd: Sshd) -> (Sequence, serde_json::Value, Vec<String>) {
        let sequence = Sequence::on(sshd);
        let first = sequence.json(&["sessions"]);
        let kept = kept_servers(&sequence.ws);
        assert_eq!(kept.len(), 1, "one kept server: {kept:?}");
        (sequence, first, kept)
    }

    fn parts(&self) -> (&Sshd, &str, &str, &CountedSsh) {
        (&self.sshd, &self.ws, &self.id, &self.ssh)
    }

    /// `zstudio ARGS --remote HOST:WS --json`, its output read.
    fn json(&self, args: &[&str]) -> serde_json::Value {
        let remote = format!("{}:{}", self.sshd.alias(), self.ws);
        let env = [
            ("ZIBBY_STUDIO_SSH_CONFIG", self.sshd.ssh_config()),
            ("ZIBBY_STUDIO_KEEP_CONNECTION", Path::new("10")),
            ("PATH", Path::new(&self.ssh.path)),
        ];
        let args: Vec<&str> = args.iter().copied().chain(["--remote", &remote, "--json"]).collect();
        json_of(&zstudio(&args, self.local.path(), &env))
    }
}

/// The second command of a sequence starts nothing on the host: no session in sshd's log, the
/// same kept server (its pid), no start script; no `ssh` here either (the forward asked of the
/// master on its control socket); and it prints what the first printed.
#[test]
fn the_second_command_starts_nothing_on_the_host() {
    let (sequence, first, kept) = Sequence::started(Sshd::start_forwarding());
    let (sshd, ws, id, ssh) = sequence.parts();
    assert_eq!(first[0]["id"], id);
    let ran = ssh.take();
    assert!(
        ran.iter().any(|run| run.contains(" -M ")),
        "the first starts the master: {ran:?}"
    );
    let sessions_before = host_sessions(sshd);

    let second = sequence.json(&["sessions"]);
    assert_eq!(second, first);
    assert_eq!(ssh.take(), Vec::<String>::new(), "no ssh started here");
    let shown = sequence.json(&["show", id]);
    assert_eq!(shown["id"], id);
    assert_eq!(ssh.take(), Vec::<String>::new(), "no ssh started here");
    // sshd logs a session as it starts it: a moment for one that would have been started.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(host_sessions(sshd), sessions_before, "{}", sshd.log());
    assert_eq!(kept_servers(ws), kept, "the same kept server");

    // A session the host got meanwhile is listed by the kept server, as by a new one.
    let capture = super::common::captures().join("head-bb10e85-01-hello-world-markers/stdout.txt");
    let args = ["import", capture.to_str().unwrap(), "-w", ws, "--as-new", "--json"];
    let imported = json_of(&zstudio(&args, &sshd.home().join("data"), &[]));
    let newer = imported["session_id"].as_str().unwrap();
    let third = sequence.json(&["sessions"]);
    assert_eq!(third.as_array().unwrap().len(), first.as_array().unwrap().len() + 1);
    assert!(
        third.as_array().unwrap().iter().any(|row| row["id"] == newer),
        "{third}"
    );
}

/// Where the host's sshd refuses to forward (`AllowTcpForwarding no`), the next command runs the
/// start script, whose server relays to the kept one (the same pid), and the commands after it
/// through that master no longer try the forward: one ssh command, one session on the host.
#[test]
fn a_host_refusing_the_forward_is_served_by_its_kept_server_through_the_start_script() {
    let (sequence, first, kept) = Sequence::started(Sshd::start());
    let (sshd, ws, id, ssh) = sequence.parts();
    assert_eq!(sequence.json(&["sessions"]), first);
    ssh.take();
    let sessions_before = host_sessions(sshd);
    let started = Instant::now();
    assert_eq!(sequence.json(&["show", id])["id"], id);
    let ran = ssh.take();
    assert_eq!(ran.len(), 1, "one ssh command: {ran:?}");
    assert!(
        ran[0].contains("serve --stdio") && ran[0].contains("--keep-for"),
        "{ran:?}"
    );
    while host_sessions(sshd) < sessions_before + 1 && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(host_sessions(sshd), sessions_before + 1, "{}", sshd.log());
    assert_eq!(kept_servers(ws), kept, "the same kept server");

    // What the start script says of the host is said as before (another workspace: no record).
    let missing = format!("{}:{ws}/nowhere", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let output = zstudio(
        &["sessions", "--remote", &missing, "--json"],
        sequence.local.path(),
        &env,
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("remote_workspace") && said.contains("does not exist"),
        "{said}"
    );
}

/// Once the stated time is over (`--keep-connection 2`), nothing is left of a sequence: no kept
/// server or master running, no socket on the host, no socket or forwarded socket here.
#[test]
fn after_the_kept_time_nothing_is_left_on_either_side() {
    let sshd = Sshd::start_forwarding();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let local = tempfile::tempdir().unwrap();
    session_on_host(ws, &sshd.home().join("data"));
    let runtime = tempfile::tempdir().unwrap();
    let env = [
        ("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config()),
        ("ZIBBY_STUDIO_KEEP_CONNECTION", Path::new("2")),
        ("XDG_RUNTIME_DIR", runtime.path()),
    ];
    let remote = format!("{}:{ws}", sshd.alias());
    for _ in 0..2 {
        json_of(&zstudio(
            &["sessions", "--remote", &remote, "--json"],
            local.path(),
            &env,
        ));
    }
    let host_run = sshd.home().join(".zibby-studio/run");
    let sockets = runtime.path().join("zstudio-ssh");
    assert_eq!(kept_servers(ws).len(), 1);
    assert_eq!(files_ending(&host_run, &[".sock"]).len(), 1);
    assert_eq!(
        files_ending(&sockets, &[".fwd"]),
        Vec::<PathBuf>::new(),
        "no forward left"
    );
    let config = sshd.ssh_config().to_str().unwrap();
    // What the wait below must see go: the master here, its socket in this runtime folder.
    assert!(!processes_naming(config).is_empty(), "the kept master runs");
    assert_eq!(
        files_ending(&sockets, &[".sock"]).len(),
        1,
        "the master's socket is here"
    );
    let left = || {
        let mut left = kept_servers(ws);
        left.extend(processes_naming(config));
        left.extend(
            files_ending(&host_run, &[".sock"])
                .iter()
                .map(|p| p.display().to_string()),
        );
        left.extend(
            files_ending(&sockets, &[".sock", ".fwd"])
                .iter()
                .map(|p| p.display().to_string()),
        );
        left
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !left().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left(), Vec::<String>::new(), "left behind");
}
