//! The desktop app's figures, in the real window (release build, under Xvfb, through WebDriver):
//!
//! 1. launch: from the app process's start to a table showing sessions, with 10,000 sessions and,
//!    as the baseline of the same run, with one;
//! 2. responsiveness: the longest the page's event loop is busy (what an input waits at most)
//!    while a run prints about 10,000 lines a second into the open output view, against the same
//!    page idle;
//! 3. webview memory: the WebKit web process's memory with a 1 GB output open and scrolled
//!    (opened after its run, and followed live), against the same with a 1 MB output and with an
//!    empty page.
//!
//! 4. find in output: a 1 GB output searched through the store, against the page reading it;
//! 5. idle: the CPU the app and its web process use with the window open and nothing live, on
//!    a fresh window and after a few runs have ended; 5b. paint: what one changed label in the
//!    table costs the web process (the idle window's one repaint).
//!
//! 6. traces exported live: the CPU a run of 80,000 node executions costs the app, with its runs
//!    sent to an OTLP endpoint, against the same with none (`-- otlp`, on request only).
//!
//! `-- idle-trace` (on request only) prints which threads use CPU, second by second, at rest.
//!
//! `-- screenshots` (on request only, under `xvfb-run -s "-screen 0 1920x1080x24"`) writes the
//! README's screenshots of the demo workspace to docs/screenshots/.
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
    // `cargo bench --bench app -- launch` runs only that part (also: responsiveness, memory, find).
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
    if run("find") {
        find().await;
    }
    if run("idle") {
        idle().await;
    }
    if run("paint") {
        paint().await;
    }
    // Long (about 4 min at its 8 pairs, 13 at 30), so on request only.
    if only.as_deref() == Some("otlp") {
        otlp().await;
    }
    // A diagnostic, not a figure: on request only.
    if only.as_deref() == Some("idle-trace") {
        idle_trace().await;
    }
    // Not a figure: the README's screenshots, on request only (needs a 1920x1080 screen).
    if only.as_deref() == Some("screenshots") {
        screenshots().await;
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
        for (which, figures) in [("first launch", first), ("next launches", again)] {
            for (what, mut figures) in [
                ("on screen", figures.iter().map(|f| f.1).collect::<Vec<_>>()),
                ("in the page", figures.iter().map(|f| f.0).collect()),
            ] {
                figures.sort();
                let all: Vec<String> = figures.iter().map(|f| f.as_millis().to_string()).collect();
                println!(
                    "launch to a usable table ({what}), {sessions:>6} sessions, {which}: median {} ms (of {ROUNDS}: {})",
                    figures[ROUNDS / 2].as_millis(),
                    all.join(", ")
                );
            }
        }
    }
}

/// From the app process's start to the first row of the table: in the page (as WebDriver finds
/// it), and on screen (the page's `workspace-shown` mark, set after the frame that shows it).
async fn launch_to_table(workspace: &Workspace) -> (Duration, Duration) {
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    // Polled every few ms: the moment the first row is there.
    let in_page = loop {
        if app.client.find(Locator::Css("tr[data-session-id]")).await.is_ok() {
            break SystemTime::now();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let shown: f64 = eventually("the page marks the frame that shows the workspace", || async {
        let mark = app
            .client
            .execute(
                "const mark = performance.getEntriesByName('workspace-shown')[0]; \
                 return mark ? performance.timeOrigin + mark.startTime : null;",
                vec![],
            )
            .await
            .map_err(|error| error.to_string())?;
        mark.as_f64().ok_or("not yet".to_owned())
    })
    .await;
    let started = process_start(&workspace.db());
    app.close().await;
    let shown = UNIX_EPOCH + Duration::from_micros((shown * 1000.0) as u64);
    (
        in_page.duration_since(started).unwrap_or_default(),
        shown.duration_since(started).unwrap_or_default(),
    )
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

/// For `seconds`, a 16 ms timer in the page: how late it fired, which is how long the page was
/// busy with something else (what an input would have waited).
async fn event_loop_lag(client: &Client, seconds: u64) -> Lag {
    let script = "const [seconds, done] = [arguments[0], arguments[arguments.length - 1]]; \
        const lags = []; let last = performance.now(); const end = last + seconds * 1000; \
        function tick() { const now = performance.now(); lags.push(Math.max(0, now - last - 16)); last = now; \
          if (now < end) setTimeout(tick, 16); else { lags.sort((a, b) => a - b); \
            done([lags[lags.length - 1], lags[Math.floor(lags.length * 0.99)], lags.filter(l => l > 50).length]); } } \
        setTimeout(tick, 16);";
    let value = client.execute_async(script, vec![json!(seconds)]).await.unwrap();
    Lag {
        max: value[0].as_f64().unwrap(),
        p99: value[1].as_f64().unwrap(),
        over_50_ms: value[2].as_u64().unwrap(),
    }
}

/// How late a 16 ms timer in the page fired (ms).
struct Lag {
    max: f64,
    p99: f64,
    /// How many times it was more than 50 ms late.
    over_50_ms: u64,
}

impl std::fmt::Display for Lag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "max {:.0} ms, p99 {:.0} ms, {} over 50 ms",
            self.max, self.p99, self.over_50_ms
        )
    }
}

