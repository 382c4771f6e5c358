//! The search over session folders' node output files (hits of kind `file`): what a run the
//! studio did not start printed, found in real folders through a real SQLite file.

use std::fs;
use std::path::{Path, PathBuf};

use crate::harness::store_setup;
use rusqlite::Connection;
use studio_core::store::{SearchHitKind, Store, StoreLocation};
use studio_core::{SessionId, Workspace};

/// A session folder as a terminal run of the engine leaves it (ended), with `text` as the output
/// of its node `node` (`<node>/raw_stream_output.txt`).
fn terminal_session(workspace: &Workspace, session: &str, node: &str, text: &str) -> PathBuf {
    let folder = workspace.sessions_dir().join(session);
    fs::create_dir_all(folder.join(node)).unwrap();
    fs::write(
        folder.join(".session-info.json"),
        format!(
            r#"{{"sessionPath":"{}","currentNode":"{node}","status":"completed"}}"#,
            folder.display()
        ),
    )
    .unwrap();
    fs::write(folder.join(node).join("raw_stream_output.txt"), text).unwrap();
    folder
}

fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db).unwrap().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn a_terminal_runs_node_output_is_found_and_names_its_file() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    terminal_session(
        &s.workspace,
        "1795952700000_term",
        "plan",
        "{\"type\":\"start\"}\nthe Quokkaphant crossed the road\n{\"type\":\"end\"}\n",
    );
    // The documented layout's node folders too.
    let documented = s.workspace.sessions_dir().join("1795952700001_docs");
    fs::create_dir_all(documented.join("nodes/review")).unwrap();
    fs::write(
        documented.join("nodes/review/raw_output.txt"),
        "review says quokkaphant\n",
    )
    .unwrap();

    let hits = store.search(&s.workspace, "quokkaphant", 10).unwrap();
    let mut found: Vec<_> = hits
        .iter()
        .map(|hit| {
            (
                hit.kind,
                hit.session_id.as_str(),
                hit.node.as_deref(),
                hit.path.as_deref(),
                hit.line,
                hit.text.as_str(),
            )
        })
        .collect();
    found.sort_by_key(|hit| hit.1);
    assert_eq!(
        found,
        [
            (
                SearchHitKind::File,
                "1795952700000_term",
                Some("plan"),
                Some("plan/raw_stream_output.txt"),
                2,
                "the Quokkaphant crossed the road"
            ),
            (
                SearchHitKind::File,
                "1795952700001_docs",
                Some("review"),
                Some("nodes/review/raw_output.txt"),
                1,
                "review says quokkaphant"
            ),
        ]
    );
    // All the words must be on one line, as for output.
    let both = store.search(&s.workspace, "quokka road", 10).unwrap();
    assert_eq!(both.len(), 1, "{both:?}");
    assert!(store.search(&s.workspace, "giraffe", 10).unwrap().is_empty());
}

#[test]
fn a_changed_file_is_read_again_and_a_removed_sessions_hits_go() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let folder = terminal_session(&s.workspace, "1795952700002_chng", "fetch", "first wombatine\n");
    terminal_session(&s.workspace, "1795952700003_keep", "fetch", "kept wombatine\n");
    assert_eq!(store.search(&s.workspace, "wombatine", 10).unwrap().len(), 2);
    assert_eq!(
        store.index_folder_text(&s.workspace).unwrap(),
        0,
        "an unchanged folder is not read again"
    );

    fs::write(
        folder.join("fetch/raw_stream_output.txt"),
        "second capybarine, longer\n",
    )
    .unwrap();
    let hits = store.search(&s.workspace, "wombatine", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].session_id, "1795952700003_keep");
    let hits = store.search(&s.workspace, "capybarine", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "second capybarine, longer");

    fs::remove_dir_all(&folder).unwrap();
    assert!(store.search(&s.workspace, "capybarine", 10).unwrap().is_empty());
    assert_eq!(
        count(
            &s.db,
            "SELECT count(*) FROM folder_files WHERE session_id = '1795952700002_chng'"
        ),
        0
    );
    assert_eq!(
        count(
            &s.db,
            "SELECT count(*) FROM search_text WHERE search_text MATCH 'capybarine'"
        ),
        0,
        "its text left the index"
    );

    // A session deleted through the studio leaves nothing in the index either.
    let kept = SessionId::parse("1795952700003_keep").unwrap();
    store.session_delete(&s.workspace, &kept, |_| Ok(())).unwrap();
    assert_eq!(count(&s.db, "SELECT count(*) FROM folder_files"), 0);
    assert_eq!(count(&s.db, "SELECT count(*) FROM folder_text"), 0);
}

