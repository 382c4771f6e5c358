//! Searching session folders (issue 28): the first search of a workspace of N generated sessions
//! (`benches/common`: three nodes a session, each with its raw stream) reads and indexes every
//! node's output file (`store::folder_text`); the next one only looks at the folders' times. The
//! listing is timed before and after, on the same store, to show that indexing leaves it alone
//! (a listing reads no output file for the search index).
//!
//! `cargo bench -p studio-core --bench folder_search` (`BENCH_SESSIONS`, default 10,000).

use std::time::{Instant, SystemTime};

use studio_core::store::index::NodeDetail;
use studio_core::store::{Store, StoreLocation};
use studio_core::Workspace;

mod common;

use common::{best_of, generate_sessions_with};

/// A node's raw stream: a few lines, one of them a word only this session printed.
fn printed(node: &str, id: &str) -> String {
    let mut text = String::new();
    for line in 0..20 {
        text.push_str(&format!(
            "{{\"type\":\"assistant\",\"node\":\"{node}\",\"line\":{line},\"text\":\"working on the task\"}}\n"
        ));
    }
    text.push_str(&format!("{node} printed marker{} for {id}\n", id.replace('_', "x")));
    text
}

fn main() {
    if common::names_only() {
        return;
    }
    let count: usize = common::size_from_env("BENCH_SESSIONS", 10_000);
    let dir = tempfile::tempdir().unwrap();
    generate_sessions_with(dir.path(), count, printed);
    let workspace = Workspace::open(dir.path()).unwrap();
    let store = Store::open(&StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap();
    let now = SystemTime::now();
    let list = || {
        store
            .list_sessions_as(&workspace, now, NodeDetail::TotalsOnly)
            .unwrap()
            .len()
    };

    let started = Instant::now();
    assert_eq!(list(), count);
    let first_listing = started.elapsed();
    let (warm_before, _) = best_of(5, list);

    let last_id = format!(
        "{}_{:04}",
        1_795_000_000_000u64 + (count as u64 - 1) * 1000,
        (count - 1) % 10_000
    );
    let word = format!("marker{}", last_id.replace('_', "x"));
    let started = Instant::now();
    let hits = store.search(&workspace, &word, 10).unwrap();
    let first_search = started.elapsed();
    assert_eq!(hits.len(), 3, "each node of the last session printed it");
    let (next_search, hits) = best_of(5, || store.search(&workspace, &word, 10).unwrap());
    assert_eq!(hits.len(), 3);
    let (common_word, hits) = best_of(5, || store.search(&workspace, "working task", 100).unwrap());
    assert_eq!(hits.len(), 100);
    let (warm_after, _) = best_of(5, list);
    // The window's store: its workspace watched (`index::keeping_current`), no change told since
    // its first search walked the folders.
    let watched = std::sync::Arc::new(Store::open(&StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap());
    let _sink = studio_core::store::index::keeping_current(watched.clone(), &[&workspace], std::sync::Arc::new(|_| {}));
    assert_eq!(watched.search(&workspace, &word, 10).unwrap().len(), 3);
    let (watched_search, hits) = best_of(5, || watched.search(&workspace, &word, 10).unwrap());
    assert_eq!(hits.len(), 3);

    let db_bytes = std::fs::metadata(dir.path().join("studio.sqlite")).map_or(0, |m| m.len());
    println!("{count} sessions, {} node output files", count * 3);
    println!("listing: first {first_listing:.1?}, warm before any search {warm_before:.1?}");
    println!("first search (indexes every folder): {first_search:.1?}");
    println!(
        "next search (nothing changed): {next_search:.1?}  ({:.1}x faster)",
        first_search.as_secs_f64() / next_search.as_secs_f64()
    );
    println!(
        "next search in a watched workspace (no change told): {watched_search:.1?}  ({:.3}x of the unwatched next search)",
        watched_search.as_secs_f64() / next_search.as_secs_f64()
    );
    println!("next search of a word on every line, 100 hits: {common_word:.1?}");
    println!(
        "warm listing after the searches: {warm_after:.1?}  ({:.2}x of before)",
        warm_after.as_secs_f64() / warm_before.as_secs_f64()
    );
    println!("store file: {:.1} MB", db_bytes as f64 / 1e6);
}
