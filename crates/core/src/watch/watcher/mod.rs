//! The watcher: the session folders of several workspaces, watched as they change, turned into
//! typed [`Change`]s sent to an injected sink.
//!
//! - Built on `notify` (inotify on Linux) with its own debouncing per session: the debouncer
//!   crates drop notify's "rescan" signal (an inotify queue overflow has no path), and a missed
//!   overflow would silently miss changes; here it triggers a full rescan.
//! - **Watching costs what changes, not what exists** (issue 46). Each workspace's
//!   `<root>/.zibby/output/sessions/` is always watched: a session created, removed or renamed is
//!   seen at once. Below it, a session gets watches of its own only while it is *live or changed
//!   recently*: `running`, or changed within [`WatcherOptions::recent`] (10 minutes; at start, by
//!   its files' newest time; after, by the last time the watcher read it after a change). Those
//!   watches are what the session layout has: its folder, its node folders and `nodes/<node>/` (at
//!   most three levels; a session's deeper folders are not watched), never through a symbolic link
//!   (a link in a session folder to `/usr` costs nothing). A watched session neither running nor
//!   changed for [`WatcherOptions::recent`] is quiet again: its watches and its followed files'
//!   tails are released.
//! - Every other session (ended, old) is **swept** (`sweep`): looked at again once per
//!   [`WatcherOptions::sweep_bound`] (60 s), a slice at each step (one a second) so that it never
//!   costs a burst, and never more than [`WatcherOptions::sweep_rate`] sessions a second (1,000)
//!   nor for longer than [`WatcherOptions::sweep_budget`] a second (400 µs). A look is mostly a
//!   glance (the folder's own time and `.session-info.json`'s: every file created, removed or
//!   renamed, every run of the engine in it); at one pass in [`WatcherOptions::sweep_whole_every`]
//!   (8) it is the whole fingerprint (also `result.json`, `events.json`, `nodes/`, the run
//!   record, each node's `raw_stream_output.txt`; metadata alone, nothing opened). Once the
//!   looks cost more than the budget, the bound grows instead and the cost stays flat (a file
//!   rewritten in place by another hand than the engine's: within 8 bounds). A change the sweep
//!   finds is read and reported like any other; the session is watched again, its followed files
//!   tailed from their end (what was appended while it was swept is in its summary; what is
//!   appended from then on is sent as lines). So at 100,000 ended sessions the watcher holds the
//!   sessions folder's watch, `.zibby/`'s and the live sessions', and starts without adding and
//!   releasing tens of thousands of watches. Nor does it hold their summaries: of a swept
//!   session it keeps its fingerprint, its time and whether it ran; its summary, what a read of
//!   it is compared with, is held only while it is watched, and a swept one's is the store's
//!   folder index's ([`WatcherOptions::store`]), looked up when it is read again (without a
//!   store, a swept session's read is reported as an update).
//! - While the sessions folder does not exist, or a link stands in its way, the deepest real
//!   folder on the way is watched until it appears; when it is deleted or replaced, the watch
//!   moves back there, and every session it held is reported removed.
//! - When a watch cannot be added (the inotify watch limit, `fs.inotify.max_user_watches`, or
//!   inotify unusable), the workspace falls back to a poll of every session every
//!   [`WatcherOptions::poll_interval`], logged with `tracing::warn`, and every watch it had is
//!   released. With only live and recent sessions watched, the budget (half the limit) is reached
//!   only by thousands of sessions changing at once. Idle, with inotify working, the watcher
//!   thread wakes once per sweep step while it knows any session, and otherwise blocks.
//! - Every session folder present at start is reported once as [`Change::SessionAdded`] (an initial
//!   scan): the caller needs no listing of its own. A caller that has one (the folder index, as
//!   the window's first listing left it) gives it as a [`Seed`] ([`Watcher::start_seeded`]): the
//!   initial scan then reads and reports only what differs from it.
//! - Each workspace's agents file, `.zibby/studio.toml`
//!   ([`AGENTS_FILE`](crate::sessions::agents::AGENTS_FILE)), is watched too, with an inotify
//!   instance of its own: `.zibby/` (never through a link), or the workspace's root while
//!   `.zibby/` is missing. Its creation, a write, a replacement by rename (as editors save) and
//!   its removal are one [`Change::AgentsChanged`] per [`WatcherOptions::window`], sent only when
//!   the file's identity, size or times differ from what was last reported (so the studio's own
//!   reads of it are no change, and a burst of writes is one). Where inotify cannot watch it, it
//!   is looked at every [`WatcherOptions::poll_interval`].
//!
//! **Coalescing bound.** A session is read again at most once per [`WatcherOptions::window`]
//! (default 100 ms), and each read sends at most one `session_*` change plus one
//! [`Change::OutputAppended`] per output file that grew (with at most [`MAX_APPENDED_BYTES`] of
//! lines). With the default window, a run printing 10,000 lines/s yields at most 10 session changes
//! and 10 `output_appended` per output file per second.
//!
//! Its files, by what they do: `options` ([`WatcherOptions`]), `layout` (which folders of a
//! session are watched and which files followed), `state` (the watching thread's state),
//! `event_loop` (the thread's loop: events, deadlines, polling), `watches` (the inotify watches
//! and the fallback to polling), `sweep` (which sessions are watched, their release once quiet,
//! and the sweep of the others), `reading` (the initial scan, from a seed or not, rescans and each
//! session's read), `agents_file` (the agents file's own watch).

