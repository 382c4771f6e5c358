//! `zstudio sessions` at scale (issue 46, docs/benchmarks.md, "The catalogue"): for each
//! workspace, with a store of its own made current by one full listing first,
//!
//! - `zstudio sessions --limit 50 --json` as a process (best of 10): the catalogue's page, whose
//!   time should not grow with the history;
//! - `zstudio sessions --json` as a process (best of 3), per session, and when its first row
//!   reached the pipe (it is streamed);
//! - the same two on an empty workspace: the floor (the process's start and the store's opening).
//!
//! The workspaces: `BENCH_WORKSPACES` (comma-separated folders, read only: only the store, in a
//! temporary folder, is written), else `BENCH_SIZES` (`1000,100000` by default) sessions each,
//! generated as the listing bench's (`common::generate_sessions`).
//!
//! `cargo bench -p zstudio --bench catalogue`.

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    if common::names_only() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let workspaces: Vec<PathBuf> = match std::env::var("BENCH_WORKSPACES") {
        Ok(list) => list.split(',').map(PathBuf::from).collect(),
        Err(_) => {
            let sizes = std::env::var("BENCH_SIZES").unwrap_or_else(|_| "1000,100000".into());
            let made: Vec<PathBuf> = sizes
                .split(',')
                .map(|size| {
                    let count: usize = size.trim().parse().expect("BENCH_SIZES: numbers");
                    let root = temp.path().join(format!("ws-{count}"));
                    common::generate_sessions(&root, count);
                    root
                })
                .collect();
            // The sessions folders' own times settle (the catalogue trusts them after 2 s).
            std::thread::sleep(Duration::from_millis(2_500));
            made
        }
    };
    let empty = temp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    println!("load before: {}", load());
    let mut rows = Vec::new();
    for (i, workspace) in std::iter::once(&empty).chain(&workspaces).enumerate() {
        let db = temp.path().join(format!("store-{i}.sqlite"));
        let (first, count) = listing(workspace, &db, &[]);
        let (page, _) = common::best_of(10, || listing(workspace, &db, &["--limit", "50"]).0);
        let mut first_row = Duration::MAX;
        let (full, _) = common::best_of(3, || {
            let (took, row) = streamed(workspace, &db);
            first_row = first_row.min(row);
            took
        });
        println!(
            "{count:>7} sessions ({}): first listing (store made) {:>8.1} ms | --limit 50 --json {:>6.1} ms | \
             --json {:>8.1} ms, {:>6.2} µs a session, first row after {:>6.1} ms",
            workspace.file_name().unwrap().to_string_lossy(),
            ms(first),
            ms(page),
            ms(full),
            full.as_secs_f64() * 1e6 / count.max(1) as f64,
            ms(first_row),
        );
        rows.push((count, page, full));
    }
    if let (Some(small), Some(large)) = (rows.get(1), rows.last()) {
        println!(
            "--limit 50 at {} / at {}: {:.2}x; --json per session at {} / at {}: {:.2}x",
            large.0,
            small.0,
            large.1.as_secs_f64() / small.1.as_secs_f64(),
            large.0,
            small.0,
            (large.2.as_secs_f64() / large.0 as f64) / (small.2.as_secs_f64() / small.0 as f64),
        );
    }
    println!("load after: {}", load());
}

fn zstudio(workspace: &Path, db: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command
        .args(["sessions", "--json"])
        .args(args)
        .arg("-w")
        .arg(workspace)
        .arg("--db")
        .arg(db)
        .env_remove("ZIBBY_STUDIO_DB");
    command
}

/// One `zstudio sessions --json ARGS`: how long it took and how many rows it printed.
fn listing(workspace: &Path, db: &Path, args: &[&str]) -> (Duration, usize) {
    let at = Instant::now();
    let output = zstudio(workspace, db, args).output().unwrap();
    let took = at.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    (took, rows.as_array().unwrap().len())
}

/// One `zstudio sessions --json`, its output read as it comes: how long it took, and when the
/// first row (past the opening `[`) arrived.
fn streamed(workspace: &Path, db: &Path) -> (Duration, Duration) {
    let at = Instant::now();
    let mut child = zstudio(workspace, db, &[]).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buffer = vec![0u8; 1 << 16];
    let mut seen = 0usize;
    let mut first_row = None;
    loop {
        let n = stdout.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        seen += n;
        if first_row.is_none() && seen > 2 {
            first_row = Some(at.elapsed());
        }
    }
    assert!(child.wait().unwrap().success());
    let took = at.elapsed();
    (took, first_row.unwrap_or(took))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
