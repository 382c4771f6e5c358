//! The app service: what the window and `zstudio` do alike, written once. Free functions for a
//! command that runs once ([`open_store`], [`agent_run_request`], [`stop`], [`session_path_of`]);
//! [`Studio`] for the window, which keeps the open workspace (switchable), the store, the run
//! supervisor and the watcher. A part that could not be opened is kept as its error, which every
//! call that needs it returns, so the window shows why instead of the app panicking.
//! [`operations`] holds the bodies of the window's commands that need no window, which the shell's
//! commands and the studio server (`remote::server`) both call. `Studio`'s own methods are kept by
//! what they do: this file opens it, lists the sessions, watches, exports, imports and compares;
//! `workspaces` switches the open workspace; `runs` starts, stops and adopts runs and says what
//! quitting does with them; `pages` serves the window's table a page at a time. The open
//! workspace may be on another machine ([`elsewhere`]): the window's commands then go there by
//! name ([`Studio::forward`]).

pub mod across;
pub mod cloud;
pub mod elsewhere;
pub mod first_listing;
pub mod live;
pub mod operations;
pub mod pages;
mod runs;
mod workspaces;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, SystemTime};

use crate::app::cloud::CloudWorkspace;
use crate::app::elsewhere::Elsewhere;
use crate::app::first_listing::FirstListing;
pub use crate::app::first_listing::{SessionsPage, FIRST_PAGE, MAX_PAGE};
use crate::app::live::RunChanges;
use crate::runs::runner::{Keeper, RunEvents, RunRequest, Supervisor, DEFAULT_GRACE};
use crate::runs::stop::Stopping;
use crate::sessions::agents::{self, Agent};
use crate::sessions::change::ChangeSink;
use crate::sessions::cost::UsageTotal;
use crate::sessions::session::{SessionSummary, Timestamp, Workspace};
use crate::share;
use crate::share::otlp::{self, LiveExport, LiveOptions};
use crate::status::Status;
use crate::store::index::NodeDetail;
use crate::store::{RunRecord, SessionRow, Store, StoreLocation};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::watch::watcher::{Watcher, WatcherOptions};

/// How many recent workspaces the switcher and the menu offer.
pub const RECENT_WORKSPACES: usize = 10;

/// How often at most the window hears that a run printed more (the lines stay in the store).
const OUTPUT_NOTICE_WINDOW: Duration = Duration::from_millis(100);

/// How long quitting waits for the runs' last spans past the last request the endpoint took
/// (3 times as long at most: `LiveExport::finish`).
const TRACES_FINISH_WAIT: Duration = Duration::from_secs(2);

/// Two subscriptions to the supervisor's events: the window's run events, its output notices.
pub type RunSubscriptions = (RunEvents, RunEvents);

pub struct Studio {
    workspace: RwLock<Result<Workspace, Error>>,
    store: Result<Arc<Store>, Error>,
    /// Taken out when the app exits: dropping it stops the live runs.
    supervisor: Mutex<Option<Supervisor>>,
    /// The runs' live trace export, finished when the app exits.
    traces: Mutex<Option<LiveExport>>,
    /// Runs go through the run keeper (`zstudio keep`), so quitting can leave them running.
    can_keep_runs: bool,
    /// What quitting does with live runs: stop them (the default) or leave them running.
    keep_runs_on_exit: AtomicBool,
    /// Watches the open workspace's session folders.
    watcher: Mutex<Option<Watcher>>,
    /// Where the watcher's changes go (kept to watch the next workspace the same way).
    changes: Mutex<Option<ChangeSink>>,
    /// Turns the runs' output into notices for the window.
    run_changes: Mutex<Option<RunChanges>>,
    /// The window's first listing, read ahead while the window starts.
    first_listing: FirstListing<SessionsPage>,
    /// The catalogue being made by a first launch's read-ahead (`pages`).
    filling: first_listing::Filling,
    /// The open workspace when it is not a folder of this machine.
    not_local: RwLock<Option<NotLocal>>,
    /// The last remote session and local one compared (`across`), kept for its "more".
    across: Mutex<Option<Arc<across::AcrossMachines>>>,
}

