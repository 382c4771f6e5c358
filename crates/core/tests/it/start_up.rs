//! Start-up reads each session folder once (issue 25, item 8). The app's start-up as
//! `src-tauri/src/lib.rs` does it: the first listing read ahead, the window's first `sessions`
//! call served from it, watching started once it was served, and the window listing again when
//! the watcher tells it a session changed. Each folder's reads are counted by the kernel: the
//! opens of its `.session-info.json` (inotify), which reading a summary opens and a fingerprint
//! never does.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use studio_core::app::Studio;
use studio_core::store::StoreLocation;
use studio_core::watcher::{Change, ChangeSink};

use super::folder_reads::Reads;

const SESSIONS: u64 = 300;

fn session_id(i: u64) -> String {
    format!("{}_s{i:04}", 1_790_000_000_000 + i)
}

/// A finished session as the engine leaves one: `.session-info.json`, `result.json`, a node.
fn add_session(sessions: &Path, i: u64) -> PathBuf {
    let folder = sessions.join(session_id(i));
    std::fs::create_dir_all(folder.join("plan")).unwrap();
    std::fs::write(folder.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
    std::fs::write(folder.join("result.json"), r#"{"success":true}"#).unwrap();
    folder
}

/// Starts watching as the window does: one message on the receiver per session change.
fn watch_session_changes(studio: &Studio) -> mpsc::Receiver<()> {
    let (told, heard) = mpsc::channel();
    let sink: ChangeSink = Arc::new(move |change| {
        if matches!(
            change,
            Change::SessionAdded { .. } | Change::SessionUpdated { .. } | Change::SessionRemoved { .. }
        ) {
            let _ = told.send(());
        }
    });
    studio.watch(sink).unwrap();
    heard
}

/// The window's first screen: its first page of sessions (read ahead).
fn first_screen(studio: &Studio) -> studio_core::app::SessionsPage {
    studio.sessions_page(0, studio_core::app::FIRST_PAGE).unwrap()
}

/// One launch of the app on `root`; `meanwhile` runs between the first listing and the start of
/// watching. Returns how many session changes the window was told of, and how many sessions its
/// listings showed (the first, then the last).
fn launch(root: &Path, db: &Path, meanwhile: impl FnOnce()) -> (usize, usize, usize) {
    let (studio, _) = Studio::open(Some(root), Ok(StoreLocation::File(db.to_owned())));
    // The read-ahead (its own thread in the app), then the window's first listing.
    studio.read_sessions_ahead(|| {});
    let first = first_screen(&studio).total;
    assert!(studio.wait_first_listing(Duration::ZERO));
    meanwhile();
    // The window's sink: a session change makes it list again.
    let heard = watch_session_changes(&studio);
    // What the watcher's start tells is sent before `watch` returns.
    let changes = heard.try_iter().count();
    let last = if changes > 0 {
        studio.sessions(SystemTime::now()).unwrap().sessions.len()
    } else {
        first
    };
    studio.shut_down();
    (changes, first, last)
}

#[test]
fn start_up_reads_each_session_folder_once() {
    let root = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("studio.db");
    let sessions = root.path().join(".zibby/output/sessions");
    let mut reads = Reads::new();
    let mut folders: Vec<PathBuf> = (0..SESSIONS).map(|i| add_session(&sessions, i)).collect();
    for folder in &folders {
        reads.watch(folder);
    }

    // First launch on a new store: every folder read, once; nothing changed, nothing told.
    let (told, first, last) = launch(root.path(), &db, || {});
    assert_eq!((first, last), (SESSIONS as usize, SESSIONS as usize));
    let counted = reads.take(&folders);
    let not_once: Vec<_> = counted.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        not_once.is_empty(),
        "{} of {SESSIONS} folders not read exactly once at the first launch, e.g. {:?}",
        not_once.len(),
        &not_once[..not_once.len().min(5)]
    );
    assert_eq!(told, 0, "the watcher's start tells the window nothing new");

    // The next launch: the folder index is current, no folder is read. A session added and one
    // removed between the listing and the start of watching are told; the new one read once.
    let gone = folders.remove(0);
    let mut added = PathBuf::new();
    let (told, first, last) = launch(root.path(), &db, || {
        std::fs::remove_dir_all(&gone).unwrap();
        added = add_session(&sessions, SESSIONS);
        reads.watch(&added);
    });
    assert_eq!((first, last), (SESSIONS as usize, SESSIONS as usize));
    assert_eq!(told, 2, "the session added and the one removed meanwhile");
    let counted = reads.take(&folders);
    let read: Vec<_> = counted.iter().filter(|(_, n)| **n != 0).collect();
    assert!(read.is_empty(), "folders read at the next launch: {read:?}");
    let counted = reads.take(std::slice::from_ref(&added));
    assert_eq!(
        counted.values().collect::<Vec<_>>(),
        [&1],
        "the session added meanwhile, read once"
    );
}

/// Issue 46: a next launch's first screen is the store's catalogue as it last saw the folders,
/// before any folder is read; what changed behind the store's back (a folder changed, one
/// removed, one added while no studio ran) is read by the watcher behind it and told, and the
/// window's listing after that shows the folders as they are.
#[test]
fn a_next_launch_shows_the_catalogue_first_and_tells_what_changed_behind_it() {
    let root = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("studio.db");
    let sessions = root.path().join(".zibby/output/sessions");
    let mut reads = Reads::new();
    let folders: Vec<PathBuf> = (0..50).map(|i| add_session(&sessions, i)).collect();
    for folder in &folders {
        reads.watch(folder);
    }
    let (_, first, _) = launch(root.path(), &db, || {});
    assert_eq!(first, 50);
    reads.take(&folders);

    // While no studio runs: one session failed since, one removed, one added.
    std::fs::write(folders[10].join("result.json"), r#"{"success":false}"#).unwrap();
    std::fs::remove_dir_all(&folders[20]).unwrap();
    let added = add_session(&sessions, 50);

    let (studio, _) = Studio::open(Some(root.path()), Ok(StoreLocation::File(db.clone())));
    studio.read_sessions_ahead(|| {});
    let screen = first_screen(&studio);
    let shown = screen.sessions;
    let counted = reads.take(&folders);
    assert!(
        counted.values().all(|&n| n == 0),
        "no folder read for the first screen: {counted:?}"
    );
    let status_of = |rows: &[studio_core::store::SessionRow], id: &str| {
        rows.iter()
            .find(|row| row.summary.id.as_str() == id)
            .map(|row| row.summary.status)
    };
    assert_eq!(shown.len(), 50, "the catalogue as recorded");
    assert_eq!(status_of(&shown, &session_id(10)), Some(studio_core::Status::Success));
    assert!(status_of(&shown, &session_id(50)).is_none());
    let mut checking = screen.checking.clone();
    checking.sort();
    assert_eq!(
        checking,
        [session_id(10), session_id(20)],
        "the rows whose folder differs from the catalogue, and only those, are being checked"
    );

    let heard = watch_session_changes(&studio);
    assert_eq!(
        heard.try_iter().count(),
        3,
        "the changed, the removed and the added one"
    );
    let page = first_screen(&studio);
    assert!(page.checking.is_empty(), "reconciled: {:?}", page.checking);
    assert_eq!((page.sessions.len(), page.total), (50, 50));
    let after = studio.sessions(SystemTime::now()).unwrap().sessions;
    assert_eq!(after.len(), 50);
    assert_eq!(status_of(&after, &session_id(10)), Some(studio_core::Status::Error));
    assert!(status_of(&after, &session_id(20)).is_none());
    assert!(added.is_dir() && status_of(&after, &session_id(50)).is_some());
    studio.shut_down();
}

/// Only the window's first screen (the read-ahead) is the catalogue as recorded: every listing
/// after it (the window's next, MCP's, any without a watcher running) reads the folders, so
/// what changed behind the store's back is there without a watcher to tell it.
#[test]
fn only_the_first_screen_is_the_catalogue_as_recorded() {
    let root = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("studio.db");
    let sessions = root.path().join(".zibby/output/sessions");
    let folders: Vec<PathBuf> = (0..5).map(|i| add_session(&sessions, i)).collect();
    let (_, first, _) = launch(root.path(), &db, || {});
    assert_eq!(first, 5);
    std::fs::remove_dir_all(&folders[2]).unwrap();
    add_session(&sessions, 5);

    let (studio, _) = Studio::open(Some(root.path()), Ok(StoreLocation::File(db.clone())));
    studio.read_sessions_ahead(|| {});
    let ids = |rows: Vec<studio_core::store::SessionRow>| {
        let mut ids: Vec<String> = rows.into_iter().map(|row| row.summary.id.to_string()).collect();
        ids.sort();
        ids
    };
    let recorded = ids(first_screen(&studio).sessions);
    assert_eq!(recorded, (0..5).map(session_id).collect::<Vec<_>>(), "as recorded");
    let next = ids(studio.sessions(SystemTime::now()).unwrap().sessions);
    assert_eq!(
        next,
        [0, 1, 3, 4, 5].map(session_id).to_vec(),
        "the folders as they are"
    );
}

/// Issue 46: a first launch on a new store shows its rows page by page as they are read, newest
/// first. The read-ahead is held after its first page (its notice to the window blocks): the
/// window's first page is the newest sessions, the count is every folder found, only that page's
/// folders were read, and the next page is not there yet; let go, the rest is read and listed.
#[test]
fn a_first_launch_shows_the_newest_page_before_the_rest_is_read() {
    const COUNT: u64 = 450;
    let page = studio_core::app::FIRST_PAGE;
    let root = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let sessions = root.path().join(".zibby/output/sessions");
    let mut reads = Reads::new();
    let folders: Vec<PathBuf> = (0..COUNT).map(|i| add_session(&sessions, i)).collect();
    for folder in &folders {
        reads.watch(folder);
    }
    let (studio, _) = Studio::open(Some(root.path()), Ok(StoreLocation::File(db.path().join("studio.db"))));
    let studio = Arc::new(studio);
    assert_eq!(
        reads.take(&folders).values().filter(|&&n| n > 0).count(),
        0,
        "read by open"
    );
    let (told, heard) = mpsc::channel::<()>();
    let (go, gone_on) = mpsc::channel::<()>();
    let gone_on = std::sync::Mutex::new(gone_on);
    let reading = {
        let studio = studio.clone();
        std::thread::spawn(move || {
            studio.read_sessions_ahead(move || {
                told.send(()).unwrap();
                let _ = gone_on.lock().unwrap().recv();
            })
        })
    };
    heard
        .recv_timeout(Duration::from_secs(30))
        .expect("told after the first page");
    let first = first_screen(&studio);
    let newest: Vec<String> = (COUNT - page as u64..COUNT).rev().map(session_id).collect();
    let shown: Vec<String> = first.sessions.iter().map(|row| row.summary.id.to_string()).collect();
    assert_eq!(shown, newest, "the newest sessions first");
    assert_eq!(first.total, COUNT as usize, "every folder found is counted");
    let counted = reads.take(&folders);
    assert_eq!(
        counted.values().filter(|&&n| n > 0).count(),
        page,
        "only the first page's folders were read"
    );
    let next = studio.sessions_page(page, page).unwrap();
    assert!(
        next.sessions.is_empty(),
        "the next page is not read yet: {}",
        next.sessions.len()
    );

    // Let go: the rest is read (a notice per chunk and one at the end), then listed.
    drop(go);
    reading.join().unwrap();
    let rest = studio.sessions_page(page, COUNT as usize).unwrap();
    assert_eq!(rest.sessions.len(), COUNT as usize - page);
    assert_eq!(
        rest.sessions[0].summary.id.to_string(),
        session_id(COUNT - page as u64 - 1)
    );
    let counted = reads.take(&folders);
    assert_eq!(
        counted.values().filter(|&&n| n == 1).count(),
        COUNT as usize - page,
        "the rest read once each"
    );
    studio.shut_down();
}
