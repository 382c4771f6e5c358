//! What the window works on: the workspace, the store and the run supervisor, each opened once at
//! start. One that could not be opened is kept as its error, which every command that needs it
//! returns, so the window shows why instead of the app panicking.

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use studio_core::agents::{self, Agent};
use studio_core::runner::{RunEvent, RunRequest, Supervisor, DEFAULT_GRACE};
use studio_core::store::{SessionRow, Store, StoreLocation};
use studio_core::watcher::{ChangeSink, Watcher, WatcherOptions};
use studio_core::{SessionId, Workspace};

use crate::CommandError;

pub struct Studio {
    workspace: Result<Workspace, CommandError>,
    store: Result<Arc<Store>, CommandError>,
    /// Taken out and dropped when the app exits: dropping it stops the live runs.
    supervisor: Mutex<Option<Supervisor>>,
    /// Watches the workspace's session folders while the app runs.
    watcher: Mutex<Option<Watcher>>,
}

impl Studio {
    /// Opens the workspace and the store, reconciles the runs of studio processes that died, and
    /// starts the supervisor. Also returns the supervisor's events, subscribed before any run.
    pub fn open(
        workspace: &Path,
        store: Result<StoreLocation, studio_core::Error>,
    ) -> (Studio, Option<Receiver<RunEvent>>) {
        let workspace = Workspace::open(workspace).map_err(CommandError::from);
        match &workspace {
            Ok(workspace) => tracing::info!(root = %workspace.root().display(), "workspace opened"),
            Err(error) => tracing::warn!(code = error.code, "{}", error.message),
        }
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
        let supervisor = match &store {
            Ok(store) => {
                tracing::info!(store = %store.location().describe(), "store opened");
                match studio_core::runner::reconcile(store, SystemTime::now()) {
                    Ok(recovered) => {
                        for run in recovered {
                            tracing::info!(run_id = run.run_id, status = %run.status.as_str(), "run of a dead studio reconciled");
                        }
                    }
                    Err(error) => tracing::warn!(%error, "cannot reconcile the runs of dead studio processes"),
                }
                Some(Supervisor::new(store.clone()))
            }
            Err(error) => {
                tracing::warn!(code = error.code, "{}", error.message);
                None
            }
        };
        let events = supervisor.as_ref().map(Supervisor::subscribe);
        let studio = Studio {
            workspace,
            store,
            supervisor: Mutex::new(supervisor),
            watcher: Mutex::new(None),
        };
        (studio, events)
    }

    pub fn workspace(&self) -> Result<&Workspace, CommandError> {
        self.workspace.as_ref().map_err(Clone::clone)
    }

    pub fn store(&self) -> Result<&Store, CommandError> {
        self.store.as_deref().map_err(Clone::clone)
    }

    /// The supervisor, while the app has not begun to exit.
    pub fn supervisor(&self) -> Result<SupervisorGuard<'_>, CommandError> {
        self.store()?;
        let guard = self.supervisor.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard.is_none() {
            return Err(CommandError {
                code: "shutting_down",
                message: "the studio is closing: no run can be started or stopped".to_owned(),
            });
        }
        Ok(SupervisorGuard(guard))
    }

    /// Starts watching the workspace's session folders: every change goes to `sink`, and the
    /// store's folder index is kept current on the way.
    pub fn watch(&self, sink: ChangeSink) -> Result<(), CommandError> {
        let (workspace, store) = (self.workspace()?, self.store.as_ref().map_err(Clone::clone)?);
        let sink = studio_core::index::keeping_current(store.clone(), sink);
        let watcher = Watcher::start(vec![workspace.clone()], sink, WatcherOptions::default())?;
        *self.watcher.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(watcher);
        Ok(())
    }

    /// Stops the live runs (gracefully; past their grace, by force) and waits for them: the app
    /// calls it as it exits, because Tauri never drops its managed state.
    pub fn shut_down(&self) {
        drop(
            self.watcher
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take(),
        );
        let supervisor = self
            .supervisor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(supervisor) = supervisor {
            let live = supervisor.live_runs().len();
            tracing::info!(live, "stopping the supervisor");
            drop(supervisor);
            tracing::info!("supervisor stopped");
        }
    }

    /// The sessions of the workspace, pinned first.
    pub fn sessions(&self, now: SystemTime) -> Result<Vec<SessionRow>, CommandError> {
        Ok(self.store()?.list_sessions(self.workspace()?, now)?)
    }

    /// The request that runs `agent` of the workspace's `.zibby/studio.toml` on a prompt, in a
    /// new session or in `session`.
    pub fn agent_run_request(
        &self,
        agent: &str,
        prompt: String,
        session: Option<SessionId>,
    ) -> Result<RunRequest, CommandError> {
        let workspace = self.workspace()?;
        let Agent {
            name, run, cwd, env, ..
        } = agents::load(workspace.root())?
            .into_iter()
            .find(|candidate| candidate.name == agent)
            .ok_or_else(|| studio_core::Error::AgentNotFound {
                name: agent.to_owned(),
                path: workspace.root().join(agents::AGENTS_FILE),
            })?;
        Ok(RunRequest {
            workspace: workspace.clone(),
            agent: Some(name),
            command: run,
            cwd,
            env: env.into_iter().collect(),
            session,
            prompt: Some(prompt),
            node: None,
            grace: DEFAULT_GRACE,
        })
    }
}

/// The supervisor, held for one command.
pub struct SupervisorGuard<'a>(MutexGuard<'a, Option<Supervisor>>);

impl std::ops::Deref for SupervisorGuard<'_> {
    type Target = Supervisor;
    fn deref(&self) -> &Supervisor {
        self.0.as_ref().expect("checked in Studio::supervisor")
    }
}