#[test]
fn of_a_file_over_a_mebibyte_only_its_tail_is_indexed() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let filler = "a line of filler output that says nothing at all\n".repeat(50_000);
    assert!(filler.len() > 2 * 1024 * 1024);
    let text = format!("headmarker at the start\n{filler}tailmarker at the end\n");
    terminal_session(&s.workspace, "1795952700004_big0", "execute", &text);

    assert!(
        store.search(&s.workspace, "headmarker", 10).unwrap().is_empty(),
        "past the last MiB"
    );
    let hits = store.search(&s.workspace, "tailmarker", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].text, "tailmarker at the end");
    assert_eq!(hits[0].path.as_deref(), Some("execute/raw_stream_output.txt"));
}

#[test]
fn links_and_binary_files_are_not_indexed() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let outside = s.workspace.root().join("secret.txt");
    fs::write(&outside, "secretword outside the session\n").unwrap();
    let folder = terminal_session(&s.workspace, "1795952700005_link", "plan", "plain\n");
    fs::remove_file(folder.join("plan/raw_stream_output.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, folder.join("plan/raw_stream_output.txt")).unwrap();
    let binary = terminal_session(&s.workspace, "1795952700006_bin0", "plan", "");
    fs::write(binary.join("plan/raw_stream_output.txt"), b"binaryword\0\x01\x02\n").unwrap();

    // A link standing in for the documented layout's `nodes/`: nothing through it.
    let elsewhere = s.workspace.root().join("elsewhere");
    fs::create_dir_all(elsewhere.join("review")).unwrap();
    fs::write(
        elsewhere.join("review/raw_output.txt"),
        "linkedword beyond the session\n",
    )
    .unwrap();
    let linked = terminal_session(&s.workspace, "1795952700007_lnkd", "plan", "plain\n");
    std::os::unix::fs::symlink(&elsewhere, linked.join("nodes")).unwrap();

    assert!(store.search(&s.workspace, "secretword", 10).unwrap().is_empty());
    assert!(store.search(&s.workspace, "binaryword", 10).unwrap().is_empty());
    assert!(store.search(&s.workspace, "linkedword", 10).unwrap().is_empty());
}

/// In a watched workspace (the window's), a search walks the session folders again only after
/// the watcher told a change: what a terminal run appends is found once the real watcher saw it,
/// and with no change told (the watcher stopped) the folders are not walked again.
#[test]
fn a_watched_workspace_is_walked_again_only_after_a_change() {
    use std::sync::{mpsc, Arc};
    use std::time::{Duration, Instant};
    use studio_core::change::{Change, ChangeSink};
    use studio_core::store::index::keeping_current;
    use studio_core::watcher::{Watcher, WatcherOptions};

    let s = store_setup();
    let store = Arc::new(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
    let folder = terminal_session(&s.workspace, "1795952700000_term", "plan", "first wombatrix line\n");
    let (sender, received) = mpsc::channel();
    let told: ChangeSink = Arc::new(move |change| {
        let _ = sender.send(change);
    });
    let sink = keeping_current(store.clone(), &[&s.workspace], told);
    let watcher = Watcher::start(vec![s.workspace.clone()], sink.clone(), WatcherOptions::default()).unwrap();
    assert_eq!(store.search(&s.workspace, "wombatrix", 10).unwrap().len(), 1);

    // Appended while watched: the watcher tells it, the next search walks and finds it.
    let output = folder.join("plan/raw_stream_output.txt");
    let append = |line: &str| {
        use std::io::Write;
        let mut file = fs::OpenOptions::new().append(true).open(&output).unwrap();
        writeln!(file, "{line}").unwrap();
    };
    append("second numbatrix line");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let change = received
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the watcher tells the appended line");
        if matches!(change, Change::OutputAppended { .. }) {
            break;
        }
    }
    assert_eq!(store.search(&s.workspace, "numbatrix", 10).unwrap().len(), 1);

    // No watcher any more, no change told: the folders are not walked again (the CLI, which
    // watches nothing, walks them at every search).
    drop(watcher);
    append("third dingorex line");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        store.search(&s.workspace, "dingorex", 10).unwrap().len(),
        0,
        "walked again though no change was told"
    );
    // A change told: walked again.
    sink(Change::WatchPolling {
        workspace: s.workspace.root().to_owned(),
        reason: "test".to_owned(),
    });
    assert_eq!(store.search(&s.workspace, "dingorex", 10).unwrap().len(), 1);
    // A store that watches nothing (the CLI's) walks at every search.
    append("fourth quollumba line");
    let cli = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    assert_eq!(cli.search(&s.workspace, "quollumba", 10).unwrap().len(), 1);
}
