//! The watcher and the tail reader against real folders and real filesystem events.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use studio_core::session::RUNNING_QUIET_WINDOW;
use studio_core::tail::{last_lines, FileTail};
use studio_core::watcher::{Change, Watcher, WatcherOptions};
use studio_core::{Status, Workspace};

use crate::harness::agent_binary;

/// Long enough for a loaded CI machine; the tests wait for events, they never sleep to assert.
const PATIENCE: Duration = Duration::from_secs(10);

/// Every change the watcher sent, and a way to wait for one.
#[derive(Clone, Default)]
struct Changes {
    inner: Arc<(Mutex<Vec<Change>>, Condvar)>,
}

impl Changes {
    fn watch(&self, workspaces: &[&Path], options: WatcherOptions) -> Watcher {
        let workspaces = workspaces.iter().map(|w| Workspace::open(w).unwrap()).collect();
        Watcher::start(workspaces, self.sink(), options).unwrap()
    }

    /// A sink that keeps every change here.
    fn sink(&self) -> studio_core::watcher::ChangeSink {
        let changes = self.clone();
        Arc::new(move |change: Change| {
            let (list, signal) = &*changes.inner;
            list.lock().unwrap().push(change);
            signal.notify_all();
        })
    }

    /// The session updates so far: each session's id and status.
    fn updated(&self) -> Vec<(String, Status)> {
        self.inner
            .0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|change| match change {
                Change::SessionUpdated {
                    session_id, summary, ..
                } => Some((session_id.as_str().to_owned(), summary.status)),
                _ => None,
            })
            .collect()
    }

    /// Waits until `done` holds for the changes so far; panics with `what` after the patience.
    fn wait_until(&self, what: &str, done: impl Fn(&[Change]) -> bool) -> Vec<Change> {
        let deadline = Instant::now() + PATIENCE;
        let (list, signal) = &*self.inner;
        let mut changes = list.lock().unwrap();
        loop {
            if done(&changes) {
                return changes.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}; changes so far: {:#?}",
                *changes
            );
            changes = signal.wait_timeout(changes, left).unwrap().0;
        }
    }
}

fn added(changes: &[Change], id: &str) -> usize {
    changes
        .iter()
        .filter(|c| matches!(c, Change::SessionAdded { session_id, .. } if session_id.as_str() == id))
        .count()
}

fn removed(changes: &[Change], id: &str) -> usize {
    changes
        .iter()
        .filter(|c| matches!(c, Change::SessionRemoved { session_id, .. } if session_id.as_str() == id))
        .count()
}

fn sessions_dir(workspace: &Path) -> PathBuf {
    workspace.join(".zibby/output/sessions")
}

/// A session folder as the engine writes it at the start of a node.
fn write_session(workspace: &Path, id: &str, node: &str) -> PathBuf {
    let dir = sessions_dir(workspace).join(id);
    fs::create_dir_all(&dir).unwrap();
    let info = format!(
        r#"{{"sessionPath":"{}","currentNode":"{node}","createdAt":"2026-01-01T00:00:00.000Z"}}"#,
        dir.display()
    );
    fs::write(dir.join(".session-info.json"), info).unwrap();
    dir
}

fn workspace_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

