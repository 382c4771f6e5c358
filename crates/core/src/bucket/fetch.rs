//! What the mirror fetches: a refresh's files (small ones whole, several at once; a large raw
//! stream's tail; other large files whole, piece by piece onto the disk), an output's page
//! ([`Mirror::read_range`]) and a whole session ([`Mirror::fetch_session`]); then the cache held
//! to its bound. Memory holds at most a batch of small files or a few pieces of a large one.

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::bucket::cache::{last_used, FileEntry, SourceManifest};
use crate::bucket::mirror::Mirror;
use crate::bucket::plan::{entry_of, first_range, Plan, SMALL_FILE_BYTES};
use crate::bucket::remote::{Read, RemoteObject};
use crate::sessions::session::Timestamp;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use std::time::SystemTime;

/// How many fetched small files are held in memory at once before they are written.
const FETCH_BATCH: usize = 64;

impl Mirror {
    /// Fetches what `plans` want, writing each file into place and into its plan's manifest; a
    /// plan whose read fails or whose object changed is marked failed. Whether anything was
    /// written.
    pub(super) fn fetch(&self, plans: &mut [Plan]) -> bool {
        let wanted: Vec<(usize, String, RemoteObject)> = plans
            .iter()
            .enumerate()
            .flat_map(|(index, plan)| {
                plan.wanted
                    .iter()
                    .map(move |(path, object)| (index, path.clone(), object.clone()))
            })
            .collect();
        let (in_pieces, in_memory): (Vec<_>, Vec<_>) = wanted.into_iter().partition(|(_, path, object)| {
            let range = first_range(path, object.size);
            range.end - range.start > SMALL_FILE_BYTES
        });
        for batch in in_memory.chunks(FETCH_BATCH) {
            let reads: Vec<Read> = batch
                .iter()
                .map(|(_, path, object)| Read {
                    key: object.key.clone(),
                    range: first_range(path, object.size),
                    etag: object.etag.clone(),
                })
                .collect();
            for ((index, path, object), read) in batch.iter().zip(self.remote.read_many(&reads)) {
                let plan = &mut plans[*index];
                if plan.failed.is_none() {
                    let stored = read.and_then(|bytes| self.store(&plan.id, path, object, &bytes));
                    record(plan, path, stored);
                }
            }
        }
        for (index, path, object) in &in_pieces {
            let plan = &mut plans[*index];
            if plan.failed.is_none() {
                let stored = self.store_whole(&plan.id, path, object);
                record(plan, path, stored);
            }
        }
        plans.iter().any(|plan| !plan.wanted.is_empty())
    }

    /// Writes the fetched `bytes` of `object` (all of it, or its tail into a sparse file).
    fn store(&self, id: &SessionId, path: &str, object: &RemoteObject, bytes: &[u8]) -> Result<FileEntry, Error> {
        let range = first_range(path, object.size);
        if bytes.len() as u64 != range.end - range.start {
            return Err(self.source().error(
                &object.key,
                format!(
                    "changed while it was read: listed with {} bytes, read {} of the {} asked",
                    object.size,
                    bytes.len(),
                    range.end - range.start
                ),
            ));
        }
        self.fetched.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if range.start == 0 {
            self.folder.write_whole(id, path, bytes, modified(object))?;
        } else {
            self.folder.write_tail(id, path, object.size, bytes, modified(object))?;
        }
        let mut entry = entry_of(object);
        entry.add(range.start, range.end);
        Ok(entry)
    }

    /// Fetches all of a large `object` piece by piece into a file in `tmp/`, renamed into place
    /// once whole.
    fn store_whole(&self, id: &SessionId, path: &str, object: &RemoteObject) -> Result<FileEntry, Error> {
        let target = self.folder.file_path(id, path);
        self.folder
            .write_filled(id, path, object.size, modified(object), |file| {
                let whole = 0..object.size;
                self.read_into(
                    &object.key,
                    object.etag.as_deref(),
                    std::slice::from_ref(&whole),
                    file,
                    &target,
                )
            })?;
        let mut entry = entry_of(object);
        entry.add(0, object.size);
        Ok(entry)
    }

    /// Reads `ranges` of `key` (of ETag `etag`) into `file` (mirrored at `target`) at their
    /// offsets.
    fn read_into(
        &self,
        key: &str,
        etag: Option<&str>,
        ranges: &[Range<u64>],
        file: &std::fs::File,
        target: &std::path::Path,
    ) -> Result<(), Error> {
        let read = self.remote.read_into(key, etag, ranges, |offset, bytes| {
            file.write_all_at(bytes, offset).map_err(|e| Error::io_write(target, e))
        })?;
        self.fetched.fetch_add(read, Ordering::Relaxed);
        Ok(())
    }

    /// Fetches the `missing` ranges of the mirrored file `path` of session `id` into it, in
    /// place, and records them in `manifest` (the caller writes it).
    fn fill(
        &self,
        manifest: &mut SourceManifest,
        id: &SessionId,
        path: &str,
        missing: &[Range<u64>],
    ) -> Result<(), Error> {
        let key = format!("{id}/{path}");
        let target = self.folder.file_path(id, path);
        let entry = manifest
            .sessions
            .get_mut(id)
            .and_then(|session| session.files.get_mut(path))
            .expect("the caller found the file in the manifest");
        let etag = entry.etag.as_deref();
        self.folder
            .fill_in_place(id, path, |file| self.read_into(&key, etag, missing, file, &target))?;
        for range in missing {
            entry.add(range.start, range.end);
        }
        Ok(())
    }

