//! Listing a workspace of 10,000 session folders, against `find` + `cat` over the same
//! `.session-info.json` files in the same run (the target: under 1 s, and within 3x of find+cat).
//!
//! `cargo bench -p studio-core --bench session_listing` (set `BENCH_SESSIONS` for another count).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use studio_core::Workspace;

/// Engine-layout sessions: `.session-info.json` and three node folders with their raw output.
fn generate(root: &Path, count: usize) {
    let sessions = root.join(".zibby/output/sessions");
    for i in 0..count {
        let id = format!("{}_{:04}", 1_795_000_000_000u64 + i as u64 * 1000, i % 10_000);
        let dir = sessions.join(&id);
        for node in ["plan", "act", "report"] {
            std::fs::create_dir_all(dir.join(node)).unwrap();
            std::fs::write(
                dir.join(node).join("raw_stream_output.txt"),
                format!("{node} output of {id}\n"),
            )
            .unwrap();
        }
        let info = format!(
            r#"{{"sessionPath":"{}","sessionTimestamp":{},"currentNode":"report","createdAt":"2026-11-29T12:00:00.000Z","config":{{}}}}"#,
            dir.display(),
            1_795_000_000_000u64 + i as u64 * 1000
        );
        std::fs::write(dir.join(".session-info.json"), info).unwrap();
    }
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
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

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let count: usize = std::env::var("BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), count);
    let sessions_dir = dir.path().join(".zibby/output/sessions");

    let (find_time, bytes) = best_of(5, || {
        let script = "find \"$1\" -name .session-info.json -print0 | xargs -0 cat | wc -c";
        let output = Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&sessions_dir)
            .output()
            .unwrap();
        String::from_utf8(output.stdout)
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap()
    });
    let workspace = Workspace::open(dir.path()).unwrap();
    let (list_time, listed) = best_of(5, || workspace.list_sessions(SystemTime::now()).unwrap());
    assert_eq!(listed.len(), count);
    assert!(listed.iter().all(|s| s.nodes.len() == 3));

    println!("session_listing: {count} sessions ({bytes} bytes of .session-info.json)");
    println!(
        "  Workspace::list_sessions:        {:>8.1} ms",
        list_time.as_secs_f64() * 1e3
    );
    println!(
        "  find + cat .session-info.json:   {:>8.1} ms",
        find_time.as_secs_f64() * 1e3
    );
    println!(
        "  list / find+cat time: {:.2}x   (targets: < 1000 ms, <= 3x)",
        list_time.as_secs_f64() / find_time.as_secs_f64()
    );
}
