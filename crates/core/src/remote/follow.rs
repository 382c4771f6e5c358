//! Following a run of a remote workspace over a [`Link`]: [`RunFollower`] turns the link's
//! events into the run's events to show, in order, each output line exactly once.
//!
//! Output lines are read from the host's store by their number (`run_output` from the `seq`
//! held), never taken from the notifications: a notification of output only says there is more
//! to read (and counts the lines an event of a node is to be shown after). So a line missed while the link was down is read on reconnect, and none is read
//! twice. The run's other events (nodes, a stop, its end) come as notifications while a server
//! follows it: the one that started it, and after a reconnect the new one, which adopts it (it
//! went on through its keeper) at its start or at the `runs_reconcile` this follower asks for
//! every [`RECORD_EVERY`]; its lines are then recorded live on the host again. Its end is said
//! once, from the new server's notification or from its record, whichever comes first. The events
//! of nodes that began or ended while the link was down are not said again (their output lines
//! are).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::remote::link::{Link, LinkEvent};
use crate::remote::methods::Methods;
use crate::remote::protocol::RUNS_RECONCILE;
use crate::runs::runner::{RunEvent, StartedRun};
use crate::status::Status;
use crate::store::{OutputPage, RunRecord};
use crate::vocabulary::error::Error;

/// How many lines one page asks for.
const PAGE_LINES: usize = 5_000;

/// How long an event waits at most for the lines before it to be stored.
const HOLD_AT_MOST: Duration = Duration::from_secs(2);

/// How often the record of a run its server does not follow is read.
pub const RECORD_EVERY: Duration = Duration::from_millis(500);

/// A run of a remote workspace, followed from the line it holds.
pub struct RunFollower {
    run_id: String,
    session_id: String,
    /// The number of the next output line to read (1-based).
    next_seq: i64,
    /// The server connected now did not start the run: its end is read from its record too (it
    /// tells it once it adopted the run).
    unfollowed: bool,
    record_read: Option<Instant>,
    finished: bool,
    /// The output lines the notifications told of (each is stored as the next line).
    heard_lines: i64,
    /// The run's events not shown yet: each waits for the lines that came before it.
    held: VecDeque<Held>,
    /// Since when a stored line waits for its notice.
    ahead_since: Option<Instant>,
}

/// An event of the run, shown once the `after_lines` lines before it were.
struct Held {
    after_lines: i64,
    since: Instant,
    event: RunEvent,
}

impl RunFollower {
    /// Follows `started` from its first line.
    pub fn new(started: &StartedRun) -> RunFollower {
        RunFollower::from_line(&started.run_id, &started.session_id, 1, false)
    }

    /// Follows run `run_id` of session `session_id` from line `next_seq`; `unfollowed` when the
    /// server connected now did not start it (a run attached to again).
    pub fn from_line(run_id: &str, session_id: &str, next_seq: i64, unfollowed: bool) -> RunFollower {
        RunFollower {
            run_id: run_id.to_owned(),
            session_id: session_id.to_owned(),
            next_seq: next_seq.max(1),
            unfollowed,
            record_read: None,
            finished: false,
            heard_lines: next_seq.max(1) - 1,
            held: VecDeque::new(),
            ahead_since: None,
        }
    }

    /// The number of the next output line to read.
    pub fn next_seq(&self) -> i64 {
        self.next_seq
    }

    /// Whether the notifications told of lines not read yet (stored a moment after they are
    /// told of): a reader asks again soon rather than at its next quiet moment.
    pub fn behind(&self) -> bool {
        self.heard_lines >= self.next_seq
    }

    /// Whether the run's end was said.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The run's events to show after `event` of the link (`None`: a quiet moment, when what is
    /// new is read all the same): output lines not shown yet, and the run's other events each
    /// after the lines that came before it. Empty once the run's end was said.
    pub fn on(&mut self, link: &Link, event: Option<&LinkEvent>) -> Result<Vec<RunEvent>, Error> {
        let mut shown = Vec::new();
        if self.finished {
            return Ok(shown);
        }
        match event {
            Some(LinkEvent::Notification(notification)) => match notification.run_event() {
                Some(RunEvent::Output { run_id, .. }) if run_id == self.run_id => self.heard_lines += 1,
                Some(event) if event.run_id() == self.run_id => self.held.push_back(Held {
                    after_lines: self.heard_lines,
                    since: Instant::now(),
                    event,
                }),
                _ => return Ok(shown),
            },
            Some(LinkEvent::Reconnected) => {
                self.unfollowed = true;
                self.record_read = None;
            }
            Some(LinkEvent::State(_)) => return Ok(shown),
            None => {}
        }
        self.read_lines(link, &mut shown)?;
        self.release(&mut shown, true);
        if self.unfollowed && !self.finished && self.record_read.is_none_or(|at| at.elapsed() >= RECORD_EVERY) {
            self.record_read = Some(Instant::now());
            if let Some(end) = self.ended(link)? {
                self.read_lines(link, &mut shown)?;
                self.release(&mut shown, true);
                self.finished = true;
                shown.push(end);
            }
        }
        Ok(shown)
    }

