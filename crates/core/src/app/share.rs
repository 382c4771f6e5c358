//! Sharing sessions: a session exported as one `.zip` bundle ([`export_session`]), and a bundle,
//! a session folder (a downloaded cloud session) or a captured log brought into a workspace
//! ([`import`]). The bundle format is documented in docs/cli.md ("Bundles").
//!
//! What is imported is untrusted. An entry with `..`, an absolute path, a link (symbolic or
//! hard), a device, FIFO or socket, a name the session layout cannot hold, more entries or more
//! bytes than [`ImportLimits`] allow (the declared sizes are checked before anything is read,
//! and the zip reader stops an entry that inflates past its declared size: a zip bomb stops
//! there, see `copy_entry`), a manifest of an unknown version, a member that does not match its
//! checksum: each is refused with an error naming the entry, and nothing is left behind. So is
//! what is none of the three (a file that is not text, a folder that holds no session's files).
//! The session is built in a folder of its own beside the sessions folder
//! (`.zibby/output/.import-<uuid>/`), its records are written in one store transaction, and the
//! folder is moved into place (never over another) only when everything else succeeded; the
//! transaction commits after.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::protocol::Stream;
use crate::runs::runner::{new_session_id, record_captured_output};
use crate::sessions::private;
use crate::sessions::session::{Timestamp, Workspace};
use crate::sessions::untrusted;
use crate::status::Status;
use crate::store::{Level, LogRow, MessageRow, NewRun, OutputRow, RunRow, SessionRecord, SpanRow, Store};
use crate::timeline::{Exit, RunEnd};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::{folder_name_problem, SessionId};

/// What `format` in a bundle's `manifest.json` says.
pub const BUNDLE_FORMAT: &str = "zibby-studio-session";
/// The bundle format version this studio writes and reads.
pub const BUNDLE_FORMAT_VERSION: u32 = 1;

const MANIFEST: &str = "manifest.json";
const SESSION_DIR: &str = "session";
const SESSION_INFO: &str = ".session-info.json";
const RECORD_SESSION: &str = "records/session.json";
const RECORD_RUNS: &str = "records/runs.jsonl";
const RECORD_SPANS: &str = "records/spans.jsonl";
const RECORD_OUTPUT: &str = "records/output.jsonl";
const RECORD_LOGS: &str = "records/logs.jsonl";
const RECORD_MESSAGES: &str = "records/messages.jsonl";
const RECORDS: [&str; 6] = [
    RECORD_SESSION,
    RECORD_RUNS,
    RECORD_SPANS,
    RECORD_OUTPUT,
    RECORD_LOGS,
    RECORD_MESSAGES,
];
/// The manifest, and one record line, are read up to this size.
const MAX_MANIFEST_BYTES: u64 = 8 << 20;
const MAX_RECORD_LINE_BYTES: usize = 16 << 20;

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

/// What [`export_session`] wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub session_id: String,
    pub path: PathBuf,
    pub members: usize,
    pub bytes: u64,
    pub config_included: bool,
}

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

