//! A session exported as one bundle: its folder's files, its `.session-info.json` without its
//! `config` unless asked for, what the store recorded of it, and the manifest listing them all.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::format::{
    Folder, Hashing, Manifest, Member, BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, MANIFEST, MAX_MANIFEST_BYTES, RECORD_LOGS,
    RECORD_MESSAGES, RECORD_OUTPUT, RECORD_RUNS, RECORD_SESSION, RECORD_SPANS, SESSION_DIR, SESSION_INFO,
};
use super::options::ImportLimits;
use super::paths::{path_problem, sorted_entries};
use super::redact::{Redaction, Redactor};
use crate::sessions::private;
use crate::sessions::session::{Timestamp, Workspace};
use crate::sessions::untrusted;
use crate::status::Status;
use crate::store::Store;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// What [`export_session`] wrote.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Exported {
    pub session_id: String,
    pub path: PathBuf,
    pub members: usize,
    pub bytes: u64,
    pub config_included: bool,
    /// What was redacted, as the manifest says.
    pub redaction: Redaction,
}

/// Writes session `id` of `workspace` as one bundle at `out`: its folder's files (links and
/// special files are left out), `.session-info.json` without its `config` unless
/// `include_config`, and what the store recorded of it. What the studio recorded of how it ran
/// (commands, log lines, `.session-info.json`) has its secrets redacted and the home folder
/// written as `~` (`redact`; the manifest's `redaction` says what). Written beside `out` and
/// renamed onto it when complete. Refused while a run of the session is live.
pub fn export_session(
    store: &Store,
    workspace: &Workspace,
    id: &SessionId,
    out: &Path,
    include_config: bool,
    now: SystemTime,
) -> Result<Exported, Error> {
    let folder = match workspace.session_folder(id) {
        Ok(folder) => Some(folder),
        Err(Error::SessionNotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    let records = store.export_records(workspace, id)?;
    if folder.is_none() && records.is_none() {
        return Err(Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        });
    }
    let mut records = records.unwrap_or_default();
    let mut redactor = Redactor::of_this_user();
    for run in &mut records.runs {
        run.command = redactor.command(RECORD_RUNS, &run.command);
        run.error = run.error.as_deref().map(|error| redactor.text(RECORD_RUNS, error));
    }
    for log in &mut records.logs {
        log.message = redactor.text(RECORD_LOGS, &log.message);
        redactor.json(RECORD_LOGS, &mut log.fields);
    }
    redactor.looked_at(RECORD_RUNS);
    redactor.looked_at(RECORD_LOGS);
    if let Some(live) = records.runs.iter().find(|run| run.status == Status::Running) {
        return Err(Error::SessionLive {
            id: id.to_string(),
            run_id: live.id.clone(),
        });
    }
    let mut partial_file = private::PartialFile::beside(out)?;
    let partial = partial_file.path().to_owned();
    let file = partial_file.take_file();
    let written = (|| -> Result<_, Error> {
        let mut bundle = BundleWriter {
            zip: zip::ZipWriter::new(std::io::BufWriter::new(file)),
            path: partial.clone(),
            members: Vec::new(),
            folders: Vec::new(),
            redactor,
        };
        if let Some(folder) = &folder {
            bundle.folder(folder, SESSION_DIR, include_config)?;
        }
        bundle.json_member(RECORD_SESSION, &records.session)?;
        bundle.lines_member(RECORD_RUNS, |each| records.runs.iter().try_for_each(each))?;
        bundle.lines_member(RECORD_SPANS, |each| records.spans.iter().try_for_each(each))?;
        bundle.lines_member(RECORD_OUTPUT, |each| {
            records
                .runs
                .iter()
                .try_for_each(|run| store.export_output(&run.id, |line| each(&line)))
        })?;
        bundle.lines_member(RECORD_LOGS, |each| records.logs.iter().try_for_each(each))?;
        bundle.lines_member(RECORD_MESSAGES, |each| records.messages.iter().try_for_each(each))?;
        let manifest = Manifest {
            format: BUNDLE_FORMAT.to_owned(),
            format_version: BUNDLE_FORMAT_VERSION,
            studio_version: env!("CARGO_PKG_VERSION").to_owned(),
            session_id: id.to_string(),
            exported_at_ms: Timestamp::from_system_time(now).0,
            config_included: include_config,
            members: std::mem::take(&mut bundle.members),
            folders: std::mem::take(&mut bundle.folders),
            redaction: Some(std::mem::replace(&mut bundle.redactor, Redactor::new(None)).finish()),
        };
        bundle.start(MANIFEST)?;
        let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
        bundle.zip.write_all(&text).map_err(|e| Error::io_write(&partial, e))?;
        let mut inner = bundle
            .zip
            .finish()
            .map_err(|e| Error::io_write(&partial, std::io::Error::other(e)))?;
        inner.flush().map_err(|e| Error::io_write(&partial, e))?;
        Ok(Exported {
            session_id: id.to_string(),
            path: out.to_owned(),
            bytes: manifest.members.iter().map(|m| m.bytes).sum(),
            members: manifest.members.len(),
            config_included: include_config,
            redaction: manifest.redaction.clone().unwrap_or_default(),
        })
    })();
    let exported = written?;
    partial_file.finish()?;
    Ok(exported)
}

struct BundleWriter<W: Write + std::io::Seek> {
    zip: zip::ZipWriter<W>,
    path: PathBuf,
    members: Vec<Member>,
    folders: Vec<Folder>,
    redactor: Redactor,
}

impl<W: Write + std::io::Seek> BundleWriter<W> {
    fn zip_error(&self, error: zip::result::ZipError) -> Error {
        Error::io_write(&self.path, std::io::Error::other(error))
    }

    fn start(&mut self, name: &str) -> Result<(), Error> {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(0o600)
            .large_file(true);
        self.zip.start_file(name, options).map_err(|e| self.zip_error(e))
    }

    /// A member from `write`, hashed and listed.
    fn member(
        &mut self,
        name: &str,
        modified: Option<SystemTime>,
        write: impl FnOnce(&mut dyn Write) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.start(name)?;
        let mut hashing = Hashing::new(&mut self.zip);
        write(&mut hashing)?;
        self.members.push(Member {
            name: name.to_owned(),
            bytes: hashing.bytes,
            sha256: hashing.digest(),
            modified_ms: modified.map(|t| Timestamp::from_system_time(t).0),
        });
        Ok(())
    }

    fn json_member(&mut self, name: &str, value: &impl Serialize) -> Result<(), Error> {
        let path = self.path.clone();
        self.member(name, None, |out| {
            serde_json::to_writer_pretty(&mut *out, value).map_err(|e| Error::io_write(&path, e.into()))
        })
    }

    /// A JSON-lines member: `rows` calls its argument once per row.
    fn lines_member<T: Serialize>(
        &mut self,
        name: &str,
        rows: impl FnOnce(&mut dyn FnMut(&T) -> Result<(), Error>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let path = self.path.clone();
        self.member(name, None, |out| {
            rows(&mut |row| {
                serde_json::to_writer(&mut *out, row).map_err(|e| Error::io_write(&path, e.into()))?;
                out.write_all(b"\n").map_err(|e| Error::io_write(&path, e))
            })
        })
    }

    /// The files of a session folder, as `prefix/…`: regular files only, never through a link.
    fn folder(&mut self, dir: &Path, prefix: &str, include_config: bool) -> Result<(), Error> {
        let metadata = std::fs::symlink_metadata(dir).map_err(|e| Error::io(dir, e))?;
        self.folders.push(Folder {
            name: prefix.to_owned(),
            modified_ms: metadata.modified().ok().map(|t| Timestamp::from_system_time(t).0),
        });
        for entry in sorted_entries(dir)? {
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                tracing::warn!(path = %path.display(), "not exported: its name is not UTF-8");
                continue;
            };
            let file_type = entry.file_type().map_err(|e| Error::io(&path, e))?;
            let member = format!("{prefix}/{name}");
            // What an import would refuse is not written (a name the layout cannot hold, too deep).
            let relative = member.strip_prefix("session/").unwrap_or(&member);
            if let Some(reason) = path_problem(relative, ImportLimits::default().max_depth) {
                tracing::warn!(path = %path.display(), reason, "not exported");
                continue;
            }
            if file_type.is_dir() {
                self.folder(&path, &member, include_config)?;
                continue;
            }
            if !file_type.is_file() {
                tracing::warn!(path = %path.display(), kind = untrusted::kind_of(file_type), "not exported");
                continue;
            }
            let (mut file, _) = untrusted::open_regular(&path)?;
            let modified = file.metadata().ok().and_then(|m| m.modified().ok());
            if prefix == SESSION_DIR && name == SESSION_INFO {
                let text = untrusted::read_bounded(&path, MAX_MANIFEST_BYTES)?;
                let kept = match serde_json::from_slice::<serde_json::Value>(&text) {
                    Ok(mut info) => {
                        // Its config goes only when asked for, and then as it is: the user
                        // asked for what it holds.
                        let config = info.as_object_mut().and_then(|object| object.remove("config"));
                        self.redactor.json(&member, &mut info);
                        if let (Some(config), Some(object), true) = (config, info.as_object_mut(), include_config) {
                            object.insert("config".to_owned(), config);
                        }
                        serde_json::to_vec(&info).expect("JSON serialises")
                    }
                    // Its config cannot be told apart from the rest: it stays out.
                    Err(_) if !include_config => {
                        tracing::warn!(path = %path.display(), "not exported: not JSON, and may hold secrets");
                        continue;
                    }
                    Err(_) => text,
                };
                let out_path = self.path.clone();
                self.member(&member, modified, |out| {
                    out.write_all(&kept).map_err(|e| Error::io_write(&out_path, e))
                })?;
                continue;
            }
            let out_path = self.path.clone();
            self.member(&member, modified, |out| {
                let mut buffer = vec![0u8; 256 * 1024];
                loop {
                    let n = match file.read(&mut buffer) {
                        Ok(0) => return Ok(()),
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(Error::io(&path, e)),
                    };
                    out.write_all(&buffer[..n]).map_err(|e| Error::io_write(&out_path, e))?;
                }
            })?;
        }
        Ok(())
    }
}