/// An open workspace that is not a folder of this machine.
#[derive(Clone)]
enum NotLocal {
    /// On another machine (then `Studio::workspace` is the last local one).
    Remote(Arc<dyn Elsewhere>),
    /// A bucket prefix (then `Studio::workspace` is its mirror's folder).
    Cloud(Arc<CloudWorkspace>),
}

impl NotLocal {
    /// Lets it go: a remote link is closed, a cloud poller stops.
    fn close(&self) {
        match self {
            NotLocal::Remote(remote) => remote.close(),
            NotLocal::Cloud(cloud) => cloud.close(),
        }
    }
}

/// Puts `value` in `slot`, returning what it held (a poisoned lock is taken as it is).
fn replace<T>(slot: &RwLock<T>, value: T) -> T {
    std::mem::replace(
        &mut *slot.write().unwrap_or_else(|poisoned| poisoned.into_inner()),
        value,
    )
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Studio {
    /// Opens the store, then the workspace given (else the last one opened that still exists),
    /// reconciles the runs of studio processes that died, and starts the supervisor. Also returns
    /// two subscriptions to the supervisor's events, taken before any run: one for the window's
    /// run events, one for its output notices.
    pub fn open(workspace: Option<&Path>, store: Result<StoreLocation, Error>) -> (Studio, Option<RunSubscriptions>) {
        let location = store.as_ref().ok().cloned();
        let store = match store {
            Ok(location) => Store::open(&location).map(Arc::new).map_err(|error| {
                error.kept(Some(&format!(
                    "the studio's store {} could not be opened",
                    location.describe()
                )))
            }),
            Err(error) => Err(error.kept(None)),
        };
        let workspace = match workspace {
            Some(path) => Workspace::open(path).map_err(|error| error.kept(None)),
            None => last_workspace(store.as_deref().ok()).map_err(|error| error.kept(None)),
        };
        match (&workspace, &store) {
            (Ok(workspace), Ok(store)) => {
                tracing::info!(root = %workspace.root().display(), "workspace opened");
                share::sweep_stale_imports(workspace);
                if let Err(error) = store.workspace_opened(workspace, SystemTime::now()) {
                    tracing::warn!(%error, "cannot record the workspace as recent");
                }
            }
            (Err(error), _) => tracing::warn!(code = error.code().as_str(), "{error}"),
            _ => {}
        }
        across::sweep_stale_scratch();
        let keeper = location.as_ref().and_then(find_keeper);
        let supervisor = match &store {
            Ok(store) => {
                tracing::info!(store = %store.location().describe(), keeper = keeper.is_some(), "store opened");
                match crate::runs::runner::reconcile(store, SystemTime::now()) {
                    Ok(recovered) => {
                        for run in recovered {
                            tracing::info!(run_id = run.run_id, status = %run.status.as_str(), "run of a dead studio reconciled");
                        }
                    }
                    Err(error) => tracing::warn!(%error, "cannot reconcile the runs of dead studio processes"),
                }
                Some(match keeper.clone() {
                    Some(keeper) => Supervisor::with_keeper(store.clone(), keeper),
                    None => Supervisor::new(store.clone()),
                })
            }
            Err(error) => {
                tracing::warn!(code = error.code().as_str(), "{error}");
                None
            }
        };
        let events = supervisor.as_ref().map(|s| (s.subscribe(), s.subscribe()));
        // Each run sent live as a trace where its workspace says (docs/cli.md).
        let traces = supervisor.as_ref().zip(store.as_ref().ok()).map(|(supervisor, store)| {
            let mut export = LiveExport::start(LiveOptions::default());
            export.follow_runs(supervisor.subscribe_to_nodes(), otlp::route_by_workspace(store.clone()));
            export
        });
        let mut studio = Studio::with(workspace, store, supervisor, traces);
        studio.can_keep_runs = keeper.is_some();
        // Runs left going by a studio process that is gone are followed here from now on.
        match studio.adopt_runs() {
            Ok(adopted) if !adopted.is_empty() => tracing::info!(runs = ?adopted, "runs no studio followed adopted"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot adopt the runs no studio follows"),
        }
        (studio, events)
    }

    /// A studio over a workspace and a store already open, for one command that runs and ends
    /// (`zstudio tag`, `note`, `view`: the app service's operations through the remote lane's
    /// `Methods`, as a remote workspace's server answers them). Nothing is started or written:
    /// no supervisor (starting or stopping a run through it is refused,
    /// [`Error::ShuttingDown`]), no watcher, no live trace export; no run adopted, the workspace
    /// not recorded as recent.
    pub fn for_command(workspace: Workspace, store: Store) -> Studio {
        Studio::with(Ok(workspace), Ok(Arc::new(store)), None, None)
    }

    /// A studio of these parts, nothing watched or open elsewhere yet.
    fn with(
        workspace: Result<Workspace, Error>,
        store: Result<Arc<Store>, Error>,
        supervisor: Option<Supervisor>,
        traces: Option<LiveExport>,
    ) -> Studio {
        Studio {
            workspace: RwLock::new(workspace),
            store,
            supervisor: Mutex::new(supervisor),
            traces: Mutex::new(traces),
            can_keep_runs: false,
            keep_runs_on_exit: AtomicBool::new(false),
            watcher: Mutex::new(None),
            changes: Mutex::new(None),
            run_changes: Mutex::new(None),
            first_listing: FirstListing::default(),
            filling: first_listing::Filling::default(),
            not_local: RwLock::new(None),
            across: Mutex::new(None),
        }
    }

    /// The open workspace, when it is on this machine ([`Error::LocalOnly`] while the open one is
    /// on another: what needs its folder here is refused).
    pub fn workspace(&self) -> Result<Workspace, Error> {
        if let Some(remote) = self.remote() {
            return Err(Error::LocalOnly {
                host: remote.status().host,
                what: "that".to_owned(),
            });
        }
        self.local_workspace()
    }

    pub fn store(&self) -> Result<&Store, Error> {
        self.store.as_deref().map_err(|error| error.kept(None))
    }

    fn shared_store(&self) -> Result<Arc<Store>, Error> {
        self.store.as_ref().map(Arc::clone).map_err(|error| error.kept(None))
    }

    /// The supervisor, while the app has not begun to exit.
    pub fn supervisor(&self) -> Result<SupervisorGuard<'_>, Error> {
        self.store()?;
        let guard = lock(&self.supervisor);
        if guard.is_none() {
            return Err(Error::ShuttingDown);
        }
        Ok(SupervisorGuard(guard))
    }

    /// Starts watching the open workspace's session folders: every change goes to `sink`, and
    /// the store's folder index is kept current on the way. The watcher starts from the index
    /// (as the window's listing left it, [`Watcher::start_seeded`]): a session whose folder is as
    /// the index has it is not read again nor passed on; one added, changed or removed since is,
    /// so that the window lists again only when something changed while watching started. Its
    /// sweep's bound is the workspace's `[watch] sweep_bound` (`sessions::agents`), as the file
    /// says when watching starts.
    pub fn watch(&self, sink: ChangeSink) -> Result<(), Error> {
        // A first launch's catalogue is made whole first (`pages`): the watcher starts from it.
        self.filling.wait_done();
        *lock(&self.changes) = Some(sink.clone());
        // The previous watcher stops first: one watcher per window.
        drop(lock(&self.watcher).take());
        let (workspace, store) = (self.workspace()?, self.shared_store()?);
        let seed = crate::store::index::indexed_folders(&store, &workspace).unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot read the folder index: every session folder is read again");
            Default::default()
        });
        let sink = crate::store::index::keeping_current(store.clone(), &[&workspace], sink);
        // The workspace's `[watch] sweep_bound`; a file that does not read is shown where its
        // agents are (`agents_file`), and the workspace is watched all the same.
        let sweep_bound = crate::sessions::agents::sweep_bound(workspace.root()).unwrap_or_else(|error| {
            tracing::warn!(%error, "the sweep's bound is the default's");
            None
        });
        // A run's end recorded in the store, by any process, is a change of its session.
        let mut options = WatcherOptions {
            store: Some(store),
            ..WatcherOptions::default()
        };
        if let Some(bound) = sweep_bound {
            options = options.with_sweep_bound(bound);
        }
        let watcher = Watcher::start_seeded(vec![(workspace, seed)], sink, options)?;
        *lock(&self.watcher) = Some(watcher);
        Ok(())
    }

    /// Sends the runs' output to `sink` as it is printed, gathered over a short window.
    pub fn follow_output(&self, events: RunEvents, sink: ChangeSink) -> Result<(), Error> {
        let store = self.shared_store()?;
        *lock(&self.run_changes) = Some(RunChanges::start(events, store, sink, OUTPUT_NOTICE_WINDOW));
        Ok(())
    }

    /// The sessions of the workspace, pinned first, and what they cost in all. Each carries its
    /// usage total, not its nodes' usage: the table needs only the total, and a node's usage comes
    /// with its session's detail (`session_get`), so 10,000 sessions do not send ten times as
    /// much to the window.
    pub fn sessions(&self, now: SystemTime) -> Result<SessionListing, Error> {
        let started = std::time::Instant::now();
        let workspace = self.workspace()?;
        // The catalogue as recorded where a watcher keeps it current (the window, once watching:
        // its changes are in the index before it is told to list again); any other listing (MCP,
        // a studio with no watcher) reads the folders.
        let mut rows = if lock(&self.watcher).is_some() && self.cloud().is_none() {
            self.first_rows(&workspace, now, (0, i64::MAX as usize))?.sessions
        } else {
            self.store()?
                .list_sessions_as(&workspace, now, NodeDetail::TotalsOnly)?
        };
        if let Some(cloud) = self.cloud() {
            // Listed after the fetched ones, newest first, the pinned among the pinned.
            let mut fetching = self.fetching_rows(&cloud, &workspace, &rows)?;
            if !fetching.is_empty() {
                fetching.sort_by_key(|row| std::cmp::Reverse((row.summary.updated_at, row.summary.id.clone())));
                rows.extend(fetching);
                rows.sort_by_key(|row| std::cmp::Reverse(row.pinned_at));
            }
        }
        let usage = crate::store::index::usage_of_sessions(&rows);
        for row in &mut rows {
            row.summary.nodes.iter_mut().for_each(|node| node.usage = None);
        }
        tracing::debug!(
            sessions = rows.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "sessions listed"
        );
        if let Some(cloud) = self.cloud() {
            cloud.listed();
        }
        Ok(SessionListing { sessions: rows, usage })
    }

    /// The rows of a cold cloud workspace's sessions that `listed` does not hold yet: the id, the
    /// time an engine id carries, its pin, and `fetching`; status `unknown` until its files land.
    fn fetching_rows(
        &self,
        cloud: &CloudWorkspace,
        workspace: &Workspace,
        listed: &[SessionRow],
    ) -> Result<Vec<SessionRow>, Error> {
        let held: std::collections::HashSet<&str> = listed.iter().map(|row| row.summary.id.as_str()).collect();
        let ids = cloud.fetching(&held);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let pins: HashMap<String, Timestamp> = self
            .store()?
            .pins(workspace)?
            .into_iter()
            .map(|pin| (pin.session_id, pin.pinned_at))
            .collect();
        let mut tags = self.store()?.tags_of_workspace(workspace)?;
        let not_known = format!(
            "Being fetched from {}: its details show once its files are in.",
            cloud.source()
        );
        Ok(ids
            .into_iter()
            .map(|id| {
                let created_at = id.unix_ms().map(Timestamp);
                let id_text = id.to_string();
                let pinned_at = pins.get(id.as_str()).copied();
                SessionRow {
                    summary: SessionSummary {
                        path: workspace.session_path(&id),
                        id,
                        agent: None,
                        title: None,
                        status: Status::Unknown,
                        current_node: None,
                        created_at,
                        updated_at: created_at.unwrap_or(Timestamp(0)),
                        nodes: Vec::new(),
                        problems: Vec::new(),
                        usage: None,
                        not_known: Some(not_known.clone()),
                    },
                    pinned: pinned_at.is_some(),
                    pinned_at,
                    messages: 0,
                    live_run: None,
                    tags: tags.remove(id_text.as_str()).unwrap_or_default(),
                    has_note: false,
                    fetching: true,
                }
            })
            .collect())
    }

    /// Writes a session of the open workspace as a bundle at `path` ([`share::export_session`]).
    /// In a remote workspace the bundle is written there and streamed back to `path`.
    pub fn export_session(&self, id: &SessionId, path: &Path, include_config: bool) -> Result<share::Exported, Error> {
        if let Some(remote) = self.remote() {
            return remote.export_session(id.as_str(), include_config, path);
        }
        if let Some(cloud) = self.cloud() {
            cloud.fetch_whole(id.as_str())?;
        }
        share::export_session(
            self.store()?,
            &self.workspace()?,
            id,
            path,
            include_config,
            SystemTime::now(),
        )
    }

    /// Imports a bundle, a session folder or a captured log into the open workspace
    /// ([`share::import`]). In a remote workspace a bundle or a log is uploaded and imported
    /// there (a folder is refused: a bundle of it is uploaded).
    pub fn import(&self, source: &Path, as_new: bool) -> Result<share::ImportedSession, Error> {
        if let Some(remote) = self.remote() {
            return remote.import_file(source, as_new);
        }
        let options = share::ImportOptions {
            as_new,
            ..share::ImportOptions::default()
        };
        share::import(self.store()?, &self.workspace()?, source, &options, SystemTime::now())
    }

    /// Compares two runs of the open workspace, node by node: `a` and `b` are run ids or session
    /// ids (a session's last run), as `zstudio diff` takes them. Reads both outputs: call it off
    /// the main thread.
    pub fn compare(
        &self,
        a: &str,
        b: &str,
        options: &crate::compare::Options,
    ) -> Result<crate::compare::RunDiff, Error> {
        use crate::compare::sides::Source;
        let (store, workspace) = (self.store()?, self.workspace()?);
        if let Some(cloud) = self.cloud() {
            cloud.fetch_whole(a)?;
            cloud.fetch_whole(b)?;
        }
        let (a, b) = (
            Source::resolve(store, &workspace, a)?,
            Source::resolve(store, &workspace, b)?,
        );
        crate::compare::compare(Some(store), &a, &b, options)
    }
}

