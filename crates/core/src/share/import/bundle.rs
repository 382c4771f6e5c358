//! A bundle imported: its archive opened and every entry looked at before anything is written,
//! its manifest read and checked against the entries, the session's files unpacked (each checked
//! against its checksum) and its records read into the store, in one transaction.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::SystemTime;

use serde::Deserialize;

use super::staging::{commit_import, create_private_dir, refuse_existing, set_modified, Staging};
use crate::runs::runner::new_session_id;
use crate::sessions::private;
use crate::sessions::session::{Timestamp, Workspace};
use crate::sessions::untrusted;
use crate::share::format::{
    Folder, Hashing, Manifest, Member, BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, MANIFEST, MAX_MANIFEST_BYTES,
    MAX_RECORD_LINE_BYTES, OLDEST_BUNDLE_FORMAT_VERSION, RECORDS, RECORD_LOGS, RECORD_MESSAGES, RECORD_OUTPUT,
    RECORD_RUNS, RECORD_SESSION, RECORD_SPANS, SESSION_DIR,
};
use crate::share::options::{ImportKind, ImportLimits, ImportOptions, ImportedSession};
use crate::share::paths::path_problem;
use crate::store::{LogRow, MessageRow, OutputRow, RunRow, SessionRecord, SpanRow, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

type Archive = zip::ZipArchive<BufReader<File>>;

/// The members of a bundle by name, as its manifest lists them.
type Listed<'m> = BTreeMap<&'m str, &'m Member>;

/// Imports the bundle `source`: as the session its manifest names, or (`as_new`) a new one.
pub(super) fn import_bundle(
    store: &Store,
    workspace: &Workspace,
    source: &Path,
    options: &ImportOptions,
    now: SystemTime,
) -> Result<ImportedSession, Error> {
    let limits = options.limits;
    let mut archive = open_archive(source, limits)?;
    let entries = look_at_every_entry(&mut archive, source, limits)?;
    let manifest = read_manifest(&mut archive, source)?;
    let listed = entries.check_listed(&manifest, source)?;
    let exported_id = SessionId::parse(&manifest.session_id).map_err(|e| invalid(source, MANIFEST, e.to_string()))?;
    let id = if options.as_new { new_session_id() } else { exported_id };
    refuse_existing(store, workspace, &id)?;

    let staging = Staging::new(workspace)?;
    let root = staging.session();
    unpack_session(&mut archive, source, &entries, &listed, &root)?;
    let root_modified = keep_folder_times(&manifest, &root, limits);
    let record = read_session_record(&mut archive, source, &listed)?;
    let (id, path) = commit_import(store, &staging, root_modified, || {
        let mut import = store.import_begin(workspace, &id, &record, options.recorded_from(source), now)?;
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

/// The bundle is not what it says it is: `entry` and why.
fn invalid(source: &Path, entry: &str, reason: String) -> Error {
    Error::BundleInvalid {
        source_path: source.into(),
        entry: entry.to_owned(),
        reason,
    }
}

/// An entry no import writes: `entry` and why.
fn refused(source: &Path, entry: &str, reason: String) -> Error {
    Error::ImportEntryRefused {
        source_path: source.into(),
        entry: entry.escape_debug().to_string(),
        reason,
    }
}

/// The archive, refused when it holds more entries than an import takes or two of one name.
///
/// The zip reader reads the whole central directory into memory before it answers anything (a
/// million entries took 221 MB), so the end records that say how large it is are checked first
/// ([`check_central_directory`]). The archive is read as starting at the file's first byte (as
/// every bundle does), so the reader never looks for a directory anywhere the end records do
/// not say.
fn open_archive(source: &Path, limits: ImportLimits) -> Result<Archive, Error> {
    let (mut file, _) = untrusted::open_regular(source)?;
    check_central_directory(&mut file, source, limits)?;
    file.seek(SeekFrom::Start(0)).map_err(|e| Error::io(source, e))?;
    let config = zip::read::Config {
        archive_offset: zip::read::ArchiveOffset::Known(0),
    };
    let archive: Archive = zip::ZipArchive::with_config(config, BufReader::new(file))
        .map_err(|e| invalid(source, "", format!("not a zip archive: {e}")))?;
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
            source,
            "(two entries)",
            "the archive holds two entries of one name: the second would overwrite the first".to_owned(),
        ));
    }
    Ok(archive)
}

/// How far from its end a zip's end-of-central-directory record may be: its 22 bytes and a
/// comment of up to 64 KiB (the zip reader looks no further).
const END_RECORD_SEARCH_BYTES: u64 = 22 + (1 << 16) + 64;
/// The most bytes of central directory an import reads per entry it takes: a bundle's names are
/// at most 6 folders of 255 bytes, and its entries carry a zip64 field at most.
const DIRECTORY_BYTES_PER_ENTRY: u64 = 4096;
const END_RECORD: &[u8] = b"PK\x05\x06";
const ZIP64_END_LOCATOR: &[u8] = b"PK\x06\x07";
const ZIP64_END_RECORD: &[u8] = b"PK\x06\x06";
const CENTRAL_HEADER: &[u8] = b"PK\x01\x02";

/// Refuses a bundle whose central directory lists more entries than an import takes, or spans
/// more bytes than those entries need, from its end records alone: nothing of the directory is
/// read. Every end record the zip reader could use is checked (it tries the last one first and
/// falls back to an earlier one when the directory that one names does not read): those in the
/// last 64 KiB whose directory (or zip64 end record) starts where they say.
fn check_central_directory(file: &mut File, source: &Path, limits: ImportLimits) -> Result<(), Error> {
    let len = file.metadata().map_err(|e| Error::io(source, e))?.len();
    let tail_start = len.saturating_sub(END_RECORD_SEARCH_BYTES);
    let tail = read_at(file, source, tail_start, (len - tail_start) as usize)?;
    let max_directory = (limits.max_entries as u64).saturating_mul(DIRECTORY_BYTES_PER_ENTRY);
    for at in memchr::memmem::find_iter(&tail, END_RECORD) {
        let Some(record) = tail.get(at..at + 22) else { continue };
        let end_record_at = tail_start + at as u64;
        let mut entries = u64::from(u16_at(record, 8).max(u16_at(record, 10)));
        let mut directory_at = u64::from(u32_at(record, 16));
        let may_be_zip64 =
            u16_at(record, 10) == u16::MAX || u32_at(record, 12) == u32::MAX || u32_at(record, 16) == u32::MAX;
        let mut found = false;
        if may_be_zip64 && end_record_at >= 20 {
            let locator = read_at(file, source, end_record_at - 20, 20)?;
            if locator.starts_with(ZIP64_END_LOCATOR) {
                let zip64_at = u64_at(&locator, 8);
                let zip64 = read_at(file, source, zip64_at, 56)?;
                if zip64.len() == 56 && zip64.starts_with(ZIP64_END_RECORD) {
                    entries = entries.max(u64_at(&zip64, 24)).max(u64_at(&zip64, 32));
                    directory_at = u64_at(&zip64, 48);
                    found = true;
                }
            }
        }
        if !found {
            // The reader takes a record only where a directory header starts where it says.
            found = entries == 0 || read_at(file, source, directory_at, 4)? == CENTRAL_HEADER;
        }
        if !found {
            continue;
        }
        let directory_bytes = len.saturating_sub(directory_at);
        let too_large = if entries > limits.max_entries as u64 {
            format!(
                "its central directory lists {entries} entries, more than the {} an import takes",
                limits.max_entries
            )
        } else if directory_bytes > max_directory {
            format!(
                "its central directory spans {directory_bytes} bytes, more than the {max_directory} the {} entries \
                 an import takes need",
                limits.max_entries
            )
        } else {
            continue;
        };
        return Err(Error::ImportTooLarge {
            source_path: source.into(),
            entry: "(central directory)".to_owned(),
            what: too_large,
        });
    }
    Ok(())
}

/// Up to `len` bytes of `file` at `offset` (fewer at its end).
fn read_at(file: &mut File, source: &Path, offset: u64, len: usize) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::with_capacity(len);
    file.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(source, e))?;
    file.take(len as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(source, e))?;
    Ok(bytes)
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// The archive's entries, every one looked at before anything is written.
struct Entries {
    /// Every entry's name (a folder's without its `/`).
    names: HashSet<String>,
    /// The files but the manifest, by their index in the archive.
    files: Vec<(usize, String)>,
    folders: Vec<String>,
}

