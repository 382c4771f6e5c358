//! The watcher: the session folders of several workspaces, watched as they change, turned into
//! typed [`Change`]s sent to an injected sink.
//!
//! - Built on `notify` (inotify on Linux) with its own debouncing per session: the debouncer
//!   crates drop notify's "rescan" signal (an inotify queue overflow has no path), and a missed
//!   overflow would silently miss changes; here it triggers a full rescan.
//! - Each workspace's `<root>/.zibby/output/sessions/` is watched recursively. While it does not
//!   exist, its nearest existing ancestor is watched (not recursively) until it appears; when it is
//!   deleted or replaced, the watch moves back to the ancestor, and every session it held is
//!   reported removed.
//! - When a watch cannot be added (the inotify watch limit, `fs.inotify.max_user_watches`), the
//!   workspace falls back to a poll every [`WatcherOptions::poll_interval`], logged with
//!   `tracing::warn`. Idle, with inotify working, the watcher thread blocks and uses no CPU.
//! - Every session folder present at start is reported once as [`Change::SessionAdded`] (an initial
//!   scan): the caller needs no listing of its own.
//!
//! **Coalescing bound.** A session is read again at most once per [`WatcherOptions::window`]
//! (default 100 ms), and each read sends at most one `session_*` change plus one
//! [`Change::OutputAppended`] per output file that grew (with at most [`MAX_APPENDED_BYTES`] of
//! lines). With the default window, a run printing 10,000 lines/s yields at most 10 session changes
//! and 10 `output_appended` per output file per second.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use serde::Serialize;

use crate::error::Error;
use crate::id::SessionId;
use crate::index::fingerprint;
use crate::session::{
    read_session_folder, session_folders, Detail, SessionSummary, Timestamp, Workspace, EVENTS_FILE, RAW_STREAM_FILE,
    RUNNING_QUIET_WINDOW,
};
use crate::status::Status;
use crate::tail::FileTail;

/// The most bytes of one output file read into one [`Change::OutputAppended`]; the rest follows
/// in the next window.
pub const MAX_APPENDED_BYTES: usize = 1024 * 1024;

/// The files whose new lines are sent as [`Change::OutputAppended`].
pub const FOLLOWED_FILES: [&str; 2] = [RAW_STREAM_FILE, EVENTS_FILE];

/// One change of a workspace's sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Change {
    /// A session folder appeared (or was there when the watcher started).
    SessionAdded {
        workspace: PathBuf,
        session_id: SessionId,
        summary: SessionSummary,
    },
    /// A session's summary changed (status, current node, nodes, update time, problems).
    SessionUpdated {
        workspace: PathBuf,
        session_id: SessionId,
        summary: SessionSummary,
    },
    /// A session folder is gone (deleted, moved away, or its sessions folder was).
    SessionRemoved { workspace: PathBuf, session_id: SessionId },
    /// A node of a run the studio follows began (`running`) or ended (its status).
    NodeChanged {
        workspace: PathBuf,
        session_id: SessionId,
        run_id: String,
        node: String,
        depth: usize,
        status: crate::status::Status,
        /// Milliseconds since the run started.
        t_ms: u64,
    },
    /// A run the studio follows started, is stopping, or ended.
    RunStatusChanged {
        workspace: PathBuf,
        session_id: SessionId,
        run_id: String,
        status: crate::status::Status,
        /// A stop was asked for and the run has not ended yet.
        stopping: bool,
        exit_code: Option<i32>,
        elapsed_ms: Option<u64>,
        stopped_by: Option<crate::timeline::StoppedBy>,
        error: Option<String>,
    },
    /// New lines a run the studio follows printed, gathered over a window.
    RunOutputAppended {
        workspace: PathBuf,
        session_id: SessionId,
        run_id: String,
        lines: Vec<crate::live::RunLine>,
        /// Lines left out of this change to keep it small (they are in the store).
        skipped: u64,
    },
    /// New complete lines of a growing output file of the session.
    OutputAppended {
        workspace: PathBuf,
        session_id: SessionId,
        /// The file, absolute.
        file: PathBuf,
        /// The byte offset of the first line in the file; 0 again when the file was truncated or
        /// replaced and is read from its start.
        offset: u64,
        /// The lines, without their newlines (bytes that are not UTF-8 replaced).
        lines: Vec<String>,
    },
}

