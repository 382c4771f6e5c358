//! Export over the link: the server writes a session's bundle to a private folder of its own
//! ([`Exports::open`], `export_open`), the client reads it back in bounded chunks
//! (`export_read`, each answered as raw bytes after its reply's line: `remote::transfer`) and
//! lets it go (`export_close`); what is left goes when the server ends.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::app::Studio;
use crate::remote::client::RemoteClient;
use crate::remote::protocol::{EXPORT_CLOSE, EXPORT_OPEN, EXPORT_READ};
use crate::remote::scratch::ServerFolder;
use crate::remote::transfer::{Receiving, MAX_CHUNK};
use crate::share::Exported;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::visible::shown;

/// `export_open`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportOpen {
    pub session_id: String,
    /// Include `.session-info.json`'s config (it may hold secrets).
    #[serde(default)]
    pub include_config: bool,
}

/// `export_open`'s result: the bundle written on the server, to read by `export_id`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportOpened {
    pub export_id: String,
    /// The bundle's size in bytes, as `export_read` reads it.
    pub size: u64,
    /// What was written (its `path` is the server's).
    pub exported: Exported,
}

/// `export_read`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportRead {
    pub export_id: String,
    pub offset: u64,
    /// At most [`MAX_CHUNK`].
    pub limit: usize,
}

/// `export_close`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportClose {
    pub export_id: String,
}

impl RemoteClient {
    /// Exports session `session_id` of the server's workspace to the local file `out`: the
    /// server writes the bundle, the client reads it back in chunks of at most [`MAX_CHUNK`]
    /// bytes into a file beside `out` (0600), renamed to `out` once whole. Returns what the
    /// server exported, its `path` the local one.
    pub fn export_session(&self, session_id: &str, include_config: bool, out: &Path) -> Result<Exported, Error> {
        let opened: ExportOpened = self.call(
            EXPORT_OPEN,
            &ExportOpen {
                session_id: session_id.to_owned(),
                include_config,
            },
        )?;
        let close = ExportClose {
            export_id: opened.export_id.clone(),
        };
        let copied = self.copy_export(&opened, out);
        let closed = self.call::<()>(EXPORT_CLOSE, &close);
        let exported = copied?;
        closed?;
        Ok(exported)
    }

    /// Copies the export the server opened into `out`, through a partial file beside it (named
    /// by this process, and swept by the next export once that process is gone). A server that
    /// declares more than an import takes ([`crate::share::DEFAULT_MAX_BYTES`]), or sends more
    /// than it declared, is refused before more is written: a hostile host cannot fill the disk.
    fn copy_export(&self, opened: &ExportOpened, out: &Path) -> Result<Exported, Error> {
        let what = format!("the export of `{}`", shown(&opened.exported.session_id));
        let most = crate::share::DEFAULT_MAX_BYTES;
        if opened.size > most {
            return Err(self.link_error(format!(
                "{what} was declared as {} bytes, more than the {most} an import takes",
                opened.size
            )));
        }
        let mut partial = crate::sessions::private::PartialFile::beside(out)?;
        let mut receiving = Receiving::new(what, opened.size);
        while receiving.received() < receiving.size() {
            let read = ExportRead {
                export_id: opened.export_id.clone(),
                offset: receiving.received(),
                limit: MAX_CHUNK,
            };
            let chunk = self.call_for_data(EXPORT_READ, &read)?;
            if chunk.is_empty() {
                break;
            }
            receiving
                .take(read.offset, chunk.len())
                .map_err(|what| self.link_error(what))?;
            let at = partial.path().to_owned();
            partial.file().write_all(&chunk).map_err(|e| Error::io_write(&at, e))?;
        }
        receiving.whole().map_err(|what| self.link_error(what))?;
        partial.finish()?;
        Ok(Exported {
            path: out.to_path_buf(),
            ..opened.exported.clone()
        })
    }
}

/// The bundles written for the client, in a private folder removed when the server ends.
#[derive(Default)]
pub struct Exports {
    folder: ServerFolder,
    open: Mutex<HashMap<String, PathBuf>>,
}

impl Exports {
    /// Writes session `session_id` as a bundle in the private folder.
    pub fn open(&self, studio: &Studio, params: ExportOpen) -> Result<ExportOpened, Error> {
        let id = SessionId::parse(&params.session_id)?;
        let export_id = uuid::Uuid::now_v7().simple().to_string();
        let path = self.folder.path()?.join(format!("{export_id}.zip"));
        let exported = studio.export_session(&id, &path, params.include_config)?;
        let size = std::fs::metadata(&exported.path)
            .map_err(|e| Error::io(&exported.path, e))?
            .len();
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(export_id.clone(), exported.path.clone());
        Ok(ExportOpened {
            export_id,
            size,
            exported,
        })
    }

    /// Up to `limit` bytes of an open export from `offset` (none past its end).
    pub fn read(&self, params: &ExportRead) -> Result<Vec<u8>, Error> {
        let path = self.path_of(&params.export_id)?;
        let mut file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        file.seek(SeekFrom::Start(params.offset))
            .map_err(|e| Error::io(&path, e))?;
        let mut data = Vec::new();
        let limit = params.limit.min(MAX_CHUNK) as u64;
        file.take(limit)
            .read_to_end(&mut data)
            .map_err(|e| Error::io(&path, e))?;
        Ok(data)
    }

    /// Lets an export go: its bundle is removed.
    pub fn close(&self, params: &ExportClose) -> Result<(), Error> {
        let path = self.path_of(&params.export_id)?;
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&params.export_id);
        std::fs::remove_file(&path).map_err(|e| Error::io_write(&path, e))
    }

    fn path_of(&self, export_id: &str) -> Result<PathBuf, Error> {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(export_id)
            .cloned()
            .ok_or_else(|| Error::InvalidRequest {
                reason: format!("no open export `{}`", crate::vocabulary::visible::shown(export_id)),
            })
    }

    /// Removes every bundle left (the server ends).
    pub fn remove_all(&self) {
        self.folder.remove_all();
    }
}
