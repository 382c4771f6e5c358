//! The watcher: the session folders of several workspaces, watched as they change, turned into
//! typed [`Change`]s sent to an injected sink.
//!
//! - Built on `notify` (inotify on Linux) with its own debouncing per session: the debouncer
//!   crates drop notify's "rescan" signal (an inotify queue overflow has no path), and a missed
//!   overflow would silently miss changes; here it triggers a full rescan.
//! - Each workspace's `<root>/.zibby/output/sessions/` is watched, and below it only what the
//!   session layout has: each session folder, its node folders and `nodes/<node>/` (at most three
//!   levels; a session's deeper folders are not watched), never through a symbolic link (a link in
//!   a session folder to `/usr` costs nothing). While the sessions folder does not exist, or a
//!   link stands in its way, the deepest real folder on the way is watched until it appears; when
//!   it is deleted or replaced, the watch moves back there, and every session it held is reported
//!   removed.
//! - When a watch cannot be added (the inotify watch limit, `fs.inotify.max_user_watches`), the
//!   workspace falls back to a poll every [`WatcherOptions::poll_interval`], logged with
//!   `tracing::warn`, and every watch it had is released. Idle, with inotify working, the watcher
//!   thread blocks and uses no CPU.
//! - Every session folder present at start is reported once as [`Change::SessionAdded`] (an initial
//!   scan): the caller needs no listing of its own.
//! - Each workspace's agents file, `.zibby/studio.toml` ([`AGENTS_FILE`]), is watched too, with an
//!   inotify instance of its own: `.zibby/` (never through a link), or the workspace's root while
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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use super::recorded_runs::RecordedRuns;
use crate::sessions::agents::AGENTS_FILE;
pub use crate::sessions::change::{Change, ChangeSink};
use crate::sessions::session::{
    fingerprint, read_summary, session_folders, SessionSummary, Timestamp, Workspace, EVENTS_FILE, RAW_STREAM_FILE,
    RUNNING_QUIET_WINDOW, SESSIONS_DIR,
};
use crate::sessions::tail::FileTail;
use crate::status::Status;
use crate::store::Store;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// The most bytes of one output file read into one [`Change::OutputAppended`]; the rest follows
/// in the next window.
pub const MAX_APPENDED_BYTES: usize = 1024 * 1024;

/// The files whose new lines are sent as [`Change::OutputAppended`].
pub const FOLLOWED_FILES: [&str; 2] = [RAW_STREAM_FILE, EVENTS_FILE];

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
    /// The most inotify watches this watcher adds (they are the user's, shared with every other
    /// program): past it, a workspace is polled ([`Change::WatchPolling`]). Default: half of
    /// `fs.inotify.max_user_watches`.
    pub max_watches: usize,
    pub clock: Clock,
    /// The store whose runs' starts and ends are reported as changes of their sessions (a
    /// [`Change::SessionUpdated`], though the folder did not change): a run's end recorded by
    /// any process reaches the watcher within a window (`watch::recorded_runs`).
    pub store: Option<Arc<Store>>,
}

/// Half of the system's inotify watch limit (8,192 when it cannot be read).
fn default_max_watches() -> usize {
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(8_192);
    limit / 2
}