#[test]
fn a_run_of_the_test_agent_shows_up_and_its_nodes_progress() {
    let (_dir, root) = workspace_dir();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    let mut agent = std::process::Command::new(agent_binary())
        .args(["run", "--nodes", "plan:1000,research:1000,write:1000", "--lines", "3"])
        .current_dir(&root)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let seen = changes.wait_until("the run's session, its three nodes and their output", |changes| {
        let nodes: HashSet<&str> = changes
            .iter()
            .filter_map(|c| match c {
                Change::SessionAdded { summary, .. } | Change::SessionUpdated { summary, .. } => {
                    summary.current_node.as_deref()
                }
                _ => None,
            })
            .collect();
        let output = changes
            .iter()
            .any(|c| matches!(c, Change::OutputAppended { lines, .. } if !lines.is_empty()));
        ["plan", "research", "write"].iter().all(|n| nodes.contains(n)) && output
    });
    assert!(agent.wait().unwrap().success());
    let ids: HashSet<&str> = seen
        .iter()
        .filter_map(|c| c.session_id())
        .map(|id| id.as_str())
        .collect();
    assert_eq!(ids.len(), 1, "one run makes one session: {ids:?}");
    let id = *ids.iter().next().unwrap();
    assert_eq!(added(&seen, id), 1, "the session is added once, then updated");
    assert!(
        matches!(&seen[0], Change::SessionAdded { .. }),
        "the first change of a new session is its addition: {:?}",
        seen[0]
    );
    for change in &seen {
        assert_eq!(change.workspace(), root, "changes name their workspace");
        if let Change::OutputAppended { file, .. } = change {
            assert!(
                file.starts_with(sessions_dir(&root).join(id)),
                "output of the session's folder: {file:?}"
            );
            assert!(file.ends_with("raw_stream_output.txt"), "{file:?}");
        }
    }
}

#[test]
fn a_session_there_before_the_watcher_started_is_reported_once() {
    let (_dir, root) = workspace_dir();
    write_session(&root, "before", "plan");
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    changes.wait_until("the existing session", |c| added(c, "before") == 1);
    // A later session proves the watcher went on; by then a duplicate would have come too.
    write_session(&root, "after", "plan");
    let seen = changes.wait_until("the new session", |c| added(c, "after") == 1);
    assert_eq!(added(&seen, "before"), 1, "reported exactly once: {seen:#?}");
}

#[test]
fn the_sessions_folder_deleted_and_created_again() {
    let (_dir, root) = workspace_dir();
    write_session(&root, "first", "plan");
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    changes.wait_until("the first session", |c| added(c, "first") == 1);
    fs::remove_dir_all(sessions_dir(&root)).unwrap();
    changes.wait_until("the first session removed", |c| removed(c, "first") == 1);
    write_session(&root, "second", "plan");
    changes.wait_until("a session in the new sessions folder", |c| added(c, "second") == 1);
    // And changes inside it keep coming.
    write_session(&root, "second", "write");
    changes.wait_until("the new session's update", |c| {
        c.iter().any(|c| {
            matches!(c, Change::SessionUpdated { summary, .. }
                if summary.id.as_str() == "second" && summary.current_node.as_deref() == Some("write"))
        })
    });
}

#[test]
fn the_sessions_folder_missing_at_start() {
    let (_dir, root) = workspace_dir();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    // Created one level at a time, as `mkdir -p` does.
    write_session(&root, "late", "plan");
    changes.wait_until("the session of a sessions folder created after the start", |c| {
        added(c, "late") == 1
    });
}

