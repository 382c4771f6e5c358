//! The errors of the core; each names the path or id it is about.

use std::path::PathBuf;

/// Every error the core, the CLI and the window report; [`Error::code`] is what IPC and `--json`
/// carry. New variants may come: match with a fallback arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid session id `{id}`: {reason}")]
    InvalidSessionId { id: String, reason: &'static str },
    #[error("invalid node name `{name}`: {reason}")]
    InvalidNodeName { name: String, reason: &'static str },
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
    #[error("session `{id}` is running (a run the studio did not start): stop it first")]
    SessionRunningOutside { id: String },
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
    /// A session with no run going: its folder says how it ended.
    #[error("session `{id}` has no run going (its folder says {status}): nothing to stop")]
    SessionNotLive { id: String, status: String },
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
        "agent `{}` of {} is not trusted yet: it would run {} in {}, setting [{}], with {}; \
         read it, then trust it",
        .launch.shown.agent,
        .launch.shown.agents_file,
        .launch.shown.command_line,
        .launch.shown.cwd,
        .launch.shown.env.join(", "),
        .launch.shown.inherits
    )]
    AgentsUntrusted {
        launch: Box<crate::vocabulary::launch::Launch>,
    },
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
    /// A part of the app that could not be opened (its store, its workspace), kept as what it said
    /// then: every call that needs the part says it again, with the same code.
    #[error("{message}")]
    Unavailable { code: ErrorCode, message: String },
    /// An entry of an imported bundle or folder that the studio will not write: `..`, an absolute
    /// path, a link, a device, a name the session layout cannot hold, a duplicate.
    #[error("{source_path}: entry `{entry}` refused: {reason}; nothing was imported")]
    ImportEntryRefused {
        source_path: PathBuf,
        entry: String,
        reason: String,
    },
    /// An imported bundle or folder holds more entries or bytes than the import takes.
    #[error("{source_path}: {what} (at `{entry}`); nothing was imported")]
    ImportTooLarge {
        source_path: PathBuf,
        entry: String,
        what: String,
    },
    #[error("{source_path}: `{entry}` has bundle format version {found}, which this studio does not know (it reads {known}); nothing was imported")]
    BundleVersionUnknown {
        source_path: PathBuf,
        entry: String,
        found: String,
        known: u32,
    },
    #[error("{source_path}: entry `{entry}` does not match its checksum in manifest.json; nothing was imported")]
    BundleChecksumMismatch { source_path: PathBuf, entry: String },
    /// A bundle that is not one: not a zip, no manifest, a record that does not read.
    #[error("{source_path}: `{entry}`: {reason}; nothing was imported")]
    BundleInvalid {
        source_path: PathBuf,
        entry: String,
        reason: String,
    },
    #[error("session `{id}` exists already in {sessions_dir}: import it with --as-new to give it a new id")]
    SessionExists { id: String, sessions_dir: PathBuf },
    /// What an import was given is none of what it takes: a bundle, a session folder, a captured
    /// log (text).
    #[error("{path}: not a session bundle, a session folder or a captured log: {reason}; nothing was imported")]
    NotImportable { path: PathBuf, reason: String },
    /// A bucket source (`s3://`, `gs://`, `az://`) that refused, failed or gave something the
    /// studio will not mirror: names the source, the key (empty for the source as a whole) and,
    /// when access is refused, the identity used.
    #[error("{source_url}{}: {reason}", if .key.is_empty() { String::new() } else { format!(": `{}`", .key) })]
    Bucket {
        source_url: String,
        key: String,
        reason: String,
    },
    /// A request to a studio server (`zstudio serve --stdio`) that it could not read: not JSON,
    /// too large, an unknown method, parameters it does not take.
    #[error("invalid request: {reason}")]
    InvalidRequest { reason: String },
    /// The two ends of a remote link speak different protocol versions.
    #[error("{host}: the studio server speaks protocol version {server}, this studio speaks {client}: install the same zstudio version on both ends")]
    ProtocolMismatch { host: String, client: u32, server: u32 },
    /// What a studio server on `host` answered a request with: its error, kept with its code.
    #[error("{host}: {message}")]
    Remote {
        host: String,
        code: ErrorCode,
        message: String,
        /// What the server's error carried for the window to act on (`agents_untrusted`'s launch).
        details: Option<serde_json::Value>,
    },
    /// The link to a studio server failed: it could not start, it closed, it died, it said
    /// something that is not the protocol, or it did not answer in time. `what` says which.
    #[error("{host}: {what}")]
    RemoteLink { host: String, what: String },
    /// What only a local workspace has (its folder on this machine: reveal, import, export, the
    /// agents file), asked of the window while its workspace is on another machine.
    #[error("the open workspace is on {host}: {what} works only in a workspace on this machine")]
    LocalOnly { host: String, what: String },
    /// A run refused: the workspace's spend today is at or past its daily budget.
    #[error(
        "the workspace spent {spent} today ({day}), at or past its daily budget of {limit} \
         ([budget] daily_usd in .zibby/studio.toml): start the run with --over-budget to go past it"
    )]
    BudgetExceeded { spent: String, limit: String, day: String },
    /// A tag that breaks a rule of `label` (length, control or bidi characters, whitespace at
    /// its ends); the tag is shown with its hidden characters as escapes.
    #[error("invalid tag {tag:?}: {rule}")]
    InvalidTag { tag: String, rule: &'static str },
    #[error("session `{id}` would have {count} tags: a session holds at most {limit}")]
    TooManyTags { id: String, count: usize, limit: usize },
    #[error("the note of session `{id}` is {bytes} bytes: a note holds at most {limit} bytes")]
    NoteTooLarge { id: String, bytes: usize, limit: usize },
    #[error("invalid view name {name:?}: {rule}")]
    InvalidViewName { name: String, rule: &'static str },
    #[error("no saved view `{name}` in this workspace (`zstudio view list` lists them)")]
    ViewNotFound { name: String },
    #[error("cannot {} {path}: {source}", .op.verb())]
    Io {
        /// What failed: reading, writing, or starting something.
        op: IoOp,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What an I/O error failed at, for its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    Read,
    Write,
    /// Starting a process or a thread (`path` names it).
    Spawn,
}

impl IoOp {
    fn verb(self) -> &'static str {
        match self {
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Spawn => "start",
        }
    }
}

impl Error {
    /// Reading `path` failed.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            op: IoOp::Read,
            path: path.into(),
            source,
        }
    }

    /// Writing `path` (creating, renaming, removing it) failed.
    pub fn io_write(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            op: IoOp::Write,
            path: path.into(),
            source,
        }
    }

    /// Starting `what` (a process, a thread) failed.
    pub fn io_spawn(what: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            op: IoOp::Spawn,
            path: what.into(),
            source,
        }
    }

    /// This error as one to keep and say again ([`Error::Unavailable`]), `what` said first.
    pub fn kept(&self, what: Option<&str>) -> Error {
        Error::Unavailable {
            code: self.code(),
            message: match what {
                Some(what) => format!("{what}: {self}"),
                None => self.to_string(),
            },
        }
    }

    /// A stable machine-readable code (for `--json` and for IPC).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidSessionId { .. } => ErrorCode::InvalidSessionId,
            Error::InvalidNodeName { .. } => ErrorCode::InvalidNodeName,
            Error::WorkspaceNotFound { .. } => ErrorCode::WorkspaceNotFound,
            Error::NotAFolder { .. } => ErrorCode::NotAFolder,
            Error::SessionNotFound { .. } => ErrorCode::SessionNotFound,
            Error::Io { .. } => ErrorCode::Io,
            Error::Store { .. } => ErrorCode::Store,
            Error::StoreTooNew { .. } => ErrorCode::StoreTooNew,
            Error::NoDataFolder => ErrorCode::NoDataFolder,
            Error::RunNotFound { .. } => ErrorCode::RunNotFound,
            Error::SessionLive { .. } | Error::SessionRunningOutside { .. } => ErrorCode::SessionLive,
            Error::Trash { .. } => ErrorCode::Trash,
            Error::AgentsFile { .. } => ErrorCode::AgentsFile,
            Error::AgentNotFound { .. } => ErrorCode::AgentNotFound,
            Error::AgentExists { .. } => ErrorCode::AgentExists,
            Error::RunNotLive { .. } | Error::RunGone { .. } | Error::SessionNotLive { .. } => ErrorCode::RunNotLive,
            Error::OutsideSession { .. } => ErrorCode::OutsideSession,
            Error::SymlinkRefused { .. } => ErrorCode::SymlinkRefused,
            Error::NotARegularFile { .. } => ErrorCode::NotARegularFile,
            Error::FileTooLarge { .. } => ErrorCode::FileTooLarge,
            Error::AgentsUntrusted { .. } => ErrorCode::AgentsUntrusted,
            Error::NoReplayCommand { .. } => ErrorCode::NoReplayCommand,
            Error::NoWorkspace => ErrorCode::NoWorkspace,
            Error::ShuttingDown => ErrorCode::ShuttingDown,
            Error::InvalidStream { .. } => ErrorCode::InvalidStream,
            Error::EmptyQuery => ErrorCode::InvalidQuery,
            Error::Reveal { .. } => ErrorCode::Reveal,
            Error::ImportEntryRefused { .. } => ErrorCode::ImportEntryRefused,
            Error::ImportTooLarge { .. } => ErrorCode::ImportTooLarge,
            Error::BundleVersionUnknown { .. } => ErrorCode::BundleVersionUnknown,
            Error::BundleChecksumMismatch { .. } => ErrorCode::BundleChecksumMismatch,
            Error::BundleInvalid { .. } => ErrorCode::BundleInvalid,
            Error::SessionExists { .. } => ErrorCode::SessionExists,
            Error::NotImportable { .. } => ErrorCode::NotImportable,
            Error::Bucket { .. } => ErrorCode::Bucket,
            Error::InvalidRequest { .. } => ErrorCode::InvalidRequest,
            Error::ProtocolMismatch { .. } => ErrorCode::ProtocolMismatch,
            Error::RemoteLink { .. } => ErrorCode::RemoteLink,
            Error::LocalOnly { .. } => ErrorCode::LocalOnly,
            Error::BudgetExceeded { .. } => ErrorCode::BudgetExceeded,
            Error::InvalidTag { .. } => ErrorCode::InvalidTag,
            Error::TooManyTags { .. } => ErrorCode::TooManyTags,
            Error::NoteTooLarge { .. } => ErrorCode::NoteTooLarge,
            Error::InvalidViewName { .. } => ErrorCode::InvalidViewName,
            Error::ViewNotFound { .. } => ErrorCode::ViewNotFound,
            Error::Unavailable { code, .. } | Error::Remote { code, .. } => *code,
        }
    }

    /// What the window acts on besides the message, as IPC and the studio server carry it:
    /// `agents_untrusted`'s launch (to show before trusting), a remote error's own details.
    pub fn details(&self) -> Option<serde_json::Value> {
        match self {
            Error::AgentsUntrusted { launch } => serde_json::to_value(launch).ok(),
            Error::Remote { details, .. } => details.clone(),
            _ => None,
        }
    }

    /// The launch an `agents_untrusted` refusal asks about, here or on another machine (read back
    /// from the details it carried): its digest, to trust it by, and what to show the user first,
    /// every value shown again by this machine's rule ([`ShownLaunch::shown_again`]: the details
    /// may come from a host). `None` for any other error, or details that do not read.
    ///
    /// [`ShownLaunch::shown_again`]: crate::vocabulary::launch::ShownLaunch::shown_again
    pub fn untrusted_launch(&self) -> Option<(String, crate::vocabulary::launch::ShownLaunch)> {
        if self.code() != ErrorCode::AgentsUntrusted {
            return None;
        }
        let details = self.details()?;
        let shown: crate::vocabulary::launch::ShownLaunch = serde_json::from_value(details["shown"].clone()).ok()?;
        Some((details["digest"].as_str()?.to_owned(), shown.shown_again()))
    }
}

