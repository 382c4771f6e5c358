//! `zstudio mcp` against the same answers from `zstudio sessions --json`, in the same run
//! (docs/benchmarks.md, "`zstudio mcp`"), on `BENCH_SESSIONS` generated sessions (10,000 by
//! default; the listing bench's, `common::generate_sessions`), the store current:
//!
//! - `zstudio sessions --json` as a process (best of 5): the baseline a coding agent without MCP
//!   pays for the whole list;
//! - the server's start, to its answer to `initialize` (best of 5);
//! - `list_sessions` (a page of 50, the first and the last page) and `get_session` through one
//!   server (best of 10 each), with the MCP SDK's own client (`rmcp`), as a coding agent asks;
//! - a session whose raw stream is `BENCH_OUTPUT_MB` MB (1,000 by default; 0 to skip):
//!   `read_output`'s first page, a page at nine tenths of the file (its cursor), then
//!   `BENCH_OUTPUT_PAGES` pages in a row (1,000: 16 MB of text), with the server's resident
//!   memory at each quarter of them and its peak (`VmHWM`) after them.
//!
//! `cargo bench -p zstudio --bench mcp` (`--profile dev` for a debug build).

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ()>;

fn main() {
    if common::names_only() {
        return;
    }
    let sessions: usize = common::size_from_env("BENCH_SESSIONS", 10_000);
    let output_mb: u64 = common::size_from_env("BENCH_OUTPUT_MB", 1_000);
    let pages: usize = common::size_from_env("BENCH_OUTPUT_PAGES", 1_000);
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    let db = dir.path().join("studio.sqlite");
    let started = Instant::now();
    common::generate_sessions(&workspace, sessions);
    println!(
        "{sessions} sessions generated in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let large = (output_mb > 0).then(|| large_output(&workspace, output_mb));

    // The store made current once, as any studio surface leaves it.
    let first = sessions_json(&workspace, &db);
    println!("zstudio sessions --json, first (store made): {:.0} ms", ms(first));
    let (baseline, _) = common::best_of(5, || sessions_json(&workspace, &db));
    println!(
        "zstudio sessions --json (whole list), best of 5: {:.0} ms",
        ms(baseline)
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut best_start = Duration::MAX;
        for _ in 0..5 {
            let at = Instant::now();
            let (client, _) = connect(&workspace, &db).await;
            best_start = best_start.min(at.elapsed());
            client.cancel().await.unwrap();
        }
        println!(
            "zstudio mcp start to its initialize answer, best of 5: {:.0} ms",
            ms(best_start)
        );

        let (client, pid) = connect(&workspace, &db).await;
        let (first_page, listed) = best_of_calls(&client, "list_sessions", json!({"limit": 50})).await;
        let total = listed["matched"].as_u64().unwrap_or(0);
        println!(
            "list_sessions, a page of 50, best of 10: {:.1} ms (of {total})",
            ms(first_page)
        );
        let last = format!("sessions:{}", sessions.saturating_sub(50));
        let (last_page, _) = best_of_calls(&client, "list_sessions", json!({"limit": 50, "cursor": last})).await;
        println!("list_sessions, the last page, best of 10: {:.1} ms", ms(last_page));
        let id = listed["sessions"][0]["id"].as_str().expect("a session id").to_owned();
        let (shown, _) = best_of_calls(&client, "get_session", json!({"id": id})).await;
        println!("get_session, best of 10: {:.1} ms", ms(shown));
        println!(
            "ratios against sessions --json: list_sessions {:.3}, get_session {:.3}",
            first_page.as_secs_f64() / baseline.as_secs_f64(),
            shown.as_secs_f64() / baseline.as_secs_f64()
        );
        if let Some((id, bytes)) = &large {
            read_large_output(&client, id, *bytes, pages, pid).await;
        }
        client.cancel().await.unwrap();
    });
}

