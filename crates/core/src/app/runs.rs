//! The runs the app service holds: an agent started, a run stopped (this window's, another studio
//! process's, or one the studio did not start), kept runs adopted, and what quitting does with the
//! live ones (left running through the keeper, or stopped and waited for).

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use crate::app::{agent_run_request, lock, stop, Studio, TRACES_FINISH_WAIT};
use crate::runs::runner::{OutsideStop, StartedRun};
use crate::runs::stop::Stopping;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

impl Studio {
    /// Runs `agent` of the workspace's `.zibby/studio.toml` (see [`agent_run_request`]).
    pub fn run_agent(
        &self,
        agent: &str,
        prompt: Option<String>,
        session: Option<SessionId>,
        node: Option<String>,
    ) -> Result<StartedRun, Error> {
        let request = agent_run_request(self.store()?, &self.workspace()?, agent, prompt, session, node)?;
        self.supervisor()?.start(request)
    }

    /// Stops a live run, this window's or another studio process's (see [`stop`]).
    /// Asks the run of a session the studio did not start to stop before its next node (its stop
    /// files; never forced: the studio knows none of its processes). Offered while the session
    /// has no live run in the store and its folder says a run is going.
    pub fn stop_outside(&self, id: &SessionId) -> Result<OutsideStop, Error> {
        crate::runs::runner::stop_outside(&self.workspace()?, id, SystemTime::now())
    }

    pub fn stop(&self, run_id: &str, force: bool) -> Result<Stopping, Error> {
        stop(&*self.supervisor()?, self.store()?, run_id, force)
    }

    /// Adopts the kept runs of the open workspace that are still going and that no live studio
    /// process follows ([`Supervisor::adopt`](crate::runs::runner::Supervisor::adopt)): their lines are recorded and announced as they
    /// come, and quitting leaves them running or stops them as it does the runs started here.
    /// Only when runs can be kept (a studio that cannot leave a run running does not take one).
    pub fn adopt_runs(&self) -> Result<Vec<String>, Error> {
        if !self.can_keep_runs {
            return Ok(Vec::new());
        }
        let workspace = self.workspace()?;
        self.supervisor()?.adopt(Some(workspace.root()))
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
        self.set_not_local(None);
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
        let traces = lock(&self.traces).take();
        if let Some(traces) = traces {
            // Its lost spans, if any, said in the log.
            traces.finish(TRACES_FINISH_WAIT);
        }
        drop(lock(&self.run_changes).take());
    }
}
