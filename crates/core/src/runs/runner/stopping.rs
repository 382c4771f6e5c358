//! A stop of a run this studio follows. Asked for, it writes both stop files at once (the current
//! node finishes first); the run's thread keeps them present until the process exits and, past
//! the grace period (or at once on a forced stop), sends the whole process group SIGTERM, then
//! SIGKILL 5 s later, as `crate::runs::stop::StopState` decides (also when one stop file cannot
//! be written: a link in its place delays nothing past the grace). A stop another process asked for
//! is heard from the store and announced; a keeper that died is made up for.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::events::RunEvent;
use super::followed::FollowedRun;
use super::live_run::unix_signal;
use super::shared::Shared;
use crate::runs::stop::{KillBecause, StopSignal, Stopping, TermBecause};
use crate::store::Level;
use crate::vocabulary::error::Error;

/// Stops a live run: the stop files now (the current node finishes first); with `force`, or
/// when a graceful stop was already asked for, SIGTERM to its process group now.
pub(super) fn ask_to_stop(shared: &Shared, run_id: &str, force: bool) -> Result<Stopping, Error> {
    let live = shared
        .live
        .lock()
        .expect("live lock")
        .get(run_id)
        .cloned()
        .ok_or_else(|| Error::RunNotLive { id: run_id.to_owned() })?;
    let written = live.write_stop_files();
    let mut stop = live.stop.lock().expect("stop lock");
    let mut next = stop.clone();
    let (how, signal) = next.request(force, Instant::now());
    // A graceful stop is the stop files: when neither can be written it is no stop (a forced one
    // goes on to signals). One of them is enough: past the grace period come the signals.
    if let (Err(error), Stopping::Graceful) = (written, how) {
        return Err(error);
    }
    if !stop.is_requested() {
        live.tell_keeper();
    }
    // Recorded in the store too: a kept run this studio leaves running (or that another adopts)
    // is settled as stopped, not as interrupted, by whoever sees its end.
    if live.keeper_dir.is_some() {
        if let Err(error) = shared.store.run_request_stop(run_id, how) {
            tracing::warn!(%run_id, %error, "cannot record a stop in the store");
        }
    }
    *stop = next;
    if signal.is_some() {
        live.signal(Signal::SIGTERM);
    }
    drop(stop);
    shared.publish(RunEvent::Stopping {
        run_id: run_id.to_owned(),
        forced: how == Stopping::Forced,
        elsewhere: false,
    });
    Ok(how)
}

impl FollowedRun {
    /// Keeps the stop files present while a stop is pending and escalates past the grace period.
    pub(super) fn enforce_stop(&self, exited: bool) {
        let mut stop = self.live.stop.lock().expect("stop lock");
        if !stop.is_requested() {
            return;
        }
        if !exited {
            // A nested graph may consume a stop file while the outer run goes on (docs/protocol.md §3).
            self.live.rewrite_stop_files();
            // What the run has started, for the signal at its exit (they may have left its tree).
            self.live.note_processes();
        }
        let Some(signal) = stop.next(Instant::now(), self.live.grace, exited) else {
            return;
        };
        drop(stop);
        self.live.signal(unix_signal(signal));
        if matches!(signal, StopSignal::Sigkill(_)) {
            self.live.end_leftovers();
        }
        // Ending what a run that exited left behind is not worth a line of its own.
        if let Some((message, fields)) = signalled_log(signal, self.live.grace) {
            self.log(Level::Warn, "run.signalled", message, fields);
        }
    }

    /// A stop another process asked for (`zstudio stop`, another studio's window) is in the store:
    /// the run's subscribers hear of it as of a stop asked here (that process does the stopping).
    /// `heard`: whether one was announced already, and whether it was forced.
    pub(super) fn hear_stop_from_elsewhere(&self, heard: &mut Option<bool>) {
        if heard == &Some(true) || self.live.stop.lock().expect("stop lock").is_requested() {
            return;
        }
        let Ok(run) = self.shared.store.run(&self.run_id) else {
            return;
        };
        let Some(how) = run.stop_requested else { return };
        let forced = how == Stopping::Forced;
        if *heard == Some(forced) {
            return;
        }
        *heard = Some(forced);
        self.shared.publish(RunEvent::Stopping {
            run_id: self.run_id.clone(),
            forced,
            elsewhere: true,
        });
    }

    /// A keeper that ended without recording its agent's exit was killed: its agent dies with it
    /// (see [`crate::runs::keeper`]), and what else is left of the run (its group, still pinned by
    /// the unreaped keeper, what was seen below it, its cgroup and the processes that carry its
    /// mark, `setsid` or orphaned) is ended too rather than left out of reach.
    pub(super) fn after_keeper_died(&self) {
        let Some(dir) = &self.live.keeper_dir else { return };
        if crate::runs::keeper::read_exit(dir).is_some() {
            return;
        }
        // Its group, and what left it: the run's cgroup and the processes that carry its mark.
        let signalled = self.live.signal(Signal::SIGKILL);
        let ended = self.live.end_leftovers();
        if signalled || ended > 0 {
            self.log(
                Level::Warn,
                "run.signalled",
                "the run keeper ended without recording the agent's exit: SIGKILL sent to what is left of the run",
                serde_json::json!({ "signal": "SIGKILL", "leftovers": ended }),
            );
        }
    }
}

/// The `run.signalled` log line of an escalation (none for ending what an exited run left).
fn signalled_log(signal: StopSignal, grace: Duration) -> Option<(&'static str, serde_json::Value)> {
    match signal {
        StopSignal::Sigterm(TermBecause::GraceOver) => Some((
            "grace period over: SIGTERM sent to the run's process group",
            serde_json::json!({ "signal": "SIGTERM", "grace_ms": grace.as_millis() as u64 }),
        )),
        StopSignal::Sigkill(KillBecause::StillRunning) => Some((
            "still running 5 s after SIGTERM: SIGKILL sent to the run's process group",
            serde_json::json!({ "signal": "SIGKILL" }),
        )),
        StopSignal::Sigterm(TermBecause::Forced) | StopSignal::Sigkill(KillBecause::LeaderExited) => None,
    }
}