async fn responsiveness() {
    // 100,000 lines over 10 s in one node.
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:10000", "--lines", "100000"]);
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    let client = &app.client;
    wait_for(client, "#run-agent option").await;
    let idle = event_loop_lag(client, 3).await;

    harness::start_run(client, "flood").await;
    let clicked = Instant::now();
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
    let first_lines = clicked.elapsed();
    let busy = event_loop_lag(client, 5).await;
    let after = store.output_line_count(&run).unwrap();
    assert!(after > before, "the run printed while the lag was measured");
    let rate = (after - before) as f64 / started.elapsed().as_secs_f64();
    let shown = shown_seq(client).await;
    let following = client
        .execute("return document.querySelector('#output-follow').hidden", vec![])
        .await
        .unwrap();
    assert_eq!(
        following,
        json!(true),
        "the output view still follows the run at the end"
    );
    println!(
        "event loop, idle: {idle}; while the output view follows a run printing {rate:.0} lines/s \
         (stored; the view showed line {shown} of {after} at the end): {busy}; the view showed the \
         run's first lines {:.1} s after Run was pressed",
        first_lines.as_secs_f64()
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
        // The output opened once the run has ended (the session view closed while it ran), then
        // the same followed live from the first line (the view opens with the run).
        for followed in [false, true] {
            let case = format!("{megabytes}-{}", if followed { "followed" } else { "opened" });
            if std::env::var("BENCH_MEMORY_CASE").is_ok_and(|only| only != case) {
                continue;
            }
            memory_with_output(megabytes, followed).await;
        }
    }
}

/// Runs the workspace's flooding agent with its output followed live from the first line, or (not
/// `followed`) with the session view closed until the run ended; then shows the Output tab. How
/// long the run took.
async fn flood_then_open_output(client: &Client, followed: bool) -> Duration {
    let began = Instant::now();
    harness::start_run(client, "flood").await;
    wait_for(client, "#session-view").await;
    harness::click(
        client,
        if followed {
            "[data-tab='output']"
        } else {
            "#session-close"
        },
    )
    .await;
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
    if !followed {
        harness::click(client, "tr[data-session-id] .session-id").await;
        wait_for(client, "#session-view").await;
        harness::click(client, "[data-tab='output']").await;
    }
    run_took
}

/// The web process's memory with the output of a run that printed `megabytes` open, scrolled to
/// the middle, a quarter and the end; then, for the one followed live, 20 s later (what WebKit
/// gives back of what following allocated), on the Timeline tab and with the view closed.
async fn memory_with_output(megabytes: usize, followed: bool) {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:10", "--flood-mb", &megabytes.to_string()]);
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    let client = &app.client;
    let run_took = flood_then_open_output(client, followed).await;
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
    tokio::time::sleep(Duration::from_secs(2)).await;
    let how = if followed {
        "followed live"
    } else {
        "opened after the run"
    };
    println!(
        "webview memory, a {megabytes} MB output {how} (last line {lines}, run took {:.1} s, scrolled \
         in {:.1} s): WebKitWebProcess {}",
        run_took.as_secs_f64(),
        opened.elapsed().as_secs_f64(),
        webview_memory(&workspace.db())
    );
    if followed {
        tokio::time::sleep(Duration::from_secs(20)).await;
        println!("  20 s later: {}", webview_memory(&workspace.db()));
        harness::click(client, "[data-tab='timeline']").await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!("  then on the Timeline tab: {}", webview_memory(&workspace.db()));
        harness::click(client, "#session-close").await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "  then with the session view closed: {}",
            webview_memory(&workspace.db())
        );
    }
    app.close().await;
}

