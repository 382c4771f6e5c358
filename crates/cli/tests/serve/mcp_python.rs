//! `zstudio mcp` driven by the official Python MCP SDK's client (`mcp_client/python.rs`): the
//! script `crates/cli/tests/mcp_client/drive.py` on workspaces filled here by the test agent, as
//! `mcp.rs` fills them.

use std::ffi::OsString;
use std::process::Stdio;

use serde_json::{json, Value};

use super::mcp::{add_stranger, json_lines, run_command, INJECTION};
use super::Place;
use crate::common::agent_binary;
use crate::mcp_python_client::drive;

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

    let mut args: Vec<OsString> = vec![
        "--zstudio".into(),
        env!("CARGO_BIN_EXE_zstudio").into(),
        "--expected".into(),
        expected.into(),
    ];
    args.extend(place_args(&place, "").into_iter().map(OsString::from));
    args.extend(place_args(&slow, "slow-").into_iter().map(OsString::from));
    drive(&args);
}
