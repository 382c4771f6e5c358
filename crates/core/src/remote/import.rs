//! Import over the link: the client uploads a bundle or a captured log (and the log's stderr) to
//! a private folder of the server's in bounded chunks ([`Uploads::open`], `import_open`;
//! `import_write`, each at the offset the upload has reached, its bytes raw after the request's
//! line: `remote::transfer`), then the server imports
//! it into its workspace and store as `zstudio import` does there (`import_commit`) and removes
//! it. `import_close` lets an upload go; what is left goes when the server ends.
//!
//! An upload never holds more than it said it would (`size`), and says at most what an import
//! writes ([`ImportLimits::max_bytes`]), so a client cannot fill the host's disk through it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::app::Studio;
use crate::remote::client::RemoteClient;
use crate::remote::protocol::{IMPORT_CLOSE, IMPORT_COMMIT, IMPORT_OPEN, IMPORT_WRITE};
use crate::remote::scratch::ServerFolder;
use crate::remote::transfer::{self, Receiving};
use crate::share::{self, ImportLimits, ImportOptions, ImportedSession};
use crate::vocabulary::error::Error;
use crate::vocabulary::visible::shown;

/// `import_open`'s parameters: the file's name (its last part: what the import's messages name)
/// and size; `max_bytes`, the most the import may write (as `zstudio import --max-bytes`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportOpen {
    pub name: String,
    pub size: u64,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// `import_open`'s result: the upload to write to by `import_id`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportOpened {
    pub import_id: String,
}

/// `import_write`'s parameters: the chunk (at most [`transfer::MAX_CHUNK`] bytes, after the
/// request's line) goes at `offset`, which must be where the upload is.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportWrite {
    pub import_id: String,
    pub offset: u64,
}

/// `import_commit`'s parameters: the upload to import (whole), and what `zstudio import` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportCommit {
    pub import_id: String,
    /// For a captured log: the upload holding the run's stderr.
    #[serde(default)]
    pub stderr_import_id: Option<String>,
    #[serde(default)]
    pub as_new: bool,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// The file's path on the client's machine: what the session records it was imported from.
    #[serde(default)]
    pub from: Option<String>,
}

/// `import_close`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportClose {
    pub import_id: String,
}

/// What the client imports into the server's workspace: as `zstudio import` takes it there.
#[derive(Debug, Clone, Default)]
pub struct RemoteImport {
    pub as_new: bool,
    /// For a captured log: the run's stderr (a file here, uploaded too).
    pub stderr: Option<PathBuf>,
    pub exit_code: Option<i32>,
    pub max_bytes: Option<u64>,
}

/// Uploads `file` (a bundle or a captured log here) to the server of `client` and imports it into
/// its workspace and store; what was uploaded is removed on the server either way. A session
/// folder is refused (it is not uploaded: a bundle of it is).
pub fn import_file(client: &RemoteClient, file: &Path, request: &RemoteImport) -> Result<ImportedSession, Error> {
    let mut uploaded = Vec::new();
    let imported = (|| {
        let import_id = upload(client, file, request.max_bytes, &mut uploaded)?;
        let stderr_import_id = match &request.stderr {
            Some(stderr) => Some(upload(client, stderr, request.max_bytes, &mut uploaded)?),
            None => None,
        };
        let commit = ImportCommit {
            import_id,
            stderr_import_id,
            as_new: request.as_new,
            exit_code: request.exit_code,
            max_bytes: request.max_bytes,
            from: Some(
                std::path::absolute(file)
                    .unwrap_or_else(|_| file.to_owned())
                    .display()
                    .to_string(),
            ),
        };
        let imported = client.call(IMPORT_COMMIT, &commit);
        // The commit removed them, imported or not.
        uploaded.clear();
        imported
    })();
    for import_id in uploaded {
        let _ = client.call::<()>(IMPORT_CLOSE, &ImportClose { import_id });
    }
    imported
}

