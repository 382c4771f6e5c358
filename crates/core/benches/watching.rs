//! Issue 46's watching at scale: the watcher started seeded on 1,000, 10,000 and 100,000 ended
//! sessions, against the same for an empty workspace. For each, in a process of its own: the time
//! from the start to watching, the inotify watches held, the process's resident memory (with the
//! seed alone, and watching), its CPU over an idle spell afterwards (every thread's, from
//! `/proc/self/task/*/schedstat`), and what one sweep costs: every session's whole fingerprint
//! taken once, and every session looked at at a glance (the sweep's passes glance at each and
//! take one in `sweep_whole_every`'s whole fingerprint: that work spread over one bound).
//!
//! Targets: idle CPU ≤ the empty workspace's + 0.05 % of a core; no polling fallback; the watches
//! held a constant.
//!
//! The idle spell begins `BENCH_SETTLE_SECS` (default 30) after the start returned (the start's
//! tail left out), and counts the sweep's looks in it (`Watcher::sweep_looks`): the bound at the
//! pace the idle sweep kept (a pass looks at every session once; a file rewritten in place by
//! another hand: `sweep_whole_every` passes), beside the bound from the warm sweeps timed apart.
//!
//! `BENCH_WORKSPACES=<folder holding ws-1000, ws-10000, ws-100000>` uses those workspaces (read
//! only: nothing is written into them); without it, workspaces of `BENCH_SIZES` (default
//! `1000,10000`) ended sessions are generated in a temporary folder. `BENCH_IDLE_SECS` (default
//! 60) is the idle spell.
//!
//! `cargo bench -p studio-core --bench watching`

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use studio_core::session::{fingerprint, read_summary, session_folders, SessionsFolder};
use studio_core::store::index::IndexedFolder;
use studio_core::watcher::{inotify_watches_held as inotify_watches, Change, Seed, Watcher, WatcherOptions};
use studio_core::Workspace;

fn main() {
    if common::names_only() {
        return;
    }
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--one") {
        let root = PathBuf::from(args.next().expect("a workspace"));
        let idle: u64 = common::size_from_env("BENCH_IDLE_SECS", 60);
        let settle: u64 = common::size_from_env("BENCH_SETTLE_SECS", 30);
        measure_one(&root, Duration::from_secs(settle), Duration::from_secs(idle));
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let empty = scratch.path().join("ws-0");
    std::fs::create_dir_all(empty.join(".zibby/output/sessions")).unwrap();
    let mut workspaces = vec![(0, empty)];
    match std::env::var_os("BENCH_WORKSPACES") {
        Some(folder) => {
            for size in [1_000, 10_000, 100_000] {
                workspaces.push((size, Path::new(&folder).join(format!("ws-{size}"))));
            }
        }
        None => {
            let sizes = std::env::var("BENCH_SIZES").unwrap_or_else(|_| "1000,10000".to_owned());
            for size in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
                let root = scratch.path().join(format!("ws-{size}"));
                common::generate_sessions(&root, size);
                workspaces.push((size, root));
            }
        }
    }
    println!("load at the start: {}", load());
    println!(
        "| sessions | start to watching | inotify watches | RSS seed only | RSS watching | idle CPU | one whole sweep (a session) | one sweep at a glance (a session) | bound; in place | the sweep's share of a core | looks in the idle spell: bound; in place |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (size, root) in workspaces {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--one")
            .arg(&root)
            .env("BENCH_SIZE", size.to_string())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        print!("{}", String::from_utf8_lossy(&output.stdout));
    }
    println!("load at the end: {}", load());
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The seed a caller with a current folder index gives: every session's fingerprint, time and status.
fn seed_of(workspace: &Workspace) -> Seed {
    let now = SystemTime::now();
    session_folders(workspace)
        .unwrap()
        .into_iter()
        .filter_map(|(dir, id)| {
            let fingerprint = fingerprint(&dir, None)?;
            let summary = read_summary(&dir, &id, now)?;
            Some((id, IndexedFolder::new(fingerprint, &summary)))
        })
        .collect::<HashMap<_, _>>()
}

