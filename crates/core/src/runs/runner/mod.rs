//! Runs the studio starts (docs/protocol.md §1, §3, §4 as behaviour), one file per thing that happens
//! to a run:
//!
//! - `supervisor`: the [`Supervisor`], which owns the live runs. Its `start` is the steps of
//!   `spawn` then `follow`; its `stop`, `detach` and `shutdown` act on the runs it follows.
//! - `spawn`: a run made ready (its session folder, its command, its rows in the store, the
//!   conversation for the agent) and its child spawned in its own process group with the
//!   protocol's environment; or, when it cannot start, recorded as a run that ended at once with
//!   status `error` and a message saying why.
//! - `follow`: two threads read the child's stdout and stderr as bytes arrive, a third waits for
//!   it, and the run's own thread feeds the bytes through the protocol reader, records lines,
//!   nodes, logs and spans in the store, and publishes [`RunEvent`]s to subscribers as they
//!   happen.
//! - `stopping`: a stop of a run this studio follows. Stop writes both stop files at once and
//!   keeps them there until the process exits; past the grace period (or on a forced stop) the
//!   whole process group gets SIGTERM, then SIGKILL 5 s later; once a stopped run's process has
//!   exited, whatever is left of its group is killed. Every signal also goes to the processes
//!   below the run's leader (and those seen below it while it was stopping), so a child that
//!   left the group with `setsid` is not missed, and none goes anywhere unless the leader is still
//!   the process the run started ([`crate::vocabulary::process::ProcessIdentity`]). A kept run's
//!   keeper is told of a stop (SIGUSR1) and ends what the agent leaves behind (see
//!   [`crate::runs::keeper`]).
//! - `budget`: a run held to its budget: refused before it starts past the workspace's daily
//!   budget (unless asked), stopped gracefully at its next node past its own, warned at 80 %.
//! - `finish`: the end of a followed run: its status from its exit and output, the nodes it left
//!   open ended, its end recorded and announced.
//! - `run_record`: the studio's record of an ended run written into its session folder, from the
//!   store, by every path that settles a run (so a copy of the folder reads as the original).
//! - `elsewhere`: stopping runs another studio process follows ([`stop_elsewhere`],
//!   [`stop_elsewhere_and_wait`]), through what the store knows of them.
//! - `outside`: a graceful stop of a run the studio did not start ([`stop_outside`]): its stop
//!   files alone; it is never forced.
//! - `captured`: a run's captured output recorded as if followed ([`record_captured_output`]):
//!   for a run that went on while no studio followed it ([`reconcile`]) and for an imported log.
//! - `adopted`: a kept run still going that no live studio process owns (its studio died, or
//!   left it running) taken over ([`Supervisor::adopt`]): claimed in the store, the lines the
//!   store lacks recorded from its keeper's files, then followed as a run started here, its
//!   keeper's files read as they grow (`kept_tail`) in place of pipes.
//!
//! What they share: `request` (what to run, and what starting it answers), `events` (what
//! subscribers hear), `live_run` (a run's processes and its stop), `shared` (the supervisor's
//! state and its subscribers), `followed` (a run its thread follows), `run_files` (the stop files
//! and the conversation file).

mod adopted;
mod budget;
mod captured;
mod elsewhere;
mod events;
mod finish;
mod follow;
mod followed;
mod kept_tail;
mod live_run;
mod outside;
mod request;
mod run_files;
mod run_record;
mod shared;
mod spawn;
mod stopping;
mod subscription;
mod supervisor;

pub use budget::workspace_spend_since;
pub use captured::{reconcile, record_captured_output};
pub use elsewhere::{stop_elsewhere, stop_elsewhere_and_wait};
pub use events::RunEvent;
pub use outside::{stop_outside, OutsideStop};
pub use request::{Keeper, RunRequest, StartedRun, DEFAULT_GRACE};
pub use run_files::STOP_FILES;
pub use spawn::new_session_id;
#[cfg(test)]
pub(crate) use subscription::event_queue;
pub use subscription::{Heard, QueueGauge, RunEvents};
pub use supervisor::Supervisor;
