//! A run's processes as the studio knows them, and its stop: the stop files written, signals sent
//! only while its leader is still the process it started, its keeper told.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::run_files::STOP_FILES;
use crate::runs::stop::{StopSignal, StopState};
use crate::vocabulary::error::Error;
use crate::vocabulary::process::ProcessIdentity;

pub(super) struct LiveRun {
    run_id: String,
    pub(super) session_path: PathBuf,
    /// The leader of the run's process group (the agent, or its keeper) as it was started: no
    /// signal goes anywhere once the process holding its id is not this one.
    pub(super) leader: Option<ProcessIdentity>,
    /// Processes seen below the leader when it was signalled, to be signalled again later even
    /// if they left the tree (their parent ended).
    pub(super) seen: Mutex<Vec<ProcessIdentity>>,
    pub(super) grace: Duration,
    pub(super) stop: Mutex<StopState>,
    /// Left running: the run's thread stops following it and records nothing more.
    pub(super) detached: AtomicBool,
    /// Its budget asked its stop: it ends stopped by the budget.
    pub(super) stopped_by_budget: AtomicBool,
    /// The run keeper's folder, when the run goes through one.
    pub(super) keeper_dir: Option<PathBuf>,
}

impl LiveRun {
    /// A run not stopping (yet), whose leader is `leader`, with `seen` below it.
    pub(super) fn new(
        run_id: &str,
        session_path: PathBuf,
        leader: Option<ProcessIdentity>,
        seen: Vec<ProcessIdentity>,
        grace: Duration,
        keeper_dir: Option<PathBuf>,
    ) -> LiveRun {
        LiveRun {
            run_id: run_id.to_owned(),
            session_path,
            leader,
            seen: Mutex::new(seen),
            grace,
            stop: Mutex::new(StopState::default()),
            detached: AtomicBool::new(false),
            stopped_by_budget: AtomicBool::new(false),
            keeper_dir,
        }
    }

    /// Writes both stop files where they are missing, never through a symbolic link (in their
    /// place or on the way to the session folder). The answer is an error (the first refusal or
    /// failure) only when neither is there: one refused beside one written is traced and the
    /// stop goes on (an engine that reads only the refused one is signalled past the grace).
    pub(super) fn write_stop_files(&self) -> Result<(), Error> {
        let mut first_error = None;
        let mut written = false;
        for name in STOP_FILES {
            match crate::sessions::private::create_new_in(
                &self.session_path,
                name,
                crate::sessions::session::STOP_FILE_TEXT,
            ) {
                Ok(_) => written = true,
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) if !written => Err(error),
            Some(error) => {
                tracing::debug!(%error, "a stop file cannot be written; the other is there");
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// [`LiveRun::write_stop_files`] again while a stop is pending: a failure is logged.
    pub(super) fn rewrite_stop_files(&self) {
        if let Err(error) = self.write_stop_files() {
            // The stop was refused when neither could be written; its signals follow the grace.
            tracing::debug!(%error, "cannot write a stop file");
        }
    }

    /// Signals the run's processes (its group, and every process below its leader); `false`
    /// when the run's leader is gone and its id is free or someone else's: nothing is sent.
    pub(super) fn signal(&self, signal: Signal) -> bool {
        let mut seen = self.seen.lock().expect("seen lock");
        self.leader
            .as_ref()
            .is_some_and(|leader| crate::vocabulary::process::signal_run(leader, signal, &mut seen))
    }

    /// Ends whatever is left of the run wherever it went (its cgroup, the processes that carry
    /// its mark: see [`crate::vocabulary::containment`]), its leader gone or not; how many
    /// processes that was.
    pub(super) fn end_leftovers(&self) -> usize {
        end_leftovers(&self.run_id, self.keeper_dir.as_deref())
    }

    /// Notes the processes now below the run's leader, for the signals to come (they may leave
    /// its tree before then).
    pub(super) fn note_processes(&self) {
        if let Some(leader) = &self.leader {
            crate::vocabulary::process::note_run(leader, &mut self.seen.lock().expect("seen lock"));
        }
    }

    /// Tells the run's keeper (its leader) that a stop was asked for, so that it ends whatever the
    /// agent leaves behind when it exits (SIGUSR1: the agent does not get it).
    pub(super) fn tell_keeper(&self) {
        if self.keeper_dir.is_some() {
            if let Some(leader) = &self.leader {
                crate::vocabulary::process::signal_process(leader, Signal::SIGUSR1);
            }
        }
    }
}

/// Ends what is left of run `run_id` (its cgroup, recorded in its keeper's folder `keeper_dir`,
/// and the processes that carry its mark); how many processes that was.
pub(super) fn end_leftovers(run_id: &str, keeper_dir: Option<&std::path::Path>) -> usize {
    let cgroup = keeper_dir.and_then(|dir| crate::runs::keeper::recorded_cgroup(dir, run_id));
    crate::vocabulary::containment::end_run(run_id, cgroup.as_ref())
}

/// The signal a stop's escalation sends.
pub(super) fn unix_signal(signal: StopSignal) -> Signal {
    match signal {
        StopSignal::Sigterm(_) => Signal::SIGTERM,
        StopSignal::Sigkill(_) => Signal::SIGKILL,
    }
}
