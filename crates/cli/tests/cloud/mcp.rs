//! `zstudio mcp --source s3://…`: a bucket prefix on moto served to a coding agent, read-only,
//! driven by the MCP SDK's own client.

use std::collections::BTreeSet;
use std::path::Path;

use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use super::{json_of, setup, zstudio, Setup, PIPELINE_ID, URL};
use crate::mcp_injection::INJECTION;
use crate::mcp_rust_client::{answer, read_all_pages, refusal};

/// `zstudio mcp --source URL ARGS` with the bucket's variables and the setup's folders.
fn command(setup: &Setup, args: &[&str]) -> tokio::process::Command {
    command_in(setup, setup.home.path(), args)
}

/// [`command`] with its cache and data folders in `home`.
fn command_in(setup: &Setup, home: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command
        .args(["mcp", "--source", URL])
        .args(args)
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("AWS_PROFILE")
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("HOME", home)
        .envs(setup.moto.env());
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_prefix_is_served_read_only() {
    let setup = setup();
    let cli = json_of(&zstudio(&setup, &["sessions", "--json", "--source", URL]));
    let seen = |rows: &Value| -> BTreeSet<(String, String)> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_owned(),
                    r["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };

    let client = ().serve(TokioChildProcess::new(command(&setup, &[])).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools
        .iter()
        .all(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true)));
    let listed = answer(&client, "list_sessions", json!({})).await;
    assert_eq!(seen(&listed["sessions"]), seen(&cli));
    assert!(seen(&cli).len() >= 2, "{cli}");
    let session = answer(&client, "get_session", json!({"id": PIPELINE_ID})).await;
    let nodes: Vec<&str> = session["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert!(nodes.contains(&"plan"), "{nodes:?}");
    // Its output, from the mirror's files: no run of it was recorded here.
    let page = answer(&client, "read_output", json!({"id": PIPELINE_ID, "node": "plan"})).await;
    assert_eq!(page["run_id"], Value::Null);
    assert!(!page["text"].as_str().unwrap().is_empty(), "{page}");
    client.cancel().await.unwrap();

    // A cold cache: the prefix's sessions listed by id, each fetched as it is asked for.
    let cold = tempfile::TempDir::new().unwrap();
    let client = ().serve(TokioChildProcess::new(command_in(&setup, cold.path(), &[])).unwrap()).await.unwrap();
    let listed = answer(&client, "list_sessions", json!({})).await;
    let ids = |rows: &Value| {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(ids(&listed["sessions"]), ids(&cli));
    let session = answer(&client, "get_session", json!({"id": PIPELINE_ID})).await;
    assert!(!session["nodes"].as_array().unwrap().is_empty(), "{session}");
    // The whole session's output, every page of it, from the files fetched as they were asked.
    let (text, _, total_bytes) = read_all_pages(&client, json!({"id": PIPELINE_ID})).await;
    assert!(text.contains("I'll read the spec first."), "{text}");
    assert!(total_bytes.as_u64().unwrap() > 0, "{total_bytes}");
    // A session the prefix does not hold is refused, naming it.
    let (code, message) = refusal(&client, "get_session", json!({"id": "1795952464415_none"})).await;
    assert_eq!(code, "session_not_found", "{message}");
    assert!(message.contains("1795952464415_none"), "{message}");
    client.cancel().await.unwrap();

    // Nothing is ever run from a bucket.
    let refused = command(&setup, &["--allow-runs"]).output().await.unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("does not take --allow-runs"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// The official Python SDK's client (`mcp_client/drive.py`) on the same bucket prefix: the read
/// tools alone, the listing of `zstudio sessions --json --source`, a CI run's output from the
/// mirror's files in pages joined equal to it, the injection fixture inert and 1,000 malformed
/// calls answered.
#[test]
fn the_official_python_client_reads_a_bucket_prefix() {
    let setup = setup();
    // Beside the captures: a session whose output is the injection fixture, and one of about
    // 200 KB of output (pages), each a CI run's folder uploaded whole.
    let extra = tempfile::TempDir::new().unwrap();
    let folder = |id: &str, node: &str, output: &str| {
        let session = extra.path().join(id);
        std::fs::create_dir_all(session.join(node)).unwrap();
        let info = json!({"sessionPath": format!("/ci/.zibby/output/sessions/{id}"),
            "sessionTimestamp": id.split('_').next().unwrap().parse::<u64>().unwrap(),
            "currentNode": node, "createdAt": "2026-11-29T11:41:04.432Z", "config": {}});
        std::fs::write(session.join(".session-info.json"), info.to_string()).unwrap();
        std::fs::write(session.join(node).join("raw_stream_output.txt"), output).unwrap();
        [
            json!({"copy_tree": session, "prefix": format!("ci/{id}/")}),
            json!({"put": format!("ci/{id}/.upload-complete"), "text": ""}),
        ]
    };
    let (evil, large) = ("1795952600000_evil", "1795952600001_larg");
    let large_output: String = (0..4_000)
        .map(|i| format!("flood line {i} of the CI run's output\n"))
        .collect();
    let mut ops = folder(evil, "say", &format!("evil={INJECTION}\n")).to_vec();
    ops.extend(folder(large, "flood", &large_output));
    setup.moto.upload(super::BUCKET, false, json!(ops));
    let sessions = json_of(&zstudio(&setup, &["sessions", "--json", "--source", URL]));
    let home = setup.home.path();
    let mut env = json!({
        "XDG_DATA_HOME": home.join("data"),
        "XDG_CACHE_HOME": home.join("cache"),
        "HOME": home,
    });
    for (name, value) in setup.moto.env() {
        env[name] = json!(value);
    }
    let expected = home.join("expected.json");
    std::fs::write(
        &expected,
        json!({
            "argv": [env!("CARGO_BIN_EXE_zstudio"), "mcp", "--source", URL],
            "env": env,
            "runs": false,
            "sessions": sessions,
            "large_run": large,
            "large_output": large_output,
            "evil_session": evil,
            "evil_run": evil,
        })
        .to_string(),
    )
    .unwrap();
    crate::mcp_python_client::drive(&["--elsewhere".into(), "--expected".into(), expected.into()]);
}
