//! What to run, what starting it answers, and the keeper runs may go through.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::sessions::session::Workspace;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::launch::{Budget, InheritEnv};

/// How long a graceful stop waits before signals, unless the run asks for another.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub workspace: Workspace,
    /// The agent's name, when it is one of the workspace's agents.
    pub agent: Option<String>,
    /// The command, placeholders not yet filled.
    pub command: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    /// Which of the studio's environment the agent gets (never the studio's own variables).
    pub inherit_env: InheritEnv,
    /// Continue (or replay in) this session; a new one otherwise.
    pub session: Option<SessionId>,
    pub prompt: Option<String>,
    /// Replay this node.
    pub node: Option<String>,
    /// How long a graceful stop waits before signals.
    pub grace: Duration,
    /// What the run may spend (its nodes' priced cost, their tokens: stopped at the next node
    /// past either), and what the workspace may spend today (checked before it starts).
    pub budget: Budget,
    /// Start it even when the workspace's spend today is past its daily budget (said in its log).
    pub over_budget: bool,
}

/// A run that was started (or that could not start: then it has already finished, as `error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StartedRun {
    pub run_id: String,
    pub session_id: String,
    pub session_path: PathBuf,
    pub pid: Option<u32>,
}

/// The run keeper (see [`crate::runs::keeper`]): a program that understands
/// `keep --run-dir DIR -- COMMAND...` (`zstudio keep`), and where its run folders go.
#[derive(Debug, Clone)]
pub struct Keeper {
    pub program: PathBuf,
    pub runs_dir: PathBuf,
}
