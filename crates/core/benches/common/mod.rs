//! Helpers shared by the benchmarks.
#![allow(dead_code)] // each bench uses its own part

use std::path::Path;
use std::time::{Duration, Instant};

/// Whether the harness only asked for the benchmarks' names (`cargo test --benches` runs each
/// bench with `--list`): nothing is to run.
pub fn names_only() -> bool {
    std::env::args().any(|a| a == "--list")
}

/// The middle of `times` (of an even count, the later of the two); `times` holds one at least.
pub fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// [`median`] in milliseconds; not a number when there is none (every try failed).
pub fn median_ms(times: Vec<Duration>) -> f64 {
    match times.is_empty() {
        true => f64::NAN,
        false => median(times).as_secs_f64() * 1000.0,
    }
}

/// A size of a bench from its environment variable `name` (`BENCH_SESSIONS=1000`), else
/// `default`.
pub fn size_from_env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Engine-layout sessions: `.session-info.json` and three node folders with their raw output.
pub fn generate_sessions(root: &Path, count: usize) {
    generate_sessions_with(root, count, |node, id| format!("{node} output of {id}\n"));
}

/// [`generate_sessions`], each node's `raw_stream_output.txt` holding `raw(node, id)`.
pub fn generate_sessions_with(root: &Path, count: usize, raw: impl Fn(&str, &str) -> String) {
    let sessions = root.join(".zibby/output/sessions");
    for i in 0..count {
        let id = format!("{}_{:04}", 1_795_000_000_000u64 + i as u64 * 1000, i % 10_000);
        let dir = sessions.join(&id);
        for node in ["plan", "act", "report"] {
            std::fs::create_dir_all(dir.join(node)).unwrap();
            std::fs::write(dir.join(node).join("raw_stream_output.txt"), raw(node, &id)).unwrap();
        }
        let info = format!(
            r#"{{"sessionPath":"{}","sessionTimestamp":{},"currentNode":"report","createdAt":"2026-11-29T12:00:00.000Z","config":{{}}}}"#,
            dir.display(),
            1_795_000_000_000u64 + i as u64 * 1000
        );
        std::fs::write(dir.join(".session-info.json"), info).unwrap();
        // Sessions of a real workspace are mostly old: quiet, not running.
        let old = std::time::SystemTime::now() - Duration::from_secs(86_400 + i as u64);
        for path in [
            dir.join(".session-info.json"),
            dir.join("plan/raw_stream_output.txt"),
            dir.join("act/raw_stream_output.txt"),
            dir.join("report/raw_stream_output.txt"),
            dir.join("plan"),
            dir.join("act"),
            dir.join("report"),
            dir.clone(),
        ] {
            std::fs::File::open(&path).unwrap().set_modified(old).unwrap();
        }
    }
}

pub fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        last = Some(value);
    }
    (best, last.unwrap())
}