mod agents_file;
mod event_loop;
mod layout;
mod options;
mod reading;
mod state;
mod sweep;
mod watches;

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::Instant;

use notify::{RecommendedWatcher, Watcher as _};

pub use self::layout::{output_files, FOLLOWED_FILES};
pub use self::options::{Clock, Seed, WatcherOptions};
pub use self::reading::MAX_APPENDED_BYTES;
pub use self::state::SweepLooks;
use self::state::{Message, WatchLoop, WatchedWorkspace};
pub use self::watches::inotify_watches_held;
pub use crate::sessions::change::{Change, ChangeSink};
use crate::sessions::session::Workspace;
use crate::vocabulary::error::Error;
use crate::watch::recorded_runs::RecordedRuns;

/// Watches the sessions of several workspaces; dropping it stops the watching thread.
pub struct Watcher {
    messages: Sender<Message>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Starts watching: reports every existing session as added (the initial scan), then every
    /// change. Returns once the folders are watched and the initial scan is done, so that any
    /// change made after it returns is reported, output lines included.
    pub fn start(workspaces: Vec<Workspace>, sink: ChangeSink, options: WatcherOptions) -> Result<Watcher, Error> {
        let unknown = workspaces.into_iter().map(|w| (w, Seed::new())).collect();
        Watcher::start_seeded(unknown, sink, options)
    }

    /// [`Watcher::start`] for a caller that knows each workspace's sessions as its [`Seed`] says
    /// (the folder index, as a listing left it): the initial scan reports only what differs from
    /// it. A session whose folder still has the seed's fingerprint is neither read nor reported
    /// (a `running` one is read: its status depends on the clock); one that changed is read and
    /// reported as updated, one not in the seed as added, one of the seed that is gone as
    /// removed. With empty seeds, this is [`Watcher::start`].
    pub fn start_seeded(
        workspaces: Vec<(Workspace, Seed)>,
        sink: ChangeSink,
        options: WatcherOptions,
    ) -> Result<Watcher, Error> {
        let (messages, receiver) = mpsc::channel();
        let notify = if options.poll_only {
            None
        } else {
            let events = messages.clone();
            let handler = move |event| {
                let _ = events.send(Message::Filesystem(event));
            };
            match RecommendedWatcher::new(handler, notify::Config::default().with_follow_symlinks(false)) {
                Ok(watcher) => Some(watcher),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot use filesystem events; polling every workspace instead");
                    None
                }
            }
        };
        let agents_notify = if options.poll_only {
            None
        } else {
            let events = messages.clone();
            let handler = move |event| {
                let _ = events.send(Message::AgentsFile(event));
            };
            match RecommendedWatcher::new(handler, notify::Config::default().with_follow_symlinks(false)) {
                Ok(watcher) => Some(watcher),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch the agents files; polling them instead");
                    None
                }
            }
        };
        let recorded_runs = options.store.clone().map(|store| {
            let events = messages.clone();
            RecordedRuns::new(store, move |event| {
                let _ = events.send(Message::StoreFile(event));
            })
        });
        let mut watch = WatchLoop {
            recorded_runs,
            store_changed: HashSet::new(),
            sink,
            notify,
            agents_notify,
            workspaces: workspaces
                .into_iter()
                .map(|(workspace, seed)| WatchedWorkspace::new(workspace, seed))
                .collect(),
            pending: HashMap::new(),
            last_read: HashMap::new(),
            next_poll: Instant::now() + options.poll_interval,
            next_quiet_check: Instant::now() + options.quiet_check_interval,
            running: HashSet::new(),
            watched: HashMap::new(),
            next_sweep: Instant::now(),
            sweep_looks: SweepLooks::default(),
            session_watch_count: 0,
            options,
        };
        let (watching, started) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("session-watcher".into())
            .spawn(move || watch.run(receiver, watching))
            .map_err(|e| Error::io_spawn("session-watcher thread", e))?;
        // Once the watches are in place and the initial scan is done, every later change is seen.
        let _ = started.recv();
        Ok(Watcher {
            messages,
            thread: Some(thread),
        })
    }
}

