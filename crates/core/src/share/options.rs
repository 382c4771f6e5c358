//! What an import takes ([`ImportOptions`], at most [`ImportLimits`]) and what it made
//! ([`ImportedSession`]).

use std::path::PathBuf;

use serde::Serialize;

use crate::vocabulary::id::SessionId;

/// What an import takes at most.
#[derive(Debug, Clone, Copy)]
pub struct ImportLimits {
    /// Entries of an archive, or files and folders of a folder.
    pub max_entries: usize,
    /// Uncompressed bytes, all entries together.
    pub max_bytes: u64,
    /// Levels of folders inside the session folder (`nodes/<node>/file` is 3).
    pub max_depth: usize,
}

impl Default for ImportLimits {
    fn default() -> ImportLimits {
        ImportLimits {
            max_entries: 10_000,
            max_bytes: 4 << 30,
            max_depth: 6,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Give the session a new id (else an id the workspace has already is refused).
    pub as_new: bool,
    /// For a captured log: the run's stderr.
    pub stderr: Option<PathBuf>,
    /// For a captured log: the run's exit status (shell-style).
    pub exit_code: Option<i32>,
    pub limits: ImportLimits,
}

/// What an import was of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportKind {
    Bundle,
    Folder,
    Log,
}

/// The session an import made.
#[derive(Debug, Clone, Serialize)]
pub struct ImportedSession {
    pub session_id: SessionId,
    pub kind: ImportKind,
    pub path: PathBuf,
}
