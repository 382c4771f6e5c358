//! Listing a workspace of 10,000 session folders, against `find` + `cat` over the same
//! `.session-info.json` files in the same run (the target: under 1 s, and within 3x of find+cat).
//!
//! `cargo bench -p studio-core --bench session_listing` (set `BENCH_SESSIONS` for another count).

use std::process::Command;
use std::time::SystemTime;

use studio_core::Workspace;

mod common;

use common::{best_of, generate_sessions};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let count: usize = std::env::var("BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    generate_sessions(dir.path(), count);
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