impl Change {
    pub fn workspace(&self) -> &Path {
        match self {
            Change::SessionAdded { workspace, .. }
            | Change::SessionUpdated { workspace, .. }
            | Change::SessionRemoved { workspace, .. }
            | Change::NodeChanged { workspace, .. }
            | Change::RunStatusChanged { workspace, .. }
            | Change::RunOutputAppended { workspace, .. }
            | Change::OutputAppended { workspace, .. } => workspace,
        }
    }

    pub fn session_id(&self) -> &SessionId {
        match self {
            Change::SessionAdded { session_id, .. }
            | Change::SessionUpdated { session_id, .. }
            | Change::SessionRemoved { session_id, .. }
            | Change::NodeChanged { session_id, .. }
            | Change::RunStatusChanged { session_id, .. }
            | Change::RunOutputAppended { session_id, .. }
            | Change::OutputAppended { session_id, .. } => session_id,
        }
    }
}

/// Where changes go (the desktop shell forwards them to the window; the CLI prints them). Called
/// on the watcher's thread: keep it short.
pub type ChangeSink = Arc<dyn Fn(Change) + Send + Sync>;

/// The clock the watcher reads sessions with (a session's status depends on how long it was quiet).
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

#[derive(Clone)]
pub struct WatcherOptions {
    /// A session is read again at most once per window.
    pub window: Duration,
    /// How often folders that inotify cannot watch are polled.
    pub poll_interval: Duration,
    /// Poll every workspace instead of using inotify (network filesystems; tests of the fallback).
    pub poll_only: bool,
    /// While a session is `running`, how often the watcher checks whether it went quiet for
    /// [`RUNNING_QUIET_WINDOW`] (its status then changes with no file changing).
    pub quiet_check_interval: Duration,
    pub clock: Clock,
}

impl Default for WatcherOptions {
    fn default() -> WatcherOptions {
        WatcherOptions {
            window: Duration::from_millis(100),
            poll_interval: Duration::from_secs(1),
            poll_only: false,
            quiet_check_interval: Duration::from_secs(5),
            clock: Arc::new(SystemTime::now),
        }
    }
}

impl std::fmt::Debug for WatcherOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatcherOptions")
            .field("window", &self.window)
            .field("poll_interval", &self.poll_interval)
            .field("poll_only", &self.poll_only)
            .field("quiet_check_interval", &self.quiet_check_interval)
            .finish_non_exhaustive()
    }
}

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
        let (messages, receiver) = mpsc::channel();
        let notify = if options.poll_only {
            None
        } else {
            let events = messages.clone();
            let handler = move |event| {
                let _ = events.send(Message::Filesystem(event));
            };
            match notify::recommended_watcher(handler) {
                Ok(watcher) => Some(watcher),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot use filesystem events; polling every workspace instead");
                    None
                }
            }
        };
        let mut watch = WatchLoop {
            sink,
            notify,
            workspaces: workspaces.into_iter().map(WatchedWorkspace::new).collect(),
            pending: HashMap::new(),
            last_read: HashMap::new(),
            next_poll: Instant::now() + options.poll_interval,
            next_quiet_check: Instant::now() + options.quiet_check_interval,
            running: HashSet::new(),
            options,
        };
        let (watching, started) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("session-watcher".into())
            .spawn(move || watch.run(receiver, watching))
            .map_err(|e| Error::io("session-watcher thread", e))?;
        // Once the watches are in place and the initial scan is done, every later change is seen.
        let _ = started.recv();
        Ok(Watcher {
            messages,
            thread: Some(thread),
        })
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

enum Message {
    Filesystem(notify::Result<notify::Event>),
    Stop,
}