/// `zstudio mcp` on the workspace, connected; with the server's pid.
async fn connect(workspace: &Path, db: &Path) -> (Client, u32) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command.arg("mcp").arg("-w").arg(workspace).arg("--db").arg(db);
    command.env_remove("ZIBBY_STUDIO_DB");
    let transport = TokioChildProcess::new(command).unwrap();
    let pid = transport.id().expect("the server's pid");
    (().serve(transport).await.unwrap(), pid)
}

/// The structured answer of a call that succeeded.
async fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_eq!(result.is_error, Some(false), "{tool}: {:?}", result.content);
    result.structured_content.expect("a structured answer")
}

async fn best_of_calls(client: &Client, tool: &str, arguments: Value) -> (Duration, Value) {
    let mut best = Duration::MAX;
    let mut answer = Value::Null;
    for _ in 0..10 {
        let at = Instant::now();
        answer = call(client, tool, arguments.clone()).await;
        best = best.min(at.elapsed());
    }
    (best, answer)
}

/// A session (the newest) whose one node's raw stream is `mb` MB of numbered lines.
fn large_output(workspace: &Path, mb: u64) -> (String, u64) {
    let id = "1799999999999_large".to_owned();
    let node = workspace.join(".zibby/output/sessions").join(&id).join("plan");
    std::fs::create_dir_all(&node).unwrap();
    let file = std::fs::File::create(node.join("raw_stream_output.txt")).unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let (mut written, mut line) = (0u64, 0u64);
    while written < mb * 1_000_000 {
        let text = format!("line {line:>9} of the large output, as an agent prints it, padded to a row\n");
        out.write_all(text.as_bytes()).unwrap();
        written += text.len() as u64;
        line += 1;
    }
    out.flush().unwrap();
    (id, written)
}

async fn read_large_output(client: &Client, id: &str, bytes: u64, pages: usize, pid: u32) {
    let at = Instant::now();
    let first = call(client, "read_output", json!({"id": id})).await;
    println!(
        "read_output, first page of a {} MB output: {:.1} ms",
        bytes / 1_000_000,
        ms(at.elapsed())
    );
    let cursor = first["next_cursor"].as_str().expect("a next page").to_owned();
    // `<session id>:<file>:<byte offset>`: the same file, nine tenths in.
    let (file_part, _) = cursor.rsplit_once(':').unwrap();
    let late = format!("{file_part}:{}", bytes / 10 * 9);
    let at = Instant::now();
    call(client, "read_output", json!({"id": id, "cursor": late})).await;
    println!("read_output, a page at nine tenths: {:.1} ms", ms(at.elapsed()));
    let (mut next, mut text_bytes) = (Some(cursor), 0usize);
    let at = Instant::now();
    let mut resident = Vec::new();
    for page in 0..pages {
        if page % (pages / 4).max(1) == 0 {
            resident.push(memory_mb(pid, "VmRSS:"));
        }
        let Some(cursor) = next.take() else { break };
        let page = call(client, "read_output", json!({"id": id, "cursor": cursor})).await;
        text_bytes += page["text"].as_str().map_or(0, str::len);
        next = page["next_cursor"].as_str().map(str::to_owned);
    }
    let took = at.elapsed();
    println!(
        "read_output, {pages} pages in a row: {:.1} s, {:.1} ms a page, {} MB of text; the server's \
         memory at each quarter {resident:?} MB, then {} MB, peak {} MB",
        took.as_secs_f64(),
        ms(took) / pages as f64,
        text_bytes / 1_000_000,
        memory_mb(pid, "VmRSS:"),
        memory_mb(pid, "VmHWM:")
    );
}

/// A process's resident memory (`VmRSS:`) or its peak (`VmHWM:`), in MB.
fn memory_mb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1000)
}

fn sessions_json(workspace: &Path, db: &Path) -> Duration {
    let at = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["sessions", "--json", "-w"])
        .arg(workspace)
        .arg("--db")
        .arg(db)
        .env_remove("ZIBBY_STUDIO_DB")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    at.elapsed()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
