//! `zstudio --remote HOST:PATH mcp`: a coding agent on this machine asking a host's workspace,
//! through the real `ssh` to the loopback sshd, driven by the MCP SDK's own client (`rmcp`).
//! The host's own server answers: its sessions, its store, its trusted agents.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use test_servers::sshd::Sshd;

use super::remote_workspace;
use crate::mcp_injection::INJECTION;
use crate::mcp_rust_client::{answer, read_all_pages, refusal, Client};

/// `zstudio ARGS` run on the host's side (its workspace, its store in `host_data`).
fn on_host(args: &[&str], host_data: &Path) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(args)
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", host_data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// A host workspace: `trip` (the test agent, two nodes of `millis` ms) trusted and run there,
/// `stranger` never trusted, and a run of about 1 MB of output. That run's id and its output.
fn fill_host(ws: &str, host_data: &Path, millis: u64) -> (String, String) {
    let agent = super::common::agent_binary();
    std::fs::write(
        Path::new(ws).join(".zibby/studio.toml"),
        format!(
            "[[agent]]\nname = \"trip\"\nrun = [\"{agent}\", \"--nodes\", \"plan:{millis},book:{millis}\"]\n\n\
             [[agent]]\nname = \"stranger\"\nrun = [\"{agent}\", \"--nodes\", \"x:10\"]\n"
        ),
    )
    .unwrap();
    on_host(
        &[
            "run", "--agent", "trip", "--prompt", "first", "--trust", "--json", "-w", ws,
        ],
        host_data,
    );
    let large = on_host(
        &[
            "run",
            "--json",
            "-w",
            ws,
            "--",
            &agent,
            "--nodes",
            "flood:10",
            "--flood-mb",
            "1",
        ],
        host_data,
    );
    let events: Vec<Value> = String::from_utf8_lossy(&large.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let output: String = events
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| format!("{}\n", e["line"].as_str().unwrap()))
        .collect();
    (events[0]["run_id"].as_str().unwrap().to_owned(), output)
}

/// `zstudio --remote ALIAS:WS mcp` from here, its local data in `local`, connected.
async fn connect(sshd: &Sshd, ws: &str, local: &Path, allow_runs: bool) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command
        .arg("--remote")
        .arg(format!("{}:{ws}", sshd.alias()))
        .arg("--ssh-config")
        .arg(sshd.ssh_config())
        .args(["--keep-connection", "0", "mcp"])
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("ZIBBY_STUDIO_SSH_CONFIG")
        .env("XDG_DATA_HOME", local);
    if allow_runs {
        command.arg("--allow-runs");
    }
    ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap()
}

