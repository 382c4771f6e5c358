//! `zstudio sessions --limit N` from the store's catalogue (issue 46): the first rows of the full
//! listing, read without the folders outside the page, also after folders were added, changed
//! and removed behind the store's back. Real folders, a real store file, the real binary; each
//! folder's reads counted by the kernel (inotify opens of its `.session-info.json`, which reading
//! a summary opens and a fingerprint never does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tempfile::TempDir;

use crate::folder_reads::Reads;

/// The folders of `folders` read since the last count, by name, with how often.
fn read_since(reads: &Reads, folders: &[PathBuf]) -> BTreeMap<String, usize> {
    reads.take(folders).into_iter().filter(|(_, n)| *n > 0).collect()
}

/// Long enough for the sessions folder's own time to be trusted as the catalogue's names stamp
/// (the store's `STAMP_SETTLED`, two seconds).
const SETTLE: Duration = Duration::from_millis(2_200);

fn session_id(i: u64) -> String {
    format!("{}_s{i:04}", 1_790_000_000_000 + i)
}

/// Sets the modification time of `path` (a file or a folder).
fn set_time(path: &Path, at: SystemTime) {
    std::fs::File::open(path).unwrap().set_modified(at).unwrap();
}

/// A finished session as the engine leaves one, its files and folders last written at minute
/// `i` of the base time (so the listing's order is known).
fn add_session(sessions: &Path, i: u64) -> PathBuf {
    add_session_at(sessions, i, i * 60)
}