/// Opens the store, settling first the runs no studio process follows any more (finished from
/// their keeper's files, or recovered as interrupted).
pub fn open_store(location: &StoreLocation) -> Result<Store, Error> {
    let store = Store::open(location)?;
    crate::runs::runner::reconcile(&store, SystemTime::now())?;
    Ok(store)
}

/// The request that runs `agent` of the workspace's `.zibby/studio.toml`: on a prompt, in a new
/// session or in `session`; or, given a `node`, its replay command for that node. Refused with
/// [`Error::AgentsUntrusted`] (which shows the exact launch) until the user trusted it.
pub fn agent_run_request(
    store: &Store,
    workspace: &Workspace,
    agent: &str,
    prompt: Option<String>,
    session: Option<SessionId>,
    node: Option<String>,
) -> Result<RunRequest, Error> {
    let session_path = session
        .as_ref()
        .map(|id| workspace.session_path(id).display().to_string());
    let this_run = agents::Placeholders {
        prompt: prompt.as_deref().unwrap_or_default(),
        session_id: session.as_ref().map_or("", SessionId::as_str),
        session_path: session_path.as_deref().unwrap_or_default(),
        node: node.as_deref().unwrap_or_default(),
    };
    // Before the trust question: a value from session data that could be read as code is refused
    // whatever the command does with it.
    if let Some(problem) = this_run.problem() {
        return Err(problem);
    }
    let found = agents::find_for(workspace.root(), agent, node.is_some(), &this_run)?;
    let budget = found.launch.budget;
    store.require_trusted(workspace, found.launch)?;
    let Agent {
        name,
        cwd,
        env,
        inherit_env,
        ..
    } = found.agent;
    Ok(RunRequest {
        workspace: workspace.clone(),
        agent: Some(name),
        command: found.command,
        cwd,
        env: env.into_iter().collect(),
        inherit_env: inherit_env.unwrap_or_default(),
        session,
        prompt,
        node,
        grace: DEFAULT_GRACE,
        budget,
        over_budget: false,
    })
}