    /// Bytes `range` of the mirrored file `path` of session `id` (an output's page): what the
    /// mirror lacks of it is fetched by range, written in place and recorded, then the cache is
    /// held to its bound (other sessions evicted, least recently used first). The session counts
    /// as opened.
    pub fn read_range(&self, id: &SessionId, path: &str, range: Range<u64>) -> Result<Vec<u8>, Error> {
        self.record_opened(id, SystemTime::now());
        let key = format!("{id}/{path}");
        let mut manifest = self.lock()?;
        let entry = manifest
            .sessions
            .get(id)
            .ok_or_else(|| self.source().error(&key, "not in the mirror: list the sessions first"))?
            .files
            .get(path)
            .ok_or_else(|| self.source().error(&key, "no such file in the mirrored session"))?;
        let end = range.end.min(entry.size);
        let start = range.start.min(end);
        let missing = entry.missing(start, end);
        if !missing.is_empty() {
            self.fill(&mut manifest, id, path, &missing)?;
            self.folder.write_manifest(&manifest)?;
            self.hold_bound(&mut manifest, id)?;
        }
        let file = self.folder.file_path(id, path);
        let mut bytes = vec![0; (end - start) as usize];
        std::fs::File::open(&file)
            .and_then(|handle| handle.read_exact_at(&mut bytes, start))
            .map_err(|e| Error::io(&file, e))?;
        Ok(bytes)
    }

    /// Fetches what the mirror lacks of session `id` (the ranges of its large outputs not yet
    /// read), piece by piece onto the disk, so that every file of its folder is whole; refused
    /// for a session of more than `max_bytes` or than the cache's bound. The session's folder.
    /// Export, import and compare read a session whole: they call this first. The session counts
    /// as opened.
    pub fn fetch_session(&self, id: &SessionId, max_bytes: u64) -> Result<PathBuf, Error> {
        self.record_opened(id, SystemTime::now());
        let mut manifest = self.lock()?;
        let folder_key = format!("{id}/");
        let session = manifest.sessions.get(id).ok_or_else(|| {
            self.source()
                .error(&folder_key, "not in the bucket's listing (or left out of the cache)")
        })?;
        let total: u64 = session.files.values().map(|f| f.size).sum();
        for (limit, what) in [
            (max_bytes, "the most asked for"),
            (self.options.max_bytes, "the cache's limit"),
        ] {
            if total > limit {
                return Err(self.source().error(
                    &folder_key,
                    format!("holds {total} bytes, more than {what} ({limit} bytes)"),
                ));
            }
        }
        let missing: Vec<(String, Vec<Range<u64>>)> = session
            .files
            .iter()
            .map(|(path, entry)| (path.clone(), entry.missing(0, entry.size)))
            .filter(|(_, missing)| !missing.is_empty())
            .collect();
        if !missing.is_empty() {
            for (path, ranges) in &missing {
                self.fill(&mut manifest, id, path, ranges)?;
            }
            self.folder.write_manifest(&manifest)?;
            self.hold_bound(&mut manifest, id)?;
        }
        Ok(self.session_path(id))
    }

    /// Evicts whole sessions, least recently used first (`recency`) and `current` never, until
    /// the mirror is within its bound: the manifest written without them, then their folders
    /// removed.
    fn hold_bound(&self, manifest: &mut SourceManifest, current: &SessionId) -> Result<(), Error> {
        let mut total = manifest.stored_bytes();
        if total <= self.options.max_bytes {
            return Ok(());
        }
        let opened = self.opened_times();
        let mut order: Vec<(SessionId, u64, u64)> = manifest
            .sessions
            .iter()
            .filter(|(id, _)| *id != current)
            .map(|(id, session)| {
                let used = last_used(&opened, id, session.newest.as_deref());
                (id.clone(), used, session.stored_bytes())
            })
            .collect();
        order.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        for (id, _, bytes) in order {
            if total <= self.options.max_bytes {
                break;
            }
            manifest.sessions.remove(&id);
            total -= bytes;
        }
        self.folder.write_manifest(manifest)?;
        self.remove_unlisted_folders(manifest)?;
        Ok(())
    }
}

/// The file's entry in its plan's manifest, or the plan failed.
fn record(plan: &mut Plan, path: &str, stored: Result<FileEntry, Error>) {
    match stored {
        Ok(entry) => {
            plan.manifest.files.insert(path.to_owned(), entry);
        }
        Err(error) => plan.failed = Some(error),
    }
}

/// The object's last-modified time, which its mirrored file takes.
fn modified(object: &RemoteObject) -> Option<std::time::SystemTime> {
    object
        .last_modified
        .as_deref()
        .and_then(Timestamp::parse_rfc3339)
        .map(Timestamp::to_system_time)
}