/// Uploads one file here (regular, never through a link) in chunks; returns its upload's id,
/// also pushed on `uploaded` once it is open.
fn upload(
    client: &RemoteClient,
    file: &Path,
    max_bytes: Option<u64>,
    uploaded: &mut Vec<String>,
) -> Result<String, Error> {
    let metadata = std::fs::symlink_metadata(file).map_err(|e| Error::io(file, e))?;
    if metadata.is_dir() {
        return Err(Error::NotImportable {
            path: file.into(),
            reason: "a session folder is not uploaded to a remote workspace: export it as a bundle \
                     (`zstudio export`) and import that"
                .to_owned(),
        });
    }
    let (reader, size) = transfer::open_file(file)?;
    let opened: ImportOpened = client.call(
        IMPORT_OPEN,
        &ImportOpen {
            name: file_name(file),
            size,
            max_bytes,
        },
    )?;
    uploaded.push(opened.import_id.clone());
    transfer::send_file(file, reader, size, |offset, chunk| {
        let write = ImportWrite {
            import_id: opened.import_id.clone(),
            offset,
        };
        client.call_sending::<()>(IMPORT_WRITE, &write, chunk)
    })?;
    Ok(opened.import_id)
}

/// One file being uploaded: in a folder of its own, under the name the client gave.
struct Upload {
    path: PathBuf,
    receiving: Receiving,
}

/// The files the client uploads, in a private folder removed when the server ends.
#[derive(Default)]
pub struct Uploads {
    folder: ServerFolder,
    open: Mutex<HashMap<String, Upload>>,
}

impl Uploads {
    /// Makes an empty file to upload `params.name` into.
    pub fn open(&self, params: ImportOpen) -> Result<ImportOpened, Error> {
        let name = upload_name(&params.name)?;
        let max_bytes = params.max_bytes.unwrap_or(ImportLimits::default().max_bytes);
        if params.size > max_bytes {
            return Err(Error::ImportTooLarge {
                source_path: PathBuf::from(&name),
                entry: name.clone(),
                what: format!(
                    "it is {} bytes, more than the {max_bytes} bytes an import writes; raise the limit with \
                     `zstudio import --max-bytes` if you trust it",
                    params.size
                ),
            });
        }
        let import_id = uuid::Uuid::now_v7().simple().to_string();
        let folder = self.folder.path()?.join(&import_id);
        crate::sessions::private::create_dir_all(&folder)?;
        let path = folder.join(&name);
        crate::sessions::private::create_new(&path)?;
        self.lock().insert(
            import_id.clone(),
            Upload {
                receiving: Receiving::new(format!("`{}`", shown(&name)), params.size),
                path,
            },
        );
        Ok(ImportOpened { import_id })
    }