#[test]
fn a_session_folder_moved_in_whole() {
    let (_dir, root) = workspace_dir();
    fs::create_dir_all(sessions_dir(&root)).unwrap();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    // A downloaded session, unpacked beside the workspace on the same filesystem.
    let download = root.join("download");
    let unpacked = write_session(&download, "downloaded", "write");
    fs::create_dir_all(unpacked.join("write")).unwrap();
    fs::write(unpacked.join("write/raw_stream_output.txt"), "done\n").unwrap();
    fs::rename(&unpacked, sessions_dir(&root).join("downloaded")).unwrap();
    let seen = changes.wait_until("the moved-in session", |c| added(c, "downloaded") == 1);
    let summary = seen
        .iter()
        .find_map(|c| match c {
            Change::SessionAdded { summary, .. } => Some(summary),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        summary.current_node.as_deref(),
        Some("write"),
        "read from the moved folder"
    );
    // Its folder is watched like any other: a change inside it is seen.
    let file = sessions_dir(&root).join("downloaded/write/raw_stream_output.txt");
    fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(b"more\n")
        .unwrap();
    changes.wait_until("output appended inside the moved-in session", |c| {
        c.iter()
            .any(|c| matches!(c, Change::OutputAppended { lines, .. } if lines.contains(&"more".to_owned())))
    });
}

#[test]
fn output_appended_carries_only_complete_new_lines() {
    let (_dir, root) = workspace_dir();
    let dir = write_session(&root, "growing", "plan");
    let file = dir.join("raw_stream_output.txt");
    fs::write(&file, "old line\n").unwrap();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    changes.wait_until("the existing session", |c| added(c, "growing") == 1);
    let mut out = fs::OpenOptions::new().append(true).open(&file).unwrap();
    out.write_all(b"new line\nhalf").unwrap();
    let lines_of = |c: &[Change]| -> Vec<String> {
        c.iter()
            .filter_map(|c| match c {
                Change::OutputAppended { lines, .. } => Some(lines.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    };
    changes.wait_until("the new line", |c| !lines_of(c).is_empty());
    out.write_all(b" written\n").unwrap();
    let seen = changes.wait_until("the completed line", |c| lines_of(c).len() >= 2);
    assert_eq!(
        lines_of(&seen),
        ["new line", "half written"],
        "lines from before the start are not news, and a half line waits for its newline"
    );
}

#[test]
fn a_running_session_that_goes_quiet_is_updated_without_a_file_change() {
    let (_dir, root) = workspace_dir();
    write_session(&root, "crashed", "plan");
    // The clock is pinned by the test: it jumps past the quiet window once the session is seen.
    let skew_ms = Arc::new(AtomicU64::new(0));
    let clock = {
        let skew_ms = skew_ms.clone();
        Arc::new(move || SystemTime::now() + Duration::from_millis(skew_ms.load(Ordering::SeqCst)))
    };
    let options = WatcherOptions {
        clock,
        quiet_check_interval: Duration::from_millis(100),
        ..WatcherOptions::default()
    };
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], options);
    let seen = changes.wait_until("the session", |c| added(c, "crashed") == 1);
    assert!(
        matches!(&seen[0], Change::SessionAdded { summary, .. } if summary.status == Status::Running),
        "a session without result that just changed is running: {seen:?}"
    );
    skew_ms.store(RUNNING_QUIET_WINDOW.as_millis() as u64 + 60_000, Ordering::SeqCst);
    changes.wait_until("the session no longer running", |c| {
        c.iter().any(|c| {
            matches!(c, Change::SessionUpdated { summary, .. }
                if summary.id.as_str() == "crashed" && summary.status != Status::Running)
        })
    });
}

#[test]
fn polling_when_inotify_cannot_watch() {
    let (_dir, root) = workspace_dir();
    let changes = Changes::default();
    let options = WatcherOptions {
        poll_only: true,
        poll_interval: Duration::from_millis(200),
        ..WatcherOptions::default()
    };
    let _watcher = changes.watch(&[&root], options);
    write_session(&root, "polled", "plan");
    changes.wait_until("a session found by polling", |c| added(c, "polled") == 1);
    fs::remove_dir_all(sessions_dir(&root).join("polled")).unwrap();
    changes.wait_until("its removal found by polling", |c| removed(c, "polled") == 1);
}

#[test]
fn several_workspaces_at_once() {
    let (_a, first) = workspace_dir();
    let (_b, second) = workspace_dir();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&first, &second], WatcherOptions::default());
    write_session(&first, "in-first", "plan");
    write_session(&second, "in-second", "plan");
    let seen = changes.wait_until("a session in each", |c| {
        added(c, "in-first") == 1 && added(c, "in-second") == 1
    });
    for change in seen {
        let expected = if change.session_id().map(|id| id.as_str()) == Some("in-first") {
            &first
        } else {
            &second
        };
        assert_eq!(change.workspace(), expected.as_path());
    }
}

