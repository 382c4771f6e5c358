//! What the window works on: the workspace, the store and the run supervisor, each opened once at
//! start. One that could not be opened is kept as its error, which every command that needs it
//! returns, so the window shows why instead of the app panicking.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use studio_core::agents::{self, Agent};
use studio_core::runner::{RunEvent, RunRequest, Supervisor, DEFAULT_GRACE};
use studio_core::session::Timestamp;
use studio_core::store::{RunRecord, SessionRow, Span, Store, StoreLocation};
use studio_core::{SessionId, SessionSummary, Status, Workspace};

use crate::CommandError;

pub struct Studio {
    workspace: Result<Workspace, CommandError>,
    store: Result<Arc<Store>, CommandError>,
    /// Taken out and dropped when the app exits: dropping it stops the live runs.
    supervisor: Mutex<Option<Supervisor>>,
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
                match store.recover_dead_studios(SystemTime::now()) {
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

    /// Stops the live runs (gracefully; past their grace, by force) and waits for them: the app
    /// calls it as it exits, because Tauri never drops its managed state.
    pub fn shut_down(&self) {
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

    /// The sessions of the workspace, pinned first, each with how its last studio run ended when
    /// its files cannot tell (see [`with_ended_runs`]).
    pub fn sessions(&self, now: SystemTime) -> Result<Vec<SessionRow>, CommandError> {
        let (store, workspace) = (self.store()?, self.workspace()?);
        let mut rows = store.list_sessions(workspace, now)?;
        let runs = store.runs(workspace, None)?;
        let runs: Vec<LastRun<'_>> = runs.iter().map(LastRun::from).collect();
        let summaries = rows.iter_mut().map(|row| &mut row.summary);
        with_ended_runs(summaries, &runs, |run_id| store.spans(run_id).unwrap_or_default());
        Ok(rows)
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

/// What [`with_ended_runs`] needs of a run.
#[derive(Debug, Clone, Copy)]
pub struct LastRun<'a> {
    pub id: &'a str,
    pub session_id: &'a str,
    pub status: Status,
    pub ended_at: Option<Timestamp>,
}

impl<'a> From<&'a RunRecord> for LastRun<'a> {
    fn from(run: &'a RunRecord) -> LastRun<'a> {
        LastRun {
            id: &run.id,
            session_id: &run.session_id,
            status: run.status,
            ended_at: run.ended_at,
        }
    }
}

/// How much later than its last run's end a session folder may be written and still be that
/// run's (the agent's last writes and the studio's end record race).
const WRITTEN_WITH_THE_RUN_MS: u64 = 2_000;

/// Files do not mark the end of a run (PROTOCOL.md §5): a session the studio ran and stopped reads
/// `running` for two minutes, then `unknown`. The store knows better: such a session, not written
/// since its last run ended, takes that run's status, and its nodes left `running` take their
/// node spans' status (else the run's).
///
/// A stop-gap in the shell: `Store::list_sessions` is the place for it.
pub fn with_ended_runs<'a>(
    sessions: impl Iterator<Item = &'a mut SessionSummary>,
    runs: &[LastRun<'_>],
    spans_of: impl Fn(&str) -> Vec<Span>,
) {
    // `runs` is newest first: the first run seen per session is its last.
    let mut last_runs: HashMap<&str, &LastRun<'_>> = HashMap::new();
    for run in runs {
        last_runs.entry(run.session_id).or_insert(run);
    }
    for summary in sessions {
        let Some(run) = last_runs.get(summary.id.as_str()) else {
            continue;
        };
        let Some(ended_at) = run.ended_at else { continue };
        let files_cannot_tell = matches!(summary.status, Status::Running | Status::Unknown);
        let written_since = summary.updated_at.0 > ended_at.0 + WRITTEN_WITH_THE_RUN_MS;
        if run.status == Status::Running || !files_cannot_tell || written_since {
            continue;
        }
        summary.status = run.status;
        if summary.nodes.iter().any(|node| node.status == Status::Running) {
            let spans = spans_of(run.id);
            for node in summary.nodes.iter_mut().filter(|node| node.status == Status::Running) {
                let span = spans
                    .iter()
                    .rev()
                    .find(|span| span.kind == "node" && span.name == node.name);
                node.status = span
                    .map(|span| span.status)
                    .filter(|status| *status != Status::Running)
                    .unwrap_or(run.status);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use studio_core::session::NodeSummary;

    use super::*;

    fn row(id: &str, status: Status, updated_at: u64, nodes: &[(&str, Status)]) -> SessionSummary {
        SessionSummary {
            id: SessionId::parse(id).unwrap(),
            path: PathBuf::from("/p").join(id),
            status,
            current_node: None,
            created_at: None,
            updated_at: Timestamp(updated_at),
            nodes: nodes
                .iter()
                .map(|(name, status)| NodeSummary {
                    name: (*name).to_owned(),
                    status: *status,
                })
                .collect(),
            problems: Vec::new(),
        }
    }

    fn run<'a>(id: &'a str, session_id: &'a str, status: Status, ended_at: Option<u64>) -> LastRun<'a> {
        LastRun {
            id,
            session_id,
            status,
            ended_at: ended_at.map(Timestamp),
        }
    }

    fn span(name: &str, status: Status) -> Span {
        Span {
            id: 1,
            parent_id: None,
            run_id: "r".into(),
            name: name.into(),
            kind: "node".into(),
            depth: 0,
            started_at: Timestamp(0),
            ended_at: None,
            status,
        }
    }

    fn statuses(row: &SessionSummary) -> (Status, Vec<Status>) {
        (row.status, row.nodes.iter().map(|n| n.status).collect())
    }

    #[test]
    fn a_session_whose_files_cannot_tell_takes_its_last_runs_status() {
        let mut rows = [row(
            "s",
            Status::Running,
            10_000,
            &[("plan", Status::Success), ("write", Status::Running)],
        )];
        let runs = [run("r", "s", Status::Cancelled, Some(10_500))];
        with_ended_runs(rows.iter_mut(), &runs, |_| vec![span("write", Status::Success)]);
        assert_eq!(
            statuses(&rows[0]),
            (Status::Cancelled, vec![Status::Success, Status::Success]),
            "the run was stopped after write ended: the node span says so"
        );

        let mut rows = [row("s", Status::Unknown, 10_000, &[("write", Status::Running)])];
        with_ended_runs(rows.iter_mut(), &runs, |_| Vec::new());
        assert_eq!(statuses(&rows[0]), (Status::Cancelled, vec![Status::Cancelled]));
    }

    #[test]
    fn files_that_tell_live_runs_and_later_writes_win() {
        let untouched = |status: Status, updated_at: u64, runs: &[LastRun<'_>]| {
            let mut rows = [row("s", status, updated_at, &[("a", status)])];
            with_ended_runs(rows.iter_mut(), runs, |_| panic!("no spans needed"));
            statuses(&rows[0]) == (status, vec![status])
        };
        let ended = [run("r", "s", Status::Cancelled, Some(10_000))];
        assert!(untouched(Status::Error, 10_000, &ended), "a result file decides");
        assert!(
            untouched(Status::Running, 60_000, &ended),
            "written after the run: someone else runs it"
        );
        assert!(
            untouched(Status::Running, 10_000, &[run("r", "s", Status::Running, None)]),
            "still live"
        );
        assert!(untouched(Status::Running, 10_000, &[]), "never run by the studio");
        let newest_first = [
            run("r2", "s", Status::Running, None),
            run("r1", "s", Status::Cancelled, Some(10_000)),
        ];
        assert!(
            untouched(Status::Running, 10_000, &newest_first),
            "the last run decides"
        );
    }
}
