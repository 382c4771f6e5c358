//! The runner's targets: a marker printed by the child reaches a subscriber within p50 2 ms and
//! p99 20 ms (over 10,000 markers); Stop puts both stop files on disk within 10 ms; 100 MB/s of
//! output is taken in without loss and with bounded memory.
//!
//! Needs the test agent built with the same profile:
//! `cargo build --release -p zibby-test-agent && cargo bench -p studio-core --bench runner`

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use studio_core::runner::{Keeper, RunEvent, RunRequest, Supervisor, DEFAULT_GRACE, STOP_FILES};
use studio_core::store::{Store, StoreLocation};
use studio_core::Workspace;

fn agent() -> String {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path: PathBuf = deps.parent().unwrap().join("zibby-test-agent");
    assert!(
        path.is_file(),
        "build it first: cargo build --release -p zibby-test-agent ({})",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn request(workspace: &Workspace, args: &[&str]) -> RunRequest {
    let mut command = vec![agent()];
    command.extend(args.iter().map(|a| a.to_string()));
    RunRequest {
        workspace: workspace.clone(),
        agent: None,
        command,
        cwd: None,
        env: Vec::new(),
        inherit_env: Default::default(),
        session: None,
        prompt: None,
        node: None,
        grace: DEFAULT_GRACE,
        budget: Default::default(),
        over_budget: false,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("w")).unwrap();
    let workspace = Workspace::open(dir.path().join("w")).unwrap();
    let store = Arc::new(Store::open(&StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap());
    // With BENCH_KEEPER=<path to zstudio>, runs go through the run keeper (as `zstudio run` does).
    let supervisor = match std::env::var_os("BENCH_KEEPER") {
        Some(program) => Supervisor::with_keeper(
            store,
            Keeper {
                program: program.into(),
                runs_dir: dir.path().join("runs"),
            },
        ),
        None => Supervisor::new(store),
    };
    let events = supervisor.subscribe();

    // 1. Marker latency.
    let markers: usize = std::env::var("BENCH_MARKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let run = supervisor
        .start(request(&workspace, &["markers", &markers.to_string(), "300"]))
        .unwrap();
    let mut latencies = Vec::with_capacity(markers);
    for event in events.iter() {
        match event {
            RunEvent::NodeBegin { node, .. } => {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
                let sent: u128 = node.trim_start_matches('m').parse().unwrap();
                latencies.push((now.saturating_sub(sent)) as f64 / 1e6);
            }
            RunEvent::RunFinished { ref run_id, .. } if *run_id == run.run_id => break,
            _ => {}
        }
    }
    assert_eq!(latencies.len(), markers, "every marker was delivered");
    latencies.sort_by(f64::total_cmp);

    // 2. Stop pressed → both stop files on disk.
    let stops: usize = 50;
    let mut stop_times = Vec::with_capacity(stops);
    for _ in 0..stops {
        let run = supervisor
            .start(request(&workspace, &["--nodes", "hold:3000", "--lines", "0"]))
            .unwrap();
        for event in events.iter() {
            if matches!(&event, RunEvent::NodeBegin { run_id, .. } if *run_id == run.run_id) {
                break;
            }
        }
        let pressed = Instant::now();
        supervisor.stop(&run.run_id, false).unwrap();
        let on_disk = pressed.elapsed();
        assert!(STOP_FILES.iter().all(|f| run.session_path.join(f).exists()));
        stop_times.push(on_disk.as_secs_f64() * 1e3);
        supervisor.stop(&run.run_id, true).unwrap();
        for event in events.iter() {
            if matches!(&event, RunEvent::RunFinished { run_id, .. } if *run_id == run.run_id) {
                break;
            }
        }
    }
    stop_times.sort_by(f64::total_cmp);

    // 3. Output throughput and memory.
    let megabytes: usize = std::env::var("BENCH_FLOOD_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let rss_before = peak_rss_mb();
    let started = Instant::now();
    let run = supervisor
        .start(request(
            &workspace,
            &[
                "--nodes",
                "flood:0",
                "--lines",
                "0",
                "--flood-mb",
                &megabytes.to_string(),
            ],
        ))
        .unwrap();
    let mut lines_seen = 0u64;
    for event in events.iter() {
        match event {
            RunEvent::Output { .. } => lines_seen += 1,
            RunEvent::RunFinished { ref run_id, .. } if *run_id == run.run_id => break,
            _ => {}
        }
    }
    let elapsed = started.elapsed();
    let stored = supervisor.store().output_line_count(&run.run_id).unwrap();
    let rss_after = peak_rss_mb();

    println!(
        "runner{}:",
        if std::env::var_os("BENCH_KEEPER").is_some() {
            " (through the run keeper)"
        } else {
            ""
        }
    );
    println!(
        "  marker -> subscriber over {markers} markers: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms   (targets: p50 <= 2, p99 <= 20)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies[latencies.len() - 1]
    );
    println!(
        "  stop pressed -> both stop files on disk over {stops} stops: p50 {:.3} ms, max {:.3} ms   (target <= 10 ms)",
        percentile(&stop_times, 0.5),
        stop_times[stop_times.len() - 1]
    );
    println!(
        "  output: {megabytes} MB in {:.2} s = {:.0} MB/s, {stored} lines stored ({lines_seen} published), peak RSS {:.0} -> {:.0} MB   (target >= 100 MB/s, no loss, bounded memory)",
        elapsed.as_secs_f64(),
        megabytes as f64 / elapsed.as_secs_f64(),
        rss_before,
        rss_after
    );
}