#[test]
fn a_thousand_sessions_in_a_burst_are_all_reported_and_coalesced() {
    let (_dir, root) = workspace_dir();
    fs::create_dir_all(sessions_dir(&root)).unwrap();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    for i in 0..1000 {
        let dir = write_session(&root, &format!("burst-{i:04}"), "plan");
        fs::write(dir.join("raw_stream_output.txt"), "a\nb\n").unwrap();
        fs::write(dir.join("events.json"), "{}\n").unwrap();
    }
    let seen = changes.wait_until("all 1,000 sessions", |c| {
        c.iter().filter(|c| matches!(c, Change::SessionAdded { .. })).count() >= 1000
    });
    let mut per_session: HashMap<&str, usize> = HashMap::new();
    for change in &seen {
        *per_session
            .entry(change.session_id().map_or("-", |id| id.as_str()))
            .or_default() += 1;
    }
    assert_eq!(per_session.len(), 1000);
    for i in 0..1000 {
        assert_eq!(
            added(&seen, &format!("burst-{i:04}")),
            1,
            "each session added exactly once"
        );
    }
    // Each session was written in 4 steps (folder, info, output, events) that raise about 10
    // filesystem events; coalesced, a session yields its addition, at most one update and its
    // two output files.
    assert!(
        seen.len() <= 4 * 1000,
        "{} changes for 1,000 sessions: not coalesced",
        seen.len()
    );
}

#[test]
fn a_tail_reads_again_from_the_start_after_a_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw_stream_output.txt");
    fs::write(&path, "one\ntwo\n").unwrap();
    let mut tail = FileTail::from_start(&path);
    assert_eq!(tail.read_new_lines(1 << 20).unwrap().lines, ["one", "two"]);
    // Truncated in place (same inode), then written again, shorter.
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap()
        .write_all(b"x\n")
        .unwrap();
    let new = tail.read_new_lines(1 << 20).unwrap();
    assert!(new.restarted, "a file shorter than what was read was truncated");
    assert_eq!((new.offset, new.lines), (0, vec!["x".to_owned()]));
    // Replaced by another file (another inode), as long as the old one.
    let other = dir.path().join("new.txt");
    fs::write(&other, "y1\ny2\n").unwrap();
    fs::rename(&other, &path).unwrap();
    let new = tail.read_new_lines(1 << 20).unwrap();
    assert!(new.restarted, "a replaced file is read from its start");
    assert_eq!(new.lines, ["y1", "y2"]);
    assert!(tail.read_new_lines(1 << 20).unwrap().lines.is_empty(), "nothing new");
}

/// The peak resident memory of this process, in KiB (`VmHWM`).
fn peak_memory_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn the_last_lines_of_a_large_file_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw_stream_output.txt");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, fs::File::create(&path).unwrap());
    let lines = 2_000_000u64;
    for i in 0..lines {
        // ~100 bytes a line: ~200 MB.
        writeln!(out, "line {i:010} {}", "x".repeat(84)).unwrap();
    }
    out.into_inner().unwrap().sync_all().unwrap();
    assert!(fs::metadata(&path).unwrap().len() > 190_000_000);

    let before = peak_memory_kib();
    let page = last_lines(&path, 1000).unwrap();
    let grown = peak_memory_kib().saturating_sub(before);
    assert_eq!(page.lines.len(), 1000);
    for (k, line) in page.lines.iter().enumerate() {
        let i = lines - 1000 + k as u64;
        assert_eq!(line, &format!("line {i:010} {}", "x".repeat(84)));
    }
    assert!(!page.last_line_partial);
    assert_eq!(page.end, fs::metadata(&path).unwrap().len());
    // Other tests run in parallel in this process, so the peak is only an upper bound of ours;
    // reading the file whole would add 200 MB.
    assert!(
        grown < 50 * 1024,
        "peak memory grew by {grown} KiB reading the last 1,000 lines"
    );
}

fn agents_changes(changes: &[Change]) -> usize {
    changes
        .iter()
        .filter(|c| matches!(c, Change::AgentsChanged { .. }))
        .count()
}

const AGENT: &str = "[[agent]]\nname = \"a\"\nrun = [\"true\"]\n";