/// Stops a live run: through `supervisor` when this process follows it, else through what the
/// store knows of it (another studio process follows it, or none does: it was left running).
pub fn stop(supervisor: &Supervisor, store: &Store, run_id: &str, force: bool) -> Result<Stopping, Error> {
    match supervisor.stop(run_id, force) {
        Err(Error::RunNotLive { .. }) => {
            let run = store.run(run_id)?;
            crate::runs::runner::stop_elsewhere(store, run_id, &session_path_of(&run)?, force)
        }
        stopped => stopped,
    }
}

/// The session folder of a recorded run.
pub fn session_path_of(run: &RunRecord) -> Result<PathBuf, Error> {
    let session = SessionId::parse(&run.session_id)?;
    Ok(Workspace::from_canonical_root(run.workspace.clone()).session_path(&session))
}

/// The last workspace the window opened that still exists.
fn last_workspace(store: Option<&Store>) -> Result<Workspace, Error> {
    let recent = store
        .map(|store| store.recent_workspaces(RECENT_WORKSPACES))
        .transpose()?
        .unwrap_or_default();
    recent
        .iter()
        .find_map(|root| Workspace::open(root).ok())
        .ok_or(Error::NoWorkspace)
}

/// The run keeper is `zstudio keep` ([`find_program`]: `$ZIBBY_STUDIO_KEEPER`, else beside this
/// program, else on the PATH).
fn find_keeper(location: &StoreLocation) -> Option<Keeper> {
    Some(Keeper {
        program: find_program("ZIBBY_STUDIO_KEEPER", "zstudio")?,
        runs_dir: location.runs_dir(),
    })
}

/// A program of the studio's: `$<variable>` when set, else `name` installed beside this
/// program (the package puts the app and `zstudio` both in /usr/bin; a build puts both in
/// target/), else the one on the PATH.
pub fn find_program(variable: &str, name: &str) -> Option<PathBuf> {
    let given = std::env::var_os(variable).map(PathBuf::from);
    let beside = || {
        std::env::current_exe()
            .ok()
            .map(|exe| exe.with_file_name(name))
            .filter(|path| path.is_file())
    };
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    };
    given.or_else(beside).or_else(on_path)
}

/// The supervisor, held for one command.
/// The sessions of a workspace as the window lists them ([`Studio::sessions`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionListing {
    pub sessions: Vec<SessionRow>,
    /// What they cost in all (`store::index::usage_of_sessions`); null when no node has usage.
    pub usage: Option<UsageTotal>,
}

pub struct SupervisorGuard<'a>(MutexGuard<'a, Option<Supervisor>>);

impl std::ops::Deref for SupervisorGuard<'_> {
    type Target = Supervisor;
    fn deref(&self) -> &Supervisor {
        self.0.as_ref().expect("checked in Studio::supervisor")
    }
}
