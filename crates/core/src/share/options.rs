//! What an import takes ([`ImportOptions`], at most [`ImportLimits`]) and what it made
//! ([`ImportedSession`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// What an import takes at most.
#[derive(Debug, Clone, Copy)]
pub struct ImportLimits {
    /// Entries of an archive, or files and folders of a folder.
    pub max_entries: usize,
    /// Bytes an import writes, all together: a bundle's entries uncompressed (its session files
    /// and the records that go into the store), a folder's files, a log and its stderr. The
    /// default, 1 GiB, can be raised (`zstudio import --max-bytes`).
    pub max_bytes: u64,
    /// Levels of folders inside the session folder (`nodes/<node>/file` is 3).
    pub max_depth: usize,
}

impl Default for ImportLimits {
    fn default() -> ImportLimits {
        ImportLimits {
            max_entries: 10_000,
            max_bytes: DEFAULT_MAX_BYTES,
            max_depth: 6,
        }
    }
}

/// What an import writes at most unless told otherwise: 1 GiB. (A 3.9 MB bundle of zeros once
/// declared, and wrote, 4 GB.)
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

impl ImportLimits {
    /// `source` would make an import write more than [`ImportLimits::max_bytes`] (at `entry`):
    /// the error says the limit and how to raise it.
    pub(super) fn bytes_exceeded(&self, source: &Path, entry: &str) -> Error {
        Error::ImportTooLarge {
            source_path: source.into(),
            entry: entry.escape_debug().to_string(),
            what: format!(
                "it would write more than {} ({} bytes), the most an import writes; raise the limit \
                 with `zstudio import --max-bytes` if you trust it",
                crate::vocabulary::size::human_bytes(self.max_bytes),
                self.max_bytes
            ),
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
    /// What the session records it was imported from (`imported.from`) when not the path read:
    /// a file uploaded to a studio server records the path it had on the client's machine.
    pub from: Option<PathBuf>,
}

impl ImportOptions {
    /// What the session records it was imported from.
    pub(super) fn recorded_from<'a>(&'a self, source: &'a Path) -> &'a Path {
        self.from.as_deref().unwrap_or(source)
    }
}

/// What an import was of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportKind {
    Bundle,
    Folder,
    Log,
}

/// The session an import made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportedSession {
    pub session_id: SessionId,
    pub kind: ImportKind,
    pub path: PathBuf,
}
