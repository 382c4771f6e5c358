//! The watching thread's state: the workspaces watched, the sessions known in each, what is due
//! to be read again, and the messages the thread receives.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use notify::RecommendedWatcher;

use super::options::{Seed, WatcherOptions};
use crate::sessions::agents::AGENTS_FILE;
use crate::sessions::change::ChangeSink;
use crate::sessions::session::{SessionSummary, Timestamp, Workspace};
use crate::sessions::tail::FileTail;
use crate::status::Status;
use crate::vocabulary::id::SessionId;
use crate::watch::recorded_runs::RecordedRuns;

pub(super) enum Message {
    Filesystem(notify::Result<notify::Event>),
    AgentsFile(notify::Result<notify::Event>),
    StoreFile(notify::Result<notify::Event>),
    /// How many sessions are known, and of how many a summary is held (`Watcher::sessions_held`).
    CountHeld(std::sync::mpsc::Sender<(usize, usize)>),
    /// The sweep's looks so far (`Watcher::sweep_looks`).
    CountLooks(std::sync::mpsc::Sender<SweepLooks>),
    Stop,
}

pub(super) struct WatchedWorkspace {
    pub(super) workspace: Workspace,
    pub(super) sessions_dir: PathBuf,
    /// What is watched now: the sessions folder (recursively) or its nearest existing ancestor,
    /// with its `(device, inode)`.
    pub(super) watched: Option<(PathBuf, Option<(u64, u64)>)>,
    /// The folders watched below the sessions folder, by session (see [`session_watch_dirs`]): only
    /// the sessions of [`WatchLoop::watched`].
    pub(super) session_watches: HashMap<SessionId, Vec<PathBuf>>,
    /// inotify could not cover this workspace: it is polled.
    pub(super) polling: bool,
    pub(super) reconcile_due: bool,
    /// Every session known, in the order of their ids (the order the sweep walks them in).
    pub(super) sessions: BTreeMap<SessionId, KnownSession>,
    /// The last session the sweep looked at: the next step goes on after it (none: from the first).
    pub(super) sweep_cursor: Option<SessionId>,
    /// How many times the sweep went through every session: which sessions' whole fingerprint
    /// this pass takes (`sweep::turn_of`).
    pub(super) sweep_passes: u64,
    pub(super) agents: AgentsWatch,
    /// What the caller knew of the sessions when watching started ([`Seed`]): taken by
    /// the initial scan.
    pub(super) seed: Seed,
}

impl WatchedWorkspace {
    pub(super) fn new(workspace: Workspace, seed: Seed) -> WatchedWorkspace {
        WatchedWorkspace {
            sessions_dir: workspace.sessions_dir(),
            agents: AgentsWatch::new(workspace.root()),
            workspace,
            watched: None,
            session_watches: HashMap::new(),
            polling: false,
            // The start reconciles it (`WatchLoop::run`): a second listing of 100,000 folders
            // right after would cost a fifth of a second for nothing.
            reconcile_due: false,
            sessions: BTreeMap::new(),
            sweep_cursor: None,
            sweep_passes: 0,
            seed,
        }
    }
}

/// The watch of one workspace's agents file.
pub(super) struct AgentsWatch {
    /// `<root>/.zibby`.
    pub(super) folder: PathBuf,
    /// `<root>/.zibby/studio.toml`.
    pub(super) file: PathBuf,
    /// What is watched: `.zibby` when it is a real folder, else the root, with its identity.
    pub(super) watched: Option<(PathBuf, Option<(u64, u64)>)>,
    /// The file as last reported ([`agents_file_state`]).
    pub(super) state: String,
    /// An event said it may have changed: looked at once the window since then has passed.
    pub(super) due_since: Option<Instant>,
    /// inotify could not watch it: it is looked at every poll interval.
    pub(super) polled: bool,
}

impl AgentsWatch {
    pub(super) fn new(root: &Path) -> AgentsWatch {
        let file = root.join(AGENTS_FILE);
        AgentsWatch {
            folder: file.parent().unwrap_or(root).to_owned(),
            state: agents_file_state(&file),
            file,
            watched: None,
            due_since: None,
            polled: false,
        }
    }
}

