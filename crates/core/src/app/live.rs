//! One stream of live changes: the runs the studio follows join the watcher's session changes.
//!
//! [`RunChanges`] reads a supervisor's [`RunEvent`]s and passes them to the same [`ChangeSink`]
//! the [`crate::watch::watcher::Watcher`] feeds: node and run-status changes at once, output lines
//! gathered over a window (100 ms by default) and at most [`MAX_LINES_PER_CHANGE`] lines per
//! change, so a run printing 10,000 lines a second yields about ten output changes a second.
//! The store keeps every line; a change that had to leave lines out says how many.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::runs::runner::{RunEvent, RunEvents};
pub use crate::sessions::change::RunLine;
use crate::sessions::change::{Change, ChangeSink};
use crate::status::Status;
use crate::store::Store;
use crate::vocabulary::id::SessionId;

/// The most lines one output change carries.
pub const MAX_LINES_PER_CHANGE: usize = 2_000;

#[derive(Default)]
struct PendingOutput {
    lines: Vec<RunLine>,
    skipped: u64,
}

/// Turns run events into changes on a thread of its own. The thread sleeps while no run prints
/// and ends when its subscription closes (the supervisor is dropped), after sending what it holds.
pub struct RunChanges {
    _thread: JoinHandle<()>,
}

impl RunChanges {
    /// `events` from [`crate::runs::runner::Supervisor::subscribe`]; the store tells each run's
    /// workspace and session.
    pub fn start(events: RunEvents, store: Arc<Store>, sink: ChangeSink, window: Duration) -> RunChanges {
        let thread = std::thread::Builder::new()
            .name("run-changes".into())
            .spawn(move || Translator::new(store, sink).run(events, window))
            .expect("a thread can be started");
        RunChanges { _thread: thread }
    }
}

struct Translator {
    store: Arc<Store>,
    sink: ChangeSink,
    /// Workspace and session of each run, from the store.
    runs: HashMap<String, (PathBuf, SessionId)>,
    pending: HashMap<String, PendingOutput>,
    /// The depth each open node began at, to report it with its end.
    depths: HashMap<(String, String), usize>,
}

impl Translator {
    fn new(store: Arc<Store>, sink: ChangeSink) -> Translator {
        Translator {
            store,
            sink,
            runs: HashMap::new(),
            pending: HashMap::new(),
            depths: HashMap::new(),
        }
    }

    /// Output is sent `window` after its first line; with none waiting, the thread sleeps until
    /// the next event (no timer ticks while nothing runs).
    fn run(mut self, events: RunEvents, window: Duration) {
        let mut due: Option<Instant> = None;
        loop {
            let received = match due {
                None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => events.recv_timeout(due.saturating_duration_since(Instant::now())),
            };
            match received {
                Ok(event) => {
                    if matches!(event, RunEvent::Output { .. }) && due.is_none() {
                        due = Some(Instant::now() + window);
                    }
                    self.take(event);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if due.is_some_and(|due| Instant::now() >= due) {
                self.flush_all();
                due = None;
            }
        }
        self.flush_all();
    }

    fn place(&mut self, run_id: &str) -> Option<(PathBuf, SessionId)> {
        if let Some(place) = self.runs.get(run_id) {
            return Some(place.clone());
        }
        let run = self.store.run(run_id).ok()?;
        let place = (run.workspace, SessionId::parse(&run.session_id).ok()?);
        self.runs.insert(run_id.to_owned(), place.clone());
        Some(place)
    }

    fn take(&mut self, event: RunEvent) {
        let run_id = event.run_id().to_owned();
        if let RunEvent::Output { stream, line, t_ms, .. } = event {
            let pending = self.pending.entry(run_id).or_default();
            if pending.lines.len() < MAX_LINES_PER_CHANGE {
                pending.lines.push(RunLine { stream, line, t_ms });
            } else {
                pending.skipped += 1;
            }
            return;
        }
        // What the run printed before a node or status change comes before it.
        self.flush(&run_id);
        let Some((workspace, session_id)) = self.place(&run_id) else {
            tracing::warn!(%run_id, "a run the store does not know; its change is dropped");
            return;
        };
        let change = match event {
            RunEvent::RunStarted { .. } => run_status(workspace, session_id, run_id.clone(), Status::Running, false),
            RunEvent::Stopping { .. } => run_status(workspace, session_id, run_id.clone(), Status::Running, true),
            RunEvent::NodeBegin { node, depth, t_ms, .. } => {
                self.depths.insert((run_id.clone(), node.clone()), depth);
                Change::NodeChanged {
                    workspace,
                    session_id,
                    run_id: run_id.clone(),
                    node,
                    depth,
                    status: Status::Running,
                    t_ms,
                }
            }
            RunEvent::NodeEnd { node, status, t_ms, .. } => Change::NodeChanged {
                depth: self.depths.remove(&(run_id.clone(), node.clone())).unwrap_or(0),
                workspace,
                session_id,
                run_id: run_id.clone(),
                node,
                status,
                t_ms,
            },
            RunEvent::RunFinished {
                status,
                exit_code,
                elapsed_ms,
                stopped_by,
                error,
                ..
            } => {
                self.runs.remove(&run_id);
                self.depths.retain(|(run, _), _| *run != run_id);
                Change::RunStatusChanged {
                    workspace,
                    session_id,
                    run_id: run_id.clone(),
                    status,
                    stopping: false,
                    exit_code,
                    elapsed_ms: Some(elapsed_ms),
                    stopped_by,
                    error,
                }
            }
            // The window lists the run's nodes from the store again, where it is forgotten too.
            RunEvent::NodeDiscarded { .. } => return,
            // In the run's log (`budget.*`), which the window reads; no change of its own yet.
            RunEvent::BudgetWarning { .. } | RunEvent::BudgetReached { .. } | RunEvent::BudgetUnpriced { .. } => return,
            RunEvent::Output { .. } => unreachable!("output is gathered above"),
        };
        (self.sink)(change);
    }

    fn flush(&mut self, run_id: &str) {
        let Some(pending) = self.pending.remove(run_id) else {
            return;
        };
        if pending.lines.is_empty() {
            return;
        }
        if let Some((workspace, session_id)) = self.place(run_id) {
            (self.sink)(Change::RunOutputAppended {
                workspace,
                session_id,
                run_id: run_id.to_owned(),
                lines: pending.lines,
                skipped: pending.skipped,
            });
        }
    }

    fn flush_all(&mut self) {
        let runs: Vec<String> = self.pending.keys().cloned().collect();
        for run_id in runs {
            self.flush(&run_id);
        }
    }
}

fn run_status(workspace: PathBuf, session_id: SessionId, run_id: String, status: Status, stopping: bool) -> Change {
    Change::RunStatusChanged {
        workspace,
        session_id,
        run_id,
        status,
        stopping,
        exit_code: None,
        elapsed_ms: None,
        stopped_by: None,
        error: None,
    }
}
