//! The store's targets: appending run output (>= 200,000 lines/s, flat from the first line to the
//! ten-millionth), listing 10,000 indexed unchanged sessions (< 100 ms), and a rare word found in
//! 1 GB of stored output (< 200 ms).
//!
//! `cargo bench -p studio-core --bench store` (`BENCH_LINES` and `BENCH_SESSIONS` for other sizes).

mod common;

use std::time::{Instant, SystemTime};

use common::{best_of, generate_sessions};
use studio_core::protocol::Stream;
use studio_core::store::{NewRun, Store, StoreLocation};
use studio_core::{SessionId, Workspace};

const RARE_WORD: &str = "zanzibarquux";

fn main() {
    if common::names_only() {
        return;
    }
    let lines: u64 = common::size_from_env("BENCH_LINES", 10_000_000);
    let sessions: usize = common::size_from_env("BENCH_SESSIONS", 10_000);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("studio.sqlite");
    let store = Store::open(&StoreLocation::File(db.clone())).unwrap();
    generate_sessions(dir.path(), sessions);
    let workspace = Workspace::open(dir.path()).unwrap();

    // Appending: one run, `lines` lines of about 100 bytes, timed per block.
    let session = SessionId::parse("1795000000000_0000").unwrap();
    let command = vec!["agent".to_owned()];
    let run = store
        .run_insert(
            &workspace,
            &NewRun {
                session: &session,
                agent: Some("bench"),
                command: &command,
                replayed_node: None,
                prompt: None,
                started_at: SystemTime::now(),
            },
        )
        .unwrap();
    let block = (lines / 10).max(1);
    let mut rates = Vec::new();
    let mut bytes = 0u64;
    {
        let mut writer = store.output_writer(&run).unwrap();
        let mut started = Instant::now();
        for i in 1..=lines {
            let text = if i == lines / 2 {
                format!("step {i}: the {RARE_WORD} appears exactly once in the whole output")
            } else {
                format!(
                    "step {i}: the agent read file src/module_{}.rs and found {} matching symbols",
                    i % 97,
                    i % 13
                )
            };
            bytes += text.len() as u64;
            writer.append(Stream::Stdout, i, Some("work"), &text).unwrap();
            if i % block == 0 {
                writer.flush().unwrap();
                rates.push(block as f64 / started.elapsed().as_secs_f64());
                started = Instant::now();
            }
        }
    }
    let db_bytes = std::fs::metadata(&db).unwrap().len()
        + std::fs::metadata(dir.path().join("studio.sqlite-wal")).map_or(0, |m| m.len());

    // The first search catches the index up with everything appended (indexing runs behind the
    // output); the timed ones search an index that is current.
    let catch_up_started = Instant::now();
    store.search(&workspace, RARE_WORD, 10).unwrap();
    let catch_up = catch_up_started.elapsed();
    let (search_time, hits) = best_of(5, || store.search(&workspace, RARE_WORD, 10).unwrap());
    assert_eq!(hits.len(), 1, "the rare word is found once");
    let (common_time, _) = best_of(5, || store.search(&workspace, "matching", 50).unwrap());

    // Find in output (what the window's Find asks): from the first line to the rare line halfway,
    // call after call as the window goes on.
    let (find_time, found) = best_of(3, || {
        let mut from = 1;
        loop {
            let step = store.output_find(&run, from, false, RARE_WORD).unwrap();
            match (step.seq, step.next_seq) {
                (Some(seq), _) => break Some(seq),
                (None, Some(next)) => from = next,
                (None, None) => break None,
            }
        }
    });
    assert_eq!(found, Some((lines / 2) as i64), "find reaches the rare line");

    let cold_started = Instant::now();
    let first = store.list_sessions(&workspace, SystemTime::now()).unwrap();
    let cold = cold_started.elapsed();
    let (warm, listed) = best_of(5, || store.list_sessions(&workspace, SystemTime::now()).unwrap());
    assert_eq!(first.len(), listed.len());

    println!(
        "store: {lines} lines ({:.0} MB of text), store file {:.0} MB",
        bytes as f64 / 1e6,
        db_bytes as f64 / 1e6
    );
    let blocks: Vec<String> = rates.iter().map(|r| format!("{:.0}k", r / 1000.0)).collect();
    println!("  append, lines/s per {}-line block: {}", block, blocks.join(" "));
    println!(
        "  append: first block {:.0} lines/s, last block {:.0} lines/s, slowest {:.0} lines/s (last/first {:.2})   (target >= 200,000, flat)",
        rates[0],
        rates[rates.len() - 1],
        rates.iter().cloned().fold(f64::MAX, f64::min),
        rates[rates.len() - 1] / rates[0]
    );
    println!(
        "  search index built behind the output: {:.0} MB of text in {:.1} s ({:.0} MB/s)",
        bytes as f64 / 1e6,
        catch_up.as_secs_f64(),
        bytes as f64 / 1e6 / catch_up.as_secs_f64()
    );
    println!(
        "  search rare word: {:.1} ms   (target < 200 ms)",
        search_time.as_secs_f64() * 1e3
    );
    println!(
        "  search common word, first 50 hits: {:.1} ms",
        common_time.as_secs_f64() * 1e3
    );
    println!(
        "  find in output, line 1 to the rare line {}: {:.0} ms ({:.1} M lines/s)",
        lines / 2,
        find_time.as_secs_f64() * 1e3,
        (lines / 2) as f64 / find_time.as_secs_f64() / 1e6
    );
    println!(
        "  list {} sessions: index cold {:.0} ms, indexed and unchanged {:.1} ms   (target < 100 ms)",
        listed.len(),
        cold.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3
    );
}
