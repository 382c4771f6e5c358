//! What the window works on: the open workspace (switchable), the store and the run supervisor.
//! A part that could not be opened is kept as its error, which every command that needs it
//! returns, so the window shows why instead of the app panicking.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, SystemTime};

use studio_core::agents::{self, Agent};
use studio_core::live::RunChanges;
use studio_core::runner::{Keeper, RunEvent, RunRequest, Supervisor, DEFAULT_GRACE};
use studio_core::store::{SessionRow, Store, StoreLocation};
use studio_core::watcher::{ChangeSink, Watcher, WatcherOptions};
use studio_core::{SessionId, Workspace};

use crate::CommandError;

/// How many recent workspaces the switcher and the menu offer.
pub const RECENT_WORKSPACES: usize = 10;

/// How often at most the window hears that a run printed more (the lines stay in the store).
const OUTPUT_NOTICE_WINDOW: Duration = Duration::from_millis(100);

/// Two subscriptions to the supervisor's events: the window's run events, its output notices.
pub type RunSubscriptions = (Receiver<RunEvent>, Receiver<RunEvent>);

pub struct Studio {
    workspace: RwLock<Result<Workspace, CommandError>>,
    store: Result<Arc<Store>, CommandError>,
    /// Taken out when the app exits: dropping it stops the live runs.
    supervisor: Mutex<Option<Supervisor>>,
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
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Studio {
    /// Opens the store, then the workspace given (else the last one opened that still exists),
    /// reconciles the runs of studio processes that died, and starts the supervisor. Also returns
    /// two subscriptions to the supervisor's events, taken before any run: one for the window's
    /// run events, one for its output notices.
    pub fn open(
        workspace: Option<&Path>,
        store: Result<StoreLocation, studio_core::Error>,
    ) -> (Studio, Option<RunSubscriptions>) {
        let location = store.as_ref().ok().cloned();
        let store = match store {
            Ok(location) => Store::open(&location).map(Arc::new).map_err(|error| {
                let error = CommandError::from(error);
                CommandError {
                    message: format!(
                        "the studio's store {} could not be opened: {}",
                        location.describe(),
                        error.message
                    ),
                    ..error
                }
            }),
            Err(error) => Err(CommandError::from(error)),
        };
        let workspace = match workspace {
            Some(path) => Workspace::open(path).map_err(CommandError::from),
            None => last_workspace(store.as_deref().ok()),
        };
        match (&workspace, &store) {
            (Ok(workspace), Ok(store)) => {
                tracing::info!(root = %workspace.root().display(), "workspace opened");
                if let Err(error) = store.workspace_opened(workspace, SystemTime::now()) {
                    tracing::warn!(%error, "cannot record the workspace as recent");
                }
            }
            (Err(error), _) => tracing::warn!(code = error.code.as_str(), "{}", error.message),
            _ => {}
        }
        let keeper = location.as_ref().and_then(find_keeper);
        let supervisor = match &store {
            Ok(store) => {
                tracing::info!(store = %store.location().describe(), keeper = keeper.is_some(), "store opened");
                match studio_core::runner::reconcile(store, SystemTime::now()) {
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
                tracing::warn!(code = error.code.as_str(), "{}", error.message);
                None
            }
        };
        let events = supervisor.as_ref().map(|s| (s.subscribe(), s.subscribe()));
        let studio = Studio {
            workspace: RwLock::new(workspace),
            store,
            supervisor: Mutex::new(supervisor),
            can_keep_runs: keeper.is_some(),
            keep_runs_on_exit: AtomicBool::new(false),
            watcher: Mutex::new(None),
            changes: Mutex::new(None),
            run_changes: Mutex::new(None),
        };
        (studio, events)
    }

    /// The open workspace.
    pub fn workspace(&self) -> Result<Workspace, CommandError> {
        self.workspace
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub fn store(&self) -> Result<&Store, CommandError> {
        self.store.as_deref().map_err(Clone::clone)
    }

    /// The supervisor, while the app has not begun to exit.
    pub fn supervisor(&self) -> Result<SupervisorGuard<'_>, CommandError> {
        self.store()?;
        let guard = lock(&self.supervisor);
        if guard.is_none() {
            return Err(studio_core::Error::ShuttingDown.into());
        }
        Ok(SupervisorGuard(guard))
    }

    /// Opens another workspace: the window, the watcher and the recent list move to it. Runs of
    /// the previous one go on.
    pub fn open_workspace(&self, path: &Path) -> Result<Workspace, CommandError> {
        let workspace = Workspace::open(path)?;
        self.store()?.workspace_opened(&workspace, SystemTime::now())?;
        *self.workspace.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Ok(workspace.clone());
        tracing::info!(root = %workspace.root().display(), "workspace opened");
        // Cloned out first: `watch` takes the lock again.
        let changes = lock(&self.changes).clone();
        if let Some(sink) = changes {
            self.watch(sink)?;
        }
        Ok(workspace)
    }

    /// The workspaces the window opened, most recent first.
    pub fn recent_workspaces(&self) -> Result<Vec<PathBuf>, CommandError> {
        Ok(self.store()?.recent_workspaces(RECENT_WORKSPACES)?)
    }

    /// Starts watching the open workspace's session folders: every change goes to `sink`, and
    /// the store's folder index is kept current on the way. The sessions there when watching
    /// starts are indexed but not passed on (the window lists them itself; 10,000 of them would
    /// make it list them again and again): a caller that needs to, lists once this returns.
    pub fn watch(&self, sink: ChangeSink) -> Result<(), CommandError> {
        *lock(&self.changes) = Some(sink.clone());
        // The previous watcher stops first: one watcher per window.
        drop(lock(&self.watcher).take());
        let (workspace, store) = (self.workspace()?, self.store.as_ref().map_err(Clone::clone)?);
        let started = Arc::new(AtomicBool::new(false));
        let after_start: ChangeSink = {
            let started = started.clone();
            Arc::new(move |change| {
                if started.load(Ordering::SeqCst) {
                    sink(change)
                }
            })
        };
        let sink = studio_core::store::index::keeping_current(store.clone(), after_start);
        let watcher = Watcher::start(vec![workspace], sink, WatcherOptions::default())?;
        started.store(true, Ordering::SeqCst);
        *lock(&self.watcher) = Some(watcher);
        Ok(())
    }

    /// Sends the runs' output to `sink` as it is printed, gathered over a short window.
    pub fn follow_output(&self, events: Receiver<RunEvent>, sink: ChangeSink) -> Result<(), CommandError> {
        let store = self.store.as_ref().map_err(Clone::clone)?.clone();
        *lock(&self.run_changes) = Some(RunChanges::start(events, store, sink, OUTPUT_NOTICE_WINDOW));
        Ok(())
    }

    /// The runs live in this app now.
    pub fn live_runs(&self) -> usize {
        lock(&self.supervisor).as_ref().map_or(0, |s| s.live_runs().len())
    }

    /// The agents started from now on do not get these variables (set by the app for its window).
    pub fn hide_variables_from_agents(&self, names: &[&str]) {
        if let Some(supervisor) = lock(&self.supervisor).as_ref() {
            supervisor.hide_variables(names);
        }
    }

    /// Whether quitting can leave the live runs running (they go through the run keeper).
    pub fn can_keep_runs(&self) -> bool {
        self.can_keep_runs
    }

    /// Decides what quitting does with the live runs: leave them running (`true`, when they go
    /// through the keeper) or stop them.
    pub fn keep_runs_on_exit(&self, keep: bool) {
        self.keep_runs_on_exit
            .store(keep && self.can_keep_runs, Ordering::SeqCst);
    }

    /// Stops watching, then leaves the live runs running (when so decided) or stops them
    /// (gracefully; past their grace, by force) and waits for them: the app calls it as it exits,
    /// because Tauri never drops its managed state.
    pub fn shut_down(&self) {
        drop(lock(&self.watcher).take());
        let supervisor = lock(&self.supervisor).take();
        if let Some(supervisor) = supervisor {
            if self.keep_runs_on_exit.load(Ordering::SeqCst) {
                let detached = supervisor.detach();
                tracing::info!(runs = ?detached, "left running");
            }
            let live = supervisor.live_runs().len();
            tracing::info!(live, "stopping the supervisor");
            drop(supervisor);
            tracing::info!("supervisor stopped");
        }
        drop(lock(&self.run_changes).take());
    }

    /// The sessions of the workspace, pinned first.
    pub fn sessions(&self, now: SystemTime) -> Result<Vec<SessionRow>, CommandError> {
        Ok(self.store()?.list_sessions(&self.workspace()?, now)?)
    }

    /// The request that runs `agent` of the workspace's `.zibby/studio.toml`: on a prompt, in a
    /// new session or in `session`; or, given a `node`, its replay command for that node.
    pub fn agent_run_request(
        &self,
        agent: &str,
        prompt: Option<String>,
        session: Option<SessionId>,
        node: Option<String>,
    ) -> Result<RunRequest, CommandError> {
        let workspace = self.workspace()?;
        let found = agents::find(workspace.root(), agent, node.is_some())?;
        self.store()?.require_trusted(&workspace, found.launch)?;
        let Agent { name, cwd, env, .. } = found.agent;
        let command = found.command;
        Ok(RunRequest {
            workspace,
            agent: Some(name),
            command,
            cwd,
            env: env.into_iter().collect(),
            session,
            prompt,
            node,
            grace: DEFAULT_GRACE,
        })
    }
}

/// The last workspace the window opened that still exists.
fn last_workspace(store: Option<&Store>) -> Result<Workspace, CommandError> {
    let recent = store
        .map(|store| store.recent_workspaces(RECENT_WORKSPACES))
        .transpose()?
        .unwrap_or_default();
    recent
        .iter()
        .find_map(|root| Workspace::open(root).ok())
        .ok_or_else(|| studio_core::Error::NoWorkspace.into())
}

/// The run keeper is `zstudio keep`: `$ZIBBY_STUDIO_KEEPER` when set, else the `zstudio`
/// installed beside this program (the package puts both in /usr/bin; a build puts both in
/// target/), else the one on the PATH.
fn find_keeper(location: &StoreLocation) -> Option<Keeper> {
    let given = std::env::var_os("ZIBBY_STUDIO_KEEPER").map(PathBuf::from);
    let beside = || {
        std::env::current_exe()
            .ok()
            .map(|exe| exe.with_file_name("zstudio"))
            .filter(|path| path.is_file())
    };
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("zstudio"))
            .find(|path| path.is_file())
    };
    let program = given.or_else(beside).or_else(on_path)?;
    Some(Keeper {
        program,
        runs_dir: location.runs_dir(),
    })
}

/// The supervisor, held for one command.
pub struct SupervisorGuard<'a>(MutexGuard<'a, Option<Supervisor>>);

impl std::ops::Deref for SupervisorGuard<'_> {
    type Target = Supervisor;
    fn deref(&self) -> &Supervisor {
        self.0.as_ref().expect("checked in Studio::supervisor")
    }
}