/// Looks at every entry: refuses a name that is not UTF-8, a link or a special file, an encrypted
/// entry, a path a bundle does not hold or the session layout cannot, a second entry of a name,
/// and more declared bytes than an import takes.
fn look_at_every_entry(archive: &mut Archive, source: &Path, limits: ImportLimits) -> Result<Entries, Error> {
    let mut entries = Entries {
        names: HashSet::new(),
        files: Vec::new(),
        folders: Vec::new(),
    };
    let mut declared = 0u64;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|e| invalid(source, &format!("#{index}"), e.to_string()))?;
        let raw = String::from_utf8_lossy(entry.name_raw()).into_owned();
        if raw.contains('\0') || std::str::from_utf8(entry.name_raw()).is_err() {
            return Err(refused(source, &raw, "its name is not valid UTF-8 text".to_owned()));
        }
        let is_dir = entry.is_dir();
        let name = raw.trim_end_matches('/').to_owned();
        if let Some(kind) = special_kind(entry.unix_mode(), entry.is_symlink()) {
            return Err(refused(
                source,
                &raw,
                format!("it is {kind}; only files and folders are imported"),
            ));
        }
        if entry.encrypted() {
            return Err(refused(source, &raw, "it is encrypted".to_owned()));
        }
        if let Some(reason) = entry_problem(&name, is_dir, limits) {
            return Err(refused(source, &raw, reason));
        }
        if !entries.names.insert(name.clone()) {
            return Err(refused(
                source,
                &raw,
                "a second entry of that name (an archive's hard link): the first would be overwritten".to_owned(),
            ));
        }
        declared = declared.saturating_add(entry.size());
        if declared > limits.max_bytes {
            return Err(limits.bytes_exceeded(source, &raw));
        }
        if is_dir {
            entries.folders.push(name);
        } else if name != MANIFEST {
            entries.files.push((index, name));
        }
    }
    Ok(entries)
}

