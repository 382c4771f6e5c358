//! The errors of the core; each names the path or id it is about.

use std::path::PathBuf;

/// Every error the core, the CLI and the window report; [`Error::code`] is what IPC and `--json`
/// carry. New variants may come: match with a fallback arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid session id `{id}`: {reason}")]
    InvalidSessionId { id: String, reason: &'static str },
    #[error("workspace not found: {path}")]
    WorkspaceNotFound { path: PathBuf },
    #[error("not a folder: {path}")]
    NotAFolder { path: PathBuf },
    #[error("no session `{id}` in {sessions_dir}")]
    SessionNotFound { id: String, sessions_dir: PathBuf },
    #[error("store {path}: {source}")]
    Store {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("store {path} has schema version {found}, newer than this studio knows ({known}): update Zibby Studio")]
    StoreTooNew { path: String, found: i64, known: i64 },
    #[error("no data folder for the store: set XDG_DATA_HOME or HOME, or pass --db PATH")]
    NoDataFolder,
    #[error("no run `{id}` in the store")]
    RunNotFound { id: String },
    #[error("session `{id}` has a live run ({run_id}): stop it first")]
    SessionLive { id: String, run_id: String },
    #[error("cannot move {path} to the trash: {reason}")]
    Trash { path: PathBuf, reason: String },
    #[error("{path}:{line}: {field}: {message}")]
    AgentsFile {
        path: PathBuf,
        line: usize,
        field: String,
        message: String,
    },
    #[error("no agent `{name}` in {path}")]
    AgentNotFound { name: String, path: PathBuf },
    #[error("agent `{name}` has no replay command in {path}: add `replay = [...]` with {{node}}")]
    NoReplayCommand { name: String, path: PathBuf },
    #[error("an agent named `{name}` exists already in {path}")]
    AgentExists { name: String, path: PathBuf },
    #[error("run `{id}` is not running")]
    RunNotLive { id: String },
    /// The run's recorded process is gone; its id is free or names another process now.
    #[error("run `{id}` is not running any more: process {pid} is gone or is not the run's (nothing was signalled)")]
    RunGone { id: String, pid: i64 },
    #[error("`{path}` is not a file of session `{session}`: {reason}")]
    OutsideSession {
        session: String,
        path: String,
        reason: &'static str,
    },
    #[error("{path} is a symbolic link: the studio neither reads nor writes through a link there")]
    SymlinkRefused { path: PathBuf },
    #[error("{path} is {kind}, not a regular file: not read")]
    NotARegularFile { path: PathBuf, kind: &'static str },
    #[error("{path} is too large to read ({bytes} bytes; at most {limit})")]
    FileTooLarge { path: PathBuf, bytes: u64, limit: u64 },
    #[error(
        "agent `{}` of {} is not trusted yet: it would run {:?} in {} with the environment [{}]; \
         read it, then trust it",
        .launch.agent,
        .launch.agents_file.display(),
        .launch.argv,
        .launch.cwd.display(),
        .launch.env_text()
    )]
    AgentsUntrusted { launch: Box<crate::launch::Launch> },
    #[error("no workspace is open: choose a project folder (Open folder…)")]
    NoWorkspace,
    #[error("the studio is closing: no run can be started or stopped")]
    ShuttingDown,
    #[error("no stream `{stream}`: stdout or stderr")]
    InvalidStream { stream: String },
    #[error("nothing to find: the text to find is empty")]
    EmptyQuery,
    #[error("cannot open {path} in the file manager: {reason}")]
    Reveal { path: PathBuf, reason: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A stable machine-readable code (for `--json` and for IPC).
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidSessionId { .. } => "invalid_session_id",
            Error::WorkspaceNotFound { .. } => "workspace_not_found",
            Error::NotAFolder { .. } => "not_a_folder",
            Error::SessionNotFound { .. } => "session_not_found",
            Error::Io { .. } => "io",
            Error::Store { .. } => "store",
            Error::StoreTooNew { .. } => "store_too_new",
            Error::NoDataFolder => "no_data_folder",
            Error::RunNotFound { .. } => "run_not_found",
            Error::SessionLive { .. } => "session_live",
            Error::Trash { .. } => "trash",
            Error::AgentsFile { .. } => "agents_file",
            Error::AgentNotFound { .. } => "agent_not_found",
            Error::AgentExists { .. } => "agent_exists",
            Error::RunNotLive { .. } | Error::RunGone { .. } => "run_not_live",
            Error::OutsideSession { .. } => "outside_session",
            Error::SymlinkRefused { .. } => "symlink_refused",
            Error::NotARegularFile { .. } => "not_a_regular_file",
            Error::FileTooLarge { .. } => "file_too_large",
            Error::AgentsUntrusted { .. } => "agents_untrusted",
            Error::NoReplayCommand { .. } => "no_replay_command",
            Error::NoWorkspace => "no_workspace",
            Error::ShuttingDown => "shutting_down",
            Error::InvalidStream { .. } => "invalid_stream",
            Error::EmptyQuery => "invalid_query",
            Error::Reveal { .. } => "reveal",
        }
    }
}
