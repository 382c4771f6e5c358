//! The app's start-up without its window (issue 25, item 8; issue 46): what `src-tauri/src/lib.rs`
//! does between the process's start and a settled app, on a workspace of N sessions. The store
//! opened, the first page read ahead and served (the window's first screen: `sessions_page`, as
//! JSON, what the shell sends), what every session costs (`sessions_usage`, asked behind it),
//! watching started once the first page was served, and the window's page read again when it is
//! told of a change. Timed from `Studio::open` to the first screen, to the total cost, and to the
//! settled app (watching, the page read again); with the process's CPU time over the whole
//! launch and by the time every row was read (on a first launch, what reading every folder cost,
//! however many cores a shared machine's other processes left it), and its resident memory while
//! it watches and after it shut down. A first launch on a
//! new store (every folder read), then a next launch on the same store (the folder index current).
//!
//! The sessions are the app bench's generated ones (`tests/e2e/harness.rs`): a folder, a `plan/`
//! node folder, `.session-info.json` and `result.json`, finished; but as a year of CI leaves them
//! (issue 46): each ended at its own time, spread over the past year, the newest few minutes ago
//! (`ended_at`), its folder's and files' times and its id's and `.session-info.json`'s start
//! accordingly. Generated once per workspace
//! folder: `BENCH_LAUNCH_WORKSPACE=<folder>` keeps it between runs, so that two builds can be
//! measured alternately on the same folders (see docs/benchmarks.md).
//!
//! `cargo bench -p studio-core --bench launch` (`BENCH_SESSIONS`, default 10,000;
//! `BENCH_ROUNDS`, default 3). `BENCH_LAUNCH_STORE=<file>`: the store kept there, and each round
//! a next launch on it (a first launch makes it when it is missing): one process a next launch,
//! from its start, its resident memory its own.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use studio_core::app::{Studio, FIRST_PAGE};
use studio_core::store::StoreLocation;
use studio_core::watcher::{Change, ChangeSink};

/// Whether the shell tells the window to list again once watching started, whatever changed.
/// It did until issue 25's item 8; since, the window lists again when the watcher tells it of a
/// session change.
const SHELL_ALWAYS_LISTS_AGAIN: bool = false;

/// How many of the newest sessions ended within the watcher's `recent` (10 minutes) when the
/// workspace was generated: a CI that runs on every push has a few just ended.
const RECENT_SESSIONS: u64 = 3;

/// A year, over which the older sessions' ends are spread.
const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// When the session `from_newest` places from the newest (0) ended, `now` being the generation's
/// time: the newest [`RECENT_SESSIONS`] a minute apart in the last few minutes, every other one
/// spread evenly over the past year (distinct times, a year's `count` sessions: 315 s apart at
/// 100,000), as a CI making sessions all year would have left them.
fn ended_at(now: SystemTime, from_newest: u64, count: u64) -> SystemTime {
    let age = match from_newest {
        recent if recent < RECENT_SESSIONS => Duration::from_secs(60 * (recent + 1)),
        older => Duration::from_secs(600) + YEAR.mul_f64(older as f64 / count.max(1) as f64),
    };
    now - age
}