/// [`add_session`], written `seconds` after the base time.
fn add_session_at(sessions: &Path, i: u64, seconds: u64) -> PathBuf {
    let folder = sessions.join(session_id(i));
    std::fs::create_dir_all(folder.join("plan")).unwrap();
    std::fs::write(folder.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
    std::fs::write(folder.join("result.json"), r#"{"success":true}"#).unwrap();
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000 + seconds);
    for path in [
        folder.join(".session-info.json"),
        folder.join("result.json"),
        folder.join("plan"),
        folder.clone(),
    ] {
        set_time(&path, at);
    }
    folder
}

struct Workspace {
    dir: TempDir,
    /// The store of this workspace's listings (`--db`).
    db: PathBuf,
}

impl Workspace {
    fn with_sessions(count: u64) -> Workspace {
        let dir = TempDir::new().unwrap();
        let sessions = dir.path().join(".zibby/output/sessions");
        for i in 0..count {
            add_session(&sessions, i);
        }
        let db = dir.path().join("store.sqlite");
        Workspace { dir, db }
    }

    fn sessions(&self) -> PathBuf {
        self.dir.path().join(".zibby/output/sessions")
    }

    /// `zstudio ARGS -w <workspace> --db DB`.
    fn zstudio(&self, args: &[&str], db: &Path) -> Output {
        Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(args)
            .args(["-w", self.dir.path().to_str().unwrap(), "--db", db.to_str().unwrap()])
            .env_remove("ZIBBY_STUDIO_DB")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The listing's rows as `sessions --json [ARGS]` prints them, through this workspace's store.
    fn listing(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["sessions", "--json"];
        all.extend(args);
        rows(&self.zstudio(&all, &self.db))
    }

    /// The full listing read through a new store: every folder read afresh (the ground truth).
    fn read_afresh(&self) -> Vec<Value> {
        let fresh = TempDir::new().unwrap();
        rows(&self.zstudio(&["sessions", "--json"], &fresh.path().join("fresh.sqlite")))
    }
}

fn rows(output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "zstudio failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn ids(rows: &[Value]) -> Vec<String> {
    rows.iter().map(|row| row["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn limit_is_the_first_rows_of_the_listing_after_folders_changed_behind_the_stores_back() {
    let workspace = Workspace::with_sessions(120);
    let sessions = workspace.sessions();
    assert_eq!(workspace.listing(&[]).len(), 120, "the store fills its catalogue");
    // The sessions folder's time settles: the next page records it as the names stamp.
    std::thread::sleep(SETTLE);
    let first = workspace.listing(&["--limit", "10"]);
    assert_eq!(ids(&first), ids(&workspace.read_afresh()[..10]));

    // Behind the store's back (no studio watching): two folders added (the newest of all, and
    // one placed among the old ones), two removed (one of the page, one far below it), one of
    // the page changed (failed since: it is written now, so it moves to the top), one old one
    // pinned through the store.
    add_session(&sessions, 500);
    add_session_at(&sessions, 1_000, 50 * 60 + 30);
    std::fs::remove_dir_all(sessions.join(session_id(117))).unwrap();
    std::fs::remove_dir_all(sessions.join(session_id(3))).unwrap();
    std::fs::write(
        sessions.join(session_id(112)).join("result.json"),
        r#"{"success":false}"#,
    )
    .unwrap();
    let pinned = workspace.zstudio(&["pin", &session_id(7)], &workspace.db);
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));

    // The folders read afresh (a new store), the pin laid over as the listing lays it: first.
    let mut truth = workspace.read_afresh();
    assert_eq!(truth.len(), 120 + 2 - 2);
    let at = truth.iter().position(|row| row["id"] == session_id(7)).unwrap();
    let pinned_row = truth.remove(at);
    truth.insert(0, pinned_row);
    for limit in [1, 10, 50] {
        let page = workspace.listing(&["--limit", &limit.to_string()]);
        assert_eq!(
            ids(&page),
            ids(&truth[..limit]),
            "--limit {limit} against the folders read afresh"
        );
    }
    let page = workspace.listing(&["--limit", "10"]);
    assert_eq!(page[0]["id"], session_id(7), "pinned first");
    assert_eq!(page[1]["id"], session_id(112), "the changed one, written now, next");
    assert_eq!(page[1]["status"], "error", "read again: {}", page[1]);
    assert_eq!(page[2]["id"], session_id(500), "the new newest one");
    assert!(!ids(&page).contains(&session_id(117)), "the removed one is gone");
    // The page's rows are the full listing's, field for field.
    let full = workspace.listing(&[]);
    assert_eq!(page[..], full[..10]);
    assert_eq!(ids(&full), ids(&truth), "the full listing of the same store");
    assert!(
        ids(&full).contains(&session_id(1_000)),
        "the added old one is placed in the full listing"
    );
    assert!(!ids(&full).contains(&session_id(3)));
}

#[test]
fn limit_on_a_current_store_opens_no_folder_outside_the_page() {
    let workspace = Workspace::with_sessions(200);
    let folders: Vec<PathBuf> = (0..200).map(|i| workspace.sessions().join(session_id(i))).collect();
    let mut reads = Reads::new();
    for folder in &folders {
        reads.watch(folder);
    }

    // A new store reads every folder once: the count sees reads.
    assert_eq!(workspace.listing(&[]).len(), 200);
    let first = read_since(&reads, &folders);
    assert_eq!(first.len(), 200, "{first:?}");
    assert!(first.values().all(|&n| n == 1), "{first:?}");

    std::thread::sleep(SETTLE);
    let page = workspace.listing(&["--limit", "50"]);
    let in_page: Vec<String> = ids(&page);
    assert_eq!(in_page, ids(&workspace.read_afresh()[..50]));
    let _ = read_since(&reads, &folders); // the fresh store's own reads

    // The store is current: the page is the catalogue's, no folder opened at all.
    let again = workspace.listing(&["--limit", "50"]);
    assert_eq!(ids(&again), in_page);
    assert_eq!(
        read_since(&reads, &folders),
        BTreeMap::new(),
        "nothing read on a current store"
    );

    // One row of the page changed in place (its file rewritten, the folder's time as it was):
    // that folder is read again, and no folder outside the page.
    let changed = workspace.sessions().join(&in_page[10]);
    std::fs::write(changed.join(".session-info.json"), r#"{"currentNode":"plan","x":1}"#).unwrap();
    // And one outside it: not looked at by a page (the catalogue's stated bound), read by the
    // full listing.
    let outside = workspace.sessions().join(session_id(5));
    std::fs::write(outside.join(".session-info.json"), r#"{"currentNode":"plan","y":2}"#).unwrap();
    let _ = read_since(&reads, &folders); // the writes' own opens
    let after = workspace.listing(&["--limit", "50"]);
    assert_eq!(ids(&after).len(), 50);
    let read = read_since(&reads, &folders);
    assert_eq!(read.keys().collect::<Vec<_>>(), [&in_page[10]], "{read:?}");
    assert!(
        read.keys().all(|id| in_page.contains(id)),
        "only the page's folders: {read:?}"
    );

    assert_eq!(workspace.listing(&[]).len(), 200);
    let full = read_since(&reads, &folders);
    assert_eq!(full.keys().collect::<Vec<_>>(), [&session_id(5)], "{full:?}");
}