fn measure_one(root: &Path, settle: Duration, idle: Duration) {
    let size: usize = common::size_from_env("BENCH_SIZE", 0);
    let workspace = Workspace::open(root).unwrap();
    let seed = seed_of(&workspace);
    let sessions = SessionsFolder::open(&workspace.sessions_dir()).unwrap();
    let prints: Vec<(String, String)> = seed
        .iter()
        .map(|(id, folder)| (id.as_str().to_owned(), folder.fingerprint.clone()))
        .collect();
    let rss_seed = rss_kb();
    let watches_before = inotify_watches();
    let changes = Arc::new(AtomicUsize::new(0));
    let polled = Arc::new(AtomicUsize::new(0));
    let sink = {
        let changes = changes.clone();
        let polled = polled.clone();
        Arc::new(move |change: Change| {
            if matches!(change, Change::WatchPolling { .. }) {
                polled.fetch_add(1, Ordering::SeqCst);
            }
            changes.fetch_add(1, Ordering::SeqCst);
        })
    };
    let started = Instant::now();
    let watcher = Watcher::start_seeded(vec![(workspace, seed)], sink, WatcherOptions::default()).unwrap();
    let start = started.elapsed();
    let watches = inotify_watches() - watches_before;
    let rss_watching = rss_kb();

    // The start's tail (its seed dropped, the first steps) let pass: the spell is the steady sweep.
    std::thread::sleep(settle);
    let looks_before = watcher.sweep_looks().unwrap();
    let cpu_before = cpu_ns();
    std::thread::sleep(idle);
    let idle_cpu = cpu_ns() - cpu_before;
    let looks_after = watcher.sweep_looks().unwrap();
    // The pace of the idle sweep: a pass looks at every session once.
    let looks = (looks_after.glances - looks_before.glances) + (looks_after.whole - looks_before.whole);
    let pass_idle = prints.len() as f64 / (looks as f64 / idle.as_secs_f64()).max(f64::MIN_POSITIVE);
    let idle_share = idle_cpu as f64 / idle.as_nanos() as f64 * 100.0;

    // One whole sweep's work, timed apart: every session's fingerprint taken against the last,
    // as the sweep takes it (through the open sessions folder).
    let (sweep, same) = common::best_of(3, || {
        prints
            .iter()
            .filter(|(id, print)| sessions.fingerprint(id, Some(print)).as_deref() == Some(print.as_str()))
            .count()
    });
    assert_eq!(same, prints.len(), "the workspace changed under the bench");
    // The same at a glance (the folder's own time and `.session-info.json`'s), as the sweep's
    // other passes look.
    let (glance, same) = common::best_of(3, || {
        prints
            .iter()
            .filter(|(id, print)| sessions.unchanged_at_a_glance(id, print))
            .count()
    });
    assert_eq!(same, prints.len(), "the workspace changed under the bench");
    assert_eq!(polled.load(Ordering::SeqCst), 0, "no polling fallback");
    drop(watcher);
    // The bound: the sweep bound, or the sessions at the sweep's rate when they are more, or a
    // pass's looks (a glance at each, the whole fingerprint of one in `sweep_whole_every`)
    // spread at the sweep's budget a second when that is longer. A file rewritten in place by
    // another hand than the engine's: within `sweep_whole_every` bounds.
    let options = WatcherOptions::default();
    let every = f64::from(options.sweep_whole_every);
    let pass = glance.as_secs_f64() * (1.0 - 1.0 / every) + sweep.as_secs_f64() / every;
    let bound = options
        .sweep_bound
        .as_secs_f64()
        .max(prints.len() as f64 / f64::from(options.sweep_rate))
        .max(pass / options.sweep_budget.as_secs_f64());
    let share = pass / bound * 100.0;
    let per_session = |time: Duration| time.as_secs_f64() * 1e6 / prints.len().max(1) as f64;
    // The empty workspace's idle CPU is the baseline (each line is a process of its own).
    println!(
        "| {size} | {:.1} ms | {watches} | {:.1} MB | {:.1} MB | {:.4} % ({:.1} ms in {} s) | {:.1} ms ({:.1} µs) | {:.1} ms ({:.1} µs) | {bound:.0} s; {:.0} s | {share:.4} % | {looks} ({} whole): {:.0} s; {:.0} s |",
        start.as_secs_f64() * 1000.0,
        rss_seed as f64 / 1024.0,
        rss_watching as f64 / 1024.0,
        idle_share,
        idle_cpu as f64 / 1e6,
        idle.as_secs(),
        sweep.as_secs_f64() * 1000.0,
        per_session(sweep),
        glance.as_secs_f64() * 1000.0,
        per_session(glance),
        bound * every,
        looks_after.whole - looks_before.whole,
        pass_idle.max(options.sweep_bound.as_secs_f64()),
        pass_idle.max(options.sweep_bound.as_secs_f64()) * every,
    );
    eprintln!("{} changes reported at start", changes.load(Ordering::SeqCst));
}

/// The resident size of this process, in kB.
fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The CPU time of every thread of this process, in ns.
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        .sum()
}
