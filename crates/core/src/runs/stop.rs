//! A Stop that always stops, decided in one place: the policy as a state machine with the time
//! passed in, so the runs this process follows (`Supervisor::stop`) and the runs another process
//! follows (`stop_elsewhere_and_wait`), both in the runner, escalate alike.
//!
//! A stop writes the stop files first: the current node finishes, then the engine stops
//! (docs/protocol.md §3). Past the grace period, or at once when forced, the run's processes get
//! SIGTERM; [`KILL_AFTER`] later, SIGKILL. When the run's leader exits while stopping, what is
//! left of it gets SIGKILL at once: no process of a stopped run survives it.
//!
//! The outcomes are typed; what they are called belongs to the window and the CLI.

use std::time::{Duration, Instant};

use serde::Serialize;

/// Between SIGTERM and SIGKILL.
pub const KILL_AFTER: Duration = Duration::from_secs(5);

/// How a stop was asked for: the stop files (`Graceful`: the current node finishes first), or
/// signals (`Forced`: SIGTERM now, SIGKILL [`KILL_AFTER`] later). The same words as how a run was
/// stopped, so one type: the protocol crate's.
pub use crate::timeline::StoppedBy as Stopping;

/// A signal the policy says to send now, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "signal", content = "because", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StopSignal {
    Sigterm(TermBecause),
    Sigkill(KillBecause),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TermBecause {
    /// A forced stop.
    Forced,
    /// The grace period passed and the run goes on.
    GraceOver,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KillBecause {
    /// [`KILL_AFTER`] passed since SIGTERM.
    StillRunning,
    /// The run's leader exited while stopping; what it left behind goes with it.
    LeaderExited,
}

/// What stopping a run another process follows has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopProgress {
    /// The stop was asked for (the stop files written, and SIGTERM sent when forced).
    Asked(Stopping),
    /// The policy escalated.
    Sent(StopSignal),
}

/// Where one run's stop is: nothing asked, asked (when), signalled (when).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopState {
    requested_at: Option<Instant>,
    term_sent_at: Option<Instant>,
    kill_sent: bool,
}

impl StopState {
    /// A stop asked at `now`. A second stop of a run already stopping is forced (the user pressed
    /// Stop again, or Ctrl-C twice). Returns how it stops, and SIGTERM when it is to be sent now.
    pub fn request(&mut self, force: bool, now: Instant) -> (Stopping, Option<StopSignal>) {
        let forced = force || self.requested_at.is_some();
        self.requested_at.get_or_insert(now);
        if !forced {
            return (Stopping::Graceful, None);
        }
        if self.term_sent_at.is_some() {
            return (Stopping::Forced, None);
        }
        self.term_sent_at = Some(now);
        (Stopping::Forced, Some(StopSignal::Sigterm(TermBecause::Forced)))
    }

    /// What to send at `now`, `grace` after the stop was asked, given whether the run's leader
    /// has exited; at most one signal per call, each signal once.
    pub fn next(&mut self, now: Instant, grace: Duration, leader_exited: bool) -> Option<StopSignal> {
        let requested = self.requested_at?;
        if self.kill_sent {
            return None;
        }
        if leader_exited {
            self.kill_sent = true;
            return Some(StopSignal::Sigkill(KillBecause::LeaderExited));
        }
        match self.term_sent_at {
            None if now.saturating_duration_since(requested) >= grace => {
                self.term_sent_at = Some(now);
                Some(StopSignal::Sigterm(TermBecause::GraceOver))
            }
            Some(term) if now.saturating_duration_since(term) >= KILL_AFTER => {
                self.kill_sent = true;
                Some(StopSignal::Sigkill(KillBecause::StillRunning))
            }
            _ => None,
        }
    }

    pub fn is_requested(&self) -> bool {
        self.requested_at.is_some()
    }