/// What tells one state of the agents file from another, by metadata alone (links are not
/// followed): `-` when it is missing, else its device, inode, size, modification and change times
/// and mode; the same for `.zibby` when it is not a real folder.
pub(super) fn agents_file_state(file: &Path) -> String {
    let stamp = |m: &std::fs::Metadata| {
        format!(
            "{}:{}:{}:{}.{}:{}.{}:{:o}",
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
            m.mode()
        )
    };
    let folder = file.parent().unwrap_or(file);
    match std::fs::symlink_metadata(folder) {
        Err(_) => "-".to_owned(),
        Ok(m) if !m.is_dir() => format!("folder {}", stamp(&m)),
        Ok(_) => std::fs::symlink_metadata(file).map_or_else(|_| "-".to_owned(), |m| stamp(&m)),
    }
}

pub(super) struct KnownSession {
    /// When its files last changed (its summary's `updated_at`), as last read or seeded.
    pub(super) updated_at: Timestamp,
    /// Whether it was last read (or seeded) as `running`.
    pub(super) running: bool,
    /// Its summary as last read: held only while it is watched ([`WatchLoop::watched`]), what its
    /// next read is compared with. A swept one's is the store's folder index's, looked up when
    /// it is read again (`reading`): 100,000 ended sessions are not 100,000 summaries in memory.
    pub(super) summary: Option<Box<SessionSummary>>,
    pub(super) fingerprint: Option<String>,
    /// Its followed files: only while it is watched ([`WatchLoop::watched`]); a swept session
    /// follows none.
    pub(super) tails: HashMap<PathBuf, FileTail>,
}

impl KnownSession {
    /// A session read as `summary`, its summary held.
    pub(super) fn read_as(summary: SessionSummary) -> KnownSession {
        KnownSession {
            updated_at: summary.updated_at,
            running: summary.status == Status::Running,
            summary: Some(Box::new(summary)),
            fingerprint: None,
            tails: HashMap::new(),
        }
    }

    /// Holds `summary` as its latest read.
    pub(super) fn hold(&mut self, summary: SessionSummary) {
        self.updated_at = summary.updated_at;
        self.running = summary.status == Status::Running;
        self.summary = Some(Box::new(summary));
    }

    /// How long it has been, at `now`, since its files last changed, when it is not `running`.
    pub(super) fn quiet_for(&self, now: Timestamp) -> Option<std::time::Duration> {
        (!self.running).then(|| std::time::Duration::from_millis(now.0.saturating_sub(self.updated_at.0)))
    }
}

/// A session to read again, and the files whose events said so.
pub(super) struct Pending {
    pub(super) since: Instant,
    pub(super) files: BTreeSet<PathBuf>,
}

pub(super) type SessionKey = (usize, SessionId);

/// How many looks the sweep took: at a glance, and whole fingerprints
/// ([`WatcherOptions::sweep_whole_every`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepLooks {
    pub glances: u64,
    pub whole: u64,
}

pub(super) struct WatchLoop {
    pub(super) sink: ChangeSink,
    pub(super) notify: Option<RecommendedWatcher>,
    /// The agents files' watches (an instance of their own: the sessions' watches come and go
    /// with their folders, and one folder can be both's).
    pub(super) agents_notify: Option<RecommendedWatcher>,
    pub(super) workspaces: Vec<WatchedWorkspace>,
    pub(super) pending: HashMap<SessionKey, Pending>,
    pub(super) last_read: HashMap<SessionKey, Instant>,
    pub(super) next_poll: Instant,
    pub(super) next_quiet_check: Instant,
    /// The sessions last read as `running`.
    pub(super) running: HashSet<SessionKey>,
    /// The sessions with watches of their own (running, or changed within
    /// [`WatcherOptions::recent`]), with when each was last seen to change; every other is swept.
    pub(super) watched: HashMap<SessionKey, Instant>,
    /// When the next step of the sweep (and the release of sessions gone quiet) is due.
    pub(super) next_sweep: Instant,
    /// The sweep's looks since the start.
    pub(super) sweep_looks: SweepLooks,
    /// How many watches below sessions folders are in place, for [`WatcherOptions::max_watches`].
    pub(super) session_watch_count: usize,
    /// The store's runs, when the watcher was given a store.
    pub(super) recorded_runs: Option<RecordedRuns>,
    /// Sessions whose run started or ended in the store: reported at their next read even if
    /// their folder did not change.
    pub(super) store_changed: HashSet<SessionKey>,
    pub(super) options: WatcherOptions,
}

pub(super) fn mark_pending(
    pending: &mut HashMap<SessionKey, Pending>,
    key: SessionKey,
    file: Option<PathBuf>,
    now: Instant,
) {
    let entry = pending.entry(key).or_insert_with(|| Pending {
        since: now,
        files: BTreeSet::new(),
    });
    entry.files.extend(file);
}
