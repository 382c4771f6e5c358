//! The desktop app's figures, in the real window (release build, under Xvfb, through WebDriver):
//!
//! 1. launch: from the app process's start to a table showing sessions, with 10,000 sessions and,
//!    as the baseline of the same run, with one;
//! 2. responsiveness: the longest the page's event loop is busy (what an input waits at most)
//!    while a run prints about 10,000 lines a second into the open output view, against the same
//!    page idle;
//! 3. webview memory: the WebKit web process's resident memory with a 1 GB output open and
//!    scrolled, against the same with a small output open.
//!
//! `cargo bench -p zibby-studio --bench app` (needs a display: `xvfb-run -a`); figures go to
//! stdout and into docs/benchmarks.md by hand. Nothing here asserts a time.

#[allow(dead_code)]
#[path = "../tests/e2e/harness.rs"]
mod harness;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fantoccini::{Client, Locator};
use harness::{eventually, wait_for, App, Workspace};
use serde_json::json;
use studio_core::store::{Store, StoreLocation};

const ROUNDS: usize = 3;

#[tokio::main]
async fn main() {
    // `cargo bench --bench app -- launch` runs only that part (also: responsiveness, memory).
    let only = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let run = |part: &str| only.as_deref().is_none_or(|only| only == part);
    println!("# Zibby Studio, the app (release, Xvfb)\n");
    if run("launch") {
        launch().await;
    }
    if run("responsiveness") {
        responsiveness().await;
    }
    if run("memory") {
        memory().await;
    }
}

// ---- 1. launch ----

async fn launch() {
    for sessions in [1u64, 10_000] {
        // First launch on a new store (every folder read and indexed), then the launches after
        // (the store's folder index is current).
        let (mut first, mut again) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let workspace = Workspace::with_generated_sessions(sessions);
            first.push(launch_to_table(&workspace).await);
            again.push(launch_to_table(&workspace).await);
        }
        for (which, mut figures) in [("first launch", first), ("next launches", again)] {
            figures.sort();
            let all: Vec<String> = figures.iter().map(|f| f.as_millis().to_string()).collect();
            println!(
                "launch to a usable table, {sessions:>6} sessions, {which}: median {} ms (of {ROUNDS}: {})",
                figures[ROUNDS / 2].as_millis(),
                all.join(", ")
            );
        }
    }
}

