//! Stopping a run another studio process follows (`zstudio stop`, another studio's window),
//! through what the store knows of it: the stop files in its session folder and, when forced or
//! past the grace period, signals to its processes, each only while its recorded leader is still
//! the process it started. The owner records how the run ended; a run nobody owns any more is
//! reconciled.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;

use super::captured::reconcile;
use super::live_run::{end_leftovers, unix_signal, LiveRun};
use super::request::DEFAULT_GRACE;
use super::run_files::remove_stop_files;
use crate::runs::stop::{StopProgress, StopSignal, StopState, Stopping};
use crate::status::Status;
use crate::store::{RunRecord, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::process::ProcessIdentity;

/// The run's leader as the store recorded it, if the process holding its id is still that one.
/// When it is not (the run's processes are gone; the id may be someone else's now), the run is
/// reconciled (recorded as ended when no live studio owns it) and the answer is an error saying
/// it is not running any more: never a signal.
fn live_leader(store: &Store, run: &RunRecord) -> Result<ProcessIdentity, Error> {
    match &run.process_identity {
        Some(leader) if leader.is_current() => Ok(leader.clone()),
        _ => {
            reconcile(store, SystemTime::now())?;
            Err(Error::RunGone {
                id: run.id.clone(),
                pid: run.process_group.unwrap_or(0),
            })
        }
    }
}

/// A run that is not running any more may have left processes behind (its keeper was killed:
/// its `setsid` and orphaned children live on): they are ended, and a stop that did so answers
/// `Forced` rather than "not running".
fn end_what_is_left(run: &RunRecord, not_running: Error) -> Result<Stopping, Error> {
    if end_leftovers(&run.id, run.keeper_dir.as_deref()) > 0 {
        Ok(Stopping::Forced)
    } else {
        Err(not_running)
    }
}

/// The run as the store knows it, led by `leader`, with `seen` below it.
fn elsewhere(
    session_path: &Path,
    run: &RunRecord,
    leader: ProcessIdentity,
    seen: Vec<ProcessIdentity>,
    grace: Duration,
) -> LiveRun {
    LiveRun::new(
        &run.id,
        session_path.to_owned(),
        Some(leader),
        seen,
        grace,
        run.keeper_dir.clone(),
    )
}

/// Stops a run that another studio process supervises, through what the store knows of it:
/// the stop files in its session folder, and with `force` its processes. The owner records how
/// it ended. A run whose recorded leader is not the process holding its id now is not running
/// any more ([`Error::RunGone`]): nothing is written and nothing is signalled.
pub fn stop_elsewhere(store: &Store, run_id: &str, session_path: &Path, force: bool) -> Result<Stopping, Error> {
    let run = store.run(run_id)?;
    if run.status != Status::Running {
        return end_what_is_left(&run, Error::RunNotLive { id: run_id.to_owned() });
    }
    let leader = match live_leader(store, &run) {
        Ok(leader) => leader,
        Err(gone) => return end_what_is_left(&run, gone),
    };
    let live = elsewhere(session_path, &run, leader, Vec::new(), DEFAULT_GRACE);
    // Refused when neither stop file can be written; one is enough (the signals follow the grace).
    if let (Err(error), false) = (live.write_stop_files(), force) {
        return Err(error);
    }
    let how = if force { Stopping::Forced } else { Stopping::Graceful };
    store.run_request_stop(run_id, how)?;
    live.tell_keeper();
    if force && !live.signal(Signal::SIGTERM) {
        return Err(Error::RunGone {
            id: run_id.to_owned(),
            pid: run.process_group.unwrap_or(0),
        });
    }
    Ok(how)
}

/// [`stop_elsewhere`], then waits until the run's processes are gone: the stop files are kept
/// present, SIGTERM goes to them past `grace` (at once with `force`), SIGKILL 5 s after; each
/// signal only while the run's leader is still the process it started.
/// Returns the run as the store has it at the end (its owner, or recovery, records the outcome).
pub fn stop_elsewhere_and_wait(
    store: &Store,
    run_id: &str,
    session_path: &Path,
    force: bool,
    grace: Duration,
    mut progress: impl FnMut(StopProgress),
) -> Result<RunRecord, Error> {
    let how = stop_elsewhere(store, run_id, session_path, force)?;
    progress(StopProgress::Asked(how));
    let mut stop = StopState::default();
    // `stop_elsewhere` sent a forced stop's SIGTERM.
    stop.request(force, Instant::now());
    let mut seen = Vec::new();
    loop {
        let run = store.run(run_id)?;
        let leader = run.process_identity.clone().filter(ProcessIdentity::is_current);
        let (Some(leader), Status::Running) = (leader, run.status) else {
            break;
        };
        let live = elsewhere(session_path, &run, leader, std::mem::take(&mut seen), grace);
        live.rewrite_stop_files();
        live.note_processes();
        if let Some(signal) = stop.next(Instant::now(), grace, false) {
            if matches!(signal, StopSignal::Sigterm(_)) {
                store.run_request_stop(run_id, Stopping::Forced)?;
            }
            live.signal(unix_signal(signal));
            if matches!(signal, StopSignal::Sigkill(_)) {
                live.end_leftovers();
            }
            progress(StopProgress::Sent(signal));
        }
        seen = std::mem::take(&mut *live.seen.lock().expect("seen lock"));
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_the_end(store, run_id, session_path)
}

/// The run's processes are gone: its owner records its end (a detached run has none, and
/// recovery records it). Waits up to 5 s for that; the stop files go once it is recorded.
fn wait_for_the_end(store: &Store, run_id: &str, session_path: &Path) -> Result<RunRecord, Error> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let run = store.run(run_id)?;
        if run.status != Status::Running {
            remove_stop_files(session_path);
            return Ok(run);
        }
        reconcile(store, SystemTime::now())?;
        if Instant::now() >= deadline {
            return store.run(run_id);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
