//! studio-core: everything Zibby Studio does, without a window. The modules, by lane, each using
//! only those above it; `tests/it/import_cycles.rs` fails on any import cycle between files.
//!
//! - **Vocabulary**: [`error`] (every error and its stable code), [`id`] (session ids, checked
//!   before they touch a path), [`status`] (one status word for runs, nodes and sessions; from
//!   `studio-protocol`), [`launch`] (what running an agent would do, as trust sees it), [`change`]
//!   (what changed in a workspace's sessions: the watcher's changes and those of the runs the
//!   studio follows).
//! - **Protocol**, the crate `studio-protocol` (`crates/protocol`: pure, no SQLite, notify or nix;
//!   the fuzz target builds on it alone), re-exported here at the same paths: [`protocol`] (the
//!   streaming reader of a run's stdout/stderr: markers, the human timeline, lines bounded at
//!   1 MiB) and [`timeline`] (their fold into node executions, attempts and a run status, markers
//!   or not).
//! - **Sessions**: [`untrusted`] (reading a workspace's files without following links, blocking or
//!   reading without end), [`session`] (session folders, one or a whole workspace, and their
//!   fingerprints), [`files`] (a session's files, listed and paged for the window), [`tail`]
//!   (growing files, a piece at a time).
//! - **Store**: [`store`] (SQLite: runs, output, spans, logs, messages, pins, search, trust; its
//!   `index` is the listing through the folder index, `recorded_runs` lays what the store knows
//!   over a folder, `node_logs` reads a node's log lines from its span).
//! - **Runs**: [`agents`] (the agents of `.zibby/studio.toml`, and what running one would do),
//!   [`stop`] (the stop policy: stop files, SIGTERM past the grace period, SIGKILL 5 s later, as a
//!   state machine with the time passed in), [`runner`] (runs the studio starts, follows and
//!   stops), [`keeper`] (the process between the studio and an agent), [`process`] (questions
//!   about processes: alive, who they are, what they started), [`private`] (files the studio
//!   writes: 0600, never through a link).
//! - **Watch**: [`watcher`] (session folders as they change, as typed changes).
//! - **App**: [`live`] (the runs the studio follows, joined to the watcher's changes), [`app`] (the
//!   app service the window and `zstudio` share: the store opened and reconciled, runs of agents,
//!   stops here or elsewhere, the window's [`app::Studio`]).

// The core reports through its return values and `tracing`, never by printing or exiting: what a
// user sees is the window's and the CLI's to say.
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

pub mod agents;
pub mod app;
pub mod change;
pub mod error;
pub mod files;
pub mod id;
pub mod keeper;
pub mod launch;
pub mod live;
pub mod private;
pub mod process;
pub mod runner;
pub mod session;
pub mod stop;
pub mod store;
pub mod tail;
pub mod untrusted;
pub mod watcher;

pub use studio_protocol::{protocol, status, timeline};

pub use error::{Error, ErrorCode};
pub use id::SessionId;
pub use session::{Session, SessionSummary, Workspace};
pub use status::Status;