impl Watcher {
    /// How many sessions the watcher knows, and of how many it holds a summary (only the watched
    /// ones': running or changed recently); counted on its thread when asked.
    pub fn sessions_held(&self) -> Option<(usize, usize)> {
        let (reply, answer) = mpsc::channel();
        self.messages.send(Message::CountHeld(reply)).ok()?;
        answer.recv().ok()
    }

    /// How many looks the sweep took since the start, at a glance and whole: what a session's
    /// bound is at this pace (the benches measure it so).
    pub fn sweep_looks(&self) -> Option<SweepLooks> {
        let (reply, answer) = mpsc::channel();
        self.messages.send(Message::CountLooks(reply)).ok()?;
        answer.recv().ok()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.messages.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// The tests that count watches run one at a time (no other test of this binary watches).
    static COUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A watcher over the workspace at `root`, and the changes it sends.
    fn watch(root: &Path, options: WatcherOptions) -> (Watcher, mpsc::Receiver<Change>) {
        let (changes, received) = mpsc::channel();
        let sink: ChangeSink = Arc::new(move |change| {
            let _ = changes.send(change);
        });
        let workspace = Workspace::open(root).unwrap();
        (Watcher::start(vec![workspace], sink, options).unwrap(), received)
    }

    /// The inotify watches this process holds, as the kernel counts them.
    fn inotify_watches() -> usize {
        inotify_watches_held()
    }

    #[test]
    fn watches_follow_the_session_layout_never_links_nor_deep_folders() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join(".zibby/output/sessions/1777678254943_ymcw");
        std::fs::create_dir_all(session.join("nodes/step")).unwrap();
        let mut deep = session.join("plan");
        for level in 0..12 {
            deep = deep.join(format!("level-{level}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        for wide in 0..40 {
            std::fs::create_dir_all(session.join("plan/level-0").join(format!("wide-{wide}"))).unwrap();
        }
        symlink("/usr", session.join("usr")).unwrap();
        symlink("/usr", session.join("nodes/also-usr")).unwrap();

        let before = inotify_watches();
        let (watcher, received) = watch(root.path(), WatcherOptions::default());
        // The sessions folder, the session, plan/, nodes/ and nodes/step/: five; and `.zibby/` for
        // the agents file.
        assert_eq!(inotify_watches() - before, 6);

        // Still seen: a node's output three levels down.
        std::fs::write(session.join("nodes/step/raw_stream_output.txt"), "hello\n").unwrap();
        let seen = (0..50).find_map(|_| match received.recv_timeout(Duration::from_millis(200)) {
            Ok(Change::OutputAppended { lines, .. }) => Some(lines),
            _ => None,
        });
        assert_eq!(seen, Some(vec!["hello".to_owned()]));
        drop(watcher);
        // notify's own thread closes the inotify instance a moment after the watcher is dropped.
        let released = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            inotify_watches() == before
        });
        assert!(
            released,
            "every watch released with the watcher: {} left",
            inotify_watches() - before
        );
    }