struct WatchedWorkspace {
    workspace: Workspace,
    sessions_dir: PathBuf,
    /// What is watched now: the sessions folder (recursively) or its nearest existing ancestor,
    /// with its `(device, inode)`.
    watched: Option<(PathBuf, Option<(u64, u64)>)>,
    /// inotify could not cover this workspace: it is polled.
    polling: bool,
    reconcile_due: bool,
    sessions: HashMap<SessionId, KnownSession>,
}

impl WatchedWorkspace {
    fn new(workspace: Workspace) -> WatchedWorkspace {
        WatchedWorkspace {
            sessions_dir: workspace.sessions_dir(),
            workspace,
            watched: None,
            polling: false,
            reconcile_due: true,
            sessions: HashMap::new(),
        }
    }
}

struct KnownSession {
    summary: SessionSummary,
    fingerprint: Option<String>,
    tails: HashMap<PathBuf, FileTail>,
}

/// A session to read again, and the files whose events said so.
struct Pending {
    since: Instant,
    files: BTreeSet<PathBuf>,
}

type SessionKey = (usize, SessionId);

struct WatchLoop {
    sink: ChangeSink,
    notify: Option<RecommendedWatcher>,
    workspaces: Vec<WatchedWorkspace>,
    pending: HashMap<SessionKey, Pending>,
    last_read: HashMap<SessionKey, Instant>,
    next_poll: Instant,
    next_quiet_check: Instant,
    /// The sessions last read as `running`.
    running: HashSet<SessionKey>,
    options: WatcherOptions,
}