    /// Whether the studio sent the run a signal (its end is then the studio's doing).
    pub fn signalled(&self) -> bool {
        self.term_sent_at.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(30);

    enum Step {
        Request { force: bool, at: u64 },
        Tick { at: u64, exited: bool },
    }

    enum Expect {
        Requested(Stopping, Option<StopSignal>),
        Sends(Option<StopSignal>),
    }

    use Expect::{Requested, Sends};
    use Step::{Request, Tick};
    use StopSignal::{Sigkill, Sigterm};

    /// Each case: steps at seconds after the start, each with what it must give.
    fn cases() -> Vec<(&'static str, Vec<(Step, Expect)>)> {
        let none = || Sends(None);
        vec![
            (
                "no stop asked: never a signal",
                vec![
                    (Tick { at: 0, exited: false }, none()),
                    (
                        Tick {
                            at: 1000,
                            exited: false,
                        },
                        none(),
                    ),
                    (Tick { at: 1000, exited: true }, none()),
                ],
            ),
            (
                "graceful: nothing within the grace period, SIGTERM at its end, SIGKILL 5 s later",
                vec![
                    (Request { force: false, at: 10 }, Requested(Stopping::Graceful, None)),
                    (Tick { at: 39, exited: false }, none()),
                    (
                        Tick { at: 40, exited: false },
                        Sends(Some(Sigterm(TermBecause::GraceOver))),
                    ),
                    (Tick { at: 41, exited: false }, none()),
                    (Tick { at: 44, exited: false }, none()),
                    (
                        Tick { at: 45, exited: false },
                        Sends(Some(Sigkill(KillBecause::StillRunning))),
                    ),
                    (Tick { at: 100, exited: false }, none()),
                ],
            ),
            (
                "graceful, and the run ends within the grace period: what it left gets SIGKILL",
                vec![
                    (Request { force: false, at: 0 }, Requested(Stopping::Graceful, None)),
                    (
                        Tick { at: 3, exited: true },
                        Sends(Some(Sigkill(KillBecause::LeaderExited))),
                    ),
                    (Tick { at: 4, exited: true }, none()),
                ],
            ),
            (
                "forced: SIGTERM at once, SIGKILL 5 s later",
                vec![
                    (
                        Request { force: true, at: 2 },
                        Requested(Stopping::Forced, Some(Sigterm(TermBecause::Forced))),
                    ),
                    (Tick { at: 6, exited: false }, none()),
                    (
                        Tick { at: 7, exited: false },
                        Sends(Some(Sigkill(KillBecause::StillRunning))),
                    ),
                ],
            ),
            (
                "a second stop forces the first",
                vec![
                    (Request { force: false, at: 0 }, Requested(Stopping::Graceful, None)),
                    (
                        Request { force: false, at: 3 },
                        Requested(Stopping::Forced, Some(Sigterm(TermBecause::Forced))),
                    ),
                    (Tick { at: 7, exited: false }, none()),
                    (
                        Tick { at: 8, exited: false },
                        Sends(Some(Sigkill(KillBecause::StillRunning))),
                    ),
                ],
            ),
            (
                "a third stop sends no second SIGTERM",
                vec![
                    (
                        Request { force: true, at: 0 },
                        Requested(Stopping::Forced, Some(Sigterm(TermBecause::Forced))),
                    ),
                    (Request { force: true, at: 1 }, Requested(Stopping::Forced, None)),
                    (
                        Tick { at: 5, exited: false },
                        Sends(Some(Sigkill(KillBecause::StillRunning))),
                    ),
                    (Request { force: true, at: 6 }, Requested(Stopping::Forced, None)),
                    (Tick { at: 6, exited: true }, none()),
                ],
            ),
            (
                "the grace period counts from the first stop, not a later one",
                vec![
                    (Request { force: false, at: 0 }, Requested(Stopping::Graceful, None)),
                    (
                        Tick { at: 30, exited: false },
                        Sends(Some(Sigterm(TermBecause::GraceOver))),
                    ),
                    (Request { force: true, at: 31 }, Requested(Stopping::Forced, None)),
                    (
                        Tick { at: 35, exited: false },
                        Sends(Some(Sigkill(KillBecause::StillRunning))),
                    ),
                ],
            ),
            (
                "a clock read before the stop (another thread) is not a negative time",
                vec![
                    (Request { force: false, at: 10 }, Requested(Stopping::Graceful, None)),
                    (Tick { at: 5, exited: false }, none()),
                ],
            ),
        ]
    }

    #[test]
    fn the_stop_policy_table() {
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        for (name, steps) in cases() {
            let mut state = StopState::default();
            for (index, (step, expect)) in steps.into_iter().enumerate() {
                match (step, expect) {
                    (Request { force, at: t }, Requested(how, signal)) => {
                        assert_eq!(state.request(force, at(t)), (how, signal), "{name}: step {index}")
                    }
                    (Tick { at: t, exited }, Sends(signal)) => {
                        assert_eq!(state.next(at(t), GRACE, exited), signal, "{name}: step {index}")
                    }
                    _ => panic!("{name}: step {index} pairs a step with the other step's answer"),
                }
            }
        }
    }

    #[test]
    fn outcomes_serialise_as_the_window_and_the_json_stream_read_them() {
        assert_eq!(serde_json::to_value(Stopping::Forced).unwrap(), "forced");
        assert_eq!(
            serde_json::to_value(StopSignal::Sigterm(TermBecause::GraceOver)).unwrap(),
            serde_json::json!({ "signal": "SIGTERM", "because": "grace_over" })
        );
    }
}
