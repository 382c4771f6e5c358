//! `zstudio --remote HOST:PATH …`: the real zstudio here, ssh to the loopback sshd, the same
//! zstudio uploaded and served there on another workspace and store.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use test_servers::sshd::Sshd;

use super::remote_workspace;

/// A host on loopback (an sshd) with a workspace `ws` there, a folder here for this machine's
/// store, and the host's data folder (its store, for the commands run there directly).
fn on_host() -> (Sshd, PathBuf, tempfile::TempDir, PathBuf) {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let host_data = sshd.home().join("data");
    (sshd, workspace, tempfile::tempdir().unwrap(), host_data)
}

/// `zstudio ARGS` with `env`, its local store in `data` (never the host's).
pub(super) fn zstudio(args: &[&str], data: &Path, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command
        .args(args)
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("ZIBBY_STUDIO_SSH_CONFIG");
    command.env("XDG_DATA_HOME", data).stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

pub(super) fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A session on the host, in its workspace `ws` and its store (in `host_data`): a captured run
/// imported there. Its id.
pub(super) fn session_on_host(ws: &str, host_data: &Path) -> String {
    let capture = super::common::captures().join("head-bb10e85-01-hello-world-markers/stdout.txt");
    let imported = json_of(&zstudio(
        &["import", capture.to_str().unwrap(), "-w", ws, "--json"],
        host_data,
        &[],
    ));
    imported["session_id"].as_str().unwrap().to_owned()
}

/// The processes whose command line names `needle` (an ssh left running would).
pub(super) fn processes_naming(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(line) = std::fs::read(entry.path().join("cmdline")) {
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            if line.contains(needle) {
                found.push(format!("{}: {line}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// `sessions --limit N` of a host prints the cost of the rows it shows, as it does here (it
/// printed the host's total for every session).
#[test]
fn a_hosts_listing_costs_the_rows_it_shows_as_here() {
    let (sshd, workspace, local, host_data) = on_host();
    let ws = workspace.to_str().unwrap();
    let agent = super::common::agent_binary();
    for _ in 0..2 {
        let ran = zstudio(&["run", "-w", ws, "--", &agent, "--nodes", "plan:10"], &host_data, &[]);
        assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    }
    let listed = json_of(&zstudio(&["sessions", "-w", ws, "--json"], &host_data, &[]));
    let (shown, older) = (listed[0]["id"].clone(), listed[1]["id"].as_str().unwrap().to_owned());
    // The row `--limit 1` leaves out costs something: its node's raw stream is an agent's with usage.
    let usage = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/usage/claude-code-stream-json.jsonl");
    let node = workspace.join(".zibby/output/sessions").join(&older).join("plan");
    std::fs::copy(usage, node.join("raw_stream_output.txt")).unwrap();
    let listed = json_of(&zstudio(&["sessions", "-w", ws, "--json"], &host_data, &[]));
    assert_eq!(listed[0]["id"], shown, "{listed:#}");
    assert!(listed[1]["usage"]["cost_usd"].is_number(), "{listed:#}");

    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let cost_line = |output: Output| {
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let table = String::from_utf8_lossy(&output.stdout).into_owned();
        (
            table
                .lines()
                .filter(|line| line.starts_with("cost of all sessions"))
                .map(str::to_owned)
                .collect::<Vec<_>>(),
            table,
        )
    };
    let (there, table) = cost_line(zstudio(
        &["sessions", "--remote", &remote, "--limit", "1"],
        local.path(),
        &env,
    ));
    let (here, local_table) = cost_line(zstudio(&["sessions", "-w", ws, "--limit", "1"], &host_data, &[]));
    assert_eq!(there, here, "{table}\n{local_table}");
    let (there, _) = cost_line(zstudio(&["sessions", "--remote", &remote], local.path(), &env));
    assert!(
        there.len() == 1 && there[0].contains('$'),
        "the whole listing's cost: {there:?}"
    );
}

#[test]
fn sessions_and_show_of_a_remote_workspace_are_the_hosts_own() {
    let (sshd, workspace, local, host_data) = on_host();
    let ws = workspace.to_str().unwrap();
    let id = session_on_host(ws, &host_data);
    let on_host = json_of(&zstudio(&["sessions", "-w", ws, "--json"], &host_data, &[]));

    let remote = format!("{}:{ws}", sshd.alias());
    let config = sshd.ssh_config().to_str().unwrap();
    let listed = json_of(&zstudio(
        &[
            "--remote",
            &remote,
            "--ssh-config",
            config,
            "--keep-connection",
            "3",
            "sessions",
            "--json",
        ],
        local.path(),
        &[],
    ));
    assert_eq!(listed, on_host);
    assert_eq!(listed[0]["id"], id.as_str());

    // The config given by the environment instead.
    let env = [
        ("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config()),
        ("ZIBBY_STUDIO_KEEP_CONNECTION", Path::new("3")),
    ];
    let shown = json_of(&zstudio(
        &["show", &id, "--remote", &remote, "--json"],
        local.path(),
        &env,
    ));
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(
        shown,
        json_of(&zstudio(&["show", &id, "-w", ws, "--json"], &host_data, &[]))
    );

    // Printed for a person as a local workspace's are, with the same printers.
    let table = zstudio(&["sessions", "--remote", &remote], local.path(), &env);
    let local_table = zstudio(&["sessions", "-w", ws], &host_data, &[]);
    assert!(table.status.success(), "{}", String::from_utf8_lossy(&table.stderr));
    // The same table but for how long ago (the two ran at different times): header and columns.
    let (table, local_table) = (
        String::from_utf8_lossy(&table.stdout),
        String::from_utf8_lossy(&local_table.stdout),
    );
    assert_eq!(table.lines().next(), local_table.lines().next(), "{table}");
    assert_eq!(table.lines().count(), local_table.lines().count(), "{table}");
    assert!(table.contains(&id), "{table}");
    let page = zstudio(&["show", &id, "--remote", &remote], local.path(), &env);
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(page.starts_with(&format!("session   {id}\n")), "{page}");

    // Issue 41, point 7: the four commands used one connection, kept 3 s after the last
    // (--keep-connection), then ended by ssh itself: nothing left behind.
    let masters = processes_naming(config);
    assert_eq!(masters.len(), 1, "one kept master: {masters:?}");
    assert!(masters[0].contains("ControlPersist=3s"), "{masters:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !processes_naming(config).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        processes_naming(config).is_empty(),
        "left running: {:?}",
        processes_naming(config)
    );
}

#[test]
fn a_remote_session_is_exported_to_a_local_bundle() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let local = tempfile::tempdir().unwrap();
    let id = session_on_host(ws, &sshd.home().join("data"));
    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let bundle = local.path().join("bundle.zip");
    let exported = json_of(&zstudio(
        &[
            "export",
            &id,
            "-o",
            bundle.to_str().unwrap(),
            "--remote",
            &remote,
            "--json",
        ],
        local.path(),
        &env,
    ));
    assert_eq!(exported["path"], bundle.to_str().unwrap());
    assert!(std::fs::read(&bundle).unwrap().starts_with(b"PK"), "not a zip archive");
}

/// Issue 45, point 4: a host's session as OpenTelemetry traces, read by the host's studio from
/// its store and folder and written or sent from here: `export --otlp --remote` writes the spans
/// (and ids) an export on the host writes, and `otlp push --remote` sends them to the collector
/// this machine's variables name (a real Phoenix on 127.0.0.1), where they are read back.
#[test]
fn a_remote_sessions_traces_are_read_there_and_written_or_sent_from_here() {
    use opentelemetry_proto::tonic::trace::v1::TracesData;
    let (sshd, workspace, local, host_data) = on_host();
    let ws = workspace.to_str().unwrap();
    let id = session_on_host(ws, &host_data);
    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let read = |file: &Path| -> TracesData { serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap() };
    let here = local.path().join("here.json");
    let written = json_of(&zstudio(
        &[
            "export",
            &id,
            "--otlp",
            here.to_str().unwrap(),
            "--remote",
            &remote,
            "--json",
        ],
        local.path(),
        &env,
    ));
    let there = local.path().join("there.json");
    json_of(&zstudio(
        &["export", &id, "--otlp", there.to_str().unwrap(), "-w", ws, "--json"],
        &host_data,
        &[],
    ));
    let (here, there) = (read(&here), read(&there));
    let spans = |t: &TracesData| -> Vec<_> {
        t.resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| s.spans.clone())
            .collect()
    };
    assert!(spans(&here).len() > 1, "{written}");
    assert_eq!(spans(&here), spans(&there), "the spans an export on the host writes");
    assert_eq!(written["spans"], spans(&here).len());

    let phoenix = test_servers::phoenix::Phoenix::start();
    let pushed = zstudio(
        &["otlp", "push", &id, "--remote", &remote, "--json"],
        local.path(),
        &env,
    );
    assert!(!pushed.status.success(), "no endpoint here yet: refused");
    let endpoint = phoenix.endpoint();
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    let pushed = command
        .args(["otlp", "push", &id, "--remote", &remote, "--json"])
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", local.path())
        .env("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = json_of(&pushed);
    assert_eq!(said["sessions"][0]["spans"], spans(&here).len(), "{said}");
    let trace: String = spans(&here)[0].trace_id.iter().map(|b| format!("{b:02x}")).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while phoenix.spans(&trace).len() < spans(&here).len() {
        assert!(std::time::Instant::now() < deadline, "Phoenix: {}", phoenix.log());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Issue 27, point 6: `import --remote` uploads a bundle or a captured log (with its stderr and
/// exit status) from here and imports it into the host's workspace and store, as `zstudio import`
/// there would; a folder is refused with a sentence, and nothing is imported here or left in the
/// host's temporary folder.
#[test]
fn a_bundle_and_a_log_here_are_imported_into_the_hosts_workspace() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let (local, host_data) = (tempfile::tempdir().unwrap(), sshd.home().join("data"));
    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    // A bundle made here from a captured run imported into a local workspace.
    let here = local.path().join("here");
    std::fs::create_dir_all(&here).unwrap();
    let capture = super::common::captures().join("head-bb10e85-02-pipeline-markers");
    let local_id = json_of(&zstudio(
        &[
            "import",
            capture.join("stdout.txt").to_str().unwrap(),
            "-w",
            here.to_str().unwrap(),
            "--json",
        ],
        local.path(),
        &[],
    ))["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bundle = local.path().join("pipeline.zip");
    let export = [
        "export",
        &local_id,
        "-o",
        bundle.to_str().unwrap(),
        "-w",
        here.to_str().unwrap(),
    ];
    assert!(zstudio(&export, local.path(), &[]).status.success());

    let imported = json_of(&zstudio(
        &["import", bundle.to_str().unwrap(), "--remote", &remote, "--json"],
        local.path(),
        &env,
    ));
    assert_eq!(imported["session_id"], local_id.as_str());
    assert_eq!(imported["kind"], "bundle");
    let on_host = json_of(&zstudio(&["show", &local_id, "-w", ws, "--json"], &host_data, &[]));
    // It records where it came from here, not the server's upload.
    assert_eq!(on_host["imported"]["from"], bundle.to_str().unwrap(), "{on_host}");

    // A captured log with its stderr and exit status: the host's import reads all three.
    let log = super::common::captures().join("head-bb10e85-01-hello-world-markers");
    let stderr = local.path().join("stderr.txt");
    std::fs::write(&stderr, "the agent's stderr\n").unwrap();
    let imported = json_of(&zstudio(
        &[
            "import",
            log.join("stdout.txt").to_str().unwrap(),
            "--stderr",
            stderr.to_str().unwrap(),
            "--exit-code",
            "3",
            "--remote",
            &remote,
            "--json",
        ],
        local.path(),
        &env,
    ));
    assert_eq!(imported["kind"], "log");
    let log_id = imported["session_id"].as_str().unwrap();
    let runs = json_of(&zstudio(&["runs", "-w", ws, "--json"], &host_data, &[]));
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["session_id"] == log_id)
        .unwrap_or_else(|| panic!("the log's run on the host: {runs}"));
    assert_eq!(run["exit_code"], 3, "{run}");

    // A folder is not uploaded: the sentence says what to do.
    let folder = zstudio(
        &["import", here.to_str().unwrap(), "--remote", &remote],
        local.path(),
        &env,
    );
    assert!(!folder.status.success());
    let said = String::from_utf8_lossy(&folder.stderr);
    assert!(said.contains("export it as a bundle"), "{said}");

    assert_eq!(
        json_of(&zstudio(
            &["sessions", "-w", here.to_str().unwrap(), "--json"],
            local.path(),
            &[]
        ))
        .as_array()
        .unwrap()
        .len(),
        1,
        "nothing imported here"
    );
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("zstudio-serve-")
                && walkdir_has(path, "pipeline.zip")
        })
        .collect();
    assert!(left.is_empty(), "uploads left on the host: {left:?}");
}

/// Whether `name` is a file somewhere below `folder`.
fn walkdir_has(folder: &Path, name: &str) -> bool {
    std::fs::read_dir(folder).into_iter().flatten().flatten().any(|entry| {
        let path = entry.path();
        path.file_name().is_some_and(|n| n == name) || (path.is_dir() && walkdir_has(&path, name))
    })
}

#[test]
fn remote_errors_name_the_host_and_what_failed() {
    let sshd = Sshd::start();
    let local = tempfile::tempdir().unwrap();
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let missing = format!("{}:/nowhere/at/all", sshd.alias());
    let output = zstudio(&["sessions", "--json", "--remote", &missing], local.path(), &env);
    assert_eq!(output.status.code(), Some(1));
    // Issue 41, point 8: with --json, the error is its code and its message, one JSON line.
    let said: Value = serde_json::from_slice(&output.stderr)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(said["error"]["code"], "remote_workspace", "{said}");
    let message = said["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("studio-test: the workspace /nowhere/at/all does not exist"),
        "{message}"
    );

    let workspace = remote_workspace(&sshd, "ws");
    let remote = format!("{}:{}", sshd.alias(), workspace.display());
    let output = zstudio(
        &[
            "stop",
            "0190aaaa-0000-7000-8000-000000000000",
            "--json",
            "--remote",
            &remote,
        ],
        local.path(),
        &env,
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("0190aaaa-0000-7000-8000-000000000000"), "{stderr}");
}

/// A run on the host, stopped from here as a local stop stops one (issue 41, point 2): by its run
/// id or by its session id, gracefully (the agent ignores it), then by force once `--grace` is
/// over, waiting for its end and printing the host's record of it, as `zstudio stop` prints a
/// local one; a run the host's studio did not start, by its session id, asked to stop by its stop
/// files; an ended session refused, naming it.
#[test]
fn a_run_on_the_host_is_stopped_by_its_run_or_session_id_as_a_local_one() {
    let (sshd, workspace, local, host_data) = on_host();
    let ws = workspace.to_str().unwrap();
    let agent = super::common::agent_binary();
    let start_stubborn = || {
        let started = zstudio(
            &[
                "run",
                "--detach",
                "-w",
                ws,
                "--",
                &agent,
                "--nodes",
                "plan:60000",
                "--ignore-stop",
            ],
            &host_data,
            &[],
        );
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        let runs = json_of(&zstudio(&["runs", "-w", ws, "--json"], &host_data, &[]));
        (
            runs[0]["id"].as_str().unwrap().to_owned(),
            runs[0]["session_id"].as_str().unwrap().to_owned(),
        )
    };
    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let stop = |id: &str, json: bool| {
        let mut args = vec!["--remote", remote.as_str(), "stop", id, "--grace", "1"];
        if json {
            args.push("--json");
        }
        zstudio(&args, local.path(), &env)
    };

    // By its run id: graceful, then forced once the grace is over; the record printed.
    let (run_id, session) = start_stubborn();
    let output = stop(&run_id, false);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("stopping: the current node finishes first"), "{stderr}");
    assert!(stderr.contains("force stopping"), "{stderr}");
    assert_eq!(
        stdout,
        format!("run {run_id} of session {session}: cancelled (forced)\n")
    );

    // By its session id, in JSON: the host's record of the run, as `runs --json` has it.
    let (run_id, session) = start_stubborn();
    let stopped = json_of(&stop(&session, true));
    let runs = json_of(&zstudio(&["runs", "-w", ws, "--json"], &host_data, &[]));
    let recorded = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == run_id.as_str())
        .unwrap();
    assert_eq!(stopped["id"], run_id.as_str(), "{stopped}");
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    assert_eq!(stopped["stopped_by"], recorded["stopped_by"], "{stopped} {recorded}");
    assert_eq!(stopped["session_id"], session.as_str());

    // A run the host's studio did not start (the agent from a terminal there), by its session id.
    let mut terminal = Command::new(&agent)
        .args(["--nodes", "first:1500,second:1500,third:1500"])
        .current_dir(&workspace)
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sessions = workspace.join(".zibby/output/sessions");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let outside = loop {
        let found = std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|id| *id != session && !runs.as_array().unwrap().iter().any(|r| r["session_id"] == id.as_str()));
        if let Some(id) = found {
            break id;
        }
        assert!(std::time::Instant::now() < deadline, "the terminal run made no session");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let output = stop(&outside, false);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains(&format!(
            "session {outside}: asked its run to stop before its next node"
        )),
        "{stdout}"
    );
    let mut printed = String::new();
    std::io::Read::read_to_string(terminal.stdout.as_mut().unwrap(), &mut printed).unwrap();
    terminal.wait().unwrap();
    assert!(!printed.contains("third"), "no node after the stop starts: {printed}");

    // An ended session: refused as a local stop refuses it.
    let output = stop(&session, true);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("run_not_live") || stderr.contains("is not running"),
        "{stderr}"
    );
}

#[test]
fn remote_is_refused_where_it_cannot_work() {
    let local = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 7] = [
        &["pins", "--remote", "box:/p"],
        &["sessions", "--remote", "box:/p", "-w", "/tmp"],
        &["sessions", "--remote", "box:/p", "--memory"],
        &["sessions", "--remote", "box:project"],
        &["watch", "--reconnect-for", "5"],
        &["run", "--attach", "0190aaaa-0000-7000-8000-000000000000"],
        &["run", "--remote", "box:/p", "--", "sh", "-c", "true"],
    ];
    let words = [
        "does not work on a remote workspace",
        "--workspace is not taken",
        "host's own store",
        "is relative",
        "--reconnect-for is an option of --remote",
        "--attach follows a run of a host",
        "`run` takes --agent NAME",
    ];
    for (args, words) in cases.iter().zip(words) {
        let output = zstudio(args, local.path(), &[]);
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }
}

#[test]
fn a_session_on_the_host_is_compared_with_one_here() {
    let (sshd, workspace, _, host_data) = on_host();
    let ws = workspace.to_str().unwrap();
    let local = tempfile::tempdir().unwrap();
    let local_ws = local.path().join("ws");
    std::fs::create_dir_all(&local_ws).unwrap();
    let lws = local_ws.to_str().unwrap();
    let capture = |name: &str| super::common::captures().join(name).join("stdout.txt");
    let import = |capture: &Path, ws: &str, data: &Path| {
        let imported = json_of(&zstudio(
            &["import", capture.to_str().unwrap(), "-w", ws, "--json"],
            data,
            &[],
        ));
        imported["session_id"].as_str().unwrap().to_owned()
    };
    let on_host = import(&capture("head-bb10e85-01-hello-world-markers"), ws, &host_data);
    let same_here = import(&capture("head-bb10e85-01-hello-world-markers"), lws, local.path());
    let other_here = import(&capture("head-bb10e85-02-pipeline-markers"), lws, local.path());
    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let listed_before = json_of(&zstudio(&["sessions", "-w", lws, "--json"], local.path(), &[]));

    let same = zstudio(
        &["diff", &on_host, &same_here, "--remote", &remote, "-w", lws, "--json"],
        local.path(),
        &env,
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&same.stderr),
        String::from_utf8_lossy(&same.stdout)
    );
    assert_eq!(same.status.code(), Some(0), "{said}");
    let same: Value = serde_json::from_slice(&same.stdout).unwrap();
    assert!(!same["nodes"].as_array().unwrap().is_empty(), "{same}");

    let other = zstudio(
        &["diff", &on_host, &other_here, "--remote", &remote, "-w", lws],
        local.path(),
        &env,
    );
    assert_eq!(
        other.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    assert!(String::from_utf8_lossy(&other.stdout).starts_with("A  "), "{other:?}");

    // Nothing local changed: the local workspace lists the same sessions.
    let listed_after = json_of(&zstudio(&["sessions", "-w", lws, "--json"], local.path(), &[]));
    assert_eq!(listed_before, listed_after);
}

/// `zstudio --remote HOST:PATH open ID`: the host is asked whether the session is there, then the
/// app is started on it as `zibby-studio --ssh-config FILE --session ID HOST:PATH` (the window's
/// side, a running window taking that over, is the e2e test
/// `remote::a_second_launch_hands_its_remote_workspace_and_session_to_the_running_window`). The app
/// is faked here by a script that writes down how it was started.
#[test]
fn open_starts_the_app_on_the_hosts_session() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let local = tempfile::tempdir().unwrap();
    let id = session_on_host(ws, &sshd.home().join("data"));
    let told = local.path().join("told.txt");
    let app = local.path().join("zibby-studio");
    std::fs::write(
        &app,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {0}.tmp && mv {0}.tmp {0}\n",
            told.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&app, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let remote = format!("{}:{ws}", sshd.alias());
    let config = sshd.ssh_config().to_str().unwrap();
    let opened = json_of(&zstudio(
        &["--remote", &remote, "--ssh-config", config, "open", &id, "--json"],
        local.path(),
        &[("ZIBBY_STUDIO_APP", &app)],
    ));
    assert_eq!(opened["session_id"], id.as_str());
    assert_eq!(opened["workspace"], remote.as_str());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !told.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let args = std::fs::read_to_string(&told).expect("the app was started");
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        ["--ssh-config", config, "--session", id.as_str(), remote.as_str()],
    );

    // A session the host does not have: said, naming it; no app started.
    std::fs::remove_file(&told).unwrap();
    let unknown = zstudio(
        &[
            "--remote",
            &remote,
            "--ssh-config",
            config,
            "open",
            "1795952527924_none",
        ],
        local.path(),
        &[("ZIBBY_STUDIO_APP", &app)],
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("1795952527924_none"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!told.exists(), "no app is started for a session the host does not have");
}

/// Issue 40, point 6: a `watch` on a remote workspace ended by Ctrl-C, SIGTERM or SIGHUP leaves
/// no ssh behind (its master has a process group of its own, so the signal never reached it, and
/// it stayed with parent 1, an idle login on the host); the command ends by the signal as before.
#[test]
fn a_remote_watch_ended_by_a_signal_leaves_no_ssh_behind() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let local = tempfile::tempdir().unwrap();
    session_on_host(ws, &sshd.home().join("data"));
    let config = sshd.ssh_config().to_str().unwrap();
    let remote = format!("{}:{ws}", sshd.alias());
    for (signal, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        let mut watch = Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(["--remote", &remote, "watch", "--json"])
            .env_remove("ZIBBY_STUDIO_DB")
            .env("ZIBBY_STUDIO_SSH_CONFIG", config)
            .env("XDG_DATA_HOME", local.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Connected: its server is started on the host through the master.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !processes_naming(config).iter().any(|p| p.contains("serve")) {
            assert!(
                std::time::Instant::now() < deadline,
                "SIG{signal}: the watch never connected"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let sent = Command::new("kill")
            .args(["-s", signal, &watch.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = watch.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(number),
            "ended by SIG{signal}, as without a connection: {status:?}"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !processes_naming(config).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(
            processes_naming(config).is_empty(),
            "left running after SIG{signal}: {:?}",
            processes_naming(config)
        );
    }
}

/// Issue 40, point 4: an export from a host ended part-way by a signal leaves no partial file
/// (it was left until the next export there swept it); the command ends by the signal as before.
#[test]
fn an_export_from_a_host_ended_by_a_signal_leaves_no_partial_file() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let id = session_on_host(ws, &sshd.home().join("data"));
    // 48 MiB that do not compress.
    let mut noise = vec![0u8; 48 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for byte in noise.iter_mut() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *byte = state as u8;
    }
    std::fs::write(
        workspace.join(".zibby/output/sessions").join(&id).join("noise.bin"),
        noise,
    )
    .unwrap();
    let local = tempfile::tempdir().unwrap();
    let folder = local.path().join("exports");
    std::fs::create_dir(&folder).unwrap();
    let bundle = folder.join("bundle.zip");
    // Over a link that brings 8 MB/s, the copy lasts about 6 s: over the loopback alone it once
    // ended within the 200 ms below, before the signal was sent.
    let link = test_servers::throttle::Throttle::start_downloads(sshd.port(), 8_000_000);
    sshd.trust_port(link.port());
    let mut entry = sshd.host_entry();
    entry.port = link.port();
    let ssh_config = sshd.write_ssh_config("slow_config", &[entry]);
    let mut export = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["--remote", &format!("{}:{ws}", sshd.alias()), "export", &id, "-o"])
        .arg(&bundle)
        .env_remove("ZIBBY_STUDIO_DB")
        .env("ZIBBY_STUDIO_SSH_CONFIG", &ssh_config)
        .env("XDG_DATA_HOME", local.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let names = || -> Vec<String> {
        std::fs::read_dir(&folder)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !names().iter().any(|n| n.starts_with(".bundle.zip.partial-")) {
        assert!(
            std::time::Instant::now() < deadline && export.try_wait().unwrap().is_none(),
            "the copy never began: {:?}",
            names()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let sent = Command::new("kill")
        .args(["-TERM", &export.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = export.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15),
        "{status:?}"
    );
    assert_eq!(names(), Vec::<String>::new(), "nothing is left");
}

/// Tags and notes of a host's session are kept in the host's store, as its pins are: set from
/// here, read there, listed and filtered here; a bad tag is refused here, before any link.
#[test]
fn tags_and_notes_of_a_remote_session_are_kept_in_the_hosts_store() {
    let (sshd, workspace, local, host_data) = on_host();
    let ws = workspace.to_str().unwrap();
    let id = session_on_host(ws, &host_data);
    let remote = format!("{}:{ws}", sshd.alias());
    let env = [("ZIBBY_STUDIO_SSH_CONFIG", sshd.ssh_config())];
    let here = |args: &[&str]| {
        let mut all = vec!["--remote", remote.as_str()];
        all.extend(args);
        all.push("--json");
        json_of(&zstudio(&all, local.path(), &env))
    };
    assert_eq!(
        here(&["tag", &id, "remote", "flaky"]),
        serde_json::json!({"session_id": id, "tags": ["remote", "flaky"]})
    );
    assert_eq!(here(&["untag", &id, "flaky"])["tags"], serde_json::json!(["remote"]));
    here(&["note", &id, "the axolotl host run"]);
    assert_eq!(here(&["note", &id])["note"], "the axolotl host run");
    // The host's own store holds them.
    let on_host = json_of(&zstudio(&["show", &id, "-w", ws, "--json"], &host_data, &[]));
    assert_eq!(on_host["tags"], serde_json::json!(["remote"]));
    assert_eq!(on_host["note"], "the axolotl host run");
    let hits = json_of(&zstudio(&["search", "axolotl", "-w", ws, "--json"], &host_data, &[]));
    assert_eq!(hits[0]["kind"], "note");
    // Listed and filtered here.
    let listed = here(&["sessions", "--tag", "remote"]);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["tags"], serde_json::json!(["remote"]));
    assert_eq!(listed[0]["has_note"], true);
    assert_eq!(here(&["sessions", "--tag", "absent"]), serde_json::json!([]));
    assert_eq!(here(&["show", &id])["tags"], serde_json::json!(["remote"]));
    // Saved views are the host's too: saved, listed and applied from here, a search through the
    // host's index; the host's own `view list` and `sessions --view` say the same.
    assert_eq!(
        here(&["view", "save", "mine", "--tag", "remote"]),
        serde_json::json!({"name": "mine", "filters": {"tags": ["remote"]}})
    );
    here(&["view", "save", "axolotls", "--search", "axolotl"]);
    let views = here(&["view", "list"]);
    let host_views = json_of(&zstudio(&["view", "list", "-w", ws, "--json"], &host_data, &[]));
    assert_eq!(views, host_views);
    assert_eq!(views.as_array().unwrap().len(), 2, "{views}");
    for view in ["mine", "axolotls"] {
        let applied = here(&["sessions", "--view", view]);
        assert_eq!(applied[0]["id"], id.as_str(), "{view}: {applied}");
        let on_host = json_of(&zstudio(
            &["sessions", "--view", view, "-w", ws, "--json"],
            &host_data,
            &[],
        ));
        assert_eq!(
            applied.as_array().unwrap().len(),
            on_host.as_array().unwrap().len(),
            "{view}"
        );
    }
    assert_eq!(
        here(&["sessions", "--search", "no such words anywhere"]),
        serde_json::json!([])
    );
    assert_eq!(
        here(&["view", "delete", "axolotls"]),
        serde_json::json!({"name": "axolotls", "deleted": true})
    );
    let missing = zstudio(
        &["--remote", &remote, "sessions", "--view", "axolotls"],
        local.path(),
        &env,
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no saved view named"));
    // Removed from here.
    here(&["note", &id, ""]);
    assert_eq!(here(&["note", &id])["note"], serde_json::Value::Null);
    // Refused: a bad tag as the command line is read, a session the host does not have by it.
    let output = zstudio(&["--remote", &remote, "tag", &id, "bad\u{7}"], local.path(), &env);
    assert_eq!(output.status.code(), Some(2));
    let output = zstudio(
        &["--remote", &remote, "tag", "1795952522957_nope", "x"],
        local.path(),
        &env,
    );
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("1795952522957_nope") && said.contains(sshd.alias()),
        "{said}"
    );
}
