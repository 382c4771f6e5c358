//! Issue 29: what a live watch saw of a run the studio did not start (its nodes in the order
//! they began, the nodes that write no folder) is one fact, kept in the store: `sessions` (the
//! folder index's listing), `show` (one session read afresh) and the watch tell it alike, after
//! the watch too, in this process and in another that opens the store.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use studio_core::store::index::keeping_current;
use studio_core::store::{Store, StoreLocation};
use studio_core::watcher::{Change, ChangeSink, Watcher, WatcherOptions};
use studio_core::{SessionSummary, Status, Workspace};

use crate::harness::agent_binary;

/// Long enough for a loaded CI machine; the test waits for changes, it never sleeps to assert.
const PATIENCE: Duration = Duration::from_secs(20);

/// Waits for the watch's word that the run is no longer running: its last summary then.
fn wait_for_the_end(received: &mpsc::Receiver<Change>) -> SessionSummary {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let change = received.recv_timeout(left).expect("the watch said the run ended");
        if let Change::SessionAdded { summary, .. } | Change::SessionUpdated { summary, .. } = change {
            if summary.status != Status::Running {
                return summary;
            }
        }
    }
}

#[test]
fn the_nodes_a_watch_saw_read_the_same_in_sessions_and_show_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let db = root.join("studio.sqlite");
    let store = Arc::new(Store::open(&StoreLocation::File(db.clone())).unwrap());
    let (sender, received) = mpsc::channel();
    let sink: ChangeSink = Arc::new(move |change| {
        let _ = sender.send(change);
    });
    let options = WatcherOptions {
        quiet_check_interval: Duration::from_millis(100),
        ..WatcherOptions::default()
    };
    let watcher = Watcher::start(
        vec![Workspace::open(&root).unwrap()],
        keeping_current(store.clone(), &[], sink),
        options,
    )
    .unwrap();
    // A terminal run whose middle node writes no folder (a custom code node, as the engine's do),
    // long enough for the watch to see it begin, whatever the machine's load.
    let status = std::process::Command::new(agent_binary())
        .args([
            "run",
            "--nodes",
            "fetch:300,process:800,publish:300",
            "--custom",
            "process",
        ])
        .current_dir(&root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let watched = wait_for_the_end(&received);
    drop(watcher);
    let seen: Vec<&str> = watched.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        seen,
        ["fetch", "process", "publish"],
        "the watch saw every node begin, in order: {watched:#?}"
    );

    let workspace = Workspace::open(&root).unwrap();
    let again = Arc::new(Store::open(&StoreLocation::File(db)).unwrap());
    for (which, store) in [("this process", store), ("another process", again)] {
        let now = SystemTime::now();
        let listed = store
            .list_sessions(&workspace, now)
            .unwrap()
            .into_iter()
            .find(|row| row.summary.id == watched.id)
            .expect("the session is listed")
            .summary;
        let shown = store.read_session(&workspace, &watched.id, now).unwrap();
        let listed: Vec<(String, Status)> = listed.nodes.iter().map(|n| (n.name.clone(), n.status)).collect();
        let shown: Vec<(String, Status)> = shown.nodes.iter().map(|n| (n.name.clone(), n.status)).collect();
        // Statuses as the folder has them once the run is over (the watch's first word of its
        // end may predate its last node's), the order and the names as the watch saw them.
        let names: Vec<&str> = listed.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, seen, "`sessions` tells what the watch saw ({which})");
        assert_eq!(
            listed[1],
            ("process".to_owned(), Status::Unknown),
            "how the node without a folder ended is not recorded ({which})"
        );
        assert_eq!(shown, listed, "`show` tells what `sessions` tells ({which})");
    }
}