/// From the app process's start to the first row of the table drawn.
async fn launch_to_table(workspace: &Workspace) -> Duration {
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    // Polled every few ms: the moment the first row is there.
    let shown = loop {
        if app.client.find(Locator::Css("tr[data-session-id]")).await.is_ok() {
            break SystemTime::now();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let started = process_start(&workspace.db());
    app.close().await;
    shown.duration_since(started).unwrap_or_default()
}

/// When the app opened on `db` started, from /proc (10 ms resolution).
fn process_start(db: &Path) -> SystemTime {
    let ticks_per_second = 100u64; // CLK_TCK on Linux
    let boot = fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("btime ").map(|s| s.trim().parse::<u64>().unwrap()))
        .unwrap();
    let app = *harness::app_processes(db).first().expect("the app runs");
    let start_ticks = stat_field(app, 19).expect("the app's start time");
    UNIX_EPOCH + Duration::from_millis(boot * 1000 + start_ticks * 1000 / ticks_per_second)
}

// ---- 2. responsiveness ----

/// For `seconds`, a 16 ms timer in the page; returns the largest and the 99th percentile of how
/// late it fired (ms): how long the page was busy with something else.
async fn event_loop_lag(client: &Client, seconds: u64) -> (f64, f64) {
    let script = "const [seconds, done] = [arguments[0], arguments[arguments.length - 1]]; \
        const lags = []; let last = performance.now(); const end = last + seconds * 1000; \
        function tick() { const now = performance.now(); lags.push(Math.max(0, now - last - 16)); last = now; \
          if (now < end) setTimeout(tick, 16); else { lags.sort((a, b) => a - b); \
            done([lags[lags.length - 1], lags[Math.floor(lags.length * 0.99)]]); } } \
        setTimeout(tick, 16);";
    let value = client.execute_async(script, vec![json!(seconds)]).await.unwrap();
    (value[0].as_f64().unwrap(), value[1].as_f64().unwrap())
}

async fn responsiveness() {
    // 100,000 lines over 10 s in one node.
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:10000", "--lines", "100000"]);
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    let client = &app.client;
    wait_for(client, "#run-agent option").await;
    let (idle_max, idle_p99) = event_loop_lag(client, 3).await;

    wait_for(client, "#run-prompt").await.send_keys("flood").await.unwrap();
    wait_for(client, "#run-button").await.click().await.unwrap();
    wait_for(client, "#session-view").await;
    harness::click(client, "[data-tab='output']").await;
    lines_shown(client).await;
    let store = Store::open(&StoreLocation::File(workspace.db())).unwrap();
    let run = store
        .runs(&studio_core::Workspace::open(workspace.path()).unwrap(), None)
        .unwrap()[0]
        .id
        .clone();
    let started = Instant::now();
    let before = store.output_line_count(&run).unwrap();
    let (busy_max, busy_p99) = event_loop_lag(client, 5).await;
    let after = store.output_line_count(&run).unwrap();
    let rate = (after - before) as f64 / started.elapsed().as_secs_f64();
    let shown = shown_seq(client).await;
    println!(
        "event loop, idle: max {idle_max:.0} ms, p99 {idle_p99:.0} ms; while the output view follows a run \
         printing {rate:.0} lines/s (stored; the view showed line {shown} of {after} at the end): \
         max {busy_max:.0} ms, p99 {busy_p99:.0} ms"
    );
    app.close().await;
}

/// Waits for the output view to show lines (its lines are redrawn all the time: no element is
/// held across calls).
async fn lines_shown(client: &Client) {
    eventually("the output view shows lines", || async {
        let seq = shown_seq(client).await;
        (seq > 0).then_some(()).ok_or("none".to_owned())
    })
    .await;
}

/// The last line number the output view shows.
async fn shown_seq(client: &Client) -> i64 {
    let value = client
        .execute(
            "const lines = document.querySelectorAll('#output .output-line[data-seq]'); \
             return lines.length ? Number(lines[lines.length - 1].dataset.seq) : 0;",
            vec![],
        )
        .await
        .unwrap();
    value.as_i64().unwrap_or(0)
}

// ---- 3. memory ----

async fn memory() {
    // The baseline: the window on an empty workspace, nothing open.
    let empty = Workspace::empty();
    let app = App::launch(empty.path(), &empty.db(), empty.data_home()).await;
    wait_for(&app.client, ".empty").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "webview memory, empty workspace: WebKitWebProcess {}",
        webview_memory(&empty.db())
    );
    app.close().await;
    for megabytes in [1usize, 1024] {
        let flood = megabytes.to_string();
        let workspace = Workspace::with_test_agent(&["--nodes", "plan:10", "--flood-mb", &flood]);
        let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
        let client = &app.client;
        wait_for(client, "#run-agent option").await;
        wait_for(client, "#run-prompt").await.send_keys("flood").await.unwrap();
        let began = Instant::now();
        wait_for(client, "#run-button").await.click().await.unwrap();
        tokio::time::timeout(Duration::from_secs(600), async {
            loop {
                if client
                    .find(Locator::Css(".live-run[data-status='success']"))
                    .await
                    .is_ok()
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
        .await
        .expect("the flood ends within 10 minutes");
        let run_took = began.elapsed();
        wait_for(client, "#session-view").await;
        harness::click(client, "[data-tab='output']").await;
        lines_shown(client).await;
        let opened = Instant::now();
        // Up to the middle and back to the end, as a reader would.
        for fraction in ["0.5", "0.25", "1"] {
            client
                .execute(
                    &format!(
                        "const o = document.querySelector('.output-scroller'); \
                         o.scrollTop = o.scrollHeight * {fraction}; return null;"
                    ),
                    vec![],
                )
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
        let lines = eventually("lines are shown", || async {
            let seq = shown_seq(client).await;
            (seq > 0).then_some(seq).ok_or("none".to_owned())
        })
        .await;
        let memory = webview_memory(&workspace.db());
        println!(
            "webview memory with a {megabytes} MB output open (last line shown {lines}, run took {:.1} s, \
             scrolled in {:.1} s): WebKitWebProcess {memory}",
            run_took.as_secs_f64(),
            opened.elapsed().as_secs_f64()
        );
        // Where it goes: the same session on its Timeline tab (the output view gone), then the
        // session view closed.
        harness::click(client, "[data-tab='timeline']").await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!("  then on the Timeline tab: {}", webview_memory(&workspace.db()));
        harness::click(client, "#session-close").await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "  then with the session view closed: {}",
            webview_memory(&workspace.db())
        );
        app.close().await;
    }
}

/// The memory of the WebKit web process of the app opened on `db`, from its smaps_rollup:
/// resident (shared libraries counted whole), proportional (shared pages divided among their
/// processes) and private.
fn webview_memory(db: &Path) -> String {
    let app = *harness::app_processes(db).first().expect("the app runs");
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|pid| pid.parse::<u32>().ok()) else {
            continue;
        };
        let is_web =
            fs::read_to_string(entry.path().join("comm")).is_ok_and(|comm| comm.starts_with("WebKitWebProces"));
        if is_web && parent_of(pid) == Some(app) {
            let rollup = fs::read_to_string(entry.path().join("smaps_rollup")).unwrap();
            let kib = |field: &str| -> u64 {
                rollup
                    .lines()
                    .find_map(|line| line.strip_prefix(field))
                    .and_then(|v| v.split_whitespace().next()?.parse().ok())
                    .unwrap_or(0)
            };
            let private = kib("Private_Clean:") + kib("Private_Dirty:");
            return format!(
                "RSS {} MiB, PSS {} MiB, private {} MiB",
                kib("Rss:") / 1024,
                kib("Pss:") / 1024,
                private / 1024
            );
        }
    }
    panic!("no WebKitWebProcess under the app {app}");
}

/// Field `index` of `/proc/<pid>/stat`, counted after the command name (0: state, 1: parent,
/// 19: start time in clock ticks since boot); the name may hold spaces and parentheses, so the
/// fields are read after its last `)`.
fn stat_field(pid: u32, index: usize) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(index)?.parse().ok()
}

/// The parent of a process, while it runs.
fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 1).map(|ppid| ppid as u32)
}
