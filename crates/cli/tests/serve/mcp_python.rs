//! `zstudio mcp` driven by the official Python MCP SDK's client (`mcp` from PyPI, pinned and
//! installed by `scripts/setup.sh` into `.venv/mcp`, or `$ZIBBY_MCP_VENV`): the script
//! `crates/cli/tests/mcp_client/drive.py` on workspaces filled here by the test agent, as
//! `mcp.rs` fills them. A missing environment fails the test: it is never skipped.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::mcp::{add_stranger, json_lines, run_command, INJECTION};
use super::Place;
use crate::common::agent_binary;

/// How long the script may take, past its own deadline (300 s).
const SCRIPT_WAIT: Duration = Duration::from_secs(360);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's python, its `mcp` the version `scripts/setup.sh` pins; panics naming the script
/// otherwise.
fn sdk_python() -> PathBuf {
    let venv = std::env::var_os("ZIBBY_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/mcp"));
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it installs the Python MCP SDK `mcp` into .venv/mcp), or set ZIBBY_MCP_VENV",
        python.display()
    );
    let setup = std::fs::read_to_string(repo_root().join("scripts/setup.sh")).unwrap();
    let pinned = setup
        .lines()
        .find_map(|line| line.strip_prefix("MCP_VERSION="))
        .expect("scripts/setup.sh pins MCP_VERSION");
    let installed = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&installed.stdout).trim().to_owned();
    assert!(
        installed.status.success() && version == pinned,
        "the Python MCP SDK in {} is {:?}, not mcp {pinned}: run scripts/setup.sh{}",
        venv.display(),
        version,
        if installed.status.success() {
            String::new()
        } else {
            let stderr = String::from_utf8_lossy(&installed.stderr);
            format!(" ({})", stderr.trim().lines().last().unwrap_or_default())
        }
    );
    python
}

/// `zstudio COMMAND -w WS --db DB ARGS`, succeeded: its standard output.
fn zstudio(place: &Place, command: &str, args: &[&str]) -> Vec<u8> {
    let output = place.command(command).args(args).stdin(Stdio::null()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

/// The place's workspace, store and keeper's folders, as the script's options `--PREFIXworkspace`,
/// `--PREFIXdb`, `--PREFIXdata-home`.
fn place_args(place: &Place, prefix: &str) -> Vec<String> {
    vec![
        format!("--{prefix}workspace"),
        place.workspace().display().to_string(),
        format!("--{prefix}db"),
        place.db().display().to_string(),
        format!("--{prefix}data-home"),
        place.dir.path().join("data").display().to_string(),
    ]
}

#[test]
fn the_official_python_client_drives_zstudio_mcp() {
    let python = sdk_python();
    // A place whose agent is slow enough to be stopped mid-run, however loaded the machine: its
    // trusting first run (two nodes of 4 s) goes on while the other place fills.
    let slow = std::thread::spawn(|| {
        let slow = Place::create();
        slow.trusted_agent(4_000);
        slow
    });
    // `trip` trusted and run, `stranger` never trusted, a run of about 2 MB of output (one line of
    // it 1 MB), a run whose prompt and output are [`INJECTION`].
    let place = Place::create();
    place.trusted_agent(10);
    let agent = agent_binary();
    add_stranger(&place);
    let large = json_lines(&run_command(
        &place,
        &[],
        &[
            &agent,
            "--nodes",
            "flood:10,after:10",
            "--flood-mb",
            "1",
            "--long-line-mb",
            "1",
        ],
    ));
    let large_output: String = large
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| format!("{}\n", e["line"].as_str().unwrap()))
        .collect();
    let say = format!("evil={INJECTION}");
    let evil = json_lines(&run_command(
        &place,
        &["--prompt", INJECTION],
        &[&agent, "--nodes", "evil:10", "--say", &say],
    ));
    let sessions: Value = serde_json::from_slice(&zstudio(&place, "sessions", &["--json"])).unwrap();
    let expected = place.dir.path().join("expected.json");
    std::fs::write(
        &expected,
        json!({
            "sessions": sessions,
            "large_run": large[0]["run_id"],
            "large_output": large_output,
            "evil_session": evil[0]["session_id"],
            "evil_run": evil[0]["run_id"],
        })
        .to_string(),
    )
    .unwrap();
    let slow = slow.join().unwrap();

    let began = Instant::now();
    let mut child = Command::new(&python)
        .arg(repo_root().join("crates/cli/tests/mcp_client/drive.py"))
        .arg("--zstudio")
        .arg(env!("CARGO_BIN_EXE_zstudio"))
        .arg("--expected")
        .arg(&expected)
        .args(place_args(&place, ""))
        .args(place_args(&slow, "slow-"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("ZIBBY_STUDIO_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if began.elapsed() > SCRIPT_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let shown = format!("--- stdout\n{stdout}--- stderr\n{stderr}");
    let status = status.unwrap_or_else(|| panic!("drive.py did not end within {SCRIPT_WAIT:?}\n{shown}"));
    assert!(status.success(), "drive.py failed ({status})\n{shown}");
    assert!(stdout.contains("ok: all checks passed"), "{shown}");
}