/// Created (with `.zibby/` itself), edited in place, replaced by a rename as editors save,
/// removed: each is one `agents_changed`, and reading the file in between is none.
fn the_agents_file_lifecycle(options: WatcherOptions) {
    let (_dir, root) = workspace_dir();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], options);
    let file = root.join(".zibby/studio.toml");

    fs::create_dir(root.join(".zibby")).unwrap();
    fs::write(&file, AGENT).unwrap();
    changes.wait_until("the agents file created", |c| agents_changes(c) == 1);
    assert_eq!(studio_core::agents::load(&root).unwrap().len(), 1);

    let mut edited = fs::OpenOptions::new().append(true).open(&file).unwrap();
    edited
        .write_all(b"\n[[agent]]\nname = \"b\"\nrun = [\"true\"]\n")
        .unwrap();
    drop(edited);
    changes.wait_until("the agents file edited in place", |c| agents_changes(c) == 2);
    assert_eq!(studio_core::agents::load(&root).unwrap().len(), 2);

    let saved = root.join(".zibby/.studio.toml.swp");
    fs::write(&saved, "not = [toml").unwrap();
    fs::rename(&saved, &file).unwrap();
    let seen = changes.wait_until("the agents file replaced by a rename", |c| agents_changes(c) == 3);
    assert!(
        studio_core::agents::load(&root).is_err(),
        "a broken file reads as its error"
    );
    let change = seen.iter().rev().find(|c| matches!(c, Change::AgentsChanged { .. }));
    assert_eq!(change.unwrap().workspace(), root.as_path());

    fs::remove_file(&file).unwrap();
    changes.wait_until("the agents file removed", |c| agents_changes(c) == 4);
    assert!(studio_core::agents::load(&root).unwrap().is_empty());

    fs::remove_dir(root.join(".zibby")).unwrap();
    fs::create_dir(root.join(".zibby")).unwrap();
    fs::write(&file, AGENT).unwrap();
    let seen = changes.wait_until("the agents file in a new .zibby folder", |c| agents_changes(c) == 5);
    assert!(
        seen.iter().all(|c| c.session_id().is_none()),
        "no session changes: {seen:?}"
    );
}

#[test]
fn the_agents_file_created_edited_replaced_and_removed_is_reported() {
    the_agents_file_lifecycle(WatcherOptions::default());
}

#[test]
fn the_agents_file_is_polled_when_inotify_cannot_watch() {
    the_agents_file_lifecycle(WatcherOptions {
        poll_only: true,
        poll_interval: Duration::from_millis(100),
        ..WatcherOptions::default()
    });
}

/// A run's end recorded in the store by another process (its own connection to the store's
/// file), while the session's folder stays as it was: the watcher reports the session again
/// within a second, and the store's word laid over it says how the run ended. Without it the
/// next word came from the quiet check, two minutes later.
#[test]
fn a_runs_end_recorded_in_the_store_elsewhere_is_reported_within_a_second() {
    use studio_core::store::{NewRun, RunOutcome, Store, StoreLocation};

    let (_dir, root) = workspace_dir();
    write_session(&root, "ended-quietly", "last");
    let store_dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::File(store_dir.path().join("studio.db"));
    let watching = Arc::new(Store::open(&location).unwrap());
    let elsewhere = Store::open(&location).unwrap();
    let workspace = Workspace::open(&root).unwrap();
    let session = studio_core::SessionId::parse("ended-quietly").unwrap();
    let run_id = elsewhere
        .run_insert(
            &workspace,
            &NewRun {
                session: &session,
                agent: Some("test"),
                command: &["agent".to_owned()],
                replayed_node: None,
                prompt: None,
                started_at: SystemTime::now(),
            },
        )
        .unwrap();

    let options = WatcherOptions {
        store: Some(watching.clone()),
        ..WatcherOptions::default()
    };
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], options);
    let seen = changes
        .wait_until("the session", |c| added(c, "ended-quietly") == 1)
        .len();

    let ended = Instant::now();
    elsewhere
        .run_finish(
            &run_id,
            &RunOutcome {
                status: Status::Error,
                exit_code: Some(1),
                error: None,
                stopped_by: None,
                ended_at: SystemTime::now(),
            },
        )
        .unwrap();
    let changes = changes.wait_until("the session reported again after its run ended", |c| {
        c[seen..]
            .iter()
            .any(|c| matches!(c, Change::SessionUpdated { summary, .. } if summary.id.as_str() == "ended-quietly"))
    });
    let delay = ended.elapsed();
    assert!(
        delay < Duration::from_secs(1),
        "the run's end took {delay:?} to be reported"
    );
    let mut summary = changes[seen..]
        .iter()
        .find_map(|c| match c {
            Change::SessionUpdated { summary, .. } => Some(summary.clone()),
            _ => None,
        })
        .unwrap();
    watching.as_recorded(&workspace, &mut summary).unwrap();
    assert_eq!(summary.status, Status::Error, "the store's word: the run failed");
    eprintln!("a run's end recorded elsewhere reported after {delay:?}");
}

