//! The runs lane: starting, following and stopping agent runs. [`stop`]: the stop policy as a
//! state machine; [`runner`]: the supervisor of the runs the studio starts, one file per thing
//! that happens to a run (spawn, follow, stopping, finish, stopping runs elsewhere, captured
//! output recorded); [`keeper`]: the process between the studio and an agent.

pub mod keeper;
pub mod runner;
pub mod stop;