    #[test]
    fn nothing_is_followed_or_watched_through_a_linked_session_or_nodes_folder() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("node")).unwrap();
        let sessions = root.path().join(".zibby/output/sessions");
        std::fs::create_dir_all(sessions.join("1777678254943_real")).unwrap();
        symlink(outside.path(), sessions.join("1777678254943_link")).unwrap();
        symlink(outside.path(), sessions.join("1777678254943_real/nodes")).unwrap();

        let before = inotify_watches();
        let (_watcher, received) = watch(root.path(), WatcherOptions::default());
        // The sessions folder and the real session: two (nothing of `outside`); and `.zibby/` for
        // the agents file.
        assert_eq!(inotify_watches() - before, 3);
        std::fs::write(outside.path().join("raw_stream_output.txt"), "secret\n").unwrap();
        std::fs::write(outside.path().join("node/raw_stream_output.txt"), "secret\n").unwrap();
        std::fs::write(sessions.join("1777678254943_real/raw_stream_output.txt"), "mine\n").unwrap();
        let mut seen = Vec::new();
        while let Ok(change) = received.recv_timeout(Duration::from_millis(1_500)) {
            if let Change::OutputAppended { lines, .. } = change {
                seen.extend(lines);
            }
        }
        assert_eq!(seen, ["mine"], "only the real session's own output is followed");
    }

    #[test]
    fn past_its_watch_budget_a_workspace_is_polled_said_and_its_watches_released() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join(".zibby/output/sessions/1777678254943_ymcw");
        for node in ["a", "b", "c", "nodes/step"] {
            std::fs::create_dir_all(session.join(node)).unwrap();
        }
        let options = WatcherOptions {
            max_watches: 3,
            poll_interval: Duration::from_millis(100),
            ..WatcherOptions::default()
        };
        let before = inotify_watches();
        let workspace = Workspace::open(root.path()).unwrap();
        let (_watcher, received) = watch(root.path(), options);
        let reason = (0..50).find_map(|_| match received.recv_timeout(Duration::from_millis(200)) {
            Ok(Change::WatchPolling {
                workspace: polled,
                reason,
            }) => {
                assert_eq!(polled, workspace.root());
                Some(reason)
            }
            _ => None,
        });
        let reason = reason.expect("the fallback is said");
        assert!(reason.contains("budget of 3 inotify watches"), "{reason}");
        assert_eq!(
            inotify_watches(),
            before,
            "the watches it had are released (still polling: nothing added)"
        );

        // Polled, changes still arrive.
        std::fs::write(session.join("nodes/step/raw_stream_output.txt"), "polled\n").unwrap();
        let seen = (0..50).find_map(|_| match received.recv_timeout(Duration::from_millis(200)) {
            Ok(Change::OutputAppended { lines, .. }) => Some(lines),
            _ => None,
        });
        assert_eq!(seen, Some(vec!["polled".to_owned()]));
    }

    /// An ended session of a month ago: `.session-info.json`, `result.json` and a node folder, every
    /// time a month old.
    fn ended_session(sessions: &Path, id: &str) -> std::path::PathBuf {
        let dir = sessions.join(id);
        std::fs::create_dir_all(dir.join("plan")).unwrap();
        std::fs::write(dir.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
        std::fs::write(dir.join("result.json"), r#"{"success":true}"#).unwrap();
        let month_ago = std::time::SystemTime::now() - Duration::from_secs(30 * 86_400);
        for path in [
            dir.join(".session-info.json"),
            dir.join("result.json"),
            dir.join("plan"),
            dir.clone(),
        ] {
            std::fs::File::open(&path).unwrap().set_modified(month_ago).unwrap();
        }
        dir
    }

    /// The inotify watches a watcher adds over `ended` sessions ended a month ago and one live.
    fn watches_held_over(ended: usize) -> usize {
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join(".zibby/output/sessions");
        for i in 0..ended {
            ended_session(&sessions, &format!("{}_old{i}", 1_777_000_000_000u64 + i as u64));
        }
        std::fs::create_dir_all(sessions.join("1777678254943_live/nodes/step")).unwrap();
        let before = inotify_watches();
        let (watcher, _received) = watch(root.path(), WatcherOptions::default());
        let held = inotify_watches() - before;
        drop(watcher);
        held
    }

    #[test]
    fn ended_sessions_hold_no_watches_only_the_sessions_folder_and_live_ones_do() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // The sessions folder, the live session's folder, nodes/ and nodes/step/, and `.zibby/`
        // for the agents file: five, however many sessions ended.
        assert_eq!(watches_held_over(3), 5);
        assert_eq!(watches_held_over(300), 5);
    }

    /// The changes received until `until` says stop, or `within` has passed.
    fn receive_until(
        received: &mpsc::Receiver<Change>,
        within: Duration,
        mut until: impl FnMut(&Change) -> bool,
    ) -> bool {
        let deadline = Instant::now() + within;
        while let Ok(change) = received.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if until(&change) {
                return true;
            }
        }
        false
    }

    /// Twenty more ended sessions in `sessions`, and options that sweep them all every `bound`
    /// whatever the looks cost, each one's whole fingerprint at one pass in `whole_every`.
    fn swept_among_others(sessions: &Path, bound: Duration, whole_every: u32) -> WatcherOptions {
        for i in 0..20 {
            ended_session(sessions, &format!("{}_other{i}", 1_777_000_002_000u64 + i));
        }
        WatcherOptions {
            sweep_bound: bound,
            sweep_rate: 10_000,
            sweep_budget: Duration::from_secs(1),
            sweep_whole_every: whole_every,
            ..WatcherOptions::default()
        }
    }

    #[test]
    fn a_change_to_an_ended_session_is_seen_by_the_sweep_and_it_is_watched_again() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join(".zibby/output/sessions");
        let rewritten = ended_session(&sessions, "1777000000000_rewritten");
        let grown = ended_session(&sessions, "1777000001000_grown");
        let bound = Duration::from_millis(500);
        let options = swept_among_others(&sessions, bound, 4);
        let before = inotify_watches();
        let (_watcher, received) = watch(root.path(), options);
        assert_eq!(inotify_watches() - before, 2, "the sessions folder and `.zibby/`");

        // A file of its fingerprint rewritten in place (no file created: the folder's time stays),
        // not `.session-info.json`: a glance does not see it, its whole fingerprint taken at one
        // pass in four does.
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(rewritten.join("result.json"))
            .and_then(|mut file| std::io::Write::write_all(&mut file, br#"{"success":false}"#))
            .unwrap();
        let seen = receive_until(&received, bound * (4 + 6), |change| {
            matches!(change, Change::SessionUpdated { summary, .. }
                if summary.id.as_str() == "1777000000000_rewritten" && summary.status == crate::status::Status::Error)
        });
        assert!(seen, "the rewritten result seen by the sweep");

        // A file added to a node folder: the session is read and watched again.
        std::fs::write(grown.join("plan/raw_stream_output.txt"), "first\n").unwrap();
        let watched_again = (0..80).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            // The sessions folder, `.zibby/`, and each changed session's folder and plan/.
            inotify_watches() - before == 6
        });
        assert!(watched_again, "{} watches", inotify_watches() - before);
        // Its output's new lines are sent as they come, not at the next sweep.
        let mut lines = Vec::new();
        std::fs::OpenOptions::new()
            .append(true)
            .open(grown.join("plan/raw_stream_output.txt"))
            .and_then(|mut file| std::io::Write::write_all(&mut file, b"second\n"))
            .unwrap();
        receive_until(&received, Duration::from_secs(5), |change| {
            if let Change::OutputAppended { lines: new, .. } = change {
                lines.extend(new.iter().cloned());
            }
            !lines.is_empty()
        });
        assert_eq!(lines, ["second"]);
    }

    #[test]
    fn an_engine_run_in_an_ended_session_is_seen_at_a_glance() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join(".zibby/output/sessions");
        let replayed = ended_session(&sessions, "1777000000000_replayed");
        let bound = Duration::from_millis(500);
        // Glances only: no whole fingerprint is taken after the start.
        let options = swept_among_others(&sessions, bound, u32::MAX);
        let (_watcher, received) = watch(root.path(), options);
        // The engine replaying a node: `.session-info.json` rewritten in place before it (the
        // folder's own time stays), then the node's output.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(replayed.join(".session-info.json"), r#"{"currentNode":"act"}"#).unwrap();
        let seen = receive_until(&received, bound * 6, |change| {
            matches!(change, Change::SessionUpdated { summary, .. }
                if summary.id.as_str() == "1777000000000_replayed" && summary.current_node.as_deref() == Some("act"))
        });
        assert!(seen, "the engine's rewrite of .session-info.json seen at a glance");
    }

    #[test]
    fn only_the_watched_sessions_summaries_are_held_a_swept_ones_are_not() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join(".zibby/output/sessions");
        for i in 0..300 {
            ended_session(&sessions, &format!("{}_old{i}", 1_777_000_000_000u64 + i));
        }
        // Ended just now: watched (and its summary held) until it is quiet for `recent`.
        let recent = sessions.join("1777678254943_recent");
        std::fs::create_dir_all(recent.join("plan")).unwrap();
        std::fs::write(recent.join("result.json"), r#"{"success":true}"#).unwrap();
        let options = WatcherOptions {
            recent: Duration::from_secs(1),
            sweep_bound: Duration::from_millis(500),
            sweep_rate: 10_000,
            sweep_budget: Duration::from_secs(1),
            // `result.json` rewritten in place below: the whole fingerprint at every pass.
            sweep_whole_every: 1,
            ..WatcherOptions::default()
        };
        let (watcher, received) = watch(root.path(), options);
        assert_eq!(
            watcher.sessions_held(),
            Some((301, 1)),
            "every session read, one summary held"
        );
        let held_becomes = |expected: (usize, usize)| {
            (0..100).any(|_| {
                std::thread::sleep(Duration::from_millis(50));
                watcher.sessions_held() == Some(expected)
            })
        };
        assert!(
            held_becomes((301, 0)),
            "released once quiet: {:?}",
            watcher.sessions_held()
        );

        // A swept session changed: read (its change reported), its summary held while it is watched.
        std::fs::write(sessions.join("1777000000007_old7/result.json"), r#"{"success":false}"#).unwrap();
        let seen = receive_until(&received, Duration::from_secs(5), |change| {
            matches!(change, Change::SessionUpdated { summary, .. }
                if summary.id.as_str() == "1777000000007_old7" && summary.status == crate::status::Status::Error)
        });
        assert!(seen, "the swept session's change reported");
        assert_eq!(watcher.sessions_held(), Some((301, 1)));
        assert!(held_becomes((301, 0)), "released again: {:?}", watcher.sessions_held());
    }

    #[test]
    fn a_new_session_is_seen_at_once_and_a_quiet_one_released_to_the_sweep() {
        let _one_at_a_time = COUNTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join(".zibby/output/sessions");
        ended_session(&sessions, "1777000000000_old");
        let options = WatcherOptions {
            recent: Duration::from_secs(1),
            sweep_bound: Duration::from_millis(500),
            ..WatcherOptions::default()
        };
        let before = inotify_watches();
        let (_watcher, received) = watch(root.path(), options);
        // Whether the new session is reported added (or removed) within a second.
        let seen_within_a_second = |added: bool| {
            receive_until(&received, Duration::from_secs(1), |change| match change {
                Change::SessionAdded { session_id, .. } if added => session_id.as_str() == "1777678254943_new",
                Change::SessionRemoved { session_id, .. } if !added => session_id.as_str() == "1777678254943_new",
                _ => false,
            })
        };
        std::fs::create_dir_all(sessions.join("1777678254943_new/plan")).unwrap();
        assert!(seen_within_a_second(true), "a new session seen within a second");
        // Watched while it is recent (its folder and plan/), released once quiet for `recent`.
        assert_eq!(inotify_watches() - before, 4);
        let released = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            inotify_watches() - before == 2
        });
        assert!(released, "{} watches", inotify_watches() - before);
        std::fs::remove_dir_all(sessions.join("1777678254943_new")).unwrap();
        assert!(seen_within_a_second(false), "a removed session seen within a second");
    }
}