/// The memory of the WebKit web process of the app opened on `db`, from its smaps_rollup:
/// resident (shared libraries counted whole), proportional (shared pages divided among their
/// processes) and private.
fn webview_memory(db: &Path) -> String {
    let web = webview_process(db);
    let rollup = fs::read_to_string(format!("/proc/{web}/smaps_rollup")).unwrap();
    let kib = |field: &str| -> u64 {
        rollup
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let private = kib("Private_Clean:") + kib("Private_Dirty:");
    let mut figures = format!(
        "RSS {} MiB, PSS {} MiB, private {} MiB",
        kib("Rss:") / 1024,
        kib("Pss:") / 1024,
        private / 1024
    );
    if std::env::var_os("BENCH_MEMORY_DETAIL").is_some() {
        figures.push_str(&resident_by_mapping(web));
    }
    figures
}

/// The WebKit web process of the app opened on `db`.
fn webview_process(db: &Path) -> u32 {
    let app = *harness::app_processes(db).first().expect("the app runs");
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.starts_with("WebKitWebProces"))
                && parent_of(pid) == Some(app)
        })
        .unwrap_or_else(|| panic!("no WebKitWebProcess under the app {app}"))
}

/// With `BENCH_MEMORY_DETAIL` set: the process's resident memory by mapping (anonymous memory as
/// one line, files by name), the twelve largest, to see where it goes.
fn resident_by_mapping(pid: u32) -> String {
    let smaps = fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let mut by_name = std::collections::HashMap::<String, u64>::new();
    let mut name = String::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            let path = fields.nth(4).unwrap_or("[anonymous]");
            name = path.rsplit('/').next().unwrap_or(path).to_owned();
        } else if first == "Rss:" {
            *by_name.entry(name.clone()).or_default() += fields.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    let mut largest: Vec<_> = by_name.into_iter().collect();
    largest.sort_by_key(|(_, kib)| std::cmp::Reverse(*kib));
    largest
        .iter()
        .take(12)
        .map(|(name, kib)| format!("\n    {:>7.1} MiB  {name}", *kib as f64 / 1024.0))
        .collect()
}

/// Field `index` of `/proc/<pid>/stat`, counted after the command name (0: state, 1: parent,
/// 19: start time in clock ticks since boot); the name may hold spaces and parentheses, so the
/// fields are read after its last `)`.
fn stat_field(pid: u32, index: usize) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(index)?.parse().ok()
}

/// The CPU a process used so far (user and system, every thread's, those ended too), in clock
/// ticks (100 a second); 0 once it is gone.
fn cpu_ticks(pid: u32) -> u64 {
    stat_field(pid, 11).unwrap_or(0) + stat_field(pid, 12).unwrap_or(0)
}

/// The parent of a process, while it runs.
fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 1).map(|ppid| ppid as u32)
}

// ---- 4. find in output ----