/// A run started from a terminal (the test agent as a user runs it, in the workspace): while its
/// process is there the session is `running`; once it is gone the watcher says so within
/// seconds, though no file changed (before: two minutes later, by the quiet check).
#[test]
fn a_terminal_runs_end_is_reported_within_seconds_of_its_process_going() {
    let (_dir, root) = workspace_dir();
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], WatcherOptions::default());
    let mut terminal = std::process::Command::new(agent_binary())
        .args(["run", "--nodes", "first:300,second:300"])
        .current_dir(&root)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    changes.wait_until("the run, running", |c| {
        c.iter().any(|c| {
            matches!(c, Change::SessionAdded { summary, .. } | Change::SessionUpdated { summary, .. }
                if summary.status == Status::Running)
        })
    });
    assert!(terminal.wait().unwrap().success());
    let ended = Instant::now();
    let seen = changes.wait_until("the run no longer running", |c| {
        matches!(c.iter().rev().find_map(|c| match c {
            Change::SessionAdded { summary, .. } | Change::SessionUpdated { summary, .. } => Some(summary.status),
            _ => None,
        }), Some(status) if status != Status::Running)
    });
    let delay = ended.elapsed();
    assert!(
        delay < Duration::from_secs(4),
        "the run's end took {delay:?} to be reported"
    );
    let last = seen.iter().rev().find_map(|c| match c {
        Change::SessionUpdated { summary, .. } => Some(summary.clone()),
        _ => None,
    });
    assert_eq!(
        last.map(|s| s.status),
        Some(Status::Unknown),
        "its end is not recorded: unknown"
    );
    eprintln!("a terminal run's end reported {delay:?} after its process went");
}

/// Issue 29: a terminal run whose middle node is a custom code node (it writes no folder, as the
/// engine's do) and whose last node fails. A watch sees every node the run began, in the order it
/// began them (the folderless one from `.session-info.json` as it changed), and the run's end
/// within seconds; once ended nothing changes, past the two-minute quiet window too. A fresh read
/// of the folder (`sessions`, `show`) has the same end and the folder's nodes in the same order.
#[test]
fn a_terminal_runs_end_and_nodes_read_the_same_in_a_watch_after_two_minutes() {
    let (_dir, root) = workspace_dir();
    let skew_ms = Arc::new(AtomicU64::new(0));
    let clock = {
        let skew_ms = skew_ms.clone();
        Arc::new(move || SystemTime::now() + Duration::from_millis(skew_ms.load(Ordering::SeqCst)))
    };
    let options = WatcherOptions {
        clock: clock.clone(),
        quiet_check_interval: Duration::from_millis(100),
        ..WatcherOptions::default()
    };
    let changes = Changes::default();
    let _watcher = changes.watch(&[&root], options);
    let terminal = std::process::Command::new(agent_binary())
        .args([
            "run",
            "--nodes",
            "fetch:400,process:400,publish:400",
            "--custom",
            "process",
        ])
        .args(["--fail", "publish"])
        .current_dir(&root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = terminal.wait_with_output().unwrap().status;
    assert_eq!(status.code(), Some(1), "the last node failed");
    let last_summary = |changes: &[Change]| {
        changes.iter().rev().find_map(|c| match c {
            Change::SessionAdded { summary, .. } | Change::SessionUpdated { summary, .. } => Some(summary.clone()),
            _ => None,
        })
    };
    let seen = changes.wait_until("the run no longer running", |c| {
        last_summary(c).is_some_and(|s| s.status != Status::Running)
    });
    let ended = last_summary(&seen).unwrap();
    let nodes: Vec<(&str, Status)> = ended.nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
    assert_eq!(
        nodes,
        [
            ("fetch", Status::Success),
            ("process", Status::Unknown),
            ("publish", Status::Unknown)
        ],
        "every node it began, in order; the engine records neither how the folderless one nor the \
         failed one ended: {seen:#?}"
    );
    assert_eq!(ended.status, Status::Unknown);
    assert!(
        ended
            .not_known
            .as_deref()
            .is_some_and(|n| n.contains("zstudio run -- ")),
        "{ended:?}"
    );

    // Two minutes pass (the clock jumps; the quiet check runs every 100 ms): nothing changes.
    let before = seen.len();
    skew_ms.store(RUNNING_QUIET_WINDOW.as_millis() as u64 + 1_000, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(600));
    let after = changes.wait_until("nothing", |_| true);
    assert_eq!(
        after.len(),
        before,
        "no change past the quiet window: {:#?}",
        &after[before..]
    );

    // A fresh read of the folder, two minutes on, has the same end and the folder's nodes in
    // the same order.
    let dir = sessions_dir(&root).join(ended.id.as_str());
    let fresh = studio_core::session::read_summary(&dir, &ended.id, clock()).unwrap();
    assert_eq!(fresh.status, ended.status);
    assert_eq!(fresh.not_known, ended.not_known);
    let fresh_nodes: Vec<&str> = fresh.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        fresh_nodes,
        ["fetch", "publish"],
        "the folder alone cannot name `process`"
    );
}