/// Why an entry named `name` (a folder's without its `/`) is not a part of a bundle, if it is not.
fn entry_problem(name: &str, is_dir: bool, limits: ImportLimits) -> Option<String> {
    if name == MANIFEST || RECORDS.contains(&name) || name == "records" {
        None
    } else if let Some(relative) = name.strip_prefix("session/") {
        path_problem(relative, limits.max_depth)
    } else if name == SESSION_DIR && is_dir {
        None
    } else {
        path_problem(name, usize::MAX)
            .or_else(|| Some("it is not a part of a session bundle (manifest.json, session/, records/)".to_owned()))
    }
}

impl Entries {
    /// The manifest's members by name, once the manifest and the archive agree: every file is
    /// listed, every member is there, and so is every record.
    fn check_listed<'m>(&self, manifest: &'m Manifest, source: &Path) -> Result<Listed<'m>, Error> {
        let listed: Listed<'m> = manifest.members.iter().map(|m| (m.name.as_str(), m)).collect();
        for (_, name) in &self.files {
            if !listed.contains_key(name.as_str()) {
                return Err(invalid(source, name, "it is not listed in manifest.json".to_owned()));
            }
        }
        for name in listed.keys() {
            if !self.names.contains(*name) {
                return Err(invalid(
                    source,
                    name,
                    "manifest.json lists it, the archive does not hold it".to_owned(),
                ));
            }
        }
        for record in RECORDS {
            if !listed.contains_key(record) {
                return Err(invalid(source, record, "missing: every bundle has it".to_owned()));
            }
        }
        Ok(listed)
    }
}

/// Writes the session's folders and files (`session/…`) under `root`, each file checked against
/// its size and checksum and given its modification time.
fn unpack_session(
    archive: &mut Archive,
    source: &Path,
    entries: &Entries,
    listed: &Listed<'_>,
    root: &Path,
) -> Result<(), Error> {
    create_private_dir(root)?;
    for name in &entries.folders {
        if let Some(relative) = name.strip_prefix("session/") {
            private::create_dir_all(&root.join(relative))?;
        }
    }
    for (index, name) in &entries.files {
        let Some(relative) = name.strip_prefix("session/") else {
            continue;
        };
        let member = listed[name.as_str()];
        let path = root.join(relative);
        if let Some(parent) = path.parent() {
            private::create_dir_all(parent)?;
        }
        let entry = archive
            .by_index(*index)
            .map_err(|e| invalid(source, name, e.to_string()))?;
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
    Ok(())
}

/// Gives the session's folders under `root` their times, deepest first (writing into a folder
/// changes its time, so this comes last); returns the session folder's own, for when it is moved
/// into place.
fn keep_folder_times(manifest: &Manifest, root: &Path, limits: ImportLimits) -> Option<SystemTime> {
    let mut times: Vec<&Folder> = manifest.folders.iter().filter(|f| f.name != SESSION_DIR).collect();
    times.sort_by_key(|f| std::cmp::Reverse(f.name.matches('/').count()));
    for folder in times {
        if let (Some(relative), Some(ms)) = (folder.name.strip_prefix("session/"), folder.modified_ms) {
            if path_problem(relative, limits.max_depth).is_none() {
                set_modified(&root.join(relative), Timestamp(ms).to_system_time());
            }
        }
    }
    manifest
        .folders
        .iter()
        .find(|f| f.name == SESSION_DIR)
        .and_then(|f| f.modified_ms)
        .map(|ms| Timestamp(ms).to_system_time())
}

/// `records/session.json`, checked against its checksum.
fn read_session_record(archive: &mut Archive, source: &Path, listed: &Listed<'_>) -> Result<SessionRecord, Error> {
    let mut reader = RecordReader::open(archive, source, listed, RECORD_SESSION)?;
    let text = reader.rest()?;
    let record: SessionRecord =
        serde_json::from_slice(&text).map_err(|e| invalid(source, RECORD_SESSION, e.to_string()))?;
    // Its tags were read as tags (each refused naming its rule); their count and the note here.
    let id = "the bundle's session";
    crate::vocabulary::label::check_tag_count(id, record.tags.len())
        .and_then(|()| {
            record
                .note
                .as_deref()
                .map_or(Ok(()), |note| crate::vocabulary::label::check_note(id, note))
        })
        .map_err(|e| invalid(source, RECORD_SESSION, e.to_string()))?;
    reader.finish()?;
    Ok(record)
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
    let known = u64::from(OLDEST_BUNDLE_FORMAT_VERSION)..=u64::from(BUNDLE_FORMAT_VERSION);
    if !version.as_u64().is_some_and(|version| known.contains(&version)) {
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
/// uncompressed size its central directory declares, and [`look_at_every_entry`] bounds the declared
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
        listed: &Listed<'_>,
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
    listed: &Listed<'_>,
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