impl Default for WatcherOptions {
    fn default() -> WatcherOptions {
        WatcherOptions {
            window: Duration::from_millis(100),
            poll_interval: Duration::from_secs(1),
            poll_only: false,
            quiet_check_interval: Duration::from_secs(2),
            max_watches: default_max_watches(),
            clock: Arc::new(SystemTime::now),
            store: None,
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
            .field("max_watches", &self.max_watches)
            .field("store", &self.store.as_ref().map(|s| s.location().describe()))
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
            workspaces: workspaces.into_iter().map(WatchedWorkspace::new).collect(),
            pending: HashMap::new(),
            last_read: HashMap::new(),
            next_poll: Instant::now() + options.poll_interval,
            next_quiet_check: Instant::now() + options.quiet_check_interval,
            running: HashSet::new(),
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
    AgentsFile(notify::Result<notify::Event>),
    StoreFile(notify::Result<notify::Event>),
    Stop,
}

struct WatchedWorkspace {
    workspace: Workspace,
    sessions_dir: PathBuf,
    /// What is watched now: the sessions folder (recursively) or its nearest existing ancestor,
    /// with its `(device, inode)`.
    watched: Option<(PathBuf, Option<(u64, u64)>)>,
    /// The folders watched below the sessions folder, by session (see [`session_watch_dirs`]).
    session_watches: HashMap<SessionId, Vec<PathBuf>>,
    /// inotify could not cover this workspace: it is polled.
    polling: bool,
    reconcile_due: bool,
    sessions: HashMap<SessionId, KnownSession>,
    agents: AgentsWatch,
}

impl WatchedWorkspace {
    fn new(workspace: Workspace) -> WatchedWorkspace {
        WatchedWorkspace {
            sessions_dir: workspace.sessions_dir(),
            agents: AgentsWatch::new(workspace.root()),
            workspace,
            watched: None,
            session_watches: HashMap::new(),
            polling: false,
            reconcile_due: true,
            sessions: HashMap::new(),
        }
    }
}

/// The watch of one workspace's agents file.
struct AgentsWatch {
    /// `<root>/.zibby`.
    folder: PathBuf,
    /// `<root>/.zibby/studio.toml`.
    file: PathBuf,
    /// What is watched: `.zibby` when it is a real folder, else the root, with its identity.
    watched: Option<(PathBuf, Option<(u64, u64)>)>,
    /// The file as last reported ([`agents_file_state`]).
    state: String,
    /// An event said it may have changed: looked at once the window since then has passed.
    due_since: Option<Instant>,
    /// inotify could not watch it: it is looked at every poll interval.
    polled: bool,
}

impl AgentsWatch {
    fn new(root: &Path) -> AgentsWatch {
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
fn agents_file_state(file: &Path) -> String {
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
    /// The agents files' watches (an instance of their own: the sessions' watches come and go
    /// with their folders, and one folder can be both's).
    agents_notify: Option<RecommendedWatcher>,
    workspaces: Vec<WatchedWorkspace>,
    pending: HashMap<SessionKey, Pending>,
    last_read: HashMap<SessionKey, Instant>,
    next_poll: Instant,
    next_quiet_check: Instant,
    /// The sessions last read as `running`.
    running: HashSet<SessionKey>,
    /// How many watches below sessions folders are in place, for [`WatcherOptions::max_watches`].
    session_watch_count: usize,
    /// The store's runs, when the watcher was given a store.
    recorded_runs: Option<RecordedRuns>,
    /// Sessions whose run started or ended in the store: reported at their next read even if
    /// their folder did not change.
    store_changed: HashSet<SessionKey>,
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
            let known: Vec<SessionId> = self.workspaces[index].sessions.keys().cloned().collect();
            for id in known {
                self.watch_session(index, &id);
            }
            self.rescan(index, false);
            self.mark_stale_sessions(index);
            self.point_agents_watch(index);
            // What changed before the watch was in place is reported (what is there is not news).
            let workspace = &mut self.workspaces[index];
            if agents_file_state(&workspace.agents.file) != workspace.agents.state {
                workspace.agents.due_since = Some(Instant::now());
            }
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
                Ok(Message::AgentsFile(event)) => self.on_agents_event(event),
                Ok(Message::StoreFile(event)) => self.on_store_event(event),
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Take what else is waiting before reading anything.
            for _ in 0..100_000 {
                match receiver.try_recv() {
                    Ok(Message::Filesystem(event)) => self.on_event(event),
                    Ok(Message::AgentsFile(event)) => self.on_agents_event(event),
                    Ok(Message::StoreFile(event)) => self.on_store_event(event),
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
            self.check_due_agents_files();
            self.check_recorded_runs();
            if self.any_running() && Instant::now() >= self.next_quiet_check {
                self.check_quiet_sessions();
                self.next_quiet_check = Instant::now() + self.options.quiet_check_interval;
            }
            self.read_due_sessions();
        }
    }

    fn any_polling(&self) -> bool {
        self.notify.is_none()
            || self.agents_notify.is_none()
            || self.workspaces.iter().any(|w| w.polling || w.agents.polled)
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
        let agents = self
            .workspaces
            .iter()
            .filter_map(|w| w.agents.due_since.map(|since| since + self.options.window));
        let runs = self.recorded_runs_due_at();
        pending.chain(poll).chain(quiet).chain(agents).chain(runs).min()
    }

    /// When the store's runs are to be looked at: a window after the last look, once a store file
    /// changed (or every poll interval when its folder cannot be watched).
    fn recorded_runs_due_at(&self) -> Option<Instant> {
        let runs = self.recorded_runs.as_ref()?;
        let after_last = runs.last_look.map(|t| t + self.options.window);
        if runs.polled() {
            return Some(
                runs.last_look
                    .map_or_else(Instant::now, |t| t + self.options.poll_interval),
            );
        }
        let since = runs.due_since?;
        Some((since + self.options.window / 4).max(after_last.unwrap_or(since)))
    }

    fn on_store_event(&mut self, event: notify::Result<notify::Event>) {
        if let Some(runs) = self.recorded_runs.as_mut() {
            runs.on_event(event, Instant::now());
        }
    }

    /// Looks at the store's runs when due: each session whose run started or ended there is read
    /// again and reported, whether or not its folder changed.
    fn check_recorded_runs(&mut self) {
        if self.recorded_runs_due_at().is_none_or(|at| Instant::now() < at) {
            return;
        }
        let Some(runs) = self.recorded_runs.as_mut() else {
            return;
        };
        let now = Instant::now();
        for (root, id) in runs.look() {
            let Some(index) = self.workspaces.iter().position(|w| w.workspace.root() == root) else {
                continue;
            };
            if self.workspaces[index].sessions.contains_key(&id) {
                self.store_changed.insert((index, id.clone()));
                mark_pending(&mut self.pending, (index, id), None, now);
            }
        }
    }

    fn any_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// A `running` session quiet for [`RUNNING_QUIET_WINDOW`] is no longer taken as running, nor
    /// one whose engine's process is gone (`session::read_summary`): each is read again so that
    /// its new status is reported, though no file changed.
    fn check_quiet_sessions(&mut self) {
        let clock_now = Timestamp::from_system_time((self.options.clock)());
        let quiet = RUNNING_QUIET_WINDOW.as_millis() as u64;
        let now = Instant::now();
        let went_quiet: Vec<SessionKey> = self
            .running
            .iter()
            .filter(|(index, id)| {
                // An engine's id says when its process started: whether it is still there is
                // read with the session.
                id.unix_ms().is_some()
                    || self.workspaces[*index]
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
                for index in 0..self.workspaces.len() {
                    self.fall_back_to_polling(index, format!("a filesystem watch failed: {e}"));
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

    /// An event of the agents files' watches: one naming a workspace's `.zibby` or its
    /// `studio.toml` makes that file due for a look (the studio's own reads are no change).
    fn on_agents_event(&mut self, event: notify::Result<notify::Event>) {
        let now = Instant::now();
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(error = %e, "an agents file watch failed; polling the agents files");
                for workspace in &mut self.workspaces {
                    workspace.agents.polled = true;
                    workspace.agents.due_since.get_or_insert(now);
                }
                return;
            }
        };
        let lost = event.need_rescan();
        if !lost && matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write)) {
            return;
        }
        for workspace in &mut self.workspaces {
            let agents = &mut workspace.agents;
            let concerned = lost
                || event
                    .paths
                    .iter()
                    .any(|path| *path == agents.file || *path == agents.folder);
            if concerned {
                agents.due_since.get_or_insert(now);
            }
        }
    }

    /// Watches a workspace's `.zibby` folder when it is a real folder, else its root (until
    /// `.zibby` appears): never through a link; not while the workspace is polled.
    fn point_agents_watch(&mut self, index: usize) {
        let workspace = &mut self.workspaces[index];
        if workspace.polling {
            return; // polled with its sessions
        }
        let (root, agents) = (workspace.workspace.root(), &mut workspace.agents);
        let real_folder = std::fs::symlink_metadata(&agents.folder).is_ok_and(|m| m.is_dir());
        let target = if real_folder {
            agents.folder.clone()
        } else {
            root.to_owned()
        };
        let identity = std::fs::symlink_metadata(&target).ok().map(|m| (m.dev(), m.ino()));
        if agents.watched.as_ref() == Some(&(target.clone(), identity)) {
            return;
        }
        let Some(notify) = self.agents_notify.as_mut() else {
            return;
        };
        if let Some((old, _)) = agents.watched.take() {
            let _ = notify.unwatch(&old);
        }
        match notify.watch(&target, RecursiveMode::NonRecursive) {
            Ok(()) => {
                agents.watched = Some((target, identity));
                agents.polled = false;
            }
            Err(e) => {
                if !agents.polled {
                    tracing::warn!(error = %e, path = %target.display(), "cannot watch the agents file; polling it");
                }
                agents.polled = true;
            }
        }
    }

    /// Looks at the agents files whose window has passed, and reports those that changed.
    fn check_due_agents_files(&mut self) {
        let now = Instant::now();
        for index in 0..self.workspaces.len() {
            let due = self.workspaces[index]
                .agents
                .due_since
                .is_some_and(|since| now >= since + self.options.window);
            if !due {
                continue;
            }
            self.point_agents_watch(index);
            let workspace = &mut self.workspaces[index];
            workspace.agents.due_since = None;
            let state = agents_file_state(&workspace.agents.file);
            if state != workspace.agents.state {
                workspace.agents.state = state;
                (self.sink)(Change::AgentsChanged {
                    workspace: workspace.workspace.root().to_owned(),
                });
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

    /// Watches the sessions folder, or the deepest real folder on the way while it is missing (or
    /// a link stands in its place).
    fn point_watch(&mut self, index: usize) {
        for _ in 0..10 {
            let workspace = &mut self.workspaces[index];
            let target = deepest_real_folder(workspace.workspace.root());
            let mode = RecursiveMode::NonRecursive;
            let identity = std::fs::symlink_metadata(&target).ok().map(|m| (m.dev(), m.ino()));
            if workspace.watched.as_ref() == Some(&(target.clone(), identity)) {
                break;
            }
            if let (Some((old, _)), Some(notify)) = (workspace.watched.take(), self.notify.as_mut()) {
                let _ = notify.unwatch(&old);
            }
            let mut failed = None;
            if let (false, Some(notify)) = (workspace.polling, self.notify.as_mut()) {
                if let Err(e) = notify.watch(&target, mode) {
                    failed = Some(format!("cannot watch {}: {e}", target.display()));
                }
            }
            workspace.watched = Some((target, identity));
            if let Some(reason) = failed {
                self.fall_back_to_polling(index, reason);
            }
        }
    }

    /// Watches what the session layout has below a session folder (and releases the watches of
    /// folders it no longer has); a failed watch makes the workspace polled.
    fn watch_session(&mut self, index: usize, id: &SessionId) {
        let workspace = &mut self.workspaces[index];
        let (false, Some(notify)) = (workspace.polling, self.notify.as_mut()) else {
            return;
        };
        let wanted = session_watch_dirs(&workspace.sessions_dir.join(id.as_str()));
        let had = workspace.session_watches.remove(id).unwrap_or_default();
        for gone in had.iter().filter(|dir| !wanted.contains(dir)) {
            let _ = notify.unwatch(gone);
            self.session_watch_count -= 1;
        }
        let (mut watched, new): (Vec<PathBuf>, Vec<PathBuf>) = wanted.into_iter().partition(|dir| had.contains(dir));
        let adding = new.len();
        let mut failed = None;
        if self.session_watch_count + adding > self.options.max_watches {
            failed = Some(format!(
                "the studio's budget of {} inotify watches is used up (half of fs.inotify.max_user_watches)",
                self.options.max_watches
            ));
        } else {
            for dir in new {
                match notify.watch(&dir, RecursiveMode::NonRecursive) {
                    Ok(()) => {
                        self.session_watch_count += 1;
                        watched.push(dir);
                    }
                    // Gone since it was listed.
                    Err(e) if matches!(e.kind, notify::ErrorKind::PathNotFound) => {}
                    Err(e) => {
                        failed = Some(format!("cannot watch {}: {e}", dir.display()));
                        break;
                    }
                }
            }
        }
        if !watched.is_empty() {
            workspace.session_watches.insert(id.clone(), watched);
        }
        if let Some(reason) = failed {
            self.fall_back_to_polling(index, reason);
        }
    }

    /// Releases a removed session's watches.
    fn unwatch_session(&mut self, index: usize, id: &SessionId) {
        let had = self.workspaces[index].session_watches.remove(id).unwrap_or_default();
        self.session_watch_count -= had.len();
        if let Some(notify) = self.notify.as_mut() {
            for dir in had {
                let _ = notify.unwatch(&dir);
            }
        }
    }

    /// inotify cannot cover a workspace (typically the watch limit): it is polled from now on, and
    /// every watch it had is released (they would only use up the user's budget).
    fn fall_back_to_polling(&mut self, index: usize, reason: String) {
        let workspace = &mut self.workspaces[index];
        if workspace.polling {
            return;
        }
        tracing::warn!(
            workspace = %workspace.workspace.root().display(),
            %reason,
            "cannot watch the session folders; polling them every {:?} instead",
            self.options.poll_interval
        );
        workspace.polling = true;
        workspace.reconcile_due = true;
        if let Some(notify) = self.notify.as_mut() {
            for dir in workspace.session_watches.drain().flat_map(|(_, dirs)| dirs) {
                let _ = notify.unwatch(&dir);
                self.session_watch_count -= 1;
            }
            if let Some((dir, _)) = &workspace.watched {
                let _ = notify.unwatch(dir);
            }
        }
        // The agents file's watch goes too: it is polled with the rest.
        workspace.agents.polled = true;
        if let (Some((dir, _)), Some(notify)) = (workspace.agents.watched.take(), self.agents_notify.as_mut()) {
            let _ = notify.unwatch(&dir);
        }
        let workspace = workspace.workspace.root().to_owned();
        (self.sink)(Change::WatchPolling {
            workspace,
            reason: format!("{reason}; polling every {:?} instead", self.options.poll_interval),
        });
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
        let all_agents = self.agents_notify.is_none();
        let now = Instant::now();
        for workspace in &mut self.workspaces {
            if (all_agents || workspace.agents.polled) && workspace.agents.due_since.is_none() {
                workspace.agents.due_since = Some(now.checked_sub(self.options.window).unwrap_or(now));
            }
        }
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
        let dir = self.workspaces[index].sessions_dir.join(id.as_str());
        let is_folder = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
        // Watched before it is read: what changes after the read is seen.
        if is_folder && !initial {
            self.watch_session(index, id);
        }
        // Nothing is followed through a link standing in for a session folder.
        let files = if is_folder { files } else { BTreeSet::new() };
        let workspace = &mut self.workspaces[index];
        let root = workspace.workspace.root().to_owned();
        // Taken before the read: a change during the read shows in the next comparison.
        let print = fingerprint(&dir, workspace.sessions.get(id).and_then(|k| k.fingerprint.as_deref()));
        // A folder that cannot be read is a session naming its problem, as in a listing.
        let Some(summary) = read_summary(&dir, id, clock_now) else {
            self.unwatch_session(index, id);
            let workspace = &mut self.workspaces[index];
            self.running.remove(&(index, id.clone()));
            if workspace.sessions.remove(id).is_some() {
                (self.sink)(Change::SessionRemoved {
                    workspace: root,
                    session_id: id.clone(),
                });
            }
            return;
        };
        if summary.status == Status::Running {
            self.running.insert((index, id.clone()));
        } else {
            self.running.remove(&(index, id.clone()));
        }
        let store_changed = self.store_changed.remove(&(index, id.clone()));
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
                // What the folder cannot order (or no longer names), the order seen live tells.
                let mut summary = summary;
                summary.keep_order_seen(&known.summary);
                if known.summary != summary || store_changed {
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

/// The workspace's sessions folder when it is there, else the deepest real folder on the way to
/// it (a component that is missing, or a symbolic link, ends the way).
fn deepest_real_folder(root: &Path) -> PathBuf {
    let mut path = root.to_path_buf();
    for component in SESSIONS_DIR {
        let next = path.join(component);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.is_dir() => path = next,
            _ => break,
        }
    }
    path
}

/// The folders watched for one session: its folder, its node folders (and `nodes/`), and
/// `nodes/<node>/`: real folders only, never links. Empty when the session folder is not a real
/// folder.
fn session_watch_dirs(session_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = layout_dirs(session_dir);
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The session layout's real folders: the session folder itself, its node folders (and `nodes/`)
/// and `nodes/<node>/`, each a real folder (a link, or anything reached through one, is not);
/// nothing when the session folder is not a real folder. At most [`MAX_WATCHED_NODE_FOLDERS`] of
/// each parent's.
fn layout_dirs(session_dir: &Path) -> Vec<PathBuf> {
    let real_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !real_dir(session_dir) {
        return Vec::new();
    }
    let mut dirs = vec![session_dir.to_owned()];
    let nodes = session_dir.join("nodes");
    let parents = [Some(session_dir.to_owned()), real_dir(&nodes).then_some(nodes)];
    for parent in parents.into_iter().flatten() {
        if let Ok(entries) = std::fs::read_dir(&parent) {
            let children = entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir()));
            dirs.extend(children.map(|e| e.path()).take(MAX_WATCHED_NODE_FOLDERS));
        }
    }
    dirs
}

/// A session has a few node folders; a folder with more than this is not watched past them.
const MAX_WATCHED_NODE_FOLDERS: usize = 1_000;

/// The followed output files of a session folder: its own, and those of its node folders (at
/// `<session>/<node>/` and `<session>/nodes/<node>/`).
pub fn output_files(session_dir: &Path) -> Vec<PathBuf> {
    // Only real folders of the layout: a linked session or `nodes` is never read through.
    let mut dirs = layout_dirs(session_dir);
    if dirs.is_empty() {
        return Vec::new();
    }
    dirs[1..].sort();
    let mut files = Vec::new();
    for dir in dirs {
        for name in FOLLOWED_FILES {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                files.push(path);
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

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

    /// The inotify watches this process holds, as the kernel counts them (`/proc/self/fdinfo`).
    fn inotify_watches() -> usize {
        std::fs::read_dir("/proc/self/fdinfo")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
            .map(|info| info.lines().filter(|l| l.starts_with("inotify wd:")).count())
            .sum()
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
}