/// A finished session: `.session-info.json`, `result.json` and a node folder.
fn write_finished_session(workspace: &Path, id: &str) -> PathBuf {
    let dir = sessions_dir(workspace).join(id);
    fs::create_dir_all(dir.join("plan")).unwrap();
    fs::write(dir.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
    fs::write(dir.join("result.json"), r#"{"success":true}"#).unwrap();
    dir
}

#[test]
fn a_seeded_start_reports_only_what_differs_from_the_seed() {
    use studio_core::session::{fingerprint, read_summary};
    use studio_core::store::index::IndexedFolder;
    use studio_core::watcher::Seed;
    use studio_core::SessionId;

    let root = tempfile::tempdir().unwrap();
    let ids = ["1777000000001_same", "1777000000002_edit", "1777000000003_gone"];
    let mut seed = Seed::new();
    for id in ids {
        let dir = write_finished_session(root.path(), id);
        let id = SessionId::parse(id).unwrap();
        let summary = read_summary(&dir, &id, SystemTime::now()).unwrap();
        let indexed = IndexedFolder::new(fingerprint(&dir, None).unwrap(), &summary);
        seed.insert(id, indexed);
    }
    // Since the seed was taken: one session failed, one went, one came.
    let edited = sessions_dir(root.path()).join(ids[1]);
    fs::write(edited.join("result.json"), r#"{"success":false,"error":"boom"}"#).unwrap();
    fs::remove_dir_all(sessions_dir(root.path()).join(ids[2])).unwrap();
    write_finished_session(root.path(), "1777000000004_new");

    let changes = Changes::default();
    let workspace = Workspace::open(root.path()).unwrap();
    let _watcher = Watcher::start_seeded(vec![(workspace, seed)], changes.sink(), WatcherOptions::default()).unwrap();
    // The initial scan's changes are sent before the watcher is returned.
    let at_start: Vec<(String, String)> = changes
        .inner
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|change| match change {
            Change::SessionAdded { session_id, .. } => Some(("added", session_id)),
            Change::SessionUpdated {
                session_id, summary, ..
            } => {
                assert_eq!(summary.status, Status::Error);
                Some(("updated", session_id))
            }
            Change::SessionRemoved { session_id, .. } => Some(("removed", session_id)),
            _ => None,
        })
        .map(|(what, id)| (what.to_owned(), id.as_str().to_owned()))
        .collect();
    let mut at_start = at_start;
    at_start.sort();
    assert_eq!(
        at_start,
        [
            ("added".to_owned(), "1777000000004_new".to_owned()),
            ("removed".to_owned(), ids[2].to_owned()),
            ("updated".to_owned(), ids[1].to_owned()),
        ]
    );

    // The session taken as the seed said is watched like any other.
    let same = sessions_dir(root.path()).join(ids[0]);
    fs::write(same.join("result.json"), r#"{"success":false,"error":"later"}"#).unwrap();
    changes.wait_until("the seeded session's change", |changes| {
        changes
            .iter()
            .any(|c| matches!(c, Change::SessionUpdated { session_id, .. } if session_id.as_str() == ids[0]))
    });
}

#[test]
fn a_swept_sessions_read_is_compared_with_the_folder_indexs_summary() {
    use studio_core::store::{index, Store, StoreLocation};
    use studio_core::SessionId;

    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let month_ago = SystemTime::now() - Duration::from_secs(30 * 86_400);
    let (touched, failed, later) = ("1777000000001_touched", "1777000000002_failed", "1777000000003_later");
    for id in [touched, failed, later] {
        let dir = write_finished_session(root.path(), id);
        for path in [
            dir.join(".session-info.json"),
            dir.join("result.json"),
            dir.join("plan"),
            dir,
        ] {
            fs::File::open(&path).unwrap().set_modified(month_ago).unwrap();
        }
    }
    let store = Arc::new(Store::open(&StoreLocation::File(data.path().join("studio.db"))).unwrap());
    let workspace = Workspace::open(root.path()).unwrap();
    store.list_sessions(&workspace, SystemTime::now()).unwrap();
    let seed = index::indexed_folders(&store, &workspace).unwrap();
    assert_eq!(seed.len(), 3);
    // Since the seed was taken: one rewritten with the same meaning and time (its fingerprint
    // changes with its size, its summary does not), one failed.
    let sessions = root.path().join(".zibby/output/sessions");
    let rewritten = sessions.join(touched).join("result.json");
    fs::write(&rewritten, r#"{ "success": true }"#).unwrap();
    fs::File::open(&rewritten).unwrap().set_modified(month_ago).unwrap();
    fs::write(sessions.join(failed).join("result.json"), r#"{"success":false}"#).unwrap();

    let changes = Changes::default();
    let sink = index::keeping_current(store.clone(), &[&workspace], changes.sink());
    let options = WatcherOptions {
        store: Some(store.clone()),
        sweep_bound: Duration::from_secs(1),
        // The files are rewritten in place (no engine run): the whole fingerprint at every pass.
        sweep_whole_every: 1,
        ..WatcherOptions::default()
    };
    let watcher = Watcher::start_seeded(vec![(workspace, seed)], sink, options).unwrap();
    // Two read at start; the failed one changed just now is watched, its summary held; the
    // others' are the index's.
    assert_eq!(watcher.sessions_held(), Some((3, 1)));
    // Compared with the index's summary: the one as the index has it is no change.
    assert_eq!(changes.updated(), [(failed.to_owned(), Status::Error)]);
    let failed_id = SessionId::parse(failed).unwrap();
    let indexed = index::indexed_summary(&store, &Workspace::open(root.path()).unwrap(), &failed_id).unwrap();
    assert_eq!(
        indexed.map(|summary| summary.status),
        Some(Status::Error),
        "the index kept current"
    );

    // After the start, found by the sweep: the touched one rewritten again with the same meaning
    // (another size), and the third failed. The third is reported; the touched one, compared with
    // the index's summary, is not (the sweep looks at both within its bound of 1 s).
    let old = |path: &Path, text: &str| {
        fs::write(path, text).unwrap();
        fs::File::open(path).unwrap().set_modified(month_ago).unwrap();
    };
    old(&rewritten, r#"{"success":  true}"#);
    old(&sessions.join(later).join("result.json"), r#"{"success":false}"#);
    changes.wait_until("the third session's failure, found by the sweep", |seen| {
        seen.iter().any(|change| {
            matches!(change, Change::SessionUpdated { session_id, summary, .. }
                if session_id.as_str() == later && summary.status == Status::Error)
        })
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !changes.updated().iter().any(|(id, _)| id == touched),
        "a swept session read as the index has it is no change: {:?}",
        changes.updated()
    );
}