fn generate(root: &Path, count: u64) {
    let sessions = root.join(".zibby/output/sessions");
    if sessions.is_dir() {
        let present = std::fs::read_dir(&sessions).unwrap().count() as u64;
        assert_eq!(present, count, "{} holds another workspace", root.display());
        return;
    }
    let now = SystemTime::now();
    let at = |path: &Path, time: SystemTime| std::fs::File::open(path).unwrap().set_modified(time).unwrap();
    let millis = |time: SystemTime| time.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let mut newest_created = now;
    for i in 0..count {
        let ended = ended_at(now, count - 1 - i, count);
        // A run of one to two minutes: the id and `sessionTimestamp` are its start.
        let created = ended - Duration::from_secs(60 + i % 60);
        let folder = sessions.join(format!("{}_{:06}", millis(created), i));
        std::fs::create_dir_all(folder.join("plan")).unwrap();
        let info = format!(
            r#"{{"sessionTimestamp":{},"currentNode":"plan","createdAt":"{}"}}"#,
            millis(created),
            humantime::format_rfc3339_millis(created)
        );
        std::fs::write(folder.join(".session-info.json"), info).unwrap();
        std::fs::write(folder.join("result.json"), r#"{"success":true}"#).unwrap();
        for path in [".session-info.json", "result.json", "plan", ""] {
            at(&folder.join(path), ended);
        }
        newest_created = created;
    }
    // The sessions folder's own time: when its newest folder was made.
    at(&sessions, newest_created);
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
    first_screen: Duration,
    /// The read-ahead done: on a first launch, every folder read into the catalogue.
    all_rows: Duration,
    /// The process's CPU time by then: what reading every folder cost, however many cores the
    /// other processes of a shared machine left it.
    cpu_all_rows: Duration,
    usage: Duration,
    settled: Duration,
    cpu: Duration,
    listings: usize,
    /// Whether the watcher fell back to polling (`Change::WatchPolling`: its inotify budget
    /// used up) by the time the launch settled.
    polled: bool,
    /// The process's resident memory once settled, while it watches.
    rss_watching_kb: u64,
}

/// The window's first screen: its first page, as the JSON the shell sends.
fn first_screen(studio: &Studio, count: usize) -> usize {
    let page = studio.sessions_page(0, FIRST_PAGE).unwrap();
    assert_eq!((page.sessions.len(), page.total), (count.min(FIRST_PAGE), count));
    serde_json::to_vec(&page).unwrap().len()
}

/// This process's resident memory (kB), from /proc.
fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn launch(root: &Path, db: &Path, count: usize) -> Launch {
    let (started, cpu) = (Instant::now(), cpu_time());
    let (studio, _) = Studio::open(Some(root), Ok(StoreLocation::File(db.to_owned())));
    let studio = Arc::new(studio);
    // Its own thread, as in the app: a first launch goes on reading behind the first page.
    let reading = {
        let studio = studio.clone();
        std::thread::spawn(move || {
            studio.read_sessions_ahead(|| {});
            (started.elapsed(), cpu_time() - cpu)
        })
    };
    // The window asks once the web view started (about half a second in the app): after the
    // read-ahead began.
    while !studio.read_ahead_begun() {
        std::thread::yield_now();
    }
    first_screen(&studio, count);
    let first_screen_at = started.elapsed();
    assert!(studio.wait_first_listing(Duration::ZERO));
    let (all_rows, cpu_all_rows) = reading.join().unwrap();
    studio.sessions_usage().unwrap();
    let usage = started.elapsed();
    let told = Arc::new(AtomicUsize::new(0));
    let polled = Arc::new(AtomicBool::new(false));
    let sink: ChangeSink = {
        let (told, polled) = (told.clone(), polled.clone());
        Arc::new(move |change| {
            if matches!(change, Change::WatchPolling { .. }) {
                polled.store(true, Ordering::SeqCst);
            }
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
        first_screen(&studio, count);
        listings += 1;
    }
    let settled = started.elapsed();
    let cpu = cpu_time() - cpu;
    // The shell's part while it watches (the watcher and what it holds in memory).
    let rss_watching_kb = rss_kb();
    studio.shut_down();
    Launch {
        first_screen: first_screen_at,
        all_rows,
        cpu_all_rows,
        usage,
        settled,
        cpu,
        listings,
        polled: polled.load(Ordering::SeqCst),
        rss_watching_kb,
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
    let kept_store = std::env::var_os("BENCH_LAUNCH_STORE").map(std::path::PathBuf::from);
    for _ in 0..rounds {
        let store = tempfile::tempdir().unwrap();
        let (db, launches) = match &kept_store {
            Some(db) if db.exists() => (db.clone(), &["next launch"][..]),
            Some(db) => (db.clone(), &["first launch"][..]),
            None => (store.path().join("studio.db"), &["first launch", "next launch"][..]),
        };
        for which in launches {
            let launch = launch(root, &db, count as usize);
            println!(
                "launch, {count} sessions, {which}: first screen {:.1} ms, all rows {} ms (CPU {} ms), total cost {:.1} ms, settled {} ms, CPU {} ms, {} page read(s), {}, RSS {} MB watching, {} MB after shutting down",
                launch.first_screen.as_secs_f64() * 1000.0,
                launch.all_rows.as_millis(),
                launch.cpu_all_rows.as_millis(),
                launch.usage.as_secs_f64() * 1000.0,
                launch.settled.as_millis(),
                launch.cpu.as_millis(),
                launch.listings,
                if launch.polled { "POLLED" } else { "watched live" },
                launch.rss_watching_kb / 1024,
                rss_kb() / 1024
            );
        }
    }
}
