//! Runs a studio process adopts (`Supervisor::adopt`): kept runs still going that no
//! live studio process owns any more (the one that followed them died, or left them running and
//! quit; a remote workspace's server whose link dropped). Each is claimed in the store
//! ([`crate::store::Store::claim_run`]: one process alone gets it), its keeper's files are read
//! from the start through the reader and the fold so that the lines the store lacks are recorded
//! (each line once: lines are counted per stream against those stored) and its nodes' spans are
//! matched to those recorded; then it is followed as a run this studio started: every 100 ms what
//! its keeper wrote since is read ([`KeptTail`]) and handed to the run's thread as a child's pipes
//! are ([`super::follow`]), which records it, publishes its events, looks after its stop and
//! records its end (from the keeper's `exit` file) when the keeper is gone. What was recorded
//! before it was adopted is not said again to subscribers (it is in the store).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::captured::{record_unfollowed_nodes, Unrecorded, UnrecordedLines};
use super::follow::{Message, Resumed};
use super::followed::FollowedRun;
use super::kept_tail::KeptTail;
use super::live_run::LiveRun;
use super::request::DEFAULT_GRACE;
use super::run_files::MESSAGES_FILE;
use super::shared::Shared;
use crate::sessions::session::Workspace;
use crate::store::{RunRecord, SpanKind, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::process::ProcessIdentity;

/// How often an adopted run's keeper files are read for what is new.
const POLL: Duration = Duration::from_millis(100);

/// Adopts the live kept runs no live studio process owns, of the workspace with root `root`
/// (every workspace's with `None`); returns their ids. A run whose agent ended, or whose keeper
/// is gone, is left to [`super::captured::reconcile`]; one another process claimed first is left to it.
pub(super) fn adopt_runs(shared: &Arc<Shared>, root: Option<&std::path::Path>) -> Result<Vec<String>, Error> {
    let mut adopted = Vec::new();
    if shared.shutting_down.load(Ordering::SeqCst) {
        return Ok(adopted);
    }
    for run in shared.store.detached_kept_runs()? {
        if root.is_some_and(|root| run.workspace != root) {
            continue;
        }
        let Some(dir) = run.keeper_dir.clone() else { continue };
        let leader = run.process_identity.clone().filter(ProcessIdentity::is_current);
        let (Some(leader), None) = (leader, crate::runs::keeper::read_exit(&dir)) else {
            continue;
        };
        if !shared.store.claim_run(&run.id, run.owner_pid)? {
            continue;
        }
        let run_id = run.id.clone();
        match follow_adopted(shared, run, dir, leader) {
            Ok(()) => {
                tracing::info!(%run_id, "a run no studio followed is followed here");
                adopted.push(run_id);
            }
            Err(error) => {
                tracing::error!(%run_id, %error, "cannot follow a run no studio followed");
                let_go(shared, &run_id);
            }
        }
    }
    Ok(adopted)
}

/// A run adopted that cannot be followed after all: nobody owns it again (a studio that looks
/// later settles it).
fn let_go(shared: &Shared, run_id: &str) {
    shared.live.lock().expect("live lock").remove(run_id);
    if let Err(error) = shared.store.run_detach(run_id) {
        tracing::error!(%run_id, %error, "cannot let go of a run");
    }
}

/// Follows `run`, claimed, whose keeper `leader` keeps its files in `dir`: its thread reads what
/// the store lacks, then follows it live.
fn follow_adopted(shared: &Arc<Shared>, run: RunRecord, dir: PathBuf, leader: ProcessIdentity) -> Result<(), Error> {
    let session_id = SessionId::parse(&run.session_id)?;
    let workspace = Workspace::from_canonical_root(run.workspace.clone());
    let session_path = workspace.session_path(&session_id);
    let budget = run.budget.unwrap_or_default();
    let live = Arc::new(LiveRun::new(
        &run.id,
        session_path,
        Some(leader),
        Vec::new(),
        DEFAULT_GRACE,
        Some(dir.clone()),
    ));
    let started_at = std::time::UNIX_EPOCH + Duration::from_millis(run.started_at.0);
    // Output times and the elapsed time count from the run's start, as for a run started here.
    let started = SystemTime::now()
        .duration_since(started_at)
        .ok()
        .and_then(|ago| Instant::now().checked_sub(ago))
        .unwrap_or_else(Instant::now);
    let followed = FollowedRun {
        shared: shared.clone(),
        live: live.clone(),
        session_id,
        run_id: run.id.clone(),
        started,
        started_at,
        messages_file: dir.join(MESSAGES_FILE),
    };
    shared
        .live
        .lock()
        .expect("live lock")
        .insert(run.id.clone(), live.clone());
    let thread = std::thread::Builder::new()
        .name("run-adopted".into())
        .spawn(move || {
            let store = followed.shared.store.clone();
            let mut tail = KeptTail::new(&dir);
            let resumed = match catch_up(&store, &followed.run_id, &mut tail) {
                Ok(Some(resumed)) => resumed,
                Ok(None) => {
                    tracing::info!(run_id = %followed.run_id, "a run whose keeper keeps no times file is settled when it ends");
                    let_go(&followed.shared, &followed.run_id);
                    return;
                }
                Err(error) => {
                    tracing::error!(run_id = %followed.run_id, %error, "cannot read a run no studio followed");
                    let_go(&followed.shared, &followed.run_id);
                    return;
                }
            };
            let (sender, receiver) = mpsc::sync_channel::<Message>(256);
            let tailing = std::thread::Builder::new()
                .name("run-adopted-files".into())
                .spawn(move || tail_keeper_files(tail, &live, &dir, &sender));
            if let Err(error) = tailing {
                tracing::error!(run_id = %followed.run_id, %error, "cannot start reading a run's files");
                let_go(&followed.shared, &followed.run_id);
                return;
            }
            // Held to the limits it was started with, from what its log says was told already.
            let budget = followed.resume_budget(budget, &workspace);
            followed.follow(receiver, Some(resumed), budget);
        })
        .map_err(|e| Error::io_spawn("thread", e))?;
    shared.threads.lock().expect("threads lock").push(thread);
    Ok(())
}

/// Reads the keeper's files as far as its `times` file goes now: the lines the store lacks are
/// recorded (those a studio recorded while it followed the run are counted, not recorded again),
/// and the nodes' spans recorded as the output says (those still running left open). Refused for
/// a keeper without a `times` file (an older one's: what it holds cannot be told apart from what
/// the studio read), which is settled at its end as before.
fn catch_up(store: &Store, run_id: &str, tail: &mut KeptTail) -> Result<Option<Resumed>, Error> {
    let mut unrecorded = Unrecorded::new(store, run_id)?;
    tail.read_new(&mut |stream, bytes, at_ms| unrecorded.push(stream, bytes, at_ms))?;
    if tail.start.is_none() {
        return Ok(None);
    }
    let Unrecorded { reader, mut lines } = unrecorded;
    lines.writer.flush()?;
    if lines.seen.0 < lines.stored.0 || lines.seen.1 < lines.stored.1 {
        tracing::warn!(run_id, seen = ?lines.seen, stored = ?lines.stored, "the store has more lines than the keeper's files");
    }
    let UnrecordedLines { fold, usage, .. } = lines;
    let timeline = fold.timeline(None);
    let node_spans = record_unfollowed_nodes(store, run_id, &fold, &timeline, SystemTime::now(), tail.start)?;
    let run_span = store
        .spans(run_id)?
        .into_iter()
        .find(|span| span.kind == SpanKind::Run)
        .map(|span| span.id);
    Ok(Some(Resumed {
        reader,
        fold,
        usage,
        run_span,
        node_spans,
    }))
}

/// The run's keeper files read every [`POLL`] for what is new, handed to the run's thread as
/// its pipes' bytes are; once the keeper is gone (its `exit` written, or it was killed), the
/// rest is read and the end said. Stops when the run is left running again.
fn tail_keeper_files(mut tail: KeptTail, live: &LiveRun, dir: &std::path::Path, sender: &SyncSender<Message>) {
    loop {
        if live.detached.load(Ordering::SeqCst) {
            return;
        }
        // Looked at before reading: what the keeper wrote before it ended is read below.
        let ended = crate::runs::keeper::read_exit(dir).is_some()
            || !live.leader.as_ref().is_some_and(ProcessIdentity::is_current);
        let mut heard = true;
        let mut send = |stream, bytes: &[u8], at_ms| {
            heard = heard && sender.send(Message::Chunk(stream, bytes.to_vec(), at_ms)).is_ok();
        };
        let read = if ended {
            tail.read_rest(&mut send).map(|_| ())
        } else {
            tail.read_new(&mut send)
        };
        if let Err(error) = read {
            tracing::error!(%error, "cannot read a run keeper's files");
        }
        if !heard {
            return;
        }
        if ended {
            let _ = sender.send(Message::Exited(None));
            return;
        }
        std::thread::sleep(POLL);
    }
}
