//! What changed in a workspace's sessions, as the watcher sees it and the runs the studio follows
//! add to it: the typed changes every consumer (the window, `zstudio watch`, the folder index)
//! reads. Vocabulary: it imports only types.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::protocol::Stream;
use crate::sessions::session::SessionSummary;
use crate::status::Status;
use crate::timeline::StoppedBy;
use crate::vocabulary::id::SessionId;

/// One line a run printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RunLine {
    pub stream: Stream,
    pub line: String,
    pub t_ms: u64,
}

/// One change of a workspace's sessions.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Change {
    /// A session folder appeared (or was there when the watcher started).
    SessionAdded {
        workspace: PathBuf,
        session_id: SessionId,
        summary: SessionSummary,
        /// Its tags: the store's, laid over by what reads the store (`Store::as_recorded_change`:
        /// `zstudio watch`, a studio server); none from the watcher alone.
        #[serde(default)]
        tags: Vec<String>,
    },
    /// A session's summary changed (status, current node, nodes, update time, problems).
    SessionUpdated {
        workspace: PathBuf,
        session_id: SessionId,
        summary: SessionSummary,
        /// Its tags, as [`Change::SessionAdded`]'s.
        #[serde(default)]
        tags: Vec<String>,
    },
    /// A session folder is gone (deleted, moved away, or its sessions folder was).
    SessionRemoved { workspace: PathBuf, session_id: SessionId },
    /// A node of a run the studio follows began (`running`) or ended (its status).
    NodeChanged {
        workspace: PathBuf,
        session_id: SessionId,
        run_id: String,
        node: String,
        depth: usize,
        status: Status,
        /// Milliseconds since the run started.
        t_ms: u64,
    },
    /// A run the studio follows started, is stopping, or ended.
    RunStatusChanged {
        workspace: PathBuf,
        session_id: SessionId,
        run_id: String,
        status: Status,
        /// A stop was asked for and the run has not ended yet.
        stopping: bool,
        exit_code: Option<i32>,
        elapsed_ms: Option<u64>,
        stopped_by: Option<StoppedBy>,
        error: Option<String>,
    },
    /// New lines a run the studio follows printed, gathered over a window.
    RunOutputAppended {
        workspace: PathBuf,
        session_id: SessionId,
        run_id: String,
        lines: Vec<RunLine>,
        /// Lines left out of this change to keep it small (they are in the store).
        skipped: u64,
    },
    /// A workspace is no longer watched through inotify but polled every
    /// the watcher's poll interval (the watch budget or the system's limit was reached):
    /// changes still arrive, later. `reason` says why, for a person.
    WatchPolling { workspace: PathBuf, reason: String },
    /// The workspace's agents file (`.zibby/studio.toml`) was created, changed, replaced (an
    /// editor's save by rename) or removed: its agents are to be read again (they may now be
    /// an error). Bursts of writes are one change.
    AgentsChanged { workspace: PathBuf },
    /// New complete lines of a growing output file of the session.
    OutputAppended {
        workspace: PathBuf,
        session_id: SessionId,
        /// The file, absolute.
        file: PathBuf,
        /// The byte offset of the first line in the file; 0 again when the file was truncated or
        /// replaced and is read from its start.
        offset: u64,
        /// The lines, without their newlines (bytes that are not UTF-8 replaced).
        lines: Vec<String>,
    },
}

impl Change {
    pub fn workspace(&self) -> &Path {
        match self {
            Change::SessionAdded { workspace, .. }
            | Change::SessionUpdated { workspace, .. }
            | Change::SessionRemoved { workspace, .. }
            | Change::NodeChanged { workspace, .. }
            | Change::RunStatusChanged { workspace, .. }
            | Change::RunOutputAppended { workspace, .. }
            | Change::OutputAppended { workspace, .. }
            | Change::WatchPolling { workspace, .. }
            | Change::AgentsChanged { workspace } => workspace,
        }
    }

    /// The session the change is about; `None` for a change of the whole workspace.
    pub fn session_id(&self) -> Option<&SessionId> {
        match self {
            Change::SessionAdded { session_id, .. }
            | Change::SessionUpdated { session_id, .. }
            | Change::SessionRemoved { session_id, .. }
            | Change::NodeChanged { session_id, .. }
            | Change::RunStatusChanged { session_id, .. }
            | Change::RunOutputAppended { session_id, .. }
            | Change::OutputAppended { session_id, .. } => Some(session_id),
            Change::WatchPolling { .. } | Change::AgentsChanged { .. } => None,
        }
    }
}

/// Where changes go (the desktop shell forwards them to the window; the CLI prints them). Called
/// on the watcher's thread: keep it short.
pub type ChangeSink = Arc<dyn Fn(Change) + Send + Sync>;
