//! studio-core: everything Zibby Studio does, without a window. Its files are grouped in one
//! folder per lane, each lane using only the lanes above it; `tests/it/import_cycles.rs` fails on
//! an import of a lower lane and on any import cycle between files. Every module keeps its short
//! path (`studio_core::runner`, `studio_core::session`, …).
//!
//! - **Vocabulary** (`vocabulary/`): [`error`] (every error and its one list of codes), [`id`]
//!   (session ids, checked before they touch a path), [`launch`] (what running an agent would do,
//!   as trust sees it), [`process`] (who a process is, and whether it still is); [`status`] (one
//!   status word for runs, nodes and sessions) comes from `studio-protocol`.
//! - **Protocol**, the crate `studio-protocol` (`crates/protocol`: pure, no SQLite, notify or nix;
//!   the fuzz target builds on it alone), re-exported here at the same paths: [`protocol`] (the
//!   streaming reader of a run's stdout/stderr: markers, the human timeline, lines bounded at
//!   1 MiB), [`timeline`] (their fold into node executions, attempts and a run status, markers
//!   or not) and [`usage`] (the usage an agent's own stream reports, by its format).
//! - **Sessions** (`sessions/`): [`untrusted`] (reading a workspace's files without following
//!   links, blocking or reading without end), [`private`] (files the studio writes: 0600, never
//!   through a link), [`session`] (session folders, one or a whole workspace, and their
//!   fingerprints), [`cost`] (what a node's work used and cost, read from the agent's own
//!   stream, and totals over nodes), [`files`] (a session's files, listed and paged for the window), [`tail`]
//!   (growing files), [`agents`] (the agents of `.zibby/studio.toml`), [`change`] (what changed in
//!   a workspace's sessions, as the watcher and the runs the studio follows report it).
//! - **Store** (`store/`): SQLite: runs, output, spans, logs, messages, pins, search, trust; its
//!   `index` is the listing through the folder index, `session_model` lays what the store knows
//!   over a folder, `node_logs` reads a node's log lines from its span.
//! - **Compare** (`compare/`): [`compare`] (two runs compared node by node: executions matched
//!   by name and occurrence, bounded line diffs of their output and prompts, `result.json` as a
//!   structural diff), over the store's runs, session folders or captured logs.
//! - **Runs** (`runs/`): [`stop`] (the stop policy: stop files, SIGTERM past the grace period,
//!   SIGKILL 5 s later, as a state machine with the time passed in), [`runner`] (runs the studio
//!   starts, follows and stops, one file per thing that happens to a run), [`keeper`] (the process
//!   between the studio and an agent).
//! - **Share** (`share/`): [`share`] (a session exported as a bundle; a bundle, a session folder or
//!   a captured log imported, untrusted, all or nothing).
//! - **Bucket** (`bucket/`): a prefix of S3, GCS or Azure Blob Storage mirrored read-only into
//!   the cache and opened as a workspace (`bucket::Mirror`).
//! - **Watch** (`watch/`): [`watcher`] (session folders as they change, as typed changes).
//! - **App** (`app/`): [`live`] (the runs the studio follows, joined to the watcher's changes) and
//!   the app service the window and `zstudio` share: the store opened and reconciled, runs of
//!   agents, stops here or elsewhere, the window's [`app::Studio`] and the bodies of its commands
//!   ([`app::operations`]).
//! - **Remote** (`remote/`): [`remote`] (the studio server of `zstudio serve --stdio` over the app
//!   service, its JSON-lines protocol, the client that talks to one over a process's pipes, and
//!   [`remote::ssh`]: a workspace on another machine reached over the system's `ssh`).

// The core reports through its return values and `tracing`, never by printing or exiting: what a
// user sees is the window's and the CLI's to say.
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

pub mod app;
pub mod bucket;
pub mod compare;
pub mod remote;
pub mod runs;
pub mod sessions;
pub mod share;
pub mod store;
pub mod vocabulary;
pub mod watch;

// Each module keeps its short path (`studio_core::runner`, …) for the CLI, the shell and tests.
pub use app::live;
pub use runs::{keeper, runner, stop};
pub use sessions::{agents, budget, change, cost, files, private, session, tail, untrusted};
pub use vocabulary::{containment, error, id, label, launch, process, size, visible};
pub use watch::watcher;

pub use studio_protocol::{protocol, status, timeline, usage};

pub use error::{Error, ErrorCode};
pub use id::SessionId;
pub use session::{Session, SessionSummary, Workspace};
pub use status::Status;