    /// Moves the held events whose lines before them were all shown (or that waited long
    /// enough, or all of them when `all_due` and the counts mean nothing after a reconnect) to
    /// `shown`, in order.
    fn release(&mut self, shown: &mut Vec<RunEvent>, all_due: bool) {
        while let Some(held) = self.held.front() {
            let due = held.after_lines < self.next_seq
                || (all_due && (self.unfollowed || held.since.elapsed() >= HOLD_AT_MOST));
            if !due || self.finished {
                return;
            }
            let held = self.held.pop_front().expect("a front");
            self.finished = matches!(held.event, RunEvent::RunFinished { .. });
            shown.push(held.event);
        }
    }

    /// The lines from [`RunFollower::next_seq`] on, as output events, each after the held
    /// events that came before it.
    fn read_lines(&mut self, link: &Link, shown: &mut Vec<RunEvent>) -> Result<(), Error> {
        loop {
            let page: OutputPage = link.call(
                "run_output",
                &json!({
                    "run_id": self.run_id,
                    "from_seq": self.next_seq,
                    "limit": PAGE_LINES,
                    "node": null,
                    "stream": null,
                }),
            )?;
            let more = page.next_seq.is_some() && !page.lines.is_empty();
            for line in page.lines {
                if line.seq < self.next_seq {
                    continue;
                }
                if !self.wait_for_notice(line.seq) {
                    return Ok(());
                }
                self.release(shown, false);
                self.next_seq = line.seq + 1;
                shown.push(RunEvent::Output {
                    run_id: self.run_id.clone(),
                    stream: line.stream,
                    line: line.text,
                    t_ms: line.at_ms,
                });
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// Whether line `seq` may be shown now. While the server follows the run, a line is told of
    /// before it is stored, and the run's other events in between come in order: a line stored
    /// but not told of yet waits for its notice, so that an event before it is shown first. A
    /// notice that never comes (a slow reader's notifications dropped) is waited for
    /// [`HOLD_AT_MOST`]; after a reconnect nothing is waited for.
    fn wait_for_notice(&mut self, seq: i64) -> bool {
        if self.unfollowed || seq <= self.heard_lines {
            self.ahead_since = None;
            return true;
        }
        let since = *self.ahead_since.get_or_insert_with(Instant::now);
        if since.elapsed() < HOLD_AT_MOST {
            return false;
        }
        self.heard_lines = seq;
        true
    }

    /// The run's end as its record on the host says it, once it ended ([`run_ends`]).
    fn ended(&self, link: &Link) -> Result<Option<RunEvent>, Error> {
        run_ends(link, [(self.run_id.as_str(), self.session_id.as_str())])?
            .remove(&self.run_id)
            .ok_or_else(|| Error::RunNotFound {
                id: self.run_id.clone(),
            })
    }
}

/// The ends of `runs` (each a run id and its session's id) as their records on the host say
/// them, by run id: `None` while a run goes on; a run the host has no record of is left out.
/// Settled first, once (`runs_reconcile`): a run still going that no server follows is adopted by
/// the one connected now (then told of as it goes), one that ended through its keeper while no
/// server followed it is recorded, its output lines too; then one `runs_list` per session. The
/// one reading of a run's end besides the notifications (a follower's, the window's after a
/// reconnect).
pub fn run_ends<'a>(
    link: &Link,
    runs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<HashMap<String, Option<RunEvent>>, Error> {
    let mut by_session: HashMap<&str, Vec<&str>> = HashMap::new();
    for (run_id, session_id) in runs {
        by_session.entry(session_id).or_default().push(run_id);
    }
    let mut ends = HashMap::new();
    if by_session.is_empty() {
        return Ok(ends);
    }
    link.call::<()>(RUNS_RECONCILE, &json!({}))?;
    for (session_id, run_ids) in by_session {
        let records = link.runs_list(Some(session_id.to_owned()))?;
        for run in records.into_iter().filter(|run| run_ids.contains(&run.id.as_str())) {
            let ended = run.status != Status::Running;
            ends.insert(run.id.clone(), ended.then(|| finished_event(run)));
        }
    }
    Ok(ends)
}

/// The end of a run as its record says it.
fn finished_event(run: RunRecord) -> RunEvent {
    let elapsed_ms = run.ended_at.map_or(0, |ended| ended.0.saturating_sub(run.started_at.0));
    RunEvent::RunFinished {
        run_id: run.id,
        session_id: run.session_id,
        status: run.status,
        exit_code: run.exit_code.and_then(|code| i32::try_from(code).ok()),
        elapsed_ms,
        stopped_by: run.stopped_by,
        error: run.error,
    }
}