/// Find in a 1 GB output (10.1 M lines), from the first line to a line near its end, as the
/// window does it (the store reads the output: `run_output_find`); against the baseline of the
/// page reading the output 500 lines at a time through `run_output`, as Find did before, timed
/// over the output's first 500,000 lines in the same run (and matching without ANSI parsing,
/// which only flatters it).
async fn find() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:10", "--flood-mb", "1024"]);
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    let client = &app.client;
    flood_then_open_output(client, false).await;
    lines_shown(client).await;
    client
        .execute(
            "document.querySelector('.output-scroller').scrollTop = 0; return null;",
            vec![],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let input = wait_for(client, "#output-find").await;
    input.send_keys("flood done").await.unwrap();
    let started = Instant::now();
    input.send_keys("\u{E007}").await.unwrap();
    let found = tokio::time::timeout(Duration::from_secs(600), async {
        loop {
            let status = client
                .execute("return document.querySelector('.find-status').textContent", vec![])
                .await
                .unwrap();
            let status = status.as_str().unwrap_or_default().to_owned();
            if status.starts_with("line ") || status.starts_with("no match") {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("find ends within 10 minutes");
    let store_took = started.elapsed().as_secs_f64();
    assert!(found.starts_with("line "), "the line near the end is found: {found}");
    let line: f64 = found.trim_start_matches("line ").replace(',', "").parse().unwrap();

    client
        .update_timeouts(fantoccini::wd::TimeoutConfiguration::new(
            Some(Duration::from_secs(600)),
            None,
            None,
        ))
        .await
        .unwrap();
    let baseline_lines = 500_000;
    let paged = client
        .execute_async(
            "const [runId, limit, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]]; \
             const backend = window.zibbyStudio.backend; const began = performance.now(); \
             (async () => { let read = 0, hits = 0; \
               while (read < limit) { \
                 const page = await backend.runOutput(runId, { fromSeq: read + 1, limit: 500 }); \
                 if (page.lines.length === 0) break; \
                 for (const line of page.lines) if (line.text.toLowerCase().includes('flood done')) hits++; \
                 read += page.lines.length; } \
               done([read, performance.now() - began, hits]); })().catch((e) => done([0, 0, String(e)]));",
            vec![json!(run_id_shown(client).await), json!(baseline_lines)],
        )
        .await
        .unwrap();
    let (paged_lines, paged_ms) = (paged[0].as_f64().unwrap(), paged[1].as_f64().unwrap());
    assert_eq!(
        paged_lines, baseline_lines as f64,
        "the baseline read its lines: {paged}"
    );
    let (store_rate, paged_rate) = (line / store_took, paged_lines / (paged_ms / 1000.0));
    println!(
        "find in a 1 GB output: the store found line {line} in {store_took:.2} s ({:.1} M lines/s); the page \
         reading it 500 lines at a time (the baseline, before): {paged_lines} lines in {:.2} s ({:.2} M \
         lines/s): {:.0}x faster",
        store_rate / 1e6,
        paged_ms / 1000.0,
        paged_rate / 1e6,
        store_rate / paged_rate
    );
    app.close().await;
}

/// The run whose output the output view shows.
async fn run_id_shown(client: &Client) -> String {
    let value = client
        .execute("return document.querySelector('.output-view').dataset.runId", vec![])
        .await
        .unwrap();
    value.as_str().expect("the output view names its run").to_owned()
}

// ---- 5. idle ----

/// How long each idle case is measured (the issue's figure was taken over 120 s).
const IDLE_SECONDS: u64 = 120;

/// The CPU the app and its web process use with the window open and nothing live: on a window
/// just opened on 200 sessions, and after three short runs have ended (in the window: their
/// Live runs entries, views and timers come and go). As a share of one core.
async fn idle() {
    let (workspace, app) = idle_window().await;
    let client = &app.client;
    tokio::time::sleep(Duration::from_secs(10)).await;
    println!(
        "idle, a window just opened on 200 sessions: {}",
        idle_cpu(&workspace.db()).await
    );

    for i in 0..3 {
        harness::start_run(client, &format!("idle {i}")).await;
        eventually("the run ends", || async {
            let store = Store::open(&StoreLocation::File(workspace.db())).map_err(|e| e.to_string())?;
            let runs = store
                .runs(&studio_core::Workspace::open(workspace.path()).unwrap(), None)
                .map_err(|e| e.to_string())?;
            (runs.len() == i + 1 && runs.iter().all(|run| run.status != studio_core::Status::Running))
                .then_some(())
                .ok_or(format!("{} runs, one live", runs.len()))
        })
        .await;
        let prompt = client.find(Locator::Css("#run-prompt")).await.unwrap();
        prompt.clear().await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    println!(
        "idle, after three runs ended (the prompt focused): {}",
        idle_cpu(&workspace.db()).await
    );
    // A focused text field's caret blinks: the page repaints twice a second for it.
    client
        .execute("document.activeElement?.blur(); return null;", vec![])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "idle, after three runs ended, nothing focused: {}",
        idle_cpu(&workspace.db()).await
    );
    // The floor: the same web process showing an empty page (WebKit's own timers).
    client
        .execute("document.documentElement.replaceChildren(); return null;", vec![])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "idle, the same window emptied (no element left: WebKit's floor): {}",
        idle_cpu(&workspace.db()).await
    );
    app.close().await;
}

/// The idle cases' window: open on 200 sessions, its table shown; the agent runs two short nodes.
async fn idle_window() -> (Workspace, App) {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:300,write:300", "--prompt", "{prompt}"]);
    workspace.add_generated_sessions(200);
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    wait_for(&app.client, "tr[data-session-id]").await;
    (workspace, app)
}

/// The app's and its web process's CPU time over [`IDLE_SECONDS`], as a share of one core.
async fn idle_cpu(db: &Path) -> String {
    let app = *harness::app_processes(db).first().expect("the app runs");
    let web = webview_process(db);
    let (app_before, web_before) = (cpu_ticks(app), cpu_ticks(web));
    tokio::time::sleep(Duration::from_secs(IDLE_SECONDS)).await;
    let share = |ticks: u64| ticks as f64 / IDLE_SECONDS as f64; // ticks/s = % of a core
    let (app_used, web_used) = (cpu_ticks(app) - app_before, cpu_ticks(web) - web_before);
    format!(
        "{:.2} % of a core over {IDLE_SECONDS} s (app {:.2} %, web process {:.2} %)",
        share(app_used + web_used),
        share(app_used),
        share(web_used)
    )
}

/// `-- idle-trace` (a diagnostic, on request only): which threads of the app and its web process
/// use CPU, second by second, over `BENCH_IDLE_SECONDS` (120) with the window open on 200 sessions
/// and nothing live. `BENCH_IDLE_JS` runs in the page first (a style to try, an observer), and
/// `BENCH_IDLE_REPORT` at the end (its result is printed).
async fn idle_trace() {
    let (workspace, app) = idle_window().await;
    let client = &app.client;
    if let Ok(js) = std::env::var("BENCH_IDLE_JS") {
        tokio::time::sleep(Duration::from_secs(8)).await;
        println!("BENCH_IDLE_JS: {}", client.execute(&js, vec![]).await.unwrap());
    }
    let seconds: u64 = std::env::var("BENCH_IDLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(IDLE_SECONDS);
    let processes = [
        ("app", *harness::app_processes(&workspace.db()).first().unwrap()),
        ("web", webview_process(&workspace.db())),
    ];
    let started = Instant::now();
    let mut last: std::collections::HashMap<String, u64> = Default::default();
    let mut totals: std::collections::BTreeMap<String, u64> = Default::default();
    for second in 0..=seconds {
        let mut busy = Vec::new();
        for (process, pid) in processes {
            for (thread, ticks) in thread_ticks(pid) {
                let key = format!("{process}/{thread}");
                if let Some(before) = last.insert(key.clone(), ticks) {
                    if ticks > before && second > 0 {
                        busy.push(format!("{key} +{}", ticks - before));
                        *totals.entry(key).or_default() += ticks - before;
                    }
                }
            }
        }
        if !busy.is_empty() {
            println!("{:>4} s: {}", started.elapsed().as_secs(), busy.join(", "));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!("CPU over {seconds} s, in ticks of 10 ms: {totals:?}");
    if let Ok(js) = std::env::var("BENCH_IDLE_REPORT") {
        println!("BENCH_IDLE_REPORT: {}", client.execute(&js, vec![]).await.unwrap());
    }
    app.close().await;
}

/// Each thread of a process (`tid:name`) and the CPU it used so far, in clock ticks.
fn thread_ticks(pid: u32) -> Vec<(String, u64)> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid: u32 = task.file_name().to_str()?.parse().ok()?;
            let name = fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
            let stat = fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
            let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
            Some((format!("{tid}:{}", name.trim()), ticks))
        })
        .collect()
}

/// `-- paint` (5b): what one changed label in the table costs the web process, the idle window's
/// one repaint (its clock moves "2 min ago" to "3 min ago"): 20 changes of one row's time, each
/// drawn, timed as the web process's CPU, twice. `BENCH_PAINT_CASES` (lines of `name=css`) adds
/// styles to compare against the page as it is (`as shipped=`).
async fn paint() {
    let (workspace, app) = idle_window().await;
    let client = &app.client;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let web = webview_process(&workspace.db());
    let cases = std::env::var("BENCH_PAINT_CASES").unwrap_or_default();
    let cases: Vec<(&str, &str)> = std::iter::once(("as shipped", ""))
        .chain(cases.lines().filter_map(|line| line.split_once('=')))
        .collect();
    const CHANGES: &str = r#"
        const [css, changes] = arguments;
        let style = document.getElementById('bench-paint-case');
        if (!style) {
          style = document.createElement('style');
          style.id = 'bench-paint-case';
          document.head.append(style);
        }
        style.textContent = css;
        const frame = () => new Promise((drawn) => requestAnimationFrame(() => drawn()));
        return (async () => {
          await frame(); await frame(); await frame();
          const time = document.querySelector('tr.session-row time');
          for (let i = 0; i < changes; i++) {
            time.textContent = time.textContent.endsWith(' ') ? time.textContent.trim() : time.textContent + ' ';
            await frame(); await frame();
          }
          return null;
        })();
    "#;
    for round in 1..=2 {
        for (name, css) in &cases {
            // The style applied and drawn first; then only the changes are timed.
            client.execute(CHANGES, vec![json!(css), json!(0)]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await;
            let before = cpu_ticks(web);
            client.execute(CHANGES, vec![json!(css), json!(20)]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            println!(
                "paint, round {round}, {name}: {:.1} ms of web process CPU per changed label (20 changes)",
                (cpu_ticks(web) - before) as f64 * 10.0 / 20.0
            );
        }
    }
    app.close().await;
}

// ---- 6. traces exported live ----

/// The node executions of the run `-- otlp` measures (issue 45's figure).
const OTLP_NODES: usize = 80_000;

/// `-- otlp` (issue 45: 80,000 node executions exported live add at most 5 % to the run's CPU
/// time in the studio). A run started from the window: `cat` of a file of 80,000 node executions
/// (two markers and the engine's three lines each, a real child printing them as fast as it can,
/// as `scripts/measure-otlp-live.py` runs them for `zstudio run`), in the app with no endpoint (the
/// baseline) and in the app with `OTEL_EXPORTER_OTLP_ENDPOINT` at a collector on 127.0.0.1 in this
/// process that takes every request (its CPU is not the app's). Pairs alternated, their order
/// reversed every other pair, `BENCH_OTLP_PAIRS` of them (8); each run on a new workspace and store
/// and a new app; the session view open on the run's output, as Run opens it. `BENCH_OTLP_NAMES=N`
/// names the nodes n0..n(N-1) over and over (a loop), where by default each execution is a node
/// of its own. A run's CPU is each process's from /proc, from just before Run is pressed to 3 s
/// after the store says the run ended (polled every 0.5 s): the app's (the shell, where the
/// export runs; its threads counted apart, and its window's), and its web process's. Printed:
/// each run, the medians, and the app's threads whose medians differ most between the two.
async fn otlp() {
    let pairs: usize = std::env::var("BENCH_OTLP_PAIRS")
        .ok()
        .and_then(|pairs| pairs.parse().ok())
        .unwrap_or(8);
    // The app takes the exporter's variables from its environment: the baseline must have none.
    for variable in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] {
        assert!(
            std::env::var_os(variable).is_none(),
            "unset {variable} to measure the baseline"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("nodes.txt");
    let mut file = String::new();
    let distinct: usize = std::env::var("BENCH_OTLP_NAMES")
        .ok()
        .and_then(|names| names.parse().ok())
        .filter(|names| *names > 0)
        .unwrap_or(OTLP_NODES);
    for i in 0..OTLP_NODES {
        let node = i % distinct;
        file.push_str(&format!(
            "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"n{node}\"}}\n\u{250c} n{node}\n\u{2502} work\n\
             \u{2514} done 1ms\n__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_end\",\"node\":\"n{node}\"}}\n"
        ));
    }
    fs::write(&nodes, file).unwrap();
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = received.clone();
    let collector = test_servers::otlp_collector::Collector::start(Duration::ZERO, move |body| {
        counted.fetch_add(body.len() as u64, std::sync::atomic::Ordering::Relaxed);
    });
    let endpoint = collector.endpoint();
    let (mut baselines, mut lives) = (Vec::new(), Vec::new());
    for pair in 0..pairs {
        let order = if pair % 2 == 0 { [false, true] } else { [true, false] };
        for live in order {
            let env: &[(&str, &str)] = if live {
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]
            } else {
                &[]
            };
            let before = received.load(std::sync::atomic::Ordering::Relaxed);
            let cpu = otlp_run_cpu(&nodes, env, &received).await;
            let sent = received.load(std::sync::atomic::Ordering::Relaxed) - before;
            println!(
                "pair {pair} {}: {:.1} s; app {} ms (the export's threads {} ms), web process {} ms; \
                 {:.1} MB sent while measured, {:.1} MB by the app's end",
                if live { "live    " } else { "baseline" },
                cpu.took.as_secs_f64(),
                cpu.app * 10,
                cpu.export * 10,
                cpu.web * 10,
                cpu.sent as f64 / 1e6,
                sent as f64 / 1e6
            );
            if live {
                assert!(sent > 0, "the live run's spans reached the collector");
                lives.push(cpu);
            } else {
                assert_eq!(sent, 0, "the baseline sends nothing");
                baselines.push(cpu);
            }
        }
    }
    let median = |mut figures: Vec<f64>| {
        figures.sort_by(f64::total_cmp);
        figures[figures.len() / 2]
    };
    let of = |runs: &[RunCpu], figure: RunFigure| median(runs.iter().map(|run| figure(run) as f64).collect());
    let export = of(&lives, |run| run.export);
    let pair_ratio = |figure: RunFigure| {
        median(
            baselines
                .iter()
                .zip(&lives)
                .map(|(base, live)| figure(live) as f64 / figure(base) as f64 - 1.0)
                .collect(),
        )
    };
    println!(
        "{OTLP_NODES} node executions exported live, {pairs} pairs (medians), load {}; the export's threads {:.0} ms:",
        fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
        export * 10.0
    );
    let measures: [(&str, RunFigure); 3] = [
        ("the app", |run| run.app),
        ("the app without its window's threads", RunCpu::beside_the_window),
        ("the app and its web process", |run| run.app + run.web),
    ];
    for (what, figure) in measures {
        let (base, live) = (of(&baselines, figure), of(&lives, figure));
        println!(
            "  {what}: {:.0} -> {:.0} ms ({:+.1} %, pairs' median {:+.1} %), the export's threads {:.1} % of the baseline",
            base * 10.0,
            live * 10.0,
            (live / base - 1.0) * 100.0,
            pair_ratio(figure) * 100.0,
            export / base * 100.0
        );
    }
    // Where a live run's CPU differs from its baseline's: the app's threads by name, medians.
    let names: std::collections::BTreeSet<&String> = baselines
        .iter()
        .chain(&lives)
        .flat_map(|run| run.threads.keys())
        .collect();
    let mut differences: Vec<(f64, &String, f64, f64)> = names
        .into_iter()
        .map(|name| {
            let of = |runs: &[RunCpu]| {
                median(
                    runs.iter()
                        .map(|run| *run.threads.get(name).unwrap_or(&0) as f64)
                        .collect(),
                )
            };
            let (base, live) = (of(&baselines), of(&lives));
            (live - base, name, base, live)
        })
        .collect();
    differences.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
    for (difference, name, base, live) in differences.iter().take(12) {
        println!(
            "  thread {name}: {:.0} -> {:.0} ms ({:+.0} ms)",
            base * 10.0,
            live * 10.0,
            difference * 10.0
        );
    }
}

/// One figure of a run (a measure of its CPU, in clock ticks).
type RunFigure = fn(&RunCpu) -> u64;

/// One run's CPU, in clock ticks (10 ms), and how long it took: the app's, its export's threads'
/// (`otlp-live-*` and the HTTP client's), its web process's.
struct RunCpu {
    /// From Run pressed to the run's end seen in the store (polled every 0.5 s).
    took: Duration,
    app: u64,
    export: u64,
    web: u64,
    /// What the collector received from just before Run was pressed to the CPU's reading, bytes.
    sent: u64,
    /// The app's threads by name (`(threads ended)`: those that ended while it was measured).
    threads: std::collections::BTreeMap<String, u64>,
}

impl RunCpu {
    /// The app's CPU but its window's threads': its main thread (GTK's loop, the page's
    /// commands and events) and WebKit's `ReceiveQueue` (messages from the web process). The
    /// studio's work for the run with as little of the page's as can be told apart.
    fn beside_the_window(&self) -> u64 {
        let window: u64 = ["zibby-studio", "ReceiveQueue"]
            .iter()
            .map(|name| self.threads.get(*name).copied().unwrap_or(0))
            .sum();
        self.app.saturating_sub(window)
    }
}

/// Opens a new app on a new workspace whose one agent prints `nodes`, runs it from the Run bar,
/// and measures it.
async fn otlp_run_cpu(nodes: &Path, env: &[(&str, &str)], received: &std::sync::atomic::AtomicU64) -> RunCpu {
    let workspace = Workspace::with_agent("flood", &["cat", nodes.to_str().unwrap()]);
    let app = App::launch_with_env(workspace.path(), &workspace.db(), workspace.data_home(), env).await;
    let client = &app.client;
    wait_for(client, "#run-agent option").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let shell = *harness::app_processes(&workspace.db()).first().expect("the app runs");
    let web = webview_process(&workspace.db());
    let (shell_before, web_before) = (cpu_ticks(shell), cpu_ticks(web));
    let threads_before: std::collections::HashMap<String, u64> = thread_ticks(shell).into_iter().collect();
    let received_before = received.load(std::sync::atomic::Ordering::Relaxed);
    harness::start_run(client, "flood").await;
    let pressed = Instant::now();
    let store = Store::open(&StoreLocation::File(workspace.db())).unwrap();
    let root = studio_core::Workspace::open(workspace.path()).unwrap();
    tokio::time::timeout(Duration::from_secs(600), async {
        loop {
            let runs = store.runs(&root, None).unwrap();
            if runs.len() == 1 && runs[0].status != studio_core::Status::Running {
                assert_eq!(runs[0].status, studio_core::Status::Success, "the run succeeds");
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await
    .expect("the run ends within 10 minutes");
    let took = pressed.elapsed();
    // The run's own span sent (the export sends what it holds once the events pause for 10 ms).
    // Not until the window is quiet: after a flood of 80,000 nodes its web process stays busy for
    // more than 30 s (docs/benchmarks.md), with an endpoint or without.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = received.load(std::sync::atomic::Ordering::Relaxed) - received_before;
    // Saturating: a process gone reads 0 (a thread id taken again by a new thread reads less).
    let app_used = cpu_ticks(shell).saturating_sub(shell_before);
    let mut threads = std::collections::BTreeMap::<String, u64>::new();
    for (thread, ticks) in thread_ticks(shell) {
        let used = ticks.saturating_sub(threads_before.get(&thread).copied().unwrap_or(0));
        let name = thread.split_once(':').map_or(thread.as_str(), |(_, name)| name);
        *threads.entry(name.to_owned()).or_default() += used;
    }
    let counted: u64 = threads.values().sum();
    threads.insert("(threads ended)".to_owned(), app_used.saturating_sub(counted));
    let export = threads
        .iter()
        .filter(|(name, _)| name.starts_with("otlp-live") || name.starts_with("reqwest"))
        .map(|(_, ticks)| ticks)
        .sum();
    let cpu = RunCpu {
        took,
        app: app_used,
        export,
        web: cpu_ticks(web).saturating_sub(web_before),
        sent,
        threads,
    };
    app.close().await;
    cpu
}

// ---- the README's screenshots ----

/// A demo workspace made as `scripts/open-studio.sh` makes it: `zibby-test-agent fill-demo`, the
/// studio's `zstudio` running the agent `demo` into the store the app opens (which trusts it).
fn demo_workspace() -> Workspace {
    let workspace = Workspace::empty();
    harness::succeeded(
        std::process::Command::new(harness::test_agent())
            .arg("fill-demo")
            .arg(workspace.path())
            .arg("--db")
            .arg(workspace.db())
            .arg("--zstudio")
            .arg(harness::zstudio())
            .output(),
        "fill-demo",
    );
    workspace
}

/// Shoots the window to `docs/screenshots/<name>`.
async fn shoot(client: &Client, name: &str) {
    let png = harness::screenshot(client, "readme.png").await;
    let to = harness::repo_root().join("docs/screenshots").join(name);
    fs::copy(&png, &to).unwrap();
    println!("{}", to.display());
}

/// Starts a demo run from the Run bar and waits until its first node ended (its cost badge on the
/// Timeline) and the next one runs.
async fn demo_run_under_way(client: &Client) {
    harness::start_run(client, "Compare three note-taking apps").await;
    wait_for(client, ".live-run .node[data-node='research'][data-status='running']").await;
    harness::click(client, "[data-tab='timeline']").await;
    wait_for(client, "[data-panel='timeline'] [data-testid='usage-badge']").await;
}

/// The demo workspace (`zibby-test-agent fill-demo`) at three window sizes, light and dark, a
/// demo run live on its Timeline; and at 1200x800, light: the sessions table with every column,
/// search, the continued session's two runs compared, and a demo run being stopped.
async fn screenshots() {
    fs::create_dir_all(harness::repo_root().join("docs/screenshots")).unwrap();
    for (theme, gtk_theme) in [("light", "Adwaita"), ("dark", "Adwaita:dark")] {
        for (width, height) in [(1024u32, 700u32), (1440, 900), (1920, 1080)] {
            let workspace = demo_workspace();
            let app = App::launch_with_env(
                workspace.path(),
                &workspace.db(),
                workspace.data_home(),
                &[("GTK_THEME", gtk_theme)],
            )
            .await;
            let client = &app.client;
            client.set_window_rect(0, 0, width, height).await.unwrap();
            wait_for(client, "tr[data-session-id].pinned").await;
            demo_run_under_way(client).await;
            shoot(client, &format!("window-{width}x{height}-{theme}.png")).await;
            app.close().await;
        }
    }

    let workspace = demo_workspace();
    let app = App::launch(workspace.path(), &workspace.db(), workspace.data_home()).await;
    let client = &app.client;
    client.set_window_rect(0, 0, 1200, 800).await.unwrap();
    let pinned = wait_for(client, "tr[data-session-id].pinned").await;
    let kyoto = pinned.attr("data-session-id").await.unwrap().unwrap();
    eventually("every row's cost", || async {
        let script = "return [...document.querySelectorAll(\"tr[data-session-id] [data-testid='cost']\")]\
                      .map((cell) => cell.textContent);";
        let costs = client.execute(script, Vec::new()).await.map_err(|e| e.to_string())?;
        let costs: Vec<String> = serde_json::from_value(costs).map_err(|e| e.to_string())?;
        (costs.len() == 7 && costs.iter().all(|c| c.contains('$')))
            .then_some(())
            .ok_or(format!("{costs:?}"))
    })
    .await;
    shoot(client, "sessions.png").await;

    let search = wait_for(client, "#search").await;
    search.send_keys("proxy settings").await.unwrap();
    wait_for(client, ".search-hit").await;
    shoot(client, "search.png").await;
    // Escape (WebDriver's key) empties the search and closes its results.
    search.send_keys("\u{e00c}").await.unwrap();

    harness::click(client, &format!("tr[data-session-id='{kyoto}'] .session-id")).await;
    harness::click(client, "#session-compare-previous").await;
    wait_for(client, "#compare-count").await;
    wait_for(client, "#compare-view .diff-line.added").await;
    shoot(client, "compare.png").await;
    harness::click(client, "#compare-close").await;

    demo_run_under_way(client).await;
    harness::click(client, "#session-stop").await;
    wait_for(client, "#session-force-stop").await;
    shoot(client, "stopping.png").await;
    app.close().await;
}
