//! Remote workspaces: a workspace on another machine, reached over the system's `ssh`.
//!
//! - [`ssh`]: the target (`host:path`, `ssh://host/path`), the connection (one ssh
//!   ControlMaster per host, commands through it, closed with `-O exit`) and the bootstrap of
//!   the server binary on the host.

pub mod ssh;