/// Declares [`ErrorCode`] with each code's word, spelled once (serde, TypeScript and `as_str` use it).
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident = $word:literal,)*) => {
        /// The stable, machine-readable code of an [`Error`]: what `--json` and IPC carry (its
        /// snake_case word, [`ErrorCode::as_str`]), and what the window branches on. One list for
        /// the core, the CLI, the shell and the window (whose TypeScript union is generated from
        /// it), the window's own codes included. New codes may come: match with a fallback arm.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* #[serde(rename = $word)] $variant,)*
        }

        impl ErrorCode {
            /// Every code.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The code as IPC and `--json` carry it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $word,)*
                }
            }

            /// The code a word names (as [`ErrorCode::as_str`] spells it), if any.
            pub fn from_word(word: &str) -> Option<ErrorCode> {
                match word {
                    $($word => Some(ErrorCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    InvalidSessionId = "invalid_session_id",
    InvalidNodeName = "invalid_node_name",
    WorkspaceNotFound = "workspace_not_found",
    NotAFolder = "not_a_folder",
    SessionNotFound = "session_not_found",
    Io = "io",
    Store = "store",
    StoreTooNew = "store_too_new",
    NoDataFolder = "no_data_folder",
    RunNotFound = "run_not_found",
    SessionLive = "session_live",
    Trash = "trash",
    AgentsFile = "agents_file",
    AgentNotFound = "agent_not_found",
    AgentExists = "agent_exists",
    /// The run is not running (here, or at all any more).
    RunNotLive = "run_not_live",
    OutsideSession = "outside_session",
    SymlinkRefused = "symlink_refused",
    NotARegularFile = "not_a_regular_file",
    FileTooLarge = "file_too_large",
    AgentsUntrusted = "agents_untrusted",
    NoReplayCommand = "no_replay_command",
    NoWorkspace = "no_workspace",
    ShuttingDown = "shutting_down",
    InvalidStream = "invalid_stream",
    InvalidQuery = "invalid_query",
    Reveal = "reveal",
    ImportEntryRefused = "import_entry_refused",
    ImportTooLarge = "import_too_large",
    BundleVersionUnknown = "bundle_version_unknown",
    BundleChecksumMismatch = "bundle_checksum_mismatch",
    BundleInvalid = "bundle_invalid",
    SessionExists = "session_exists",
    NotImportable = "not_importable",
    /// A bucket source refused access, failed, stalled or held a key the studio will not mirror.
    Bucket = "bucket",
    /// A studio server could not read a request (`zstudio serve --stdio`).
    InvalidRequest = "invalid_request",
    /// The client and the studio server speak different protocol versions.
    ProtocolMismatch = "protocol_mismatch",
    /// The link to a remote studio server failed (it closed, died, or did not answer in time).
    RemoteLink = "remote_link",
    /// Asked of a remote workspace, but only a workspace on this machine has it.
    LocalOnly = "local_only",
    /// The workspace's spend today is at or past its daily budget: no run starts unless asked.
    BudgetExceeded = "budget_exceeded",
    /// A tag breaks a rule (length, hidden characters, whitespace at its ends).
    InvalidTag = "invalid_tag",
    /// A session would hold more tags than it takes.
    TooManyTags = "too_many_tags",
    /// A note is larger than a note takes.
    NoteTooLarge = "note_too_large",
    /// A saved view's name breaks a rule (those of a tag).
    InvalidViewName = "invalid_view_name",
    /// No saved view of that name in the workspace.
    ViewNotFound = "view_not_found",
    /// ssh reached nothing on the host: refused, timed out, a name that does not resolve.
    SshNotAnswering = "ssh_not_answering",
    /// The host refused the key (or its passphrase was wrong).
    SshKeyRefused = "ssh_key_refused",
    /// The host's key is not the one known_hosts recorded: refused.
    SshHostKeyChanged = "ssh_host_key_changed",
    /// The host's key is not in known_hosts and was not accepted.
    SshHostKeyUnknown = "ssh_host_key_unknown",
    /// The ssh link dropped, or stalled past its keep-alives.
    SshLinkLost = "ssh_link_lost",
    /// ssh failed otherwise, or `host:path` does not read as a remote workspace.
    Ssh = "ssh",
    /// The remote workspace's folder is missing, not a folder, or a link.
    RemoteWorkspace = "remote_workspace",
    /// The studio server could not be found on, or put on, the host.
    RemoteBootstrap = "remote_bootstrap",
    /// The window's own (never made by Rust): a command that did not reach the shell, or whose
    /// rejection was not a `{code, message}`.
    Ipc = "ipc",
    /// The window's own (never made by Rust): a failure of the window itself.
    Internal = "internal",
    /// The window's own (never made by Rust): the agent form is not complete.
    InvalidAgent = "invalid_agent",
    /// The window's own (never made by Rust): the sessions are polled, not watched live.
    WatchPolling = "watch_polling",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A code compares equal to its word (`error.code() == "session_live"`), as the wire carries it.
impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_says_whether_reading_writing_or_starting_failed() {
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let said = [
            Error::io("/ws/a", denied()).to_string(),
            Error::io_write("/ws/b", denied()).to_string(),
            Error::io_spawn("watcher thread", denied()).to_string(),
        ];
        assert_eq!(
            said.clone().map(|s| s.split(':').next().unwrap().to_owned()),
            ["cannot read /ws/a", "cannot write /ws/b", "cannot start watcher thread"]
        );
        assert!(said.iter().all(|s| s.ends_with("permission denied")), "{said:?}");
    }

    #[test]
    fn each_code_serialises_as_its_word() {
        for &code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                serde_json::Value::from(code.as_str()),
                "IPC and --json carry the same word as `as_str`"
            );
        }
        let words: std::collections::BTreeSet<_> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(words.len(), ErrorCode::ALL.len(), "no two codes share a word");
        assert_eq!(
            Error::EmptyQuery.code(),
            "invalid_query",
            "the window knows it by this word"
        );
    }
}
