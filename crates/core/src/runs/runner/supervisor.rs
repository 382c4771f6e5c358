//! The [`Supervisor`]: owns the runs it starts, and the subscribers to their events. Starting a
//! run is the steps of `spawn` then `follow`; stopping one is `stopping`'s; dropping the
//! supervisor stops them all and waits.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::follow::start_following;
use super::live_run::LiveRun;
use super::request::{Keeper, RunRequest, StartedRun};
use super::shared::{Shared, Subscriber};
use super::spawn::PreparedRun;
use super::stopping::ask_to_stop;
use super::subscription::{event_queue, RunEvents, EVENT_BUFFER};
use crate::runs::stop::Stopping;
use crate::store::Store;
use crate::vocabulary::error::Error;

/// Owns the runs it starts; dropping it stops them (gracefully, then by force) and waits.
pub struct Supervisor {
    shared: Arc<Shared>,
}

impl Supervisor {
    /// Runs the agents directly: they end with the supervisor.
    pub fn new(store: Arc<Store>) -> Supervisor {
        Supervisor {
            shared: Shared::start(store, None),
        }
    }

    /// Runs the agents through a run keeper, so that [`Supervisor::detach`] can leave them
    /// running when the studio quits.
    pub fn with_keeper(store: Arc<Store>, keeper: Keeper) -> Supervisor {
        Supervisor {
            shared: Shared::start(store, Some(keeper)),
        }
    }

    /// The agents started from now on do not get these variables of the studio's environment
    /// (the app sets some for its own window: they are not the agents' business).
    pub fn hide_variables(&self, names: &[&str]) {
        *self.shared.hidden_variables.lock().expect("hidden variables lock") =
            names.iter().map(|name| (*name).to_owned()).collect();
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.shared.store
    }

    /// Every event of every run from now on. A subscriber that falls more than 65,536 events
    /// behind loses events (the store loses none): a window never slows a run.
    pub fn subscribe(&self) -> RunEvents {
        self.subscribe_with(false, true)
    }

    /// [`Supervisor::subscribe`] without the output lines: the runs' starts, nodes, stops,
    /// budget news and ends (a live trace export needs no line, and copies none).
    pub fn subscribe_to_nodes(&self) -> RunEvents {
        self.subscribe_with(false, false)
    }

    /// Every event of every run from now on, none lost: when the subscriber falls behind, its
    /// runs wait for it (and their agents' writes with them), as a pipe to a slow reader does.
    /// For a terminal or a `--json` stream, whose reader must see every line.
    pub fn subscribe_lossless(&self) -> RunEvents {
        self.subscribe_with(true, true)
    }

    fn subscribe_with(&self, lossless: bool, output: bool) -> RunEvents {
        let (sender, receiver) = event_queue(EVENT_BUFFER);
        self.shared
            .subscribers
            .lock()
            .expect("subscribers lock")
            .push(Subscriber::new(sender, lossless, output));
        receiver
    }

    /// The ids of the runs still live.
    pub fn live_runs(&self) -> Vec<String> {
        self.shared.live.lock().expect("live lock").keys().cloned().collect()
    }

    /// Starts a run. A command that cannot start is not an error here: it is a run that ended
    /// at once with status `error` and a message saying why.
    pub fn start(&self, request: RunRequest) -> Result<StartedRun, Error> {
        let over_budget = super::budget::check_daily_budget(&self.shared, &request)?;
        let run = PreparedRun::prepare(&self.shared, &request)?;
        if let Some(over) = &over_budget {
            super::budget::log_over_budget(&self.shared.store, &run.run_id, over);
        }
        let child = match run.child_command(&self.shared, &request).spawn() {
            Ok(child) => child,
            Err(why) => return run.record_failure(&self.shared, &request.workspace, why),
        };
        let live = run.record_start(&self.shared, &request.workspace, child.id(), request.grace);
        start_following(&self.shared, run, live, child, request.budget)
    }

    /// Adopts the kept runs still going that no live studio process owns any more (their studio
    /// died, or left them running and quit), of the workspace with root `root` (every
    /// workspace's with `None`): each is claimed in the store (one process alone adopts it), the
    /// lines the store lacks are recorded from its keeper's files, and it is followed from there
    /// as a run started here (its lines recorded and published as they come, its stop, its end).
    /// Returns the ids of the runs adopted. See `adopted`.
    pub fn adopt(&self, root: Option<&std::path::Path>) -> Result<Vec<String>, Error> {
        super::adopted::adopt_runs(&self.shared, root)
    }

    /// Stops a live run: the stop files now (the current node finishes first); with `force`, or
    /// when a graceful stop was already asked for, SIGTERM to its process group now.
    pub fn stop(&self, run_id: &str, force: bool) -> Result<Stopping, Error> {
        ask_to_stop(&self.shared, run_id, force)
    }

    /// Leaves every live run running without this studio: they must go through a keeper (runs
    /// started directly end with their pipes and are stopped instead). The store marks them
    /// detached once their threads recorded what they read (at the latest when the supervisor is
    /// dropped); a later studio shows their true state (`reconcile`), can stop them, and adopts
    /// them ([`Supervisor::adopt`]).
    pub fn detach(&self) -> Vec<String> {
        let live: Vec<(String, Arc<LiveRun>)> = self.shared.live.lock().expect("live lock").drain().collect();
        let mut detached = Vec::new();
        for (run_id, run) in live {
            if run.keeper_dir.is_none() {
                self.shared.live.lock().expect("live lock").insert(run_id, run);
                continue;
            }
            // Its thread records what it read, then lets it go in the store (see `follow`).
            run.detached.store(true, Ordering::SeqCst);
            detached.push(run_id);
        }
        detached
    }

    /// Stops every live run (gracefully; past their grace, by force) and waits for them all.
    pub fn shutdown(&self) {
        for run_id in self.live_runs() {
            let _ = self.stop(&run_id, false);
        }
        let threads: Vec<_> = self.shared.threads.lock().expect("threads lock").drain(..).collect();
        for thread in threads {
            let _ = thread.join();
        }
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        self.shared.index_wanted.nudge();
        let indexer = self.shared.indexer.lock().expect("indexer lock").take();
        if let Some(indexer) = indexer {
            let _ = indexer.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.shutdown();
    }
}