    /// Appends `data` to an upload, at the offset it has reached and never past its size.
    pub fn write(&self, params: &ImportWrite, data: &[u8]) -> Result<(), Error> {
        let mut open = self.lock();
        let upload = open
            .get_mut(&params.import_id)
            .ok_or_else(|| no_upload(&params.import_id))?;
        upload
            .receiving
            .take(params.offset, data.len())
            .map_err(|reason| Error::InvalidRequest { reason })?;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&upload.path)
            .map_err(|e| Error::io_write(&upload.path, e))?;
        file.write_all(data).map_err(|e| Error::io_write(&upload.path, e))
    }

    /// Imports a whole upload into the server's workspace and store (`zstudio import`); the
    /// uploads named are removed, imported or not.
    pub fn commit(&self, studio: &Studio, params: &ImportCommit) -> Result<ImportedSession, Error> {
        let ids: Vec<&str> = std::iter::once(params.import_id.as_str())
            .chain(params.stderr_import_id.as_deref())
            .collect();
        let imported = (|| {
            let source = self.whole(&params.import_id)?;
            let mut options = ImportOptions {
                as_new: params.as_new,
                exit_code: params.exit_code,
                stderr: params
                    .stderr_import_id
                    .as_deref()
                    .map(|id| self.whole(id))
                    .transpose()?,
                ..ImportOptions::default()
            };
            if let Some(max_bytes) = params.max_bytes {
                options.limits.max_bytes = max_bytes;
            }
            options.from = params.from.as_ref().map(PathBuf::from);
            share::import(
                studio.store()?,
                &studio.workspace()?,
                &source,
                &options,
                std::time::SystemTime::now(),
            )
        })();
        for id in ids {
            self.remove(id);
        }
        imported
    }

    /// Lets an upload go: its file is removed.
    pub fn close(&self, params: &ImportClose) -> Result<(), Error> {
        if self.remove(&params.import_id) {
            Ok(())
        } else {
            Err(no_upload(&params.import_id))
        }
    }

    /// Removes every upload left (the server ends).
    pub fn remove_all(&self) {
        self.lock().clear();
        self.folder.remove_all();
    }

    /// The path of an upload that holds every byte it said it would.
    fn whole(&self, import_id: &str) -> Result<PathBuf, Error> {
        let open = self.lock();
        let upload = open.get(import_id).ok_or_else(|| no_upload(import_id))?;
        upload.receiving.whole().map_err(|what| Error::InvalidRequest {
            reason: format!("the upload of {what}"),
        })?;
        Ok(upload.path.clone())
    }

    fn remove(&self, import_id: &str) -> bool {
        let Some(upload) = self.lock().remove(import_id) else {
            return false;
        };
        if let Some(folder) = upload.path.parent() {
            let _ = std::fs::remove_dir_all(folder);
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Upload>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn no_upload(import_id: &str) -> Error {
    Error::InvalidRequest {
        reason: format!("no open upload `{}`", shown(import_id)),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The name an upload is kept under: one plain part of a path (no `/`, not `.` or `..`, no NUL),
/// at most 255 bytes.
fn upload_name(name: &str) -> Result<String, Error> {
    let plain = !name.is_empty() && name.len() <= 255 && name != "." && name != ".." && !name.contains(['/', '\0']);
    if plain {
        Ok(name.to_owned())
    } else {
        Err(Error::InvalidRequest {
            reason: format!("`{}` is not a file name to upload", shown(name)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_takes_chunks_in_order_and_never_past_its_size() {
        let uploads = Uploads::default();
        let opened = uploads
            .open(ImportOpen {
                name: "run.log".to_owned(),
                size: 6,
                max_bytes: None,
            })
            .unwrap();
        let write = |offset, bytes: &[u8]| {
            let params = ImportWrite {
                import_id: opened.import_id.clone(),
                offset,
            };
            uploads.write(&params, bytes)
        };
        write(0, b"abc").unwrap();
        let skipped = write(5, b"d").expect_err("a chunk past where the upload is");
        assert!(
            skipped.to_string().contains("at offset 5 where the upload is at 3"),
            "{skipped}"
        );
        let past = write(3, b"defg").expect_err("more than it said");
        assert!(past.to_string().contains("past the 6 bytes"), "{past}");
        assert!(uploads.whole(&opened.import_id).is_err(), "3 of 6 bytes is not whole");
        write(3, b"def").unwrap();
        let path = uploads.whole(&opened.import_id).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdef");
        uploads
            .close(&ImportClose {
                import_id: opened.import_id.clone(),
            })
            .unwrap();
        assert!(!path.exists(), "closing removes the upload");
        uploads.remove_all();
    }

    #[test]
    fn an_upload_larger_than_an_import_writes_or_with_a_path_for_a_name_is_refused() {
        let uploads = Uploads::default();
        let big = uploads
            .open(ImportOpen {
                name: "big.zip".to_owned(),
                size: 11,
                max_bytes: Some(10),
            })
            .expect_err("more than the import writes");
        assert_eq!(big.code(), "import_too_large", "{big}");
        for name in ["../x", "a/b", "", "..", "."] {
            let refused = uploads
                .open(ImportOpen {
                    name: name.to_owned(),
                    size: 1,
                    max_bytes: None,
                })
                .expect_err(name);
            assert_eq!(refused.code(), "invalid_request", "{refused}");
        }
        uploads.remove_all();
    }
}
