//! The app's start-up without its window (issue 25, item 8): what `src-tauri/src/lib.rs` does
//! between the process's start and a settled app, on a workspace of N sessions. The store opened,
//! the first listing read ahead and served (the window's first table), watching started once it
//! was served, and the window's second listing when it is told to list again. Timed from
//! `Studio::open` to the first listing, and to the settled app (watching, the second listing
//! done); with the process's CPU time over the whole launch. A first launch on a new store (every
//! folder read), then a next launch on the same store (the folder index current).
//!
//! The sessions are the app bench's generated ones (`tests/e2e/harness.rs`): a folder, a `plan/`
//! node folder, `.session-info.json` and `result.json`, finished. Generated once per workspace
//! folder: `BENCH_LAUNCH_WORKSPACE=<folder>` keeps it between runs, so that two builds can be
//! measured alternately on the same folders (see docs/benchmarks.md).
//!
//! `cargo bench -p studio-core --bench launch` (`BENCH_SESSIONS`, default 10,000;
//! `BENCH_ROUNDS`, default 3).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use studio_core::app::Studio;
use studio_core::store::StoreLocation;
use studio_core::watcher::{Change, ChangeSink};

/// Whether the shell tells the window to list again once watching started, whatever changed.
/// It did until issue 25's item 8; since, the window lists again when the watcher tells it of a
/// session change.
const SHELL_ALWAYS_LISTS_AGAIN: bool = false;

fn generate(root: &Path, count: u64) {
    let sessions = root.join(".zibby/output/sessions");
    if sessions.is_dir() {
        let present = std::fs::read_dir(&sessions).unwrap().count() as u64;
        assert_eq!(present, count, "{} holds another workspace", root.display());
        return;
    }
    for i in 0..count {
        let folder = sessions.join(format!("{}_{:06}", 1_790_000_000_000 + i * 1000, i));
        std::fs::create_dir_all(folder.join("plan")).unwrap();
        std::fs::write(folder.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
        std::fs::write(folder.join("result.json"), r#"{"success":true}"#).unwrap();
    }
}

/// This process's CPU time (user and system), from /proc.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

struct Launch {
    first_listing: Duration,
    settled: Duration,
    cpu: Duration,
    listings: usize,
}

fn launch(root: &Path, db: &Path, count: usize) -> Launch {
    let (started, cpu) = (Instant::now(), cpu_time());
    let (studio, _) = Studio::open(Some(root), Ok(StoreLocation::File(db.to_owned())));
    studio.read_sessions_ahead();
    let listed = studio.sessions(SystemTime::now()).unwrap().sessions.len();
    assert_eq!(listed, count);
    let first_listing = started.elapsed();
    assert!(studio.wait_first_listing(Duration::ZERO));
    let told = Arc::new(AtomicUsize::new(0));
    let sink: ChangeSink = {
        let told = told.clone();
        Arc::new(move |change| {
            if matches!(
                change,
                Change::SessionAdded { .. } | Change::SessionUpdated { .. } | Change::SessionRemoved { .. }
            ) {
                told.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    studio.watch(sink).unwrap();
    let mut listings = 1;
    if SHELL_ALWAYS_LISTS_AGAIN || told.load(Ordering::SeqCst) > 0 {
        assert_eq!(studio.sessions(SystemTime::now()).unwrap().sessions.len(), count);
        listings += 1;
    }
    let settled = started.elapsed();
    let cpu = cpu_time() - cpu;
    studio.shut_down();
    Launch {
        first_listing,
        settled,
        cpu,
        listings,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let env = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (count, rounds) = (env("BENCH_SESSIONS", 10_000), env("BENCH_ROUNDS", 3));
    let kept = std::env::var_os("BENCH_LAUNCH_WORKSPACE");
    let temporary = tempfile::tempdir().unwrap();
    let root = kept.as_deref().map_or(temporary.path(), Path::new);
    let generating = Instant::now();
    generate(root, count);
    eprintln!("{count} sessions ready in {:.1} s", generating.elapsed().as_secs_f64());
    for _ in 0..rounds {
        let store = tempfile::tempdir().unwrap();
        let db = store.path().join("studio.db");
        for which in ["first launch", "next launch"] {
            let launch = launch(root, &db, count as usize);
            println!(
                "launch, {count} sessions, {which}: first listing {} ms, settled {} ms, CPU {} ms, {} listing(s)",
                launch.first_listing.as_millis(),
                launch.settled.as_millis(),
                launch.cpu.as_millis(),
                launch.listings
            );
        }
    }
}
