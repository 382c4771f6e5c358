//! The watcher's targets: a line appended to a session's output file → its `output_appended`
//! delivered to the sink, p50 <= 100 ms and p99 <= 250 ms; and the last 1,000 lines of a 1 GB file
//! read in < 200 ms with < 50 MB of extra memory (the peak resident size, `VmHWM`).
//!
//! Also: the start over a workspace of many sessions (`BENCH_SESSIONS`, default 10,000, ended a
//! day ago: swept, not watched; the `watching` bench measures that at scale) and the CPU time of
//! the idle watcher afterwards.
//!
//! `cargo bench -p studio-core --bench watcher` (`BENCH_FILE_MB` for another file size).

mod common;

use std::fs;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use studio_core::tail::last_lines;
use studio_core::watcher::{Change, Watcher, WatcherOptions};
use studio_core::Workspace;

fn main() {
    if common::names_only() {
        return;
    }
    let file_mb: u64 = common::size_from_env("BENCH_FILE_MB", 1024);
    let sessions: usize = common::size_from_env("BENCH_SESSIONS", 10_000);
    many_sessions(sessions);
    latency(
        "sparse appends (one line every 150 ms)",
        100,
        Duration::from_millis(150),
    );
    latency("a flood (one line every 1 ms)", 3000, Duration::from_millis(1));
    large_file(file_mb);
}

/// Appends `count` numbered lines, `every` apart, and times each until the sink gets it.
fn latency(what: &str, count: usize, every: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(".zibby/output/sessions/1795000000000_bench");
    fs::create_dir_all(&session).unwrap();
    fs::write(session.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
    let file = session.join("raw_stream_output.txt");
    fs::write(&file, "").unwrap();

    let delivered: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
    let events = Arc::new(Mutex::new(0usize));
    let sink = {
        let delivered = delivered.clone();
        let events = events.clone();
        Arc::new(move |change: Change| {
            if let Change::OutputAppended { lines, .. } = change {
                let now = Instant::now();
                *events.lock().unwrap() += 1;
                let mut delivered = delivered.lock().unwrap();
                delivered.extend(lines.iter().map(|l| (l.parse::<usize>().unwrap(), now)));
            }
        })
    };
    let workspace = Workspace::open(dir.path()).unwrap();
    let watcher = Watcher::start(vec![workspace], sink, WatcherOptions::default()).unwrap();

    let mut out = fs::OpenOptions::new().append(true).open(&file).unwrap();
    let mut written = Vec::with_capacity(count);
    let started = Instant::now();
    for i in 0..count {
        written.push(Instant::now());
        writeln!(out, "{i}").unwrap();
        std::thread::sleep(every);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while delivered.lock().unwrap().len() < count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = started.elapsed();
    drop(watcher);
    let delivered = delivered.lock().unwrap();
    assert_eq!(delivered.len(), count, "every line delivered once");
    let mut latencies: Vec<Duration> = delivered.iter().map(|(i, at)| *at - written[*i]).collect();
    latencies.sort();
    let percentile = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let events = *events.lock().unwrap();
    println!(
        "append -> output_appended, {what}: {count} lines, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms \
         (targets p50 <= 100 ms, p99 <= 250 ms); {events} events in {:.1} s ({:.1}/s)",
        ms(percentile(0.50)),
        ms(percentile(0.99)),
        ms(*latencies.last().unwrap()),
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64(),
    );
}

/// Starts a watcher over `count` sessions, then measures the CPU it uses while nothing changes.
fn many_sessions(count: usize) {
    let dir = tempfile::tempdir().unwrap();
    common::generate_sessions(dir.path(), count);
    let added = Arc::new(Mutex::new(0usize));
    let sink = {
        let added = added.clone();
        Arc::new(move |change: Change| {
            if matches!(change, Change::SessionAdded { .. }) {
                *added.lock().unwrap() += 1;
            }
        })
    };
    let workspace = Workspace::open(dir.path()).unwrap();
    let started = Instant::now();
    let watcher = Watcher::start(vec![workspace], sink, WatcherOptions::default()).unwrap();
    let took = started.elapsed();
    assert_eq!(
        *added.lock().unwrap(),
        count,
        "every session reported by the initial scan"
    );
    // The first seconds drain the events of setting up the watches (each folder opened).
    let idle = Duration::from_secs(3);
    let cpu_before = cpu_time();
    std::thread::sleep(idle);
    let settling = cpu_time() - cpu_before;
    let cpu_before = cpu_time();
    std::thread::sleep(idle);
    let cpu = cpu_time() - cpu_before;
    drop(watcher);
    println!(
        "start over {count} sessions ended a day ago (initial scan; swept, not watched): {:.0} ms; CPU over the \
         next {} s: {:.0} ms, then idle for {} s: {:.0} ms",
        ms(took),
        idle.as_secs(),
        ms(settling),
        idle.as_secs(),
        ms(cpu),
    );
}

/// The CPU time (user + system) of this process so far, from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    // After the command: state is field 3; utime and stime are fields 14 and 15 (in clock ticks).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ: 100 on every Linux.
    let per_second = 100;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// The last 1,000 lines of a file of `mb` MB: time and the growth of the peak resident size.
fn large_file(mb: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw_stream_output.txt");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, fs::File::create(&path).unwrap());
    let line_count = mb * 1024 * 1024 / 100;
    let padding = "x".repeat(83);
    for i in 0..line_count {
        writeln!(out, "line {i:010} {padding}").unwrap();
    }
    drop(out);
    let size = fs::metadata(&path).unwrap().len();

    let before = peak_memory_kib();
    let started = Instant::now();
    let page = last_lines(&path, 1000).unwrap();
    let took = started.elapsed();
    let grown = peak_memory_kib().saturating_sub(before);
    assert_eq!(page.lines.len(), 1000);
    assert_eq!(page.lines[999], format!("line {:010} {padding}", line_count - 1));
    println!(
        "last 1,000 lines of a {:.2} GB file: {:.2} ms, peak memory +{:.1} MB (targets < 200 ms, < 50 MB)",
        size as f64 / 1e9,
        ms(took),
        grown as f64 / 1024.0,
    );
}

fn peak_memory_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
