//! studio-protocol: the protocol lane of Zibby Studio, pure (bytes in, events and a timeline out;
//! no files, no processes, no store). studio-core re-exports its modules at the same paths
//! (`studio_core::protocol`, `studio_core::timeline`, `studio_core::status`).
//!
//! - [`status`] (one status word for runs, nodes and sessions; vocabulary the timeline needs).
//! - [`protocol`] (the streaming reader of a run's stdout/stderr: markers, the human timeline,
//!   lines bounded at 1 MiB).
//! - [`timeline`] (their fold into node executions, attempts and a run status, markers or not).
//! - [`usage`] (what an agent's own stream says a node used: tokens, models, turns, cost).

// Like the core: it reports through return values, never by printing or exiting.
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

pub mod protocol;
pub mod status;
pub mod timeline;
pub mod usage;

pub use status::Status;
