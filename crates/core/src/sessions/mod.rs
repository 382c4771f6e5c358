//! The sessions lane: a workspace's files, read and written as untrusted ground. [`untrusted`]:
//! reading without following links, blocking or reading without end; [`private`]: the files the
//! studio writes (0600, never through a link); [`session`]: session folders (one, or a whole
//! workspace), their summaries and fingerprints; [`cost`]: what a node's work used and cost, and
//! totals over nodes; [`files`]: a session's files, listed and paged;
//! [`tail`]: growing files, a piece at a time; [`agents`]: the agents of `.zibby/studio.toml`;
//! [`budget`]: what a run and a workspace may spend, watched as a run goes;
//! [`change`]: what changed in a workspace's sessions, as every consumer reads it.

pub mod agents;
pub mod budget;
pub mod change;
pub mod cost;
pub mod files;
pub mod private;
pub mod session;
pub mod tail;
pub mod untrusted;