impl WatchLoop {
    fn run(&mut self, receiver: Receiver<Message>, watching: mpsc::SyncSender<()>) {
        // The initial scan reads every session before anything is watched: reading opens files,
        // and inotify reports every open; thousands of sessions would overflow its queue. What
        // changed between a read and the watch is found after by metadata alone.
        for index in 0..self.workspaces.len() {
            self.rescan(index, true);
        }
        for index in 0..self.workspaces.len() {
            self.point_watch(index);
            self.rescan(index, false);
            self.mark_stale_sessions(index);
        }
        let _ = watching.send(());
        loop {
            let message = match self.next_deadline() {
                None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(deadline) => receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            };
            match message {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(Message::Filesystem(event)) => self.on_event(event),
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Take what else is waiting before reading anything.
            for _ in 0..100_000 {
                match receiver.try_recv() {
                    Ok(Message::Filesystem(event)) => self.on_event(event),
                    Ok(Message::Stop) | Err(mpsc::TryRecvError::Disconnected) => return,
                    Err(mpsc::TryRecvError::Empty) => break,
                }
            }
            for index in 0..self.workspaces.len() {
                if std::mem::take(&mut self.workspaces[index].reconcile_due) {
                    self.reconcile(index, false);
                }
            }
            if self.any_polling() && Instant::now() >= self.next_poll {
                self.poll();
                self.next_poll = Instant::now() + self.options.poll_interval;
            }
            if self.any_running() && Instant::now() >= self.next_quiet_check {
                self.check_quiet_sessions();
                self.next_quiet_check = Instant::now() + self.options.quiet_check_interval;
            }
            self.read_due_sessions();
        }
    }

    fn any_polling(&self) -> bool {
        self.notify.is_none() || self.workspaces.iter().any(|w| w.polling)
    }

    /// When the loop must wake without an event: a pending session's turn, or the next poll.
    fn next_deadline(&self) -> Option<Instant> {
        let settle = self.options.window / 4;
        let pending = self.pending.iter().map(|(key, pending)| {
            let after_last = self.last_read.get(key).map(|t| *t + self.options.window);
            (pending.since + settle).max(after_last.unwrap_or(pending.since))
        });
        let poll = self.any_polling().then_some(self.next_poll);
        let quiet = self.any_running().then_some(self.next_quiet_check);
        pending.chain(poll).chain(quiet).min()
    }

    fn any_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// A `running` session quiet for [`RUNNING_QUIET_WINDOW`] is no longer taken as running: it is
    /// read again so that its new status is reported, though no file changed.
    fn check_quiet_sessions(&mut self) {
        let clock_now = Timestamp::from_system_time((self.options.clock)());
        let quiet = RUNNING_QUIET_WINDOW.as_millis() as u64;
        let now = Instant::now();
        let went_quiet: Vec<SessionKey> = self
            .running
            .iter()
            .filter(|(index, id)| {
                self.workspaces[*index]
                    .sessions
                    .get(id)
                    .is_some_and(|known| known.summary.updated_at.0 + quiet <= clock_now.0)
            })
            .cloned()
            .collect();
        for key in went_quiet {
            mark_pending(&mut self.pending, key, None, now);
        }
    }

    fn on_event(&mut self, event: notify::Result<notify::Event>) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                // Typically the watch limit reached while adding watches for new folders: which
                // folder is not said, so every workspace is polled from now on.
                tracing::warn!(error = %e, "filesystem watch error; polling the session folders from now on");
                for workspace in &mut self.workspaces {
                    workspace.polling = true;
                    workspace.reconcile_due = true;
                }
                return;
            }
        };
        if event.need_rescan() {
            tracing::warn!("filesystem events were lost (queue overflow); reading every session again");
            self.rescan_everything();
            return;
        }
        // Our own reads open files: not a change (a close after writing is).
        if matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write)) {
            return;
        }
        let now = Instant::now();
        for path in &event.paths {
            for index in 0..self.workspaces.len() {
                let workspace = &mut self.workspaces[index];
                if let Ok(relative) = path.strip_prefix(&workspace.sessions_dir) {
                    let mut parts = relative.components();
                    let Some(first) = parts.next() else {
                        workspace.reconcile_due = true;
                        continue;
                    };
                    let Some(id) = first.as_os_str().to_str().and_then(|n| SessionId::parse(n).ok()) else {
                        continue;
                    };
                    let file = parts.next().is_some().then(|| path.clone());
                    mark_pending(&mut self.pending, (index, id), file, now);
                } else if workspace.sessions_dir.starts_with(path) {
                    workspace.reconcile_due = true;
                }
            }
        }
    }

    /// After lost events: every session whose files say it may have changed is read again.
    fn rescan_everything(&mut self) {
        for index in 0..self.workspaces.len() {
            self.workspaces[index].reconcile_due = true;
            self.mark_stale_sessions(index);
        }
    }

    /// Marks for reading the known sessions that may have changed unseen, found by metadata alone
    /// (reading every session would open files, and each open is an inotify event): a changed
    /// fingerprint (as the folder index uses), a followed file that changed, or a running session
    /// (its node folders are not in the fingerprint), whose output files are looked for anew.
    fn mark_stale_sessions(&mut self, index: usize) {
        let now = Instant::now();
        let workspace = &self.workspaces[index];
        let mut stale = Vec::new();
        for (id, known) in &workspace.sessions {
            let dir = workspace.sessions_dir.join(id.as_str());
            let mut files: Vec<PathBuf> = known
                .tails
                .values()
                .filter(|t| t.has_changed())
                .map(|t| t.path().to_owned())
                .collect();
            let running = known.summary.status == Status::Running;
            if running {
                files.extend(output_files(&dir));
            }
            if running || !files.is_empty() || fingerprint(&dir, known.fingerprint.as_deref()) != known.fingerprint {
                stale.push((id.clone(), files));
            }
        }
        for (id, files) in stale {
            for file in files {
                mark_pending(&mut self.pending, (index, id.clone()), Some(file), now);
            }
            mark_pending(&mut self.pending, (index, id), None, now);
        }
    }

    /// Points the workspace's watch at its sessions folder (or the nearest existing ancestor),
    /// then compares the folder's sessions with the known ones.
    fn reconcile(&mut self, index: usize, initial: bool) {
        self.point_watch(index);
        self.rescan(index, initial);
    }

    /// Watches the sessions folder recursively, or its nearest existing ancestor while it is missing.
    fn point_watch(&mut self, index: usize) {
        for _ in 0..10 {
            let workspace = &mut self.workspaces[index];
            let (target, mode) = match nearest_existing(&workspace.sessions_dir) {
                Some(path) if path == workspace.sessions_dir => (path, RecursiveMode::Recursive),
                Some(path) => (path, RecursiveMode::NonRecursive),
                None => break,
            };
            let identity = std::fs::metadata(&target).ok().map(|m| (m.dev(), m.ino()));
            if workspace.watched.as_ref() == Some(&(target.clone(), identity)) {
                break;
            }
            if let (Some((old, _)), Some(notify)) = (workspace.watched.take(), self.notify.as_mut()) {
                let _ = notify.unwatch(&old);
            }
            if let (false, Some(notify)) = (workspace.polling, self.notify.as_mut()) {
                if let Err(e) = notify.watch(&target, mode) {
                    tracing::warn!(
                        path = %target.display(),
                        error = %e,
                        "cannot watch the sessions folder; polling it every {:?} instead",
                        self.options.poll_interval
                    );
                    workspace.polling = true;
                }
            }
            workspace.watched = Some((target, identity));
        }
    }

    /// Sessions that appeared or disappeared since the last look.
    fn rescan(&mut self, index: usize, initial: bool) {
        let workspace = &self.workspaces[index];
        let folders = match session_folders(&workspace.workspace) {
            Ok(folders) => folders,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the sessions folder");
                return;
            }
        };
        let present: HashSet<SessionId> = folders.into_iter().map(|(_, id)| id).collect();
        let now = Instant::now();
        let gone: Vec<SessionId> = workspace
            .sessions
            .keys()
            .filter(|id| !present.contains(*id))
            .cloned()
            .collect();
        let mut new: Vec<SessionId> = present
            .into_iter()
            .filter(|id| !workspace.sessions.contains_key(id))
            .collect();
        new.sort();
        for id in gone {
            mark_pending(&mut self.pending, (index, id), None, now);
        }
        for id in new {
            if initial {
                self.read_session(index, &id, BTreeSet::new(), true);
            } else {
                mark_pending(&mut self.pending, (index, id), None, now);
            }
        }
    }

    /// The fallback: looks at every polled workspace's sessions for what inotify would have said.
    fn poll(&mut self) {
        let all = self.notify.is_none();
        for index in 0..self.workspaces.len() {
            if !(all || self.workspaces[index].polling) {
                continue;
            }
            self.reconcile(index, false);
            self.mark_stale_sessions(index);
        }
    }

    fn read_due_sessions(&mut self) {
        let now = Instant::now();
        let settle = self.options.window / 4;
        let window = self.options.window;
        let due: Vec<SessionKey> = self
            .pending
            .iter()
            .filter(|(key, pending)| {
                now >= pending.since + settle && self.last_read.get(*key).is_none_or(|last| now >= *last + window)
            })
            .map(|(key, _)| key.clone())
            .collect();
        self.last_read.retain(|_, last| now < *last + window);
        for key in due {
            let Some(pending) = self.pending.remove(&key) else {
                continue;
            };
            self.last_read.insert(key.clone(), now);
            self.read_session(key.0, &key.1, pending.files, false);
        }
    }

    /// Reads one session again and sends what changed.
    fn read_session(&mut self, index: usize, id: &SessionId, files: BTreeSet<PathBuf>, initial: bool) {
        let clock_now = (self.options.clock)();
        let workspace = &mut self.workspaces[index];
        let root = workspace.workspace.root().to_owned();
        let dir = workspace.sessions_dir.join(id.as_str());
        let is_folder = std::fs::metadata(&dir).is_ok_and(|m| m.is_dir());
        // Taken before the read: a change during the read shows in the next comparison.
        let print = fingerprint(&dir, workspace.sessions.get(id).and_then(|k| k.fingerprint.as_deref()));
        let session = if is_folder {
            match read_session_folder(&dir, id.clone(), Detail::Summary, clock_now) {
                Ok(session) => Some(session),
                Err(Error::SessionNotFound { .. }) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read a session folder");
                    return;
                }
            }
        } else {
            None
        };
        let Some(session) = session else {
            self.running.remove(&(index, id.clone()));
            if workspace.sessions.remove(id).is_some() {
                (self.sink)(Change::SessionRemoved {
                    workspace: root,
                    session_id: id.clone(),
                });
            }
            return;
        };
        let summary = session.summary();
        if summary.status == Status::Running {
            self.running.insert((index, id.clone()));
        } else {
            self.running.remove(&(index, id.clone()));
        }
        let known = match workspace.sessions.entry(id.clone()) {
            std::collections::hash_map::Entry::Vacant(entry) => {
                // Lines already in the files of a session found by the initial scan are not news;
                // every other file is followed from its start. (Before the change is sent: what
                // is appended after the caller sees it must not be skipped.)
                let mut tails = HashMap::new();
                if initial {
                    for file in output_files(&dir) {
                        match FileTail::from_end(&file) {
                            Ok(tail) => {
                                tails.insert(file, tail);
                            }
                            Err(e) => tracing::warn!(error = %e, "cannot follow an output file"),
                        }
                    }
                }
                (self.sink)(Change::SessionAdded {
                    workspace: root.clone(),
                    session_id: id.clone(),
                    summary: summary.clone(),
                });
                entry.insert(KnownSession {
                    summary,
                    fingerprint: None,
                    tails,
                })
            }
            std::collections::hash_map::Entry::Occupied(entry) => {
                let known = entry.into_mut();
                if known.summary != summary {
                    (self.sink)(Change::SessionUpdated {
                        workspace: root.clone(),
                        session_id: id.clone(),
                        summary: summary.clone(),
                    });
                    known.summary = summary;
                }
                known
            }
        };
        known.fingerprint = print;
        // A node folder made and written at once can beat the watch added for it: output files
        // the session has and nobody follows yet are followed now, from their start.
        let mut files = files;
        if !initial {
            files.extend(output_files(&dir).into_iter().filter(|f| !known.tails.contains_key(f)));
        }
        let mut more = Vec::new();
        for file in files {
            let followed = file
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| FOLLOWED_FILES.contains(&n));
            if !followed {
                continue;
            }
            let tail = known
                .tails
                .entry(file.clone())
                .or_insert_with(|| FileTail::from_start(&file));
            match tail.read_new_lines(MAX_APPENDED_BYTES) {
                Ok(new) => {
                    if new.more {
                        more.push(file.clone());
                    }
                    if !new.lines.is_empty() {
                        (self.sink)(Change::OutputAppended {
                            workspace: root.clone(),
                            session_id: id.clone(),
                            file,
                            offset: new.offset,
                            lines: new.lines,
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read an output file"),
            }
        }
        let now = Instant::now();
        for file in more {
            mark_pending(&mut self.pending, (index, id.clone()), Some(file), now);
        }
    }
}

fn mark_pending(pending: &mut HashMap<SessionKey, Pending>, key: SessionKey, file: Option<PathBuf>, now: Instant) {
    let entry = pending.entry(key).or_insert_with(|| Pending {
        since: now,
        files: BTreeSet::new(),
    });
    entry.files.extend(file);
}

/// The folder itself when it exists, else its nearest existing ancestor.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    path.ancestors().find(|p| p.is_dir()).map(Path::to_owned)
}

/// The followed output files of a session folder: its own, and those of its node folders (at
/// `<session>/<node>/` and `<session>/nodes/<node>/`).
pub fn output_files(session_dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut look_in = |dir: &Path| {
        for name in FOLLOWED_FILES {
            let path = dir.join(name);
            if path.is_file() {
                files.push(path);
            }
        }
    };
    look_in(session_dir);
    let mut node_dirs = Vec::new();
    for parent in [session_dir.to_owned(), session_dir.join("nodes")] {
        if let Ok(entries) = std::fs::read_dir(&parent) {
            node_dirs.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    node_dirs.sort();
    for dir in node_dirs {
        look_in(&dir);
    }
    files
}
