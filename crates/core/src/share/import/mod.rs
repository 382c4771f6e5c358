//! Bringing a session in: what the source is (a bundle, a session folder, a captured log), then
//! `bundle`, `folder` or `log` imports it, each building the session in a `staging` folder and
//! committing it there with its records.

mod bundle;
mod folder;
mod log;
mod staging;

pub use staging::sweep_stale_imports;

use std::path::Path;
use std::time::SystemTime;

use crate::sessions::session::Workspace;
use crate::sessions::untrusted;
use crate::share::options::{ImportOptions, ImportedSession};
use crate::store::Store;
use crate::vocabulary::error::Error;

/// Imports `source` into `workspace`: a bundle (a zip archive), a session folder, or a captured
/// log (any other file: the run's stdout, with `options.stderr` and `options.exit_code`).
pub fn import(
    store: &Store,
    workspace: &Workspace,
    source: &Path,
    options: &ImportOptions,
    now: SystemTime,
) -> Result<ImportedSession, Error> {
    let metadata = std::fs::symlink_metadata(source).map_err(|e| Error::io(source, e))?;
    if metadata.file_type().is_symlink() {
        return Err(Error::SymlinkRefused { path: source.into() });
    }
    if metadata.is_dir() {
        return folder::import_folder(store, workspace, source, options, now);
    }
    let start = untrusted::read_prefix(source, TEXT_SNIFF_BYTES as u64)?;
    if start.starts_with(b"PK\x03\x04") || start.starts_with(b"PK\x05\x06") {
        bundle::import_bundle(store, workspace, source, options, now)
    } else if start.contains(&0) {
        // A picture, an archive of another kind, a program: a log is text.
        Err(Error::NotImportable {
            path: source.into(),
            reason: format!("it is not text (a NUL byte in its first {TEXT_SNIFF_BYTES} bytes) and not a zip archive"),
        })
    } else {
        log::import_log(store, workspace, source, options, now)
    }
}

/// How much of a file is read to tell a bundle (a zip's signature) or a log (text: no NUL byte,
/// as git and grep tell text from binary) from anything else.
const TEXT_SNIFF_BYTES: usize = 8 * 1024;
