//! The bundle format (docs/cli.md, "Bundles"): what its members are called, its manifest, and the
//! hashing that lists each member with its size and SHA-256.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::redact::Redaction;

/// What `format` in a bundle's `manifest.json` says.
pub const BUNDLE_FORMAT: &str = "zibby-studio-session";
/// The bundle format version this studio writes, and the newest it reads. 2: the session's
/// record (`records/session.json`) may carry its `tags` and `note`.
pub const BUNDLE_FORMAT_VERSION: u32 = 2;
/// The oldest bundle format version this studio reads (1: without tags and note).
pub const OLDEST_BUNDLE_FORMAT_VERSION: u32 = 1;

pub(super) const MANIFEST: &str = "manifest.json";
pub(super) const SESSION_DIR: &str = "session";
pub(super) const SESSION_INFO: &str = ".session-info.json";
pub(super) const RECORD_SESSION: &str = "records/session.json";
pub(super) const RECORD_RUNS: &str = "records/runs.jsonl";
pub(super) const RECORD_SPANS: &str = "records/spans.jsonl";
pub(super) const RECORD_OUTPUT: &str = "records/output.jsonl";
pub(super) const RECORD_LOGS: &str = "records/logs.jsonl";
pub(super) const RECORD_MESSAGES: &str = "records/messages.jsonl";
pub(super) const RECORDS: [&str; 6] = [
    RECORD_SESSION,
    RECORD_RUNS,
    RECORD_SPANS,
    RECORD_OUTPUT,
    RECORD_LOGS,
    RECORD_MESSAGES,
];
/// The manifest, and one record line, are read up to this size.
pub(super) const MAX_MANIFEST_BYTES: u64 = 8 << 20;
pub(super) const MAX_RECORD_LINE_BYTES: usize = 16 << 20;

/// `manifest.json`: what the bundle is and what it holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub format_version: u32,
    /// The studio that wrote it.
    pub studio_version: String,
    pub session_id: String,
    pub exported_at_ms: u64,
    /// Whether `.session-info.json` kept its `config` (`--include-config`).
    pub config_included: bool,
    /// Every file of the bundle but the manifest.
    pub members: Vec<Member>,
    /// The session's folders (`session`, `session/nodes`, …), for their times.
    pub folders: Vec<Folder>,
    /// What the export redacted (secrets, the home folder written as `~`) and where it looked;
    /// absent from bundles of studios that redacted nothing.
    #[serde(default)]
    pub redaction: Option<Redaction>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub bytes: u64,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Its modification time (files of the session folder), milliseconds since the epoch.
    pub modified_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Folder {
    pub name: String,
    pub modified_ms: Option<u64>,
}

/// A writer (or a reader) that hashes and counts what goes through it.
pub(super) struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    pub(super) bytes: u64,
}

impl<W> Hashing<W> {
    pub(super) fn new(inner: W) -> Hashing<W> {
        Hashing {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    pub(super) fn digest(&self) -> String {
        crate::vocabulary::digest::hex(&self.hasher.clone().finalize())
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}