fn hex(digest: impl AsRef<[u8]>) -> String {
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A writer that hashes and counts what goes through it.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W> Hashing<W> {
    fn new(inner: W) -> Hashing<W> {
        Hashing {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    fn digest(&self) -> String {
        hex(self.hasher.clone().finalize())
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

// ---- export ----

/// Writes session `id` of `workspace` as one bundle at `out`: its folder's files (links and
/// special files are left out), `.session-info.json` without its `config` unless
/// `include_config`, and what the store recorded of it. Written beside `out` and renamed onto it
/// when complete. Refused while a run of the session is live.
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
    let records = records.unwrap_or_default();
    if let Some(live) = records.runs.iter().find(|run| run.status == Status::Running) {
        return Err(Error::SessionLive {
            id: id.to_string(),
            run_id: live.id.clone(),
        });
    }
    let name = out
        .file_name()
        .map_or_else(|| "bundle.zip".into(), |n| n.to_string_lossy().into_owned());
    let partial = out.with_file_name(format!(".{name}.partial-{}", uuid::Uuid::now_v7().simple()));
    let file = private::create_new(&partial)?;
    let written = (|| {
        let mut bundle = BundleWriter {
            zip: zip::ZipWriter::new(std::io::BufWriter::new(file)),
            path: partial.clone(),
            members: Vec::new(),
            folders: Vec::new(),
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
        })
    })();
    let renamed = written.and_then(|exported| {
        std::fs::rename(&partial, out)
            .map_err(|e| Error::io_write(out, e))
            .map(|()| exported)
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    renamed
}

struct BundleWriter<W: Write + std::io::Seek> {
    zip: zip::ZipWriter<W>,
    path: PathBuf,
    members: Vec<Member>,
    folders: Vec<Folder>,
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
                    Ok(_) if include_config => text,
                    Ok(mut info) => {
                        if let Some(object) = info.as_object_mut() {
                            object.remove("config");
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

// ---- import ----

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
        return import_folder(store, workspace, source, options, now);
    }
    let start = untrusted::read_prefix(source, TEXT_SNIFF_BYTES as u64)?;
    if start.starts_with(b"PK\x03\x04") || start.starts_with(b"PK\x05\x06") {
        import_bundle(store, workspace, source, options, now)
    } else if start.contains(&0) {
        // A picture, an archive of another kind, a program: a log is text.
        Err(Error::NotImportable {
            path: source.into(),
            reason: format!("it is not text (a NUL byte in its first {TEXT_SNIFF_BYTES} bytes) and not a zip archive"),
        })
    } else {
        import_log(store, workspace, source, options, now)
    }
}

/// How much of a file is read to tell a bundle (a zip's signature) or a log (text: no NUL byte,
/// as git and grep tell text from binary) from anything else.
const TEXT_SNIFF_BYTES: usize = 8 * 1024;

/// The files one of which every session folder holds at its top (docs: PROTOCOL.md, "The session
/// folder"; the engine writes `.session-info.json` before every node).
const SESSION_FILES: [&str; 4] = [SESSION_INFO, "result.json", "events.json", "raw_stream_output.txt"];

/// The folder a session is built in before it is moved into place; removed unless it was.
/// The folders it made on the way (`.zibby`, `output`, `sessions` of a workspace that had none)
/// go too when nothing was imported.
struct Staging {
    dir: PathBuf,
    sessions: PathBuf,
    /// The folders made for it, outermost first (a session moved into place keeps them: they are
    /// not empty any more).
    made: Vec<PathBuf>,
}

impl Staging {
    fn new(workspace: &Workspace) -> Result<Staging, Error> {
        let mut made = Vec::new();
        if workspace.sessions_folder()?.is_none() {
            let sessions = workspace.sessions_dir();
            made = sessions
                .ancestors()
                .take_while(|folder| *folder != workspace.root())
                .filter(|folder| std::fs::symlink_metadata(folder).is_err())
                .map(Path::to_path_buf)
                .collect();
            made.reverse();
            private::create_dir_all(&sessions)?;
        }
        let sessions = workspace.sessions_folder()?.ok_or_else(|| Error::NotAFolder {
            path: workspace.sessions_dir(),
        })?;
        let parent = sessions.parent().unwrap_or(&sessions);
        let dir = parent.join(format!(".import-{}", uuid::Uuid::now_v7().simple()));
        let staging = Staging {
            dir,
            sessions: sessions.clone(),
            made,
        };
        create_private_dir(&staging.dir)?;
        Ok(staging)
    }

    /// Where the session is built.
    fn session(&self) -> PathBuf {
        self.dir.join("session")
    }

    /// Moves the session into the sessions folder as `id`, never over anything there.
    fn move_into_place(&self, id: &SessionId, modified: Option<SystemTime>) -> Result<PathBuf, Error> {
        let target = self.sessions.join(id.as_str());
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &self.session(),
            nix::fcntl::AT_FDCWD,
            &target,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(|e| match e {
            nix::errno::Errno::EEXIST => Error::SessionExists {
                id: id.to_string(),
                sessions_dir: self.sessions.clone(),
            },
            e => Error::io_write(&target, e.into()),
        })?;
        if let Some(modified) = modified {
            set_modified(&target, modified);
        }
        Ok(target)
    }

    /// Takes back a session moved into place (its import failed after all).
    fn unplace(&self, target: &Path) {
        let _ = std::fs::remove_dir_all(target);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        // Innermost first; a folder that is not empty (a session placed in it, or something else
        // wrote into it meanwhile) stays.
        for folder in self.made.iter().rev() {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// A folder's entries, by name.
fn sorted_entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, Error> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|entry| entry.file_name());
    Ok(entries)
}

/// A new folder, 0700 (its parent exists).
fn create_private_dir(path: &Path) -> Result<(), Error> {
    std::fs::DirBuilder::new()
        .mode(private::DIR_MODE)
        .create(path)
        .map_err(|e| Error::io_write(path, e))
}

fn set_modified(path: &Path, modified: SystemTime) {
    let set = File::open(path).and_then(|file| file.set_modified(modified));
    if let Err(error) = set {
        tracing::debug!(path = %path.display(), %error, "cannot keep the modification time");
    }
}

/// Refuses an id the workspace has already (its folder or its records).
fn refuse_existing(store: &Store, workspace: &Workspace, id: &SessionId) -> Result<(), Error> {
    if store.session_exists(workspace, id)? {
        return Err(Error::SessionExists {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        });
    }
    Ok(())
}

/// Writes the records of `write` in one transaction, then moves the staged folder into place as
/// the id `write` returns, then commits; a failure anywhere leaves neither the records nor the
/// folder.
fn commit_import(
    store: &Store,
    staging: &Staging,
    folder_modified: Option<SystemTime>,
    write: impl FnOnce() -> Result<SessionId, Error>,
) -> Result<(SessionId, PathBuf), Error> {
    let mut moved: Option<PathBuf> = None;
    let result = store.atomically(|| {
        let id = write()?;
        moved = Some(staging.move_into_place(&id, folder_modified)?);
        Ok(id)
    });
    match (result, moved) {
        (Ok(id), Some(path)) => Ok((id, path)),
        (Err(error), moved) => {
            if let Some(path) = moved {
                // The commit failed after the move.
                staging.unplace(&path);
            }
            Err(error)
        }
        (Ok(_), None) => unreachable!("the folder moves before the commit"),
    }
}

/// Why a path inside a session (`a/b/c`, from an archive or a folder) cannot be written, if it
/// cannot: absolute, `..`, an invalid name, too deep.
fn path_problem(relative: &str, max_depth: usize) -> Option<String> {
    if relative.starts_with('/') || relative.starts_with('\\') || relative.get(1..2) == Some(":") {
        return Some("it is an absolute path".to_owned());
    }
    let components: Vec<&str> = relative.split('/').collect();
    if components.contains(&"..") {
        return Some("its path goes up (`..`)".to_owned());
    }
    if components.len() > max_depth {
        return Some(format!("it is more than {max_depth} folders deep"));
    }
    components.iter().find_map(|name| {
        folder_name_problem(name).map(|reason| {
            format!(
                "`{}` is not a name a session folder holds: {reason}",
                name.escape_debug()
            )
        })
    })
}

// ---- a bundle ----

type Archive = zip::ZipArchive<BufReader<File>>;

fn import_bundle(
    store: &Store,
    workspace: &Workspace,
    source: &Path,
    options: &ImportOptions,
    now: SystemTime,
) -> Result<ImportedSession, Error> {
    let limits = options.limits;
    let invalid = |entry: &str, reason: String| Error::BundleInvalid {
        source_path: source.into(),
        entry: entry.to_owned(),
        reason,
    };
    let refused = |entry: &str, reason: String| Error::ImportEntryRefused {
        source_path: source.into(),
        entry: entry.escape_debug().to_string(),
        reason,
    };
    let (file, _) = untrusted::open_regular(source)?;
    let mut archive: Archive =
        zip::ZipArchive::new(BufReader::new(file)).map_err(|e| invalid("", format!("not a zip archive: {e}")))?;
    if archive.len() > limits.max_entries {
        let entry = archive
            .name_for_index(limits.max_entries)
            .and_then(Result::ok)
            .map(|n| n.into_owned())
            .unwrap_or_default();
        return Err(Error::ImportTooLarge {
            source_path: source.into(),
            entry,
            what: format!(
                "{} entries, more than the {} an import takes",
                archive.len(),
                limits.max_entries
            ),
        });
    }
    // Two entries of one name (an archive's nearest thing to a hard link): the reader keeps one of
    // them and says only that it did.
    if archive.has_duplicate_names() {
        return Err(refused(
            "(two entries)",
            "the archive holds two entries of one name: the second would overwrite the first".to_owned(),
        ));
    }
    // Every entry is looked at before anything is written.
    let mut names = HashSet::new();
    let mut files = Vec::new();
    let mut folders = Vec::new();
    let mut declared = 0u64;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|e| invalid(&format!("#{index}"), e.to_string()))?;
        let raw = String::from_utf8_lossy(entry.name_raw()).into_owned();
        if raw.contains('\0') || std::str::from_utf8(entry.name_raw()).is_err() {
            return Err(refused(&raw, "its name is not valid UTF-8 text".to_owned()));
        }
        let is_dir = entry.is_dir();
        let name = raw.trim_end_matches('/').to_owned();
        if let Some(kind) = special_kind(entry.unix_mode(), entry.is_symlink()) {
            return Err(refused(
                &raw,
                format!("it is {kind}; only files and folders are imported"),
            ));
        }
        if entry.encrypted() {
            return Err(refused(&raw, "it is encrypted".to_owned()));
        }
        let problem = if name == MANIFEST || RECORDS.contains(&name.as_str()) || name == "records" {
            None
        } else if let Some(relative) = name.strip_prefix("session/") {
            path_problem(relative, limits.max_depth)
        } else if name == SESSION_DIR && is_dir {
            None
        } else {
            path_problem(&name, usize::MAX)
                .or_else(|| Some("it is not a part of a session bundle (manifest.json, session/, records/)".to_owned()))
        };
        if let Some(reason) = problem {
            return Err(refused(&raw, reason));
        }
        if !names.insert(name.clone()) {
            return Err(refused(
                &raw,
                "a second entry of that name (an archive's hard link): the first would be overwritten".to_owned(),
            ));
        }
        declared = declared.saturating_add(entry.size());
        if declared > limits.max_bytes {
            return Err(Error::ImportTooLarge {
                source_path: source.into(),
                entry: raw,
                what: format!(
                    "more than {} bytes uncompressed, the most an import takes",
                    limits.max_bytes
                ),
            });
        }
        if is_dir {
            folders.push(name);
        } else if name != MANIFEST {
            files.push((index, name));
        }
    }
    let manifest = read_manifest(&mut archive, source)?;
    let listed: BTreeMap<&str, &Member> = manifest.members.iter().map(|m| (m.name.as_str(), m)).collect();
    for (_, name) in &files {
        if !listed.contains_key(name.as_str()) {
            return Err(invalid(name, "it is not listed in manifest.json".to_owned()));
        }
    }
    for name in listed.keys() {
        if !names.contains(*name) {
            return Err(invalid(
                name,
                "manifest.json lists it, the archive does not hold it".to_owned(),
            ));
        }
    }
    for record in RECORDS {
        if !listed.contains_key(record) {
            return Err(invalid(record, "missing: every bundle has it".to_owned()));
        }
    }
    let exported_id = SessionId::parse(&manifest.session_id).map_err(|e| invalid(MANIFEST, e.to_string()))?;
    let id = if options.as_new { new_session_id() } else { exported_id };
    refuse_existing(store, workspace, &id)?;

    let staging = Staging::new(workspace)?;
    let root = staging.session();
    create_private_dir(&root)?;
    for name in &folders {
        if let Some(relative) = name.strip_prefix("session/") {
            private::create_dir_all(&root.join(relative))?;
        }
    }
    for (index, name) in &files {
        let Some(relative) = name.strip_prefix("session/") else {
            continue;
        };
        let member = listed[name.as_str()];
        let path = root.join(relative);
        if let Some(parent) = path.parent() {
            private::create_dir_all(parent)?;
        }
        let entry = archive.by_index(*index).map_err(|e| invalid(name, e.to_string()))?;
        let out = private::create_new(&path)?;
        let mut hashing = Hashing::new(std::io::BufWriter::new(out));
        copy_entry(source, name, entry, &mut hashing, &path)?;
        hashing.flush().map_err(|e| Error::io_write(&path, e))?;
        check_member(source, member, hashing.bytes, &hashing.digest())?;
        drop(hashing);
        if let Some(ms) = member.modified_ms {
            set_modified(&path, Timestamp(ms).to_system_time());
        }
    }
    // Folders last, deepest first: writing into a folder changes its time.
    let mut times: Vec<&Folder> = manifest.folders.iter().filter(|f| f.name != SESSION_DIR).collect();
    times.sort_by_key(|f| std::cmp::Reverse(f.name.matches('/').count()));
    for folder in times {
        if let (Some(relative), Some(ms)) = (folder.name.strip_prefix("session/"), folder.modified_ms) {
            if path_problem(relative, limits.max_depth).is_none() {
                set_modified(&root.join(relative), Timestamp(ms).to_system_time());
            }
        }
    }
    let root_modified = manifest
        .folders
        .iter()
        .find(|f| f.name == SESSION_DIR)
        .and_then(|f| f.modified_ms)
        .map(|ms| Timestamp(ms).to_system_time());

    let record: SessionRecord = {
        let mut reader = RecordReader::open(&mut archive, source, &listed, RECORD_SESSION)?;
        let text = reader.rest()?;
        let record = serde_json::from_slice(&text).map_err(|e| invalid(RECORD_SESSION, e.to_string()))?;
        reader.finish()?;
        record
    };
    let (id, path) = commit_import(store, &staging, root_modified, || {
        let mut import = store.import_begin(workspace, &id, &record, source, now)?;
        read_rows(&mut archive, source, &listed, RECORD_RUNS, |row: RunRow| {
            import.run(&row)
        })?;
        read_rows(&mut archive, source, &listed, RECORD_SPANS, |row: SpanRow| {
            import.span(&row)
        })?;
        read_rows(&mut archive, source, &listed, RECORD_OUTPUT, |row: OutputRow| {
            import.output(&row)
        })?;
        import.flush()?;
        read_rows(&mut archive, source, &listed, RECORD_LOGS, |row: LogRow| {
            import.log(&row)
        })?;
        read_rows(&mut archive, source, &listed, RECORD_MESSAGES, |row: MessageRow| {
            import.message(&row)
        })?;
        import.finish()?;
        Ok(id)
    })?;
    Ok(ImportedSession {
        session_id: id,
        kind: ImportKind::Bundle,
        path,
    })
}

/// What a zip entry's Unix mode (or its link flag) says it is, when not a file or a folder.
fn special_kind(mode: Option<u32>, symlink: bool) -> Option<&'static str> {
    if symlink {
        return Some("a symbolic link");
    }
    let kind = mode? & 0o170000;
    match kind {
        0 | 0o100000 | 0o040000 => None,
        0o120000 => Some("a symbolic link"),
        0o020000 | 0o060000 => Some("a device"),
        0o010000 => Some("a FIFO"),
        0o140000 => Some("a socket"),
        _ => Some("not a regular file"),
    }
}

fn check_member(source: &Path, member: &Member, bytes: u64, sha256: &str) -> Result<(), Error> {
    if bytes != member.bytes || !sha256.eq_ignore_ascii_case(&member.sha256) {
        return Err(Error::BundleChecksumMismatch {
            source_path: source.into(),
            entry: member.name.clone(),
        });
    }
    Ok(())
}

fn read_manifest(archive: &mut Archive, source: &Path) -> Result<Manifest, Error> {
    let invalid = |reason: String| Error::BundleInvalid {
        source_path: source.into(),
        entry: MANIFEST.to_owned(),
        reason,
    };
    let entry = archive
        .by_name(MANIFEST)
        .map_err(|_| invalid("missing: a bundle starts from its manifest".to_owned()))?;
    let mut text = Vec::new();
    entry
        .take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| invalid(e.to_string()))?;
    if text.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(invalid(format!("larger than {MAX_MANIFEST_BYTES} bytes")));
    }
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(BUNDLE_FORMAT) {
        return Err(invalid(format!("its `format` is not `{BUNDLE_FORMAT}`")));
    }
    let version = value.get("format_version").cloned().unwrap_or_default();
    if version.as_u64() != Some(u64::from(BUNDLE_FORMAT_VERSION)) {
        return Err(Error::BundleVersionUnknown {
            source_path: source.into(),
            entry: MANIFEST.to_owned(),
            found: version.to_string(),
            known: BUNDLE_FORMAT_VERSION,
        });
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

/// Copies the zip entry `from` (`entry` of the bundle `source`) into `to`, the file at `path`.
///
/// What an entry inflates to is bounded by its declared size: the `zip` crate's reader (its
/// `Crc32Reader`, since zip 9.0.1) fails with `InvalidData` as soon as an entry grows past the
/// uncompressed size its central directory declares, and [`import_bundle`] bounds the declared
/// sizes together (`ImportLimits::max_bytes`) and refuses a second entry of a name before
/// anything is read, so every entry is read once. The bytes written are therefore bounded
/// without a count of their own here; a zip bomb (an entry that declares less than it holds) is
/// `BundleInvalid`, and `a_zip_bomb_lying_about_its_size_stops_at_its_declared_size` in
/// tests/it/share.rs fails if the reader stops bounding it.
fn copy_entry(source: &Path, entry: &str, mut from: impl Read, to: &mut impl Write, path: &Path) -> Result<(), Error> {
    std::io::copy(&mut from, to).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::Other => {
            Error::BundleInvalid {
                source_path: source.into(),
                entry: entry.to_owned(),
                reason: e.to_string(),
            }
        }
        _ => Error::io_write(path, e),
    })?;
    Ok(())
}

/// One record member, read and checked against its checksum at its end (bounded by its declared
/// size as [`copy_entry`] says).
struct RecordReader<'a, 'p> {
    reader: BufReader<Hashing<zip::read::ZipFile<'a, BufReader<File>>>>,
    source: &'p Path,
    member: Member,
}

impl<'a, 'p> RecordReader<'a, 'p> {
    fn open(
        archive: &'a mut Archive,
        source: &'p Path,
        listed: &BTreeMap<&str, &Member>,
        name: &str,
    ) -> Result<RecordReader<'a, 'p>, Error> {
        let entry = archive.by_name(name).map_err(|e| Error::BundleInvalid {
            source_path: source.into(),
            entry: name.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(RecordReader {
            reader: BufReader::new(Hashing::new(entry)),
            source,
            member: (*listed[name]).clone(),
        })
    }

    fn error(&self, e: std::io::Error) -> Error {
        Error::BundleInvalid {
            source_path: self.source.into(),
            entry: self.member.name.clone(),
            reason: e.to_string(),
        }
    }

    /// The next line (without its newline), or `None` at the end.
    fn line(&mut self) -> Result<Option<Vec<u8>>, Error> {
        let mut line = Vec::new();
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(e) => return Err(self.error(e)),
            };
            if buffer.is_empty() {
                break;
            }
            let (taken, done) = match memchr::memchr(b'\n', buffer) {
                Some(at) => (at + 1, true),
                None => (buffer.len(), false),
            };
            line.extend_from_slice(&buffer[..taken]);
            self.reader.consume(taken);
            if line.len() > MAX_RECORD_LINE_BYTES {
                return Err(Error::ImportTooLarge {
                    source_path: self.source.into(),
                    entry: self.member.name.clone(),
                    what: format!("a line longer than {MAX_RECORD_LINE_BYTES} bytes"),
                });
            }
            if done {
                line.pop();
                return Ok(Some(line));
            }
        }
        Ok((!line.is_empty()).then_some(line))
    }

    fn rest(&mut self) -> Result<Vec<u8>, Error> {
        let mut text = Vec::new();
        (&mut self.reader)
            .take(MAX_MANIFEST_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|e| self.error(e))?;
        Ok(text)
    }

    /// Checks the member's checksum (the whole of it read).
    fn finish(mut self) -> Result<(), Error> {
        std::io::copy(&mut self.reader, &mut std::io::sink()).map_err(|e| self.error(e))?;
        let hashing = self.reader.get_ref();
        check_member(self.source, &self.member, hashing.bytes, &hashing.digest())
    }
}

/// Every row of a JSON-lines record member, to `each`; the member's checksum is checked at its
/// end (inside the import's transaction, so a mismatch stores nothing).
fn read_rows<T: for<'de> Deserialize<'de>>(
    archive: &mut Archive,
    source: &Path,
    listed: &BTreeMap<&str, &Member>,
    name: &str,
    mut each: impl FnMut(T) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut reader = RecordReader::open(archive, source, listed, name)?;
    let mut number = 0;
    while let Some(line) = reader.line()? {
        number += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let row = serde_json::from_slice(&line).map_err(|e| Error::BundleInvalid {
            source_path: source.into(),
            entry: name.to_owned(),
            reason: format!("line {number}: {e}"),
        })?;
        each(row)?;
    }
    reader.finish()
}

// ---- a session folder ----

fn import_folder(
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
            .import_begin(workspace, &id, &SessionRecord::default(), source, now)?
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
            if metadata.len() > self.left {
                return Err(self.too_large(
                    &relative,
                    format!("more than {} bytes, the most an import takes", self.limits.max_bytes),
                ));
            }
            let Some(target) = target else {
                self.left -= metadata.len();
                continue;
            };
            let (file, _) = untrusted::open_regular(&path)?;
            let mut out = private::create_new(&target)?;
            let copied = std::io::copy(&mut file.take(self.left + 1), &mut out).map_err(|e| Error::io(&path, e))?;
            if copied > self.left {
                return Err(self.too_large(
                    &relative,
                    format!("more than {} bytes, the most an import takes", self.limits.max_bytes),
                ));
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

// ---- a captured log ----

/// A captured run: its stdout `source` (and `options.stderr`), read as `zstudio parse` reads a
/// log (markers, else the human timeline), recorded as one run of a session whose folder is
/// empty. Its id is the `◆ Session <id>` line's, else (or with `as_new`) a new one.
fn import_log(
    store: &Store,
    workspace: &Workspace,
    source: &Path,
    options: &ImportOptions,
    now: SystemTime,
) -> Result<ImportedSession, Error> {
    let mut files = vec![(Stream::Stdout, source.to_owned())];
    if let Some(stderr) = &options.stderr {
        untrusted::open_regular(stderr)?;
        files.push((Stream::Stderr, stderr.clone()));
    }
    let end = options.exit_code.map(|status| RunEnd {
        exit: Exit::from_shell_status(status),
        signalled_by_studio: false,
    });
    let staging = Staging::new(workspace)?;
    let root = staging.session();
    create_private_dir(&root)?;
    // Recorded under a provisional id first: the log names its session only as it is read.
    let provisional = new_session_id();
    let (session_id, path) = commit_import(store, &staging, Some(now), || {
        store
            .import_begin(workspace, &provisional, &SessionRecord::default(), source, now)?
            .finish()?;
        let run_id = store.run_insert(
            workspace,
            &NewRun {
                session: &provisional,
                agent: None,
                command: &[],
                replayed_node: None,
                prompt: None,
                started_at: now,
            },
        )?;
        let run_span = store.span_start(&run_id, None, "run", "run", 0, now)?;
        let timeline = record_captured_output(store, &run_id, &files, end, now)?;
        store.span_end(run_span, timeline.status, now)?;
        store.run_log(
            &run_id,
            Level::Info,
            "run.imported",
            &format!("imported from the captured log {}", source.display()),
            serde_json::json!({ "status": timeline.status, "exit_code": timeline.exit_code }),
            now,
        )?;
        let named = timeline.session_id.as_deref().and_then(|id| SessionId::parse(id).ok());
        match named {
            Some(named) if !options.as_new => {
                refuse_existing(store, workspace, &named)?;
                store.imported_session_rename(workspace, &provisional, &named)?;
                Ok(named)
            }
            _ => Ok(provisional.clone()),
        }
    })?;
    Ok(ImportedSession {
        session_id,
        kind: ImportKind::Log,
        path,
    })
}