/// The processes whose command line names `needle`.
fn processes_naming(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(needle))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_workspace_is_served_to_a_coding_agent_here() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let host_data = sshd.home().join("data");
    let local = tempfile::tempdir().unwrap();
    let (large_run, large_output) = fill_host(ws, &host_data, 10);
    let on_host_listing: Value =
        serde_json::from_slice(&on_host(&["sessions", "-w", ws, "--json"], &host_data).stdout).unwrap();
    let ids_and_status = |rows: &Value| -> Vec<(Value, Value)> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].clone(), r["status"].clone()))
            .collect()
    };

    // Read-only: the read tools alone; the host's listing; a large output in pages of ≤ 16 KiB.
    let client = connect(&sshd, ws, local.path(), false).await;
    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!tools.iter().any(|t| t == "start_run"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "read_output"), "{tools:?}");
    let listed = answer(&client, "list_sessions", json!({"limit": 200})).await;
    assert_eq!(ids_and_status(&listed["sessions"]), ids_and_status(&on_host_listing));
    assert_eq!(ids_and_status(&on_host_listing).len(), 2);
    let (joined, _, _) = read_all_pages(&client, json!({"id": large_run})).await;
    assert_eq!(joined.len(), large_output.len());
    assert!(joined == large_output, "the pages join to the host's output");
    client.cancel().await.unwrap();

    // With --allow-runs: the host's trusted agent runs there, recorded as started through MCP;
    // the host's untrusted agent is refused.
    let client = connect(&sshd, ws, local.path(), true).await;
    let started = answer(&client, "start_run", json!({"agent": "trip", "prompt": "Kyoto"})).await;
    let run = started["run_id"].as_str().unwrap().to_owned();
    let ended = answer(&client, "wait_run", json!({"id": run, "timeout_seconds": 60})).await;
    assert_eq!(
        (&ended["status"], &ended["origin"]),
        (&json!("success"), &json!("mcp")),
        "{ended}"
    );
    let (code, _) = refusal(&client, "start_run", json!({"agent": "stranger", "prompt": "x"})).await;
    assert_eq!(code, "agents_untrusted");
    client.cancel().await.unwrap();
    let runs: Value = serde_json::from_slice(&on_host(&["runs", "-w", ws, "--json"], &host_data).stdout).unwrap();
    let recorded = runs.as_array().unwrap().iter().find(|r| r["id"] == run.as_str());
    assert_eq!(recorded.map(|r| &r["status"]), Some(&json!("success")), "{runs}");
    // Nothing in this machine's store: the host's studio ran it.
    assert!(!local.path().join("zibby-studio/studio.sqlite").exists());

    // The client gone, no ssh is left (the connection was kept 0 s).
    let config = sshd.ssh_config().to_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while processes_naming(&config) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(processes_naming(&config), 0, "an ssh left running");
}

/// The official Python SDK's client (`mcp_client/drive.py`) on host workspaces, through the same
/// checks as on a local one: the read tools alone without `--allow-runs`, the host's listing, an
/// output joined from its pages, the injection fixture inert, 1,000 malformed calls answered, a
/// trusted agent started and waited for, an untrusted one refused, a slow run stopped.
#[test]
fn the_official_python_client_reads_and_runs_on_a_host() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let ws = workspace.to_str().unwrap();
    let host_data = sshd.home().join("data");
    let local = tempfile::tempdir().unwrap();
    let (large_run, large_output) = fill_host(ws, &host_data, 10);
    // The injection fixture, as the local test has it.
    let agent = super::common::agent_binary();
    let say = format!("evil={INJECTION}");
    let evil = on_host(
        &[
            "run", "--json", "--prompt", INJECTION, "-w", ws, "--", &agent, "--nodes", "evil:10", "--say", &say,
        ],
        &host_data,
    );
    let evil: Value = serde_json::from_str(String::from_utf8_lossy(&evil.stdout).lines().next().unwrap()).unwrap();
    // A second workspace whose `trip` is slow enough to be stopped mid-run.
    let slow = remote_workspace(&sshd, "slow");
    fill_host(slow.to_str().unwrap(), &host_data, 4_000);
    let sessions: Value =
        serde_json::from_slice(&on_host(&["sessions", "-w", ws, "--json"], &host_data).stdout).unwrap();
    let expected = local.path().join("expected.json");
    let argv = |workspace: &Path| {
        json!([
            env!("CARGO_BIN_EXE_zstudio"),
            "--remote",
            format!("{}:{}", sshd.alias(), workspace.display()),
            "--ssh-config",
            sshd.ssh_config(),
            "--keep-connection",
            "0",
            "mcp",
        ])
    };
    std::fs::write(
        &expected,
        json!({
            "argv": argv(&workspace),
            "slow_argv": argv(&slow),
            "env": {"XDG_DATA_HOME": local.path()},
            "runs": true,
            "sessions": sessions,
            "large_run": large_run,
            "large_output": large_output,
            "evil_session": evil["session_id"],
            "evil_run": evil["run_id"],
        })
        .to_string(),
    )
    .unwrap();
    crate::mcp_python_client::drive(&["--elsewhere".into(), "--expected".into(), expected.into()]);
}
