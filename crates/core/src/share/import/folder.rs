//! A session folder imported (a downloaded cloud session): looked at whole first, entry by entry
//! and never through a link, then copied, its times kept.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use super::staging::{commit_import, create_private_dir, refuse_existing, set_modified, Staging};
use crate::runs::runner::new_session_id;
use crate::sessions::private;
use crate::sessions::session::{Workspace, RUN_RECORD_FILE};
use crate::sessions::untrusted;
use crate::share::format::SESSION_INFO;
use crate::share::options::{ImportKind, ImportLimits, ImportOptions, ImportedSession};
use crate::share::paths::{path_problem, sorted_entries};
use crate::store::{SessionRecord, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// The files one of which every session folder holds at its top (docs: docs/protocol.md, "The session
/// folder"; the engine writes `.session-info.json` before every node; the studio its record of a
/// run it started, read as untrusted as the rest once imported).
const SESSION_FILES: [&str; 5] = [
    SESSION_INFO,
    "result.json",
    "events.json",
    "raw_stream_output.txt",
    RUN_RECORD_FILE,
];

pub(super) fn import_folder(
    store: &Store,
    workspace: &Workspace,
    source: &Path,
    options: &ImportOptions,
    now: SystemTime,
) -> Result<ImportedSession, Error> {
    let folder_name = source
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::NotAFolder { path: source.into() })?;
    // A project folder, a folder of downloads: not a session, however many files it holds.
    let holds_session_file = SESSION_FILES
        .iter()
        .any(|name| std::fs::symlink_metadata(source.join(name)).is_ok_and(|metadata| metadata.is_file()));
    if !holds_session_file {
        return Err(Error::NotImportable {
            path: source.into(),
            reason: format!(
                "a folder, but not a session's: it holds none of {}",
                SESSION_FILES.join(", ")
            ),
        });
    }
    let id = if options.as_new {
        new_session_id()
    } else {
        SessionId::parse(folder_name)?
    };
    // Importing a session of this very workspace is a copy: it needs a new id.
    refuse_existing(store, workspace, &id)?;
    let mut copy = FolderCopy {
        source,
        limits: options.limits,
        entries: 0,
        left: options.limits.max_bytes,
        folders: Vec::new(),
    };
    // Looked at whole first, then copied: nothing is written for a folder that is refused.
    copy.walk(source, "", None)?;
    let staging = Staging::new(workspace)?;
    let root = staging.session();
    create_private_dir(&root)?;
    copy.entries = 0;
    copy.left = options.limits.max_bytes;
    copy.folders.clear();
    copy.walk(source, "", Some(&root))?;
    // Folders last, deepest first, keep their times.
    let mut folders = std::mem::take(&mut copy.folders);
    folders.sort_by_key(|(relative, _)| std::cmp::Reverse(relative.matches('/').count()));
    let mut root_modified = None;
    for (relative, modified) in folders {
        if relative.is_empty() {
            root_modified = modified;
        } else if let Some(modified) = modified {
            set_modified(&root.join(relative), modified);
        }
    }
    let (id, path) = commit_import(store, &staging, root_modified, || {
        store
            .import_begin(
                workspace,
                &id,
                &SessionRecord::default(),
                options.recorded_from(source),
                now,
            )?
            .finish()?;
        Ok(id)
    })?;
    Ok(ImportedSession {
        session_id: id,
        kind: ImportKind::Folder,
        path,
    })
}

/// A session folder, checked (and copied) entry by entry, never through a link.
struct FolderCopy<'p> {
    source: &'p Path,
    limits: ImportLimits,
    entries: usize,
    left: u64,
    /// Each folder (relative, `""` for the session's own) and its modification time.
    folders: Vec<(String, Option<SystemTime>)>,
}

impl FolderCopy<'_> {
    fn refused(&self, entry: &str, reason: String) -> Error {
        Error::ImportEntryRefused {
            source_path: self.source.into(),
            entry: entry.escape_debug().to_string(),
            reason,
        }
    }

    fn too_large(&self, entry: &str, what: String) -> Error {
        Error::ImportTooLarge {
            source_path: self.source.into(),
            entry: entry.to_owned(),
            what,
        }
    }

    /// Checks every entry of `dir` (`prefix` inside the session); copies it into `into` too.
    fn walk(&mut self, dir: &Path, prefix: &str, into: Option<&Path>) -> Result<(), Error> {
        let metadata = std::fs::symlink_metadata(dir).map_err(|e| Error::io(dir, e))?;
        self.folders.push((prefix.to_owned(), metadata.modified().ok()));
        for entry in sorted_entries(dir)? {
            let path = entry.path();
            let lossy = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                lossy.clone()
            } else {
                format!("{prefix}/{lossy}")
            };
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                return Err(self.too_large(
                    &relative,
                    format!("more than the {} entries an import takes", self.limits.max_entries),
                ));
            }
            if entry.file_name().to_str().is_none() {
                return Err(self.refused(&relative, "its name is not valid UTF-8 text".to_owned()));
            }
            if let Some(reason) = path_problem(&relative, self.limits.max_depth) {
                return Err(self.refused(&relative, reason));
            }
            let metadata = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
            let file_type = metadata.file_type();
            let target = into.map(|root| root.join(&relative));
            if file_type.is_dir() {
                if let Some(target) = &target {
                    private::create_dir_all(target)?;
                }
                self.walk(&path, &relative, into)?;
                continue;
            }
            if !file_type.is_file() {
                let kind = untrusted::kind_of(file_type);
                return Err(self.refused(&relative, format!("it is {kind}; only files and folders are imported")));
            }
            if metadata.nlink() > 1 {
                return Err(self.refused(
                    &relative,
                    format!(
                        "it is a hard link ({} names for one file): it could be a file from elsewhere",
                        metadata.nlink()
                    ),
                ));
            }
            // A sparse file counts by its length: the copy writes every byte of it.
            if metadata.len() > self.left {
                return Err(self.limits.bytes_exceeded(self.source, &relative));
            }
            let Some(target) = target else {
                self.left -= metadata.len();
                continue;
            };
            let (file, _) = untrusted::open_regular(&path)?;
            let mut out = private::create_new(&target)?;
            let copied = std::io::copy(&mut file.take(self.left + 1), &mut out).map_err(|e| Error::io(&path, e))?;
            if copied > self.left {
                return Err(self.limits.bytes_exceeded(self.source, &relative));
            }
            self.left -= copied;
            drop(out);
            if let Ok(modified) = metadata.modified() {
                set_modified(&target, modified);
            }
        }
        Ok(())
    }
}
