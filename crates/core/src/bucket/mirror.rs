//! A bucket prefix mirrored into the cache as a read-only workspace.
//!
//! [`Mirror::refresh`] lists the prefix (paged by the provider), groups the objects by session
//! (the prefix's common prefixes, held to the local id rules), and fetches what changed: small
//! files whole, large outputs' tails into sparse files ([`Mirror::read_range`] fetches the rest
//! on demand). A file changed when its size, ETag or last-modified did; a session whose upload
//! was complete when fetched is never fetched again. Sessions are kept newest first within the
//! cache's bound; the ones past it are left out (and counted).
//!
//! **Upload evidence.** A session's upload is complete when it holds the uploader's marker
//! object ([`UPLOAD_COMPLETE_MARKER`]), or when it holds `.session-info.json` and none of its
//! objects changed for [`MirrorOptions::settle`] (uploaders that write no marker). Otherwise it
//! is [`UploadState::Uploading`]: mirrored as far as it got, fetched again on the next refresh.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::bucket::cache::{source_folder, CacheFolder, FileEntry, SessionManifest};
use crate::bucket::keys::{session_path, UPLOAD_COMPLETE_MARKER};
use crate::bucket::remote::{Remote, RemoteObject};
use crate::bucket::source::Source;
use crate::sessions::session::{Timestamp, SESSION_INFO_FILE};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Objects up to this size are fetched whole when their session is listed.
pub const SMALL_FILE_BYTES: u64 = 1024 * 1024;
/// How much of a larger object's end is fetched when its session is listed.
pub const TAIL_BYTES: u64 = 1024 * 1024;
/// The cache's bound by default (`MirrorOptions::max_bytes`).
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Most objects one session may hold: past it the session is refused, naming it.
pub const MAX_SESSION_OBJECTS: usize = 10_000;
/// How many fetched files are held in memory at once before they are written.
const FETCH_BATCH: usize = 64;

/// How a mirror is kept.
#[derive(Debug, Clone)]
pub struct MirrorOptions {
    /// The cache's root (`cache::default_cache_root` by default); the source gets a folder in it.
    pub cache_root: PathBuf,
    /// The most the source's folder holds (fetched bytes; a sparse file counts what it holds).
    pub max_bytes: u64,
    /// How long one request may take.
    pub timeout: Duration,
    /// How long a session without a marker must be unchanged to count as uploaded.
    pub settle: Duration,
}

impl MirrorOptions {
    pub fn new(cache_root: PathBuf) -> MirrorOptions {
        MirrorOptions {
            cache_root,
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: Duration::from_secs(30),
            settle: Duration::from_secs(300),
        }
    }
}

/// Whether a session's upload is done (see the module's "Upload evidence").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadState {
    Complete,
    Uploading,
}

/// One session of the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSession {
    pub id: SessionId,
    pub state: UploadState,
    /// Its objects in the bucket (the marker left out) and their bytes.
    pub objects: usize,
    pub bytes: u64,
}

/// What a refresh found and did.
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions in the mirror, newest first.
    pub sessions: Vec<ListedSession>,
    /// Keys and sessions refused (`..`, odd segments, too many objects), or that failed to fetch.
    pub refused: Vec<Error>,
    /// Sessions left out of the mirror to keep it within its bound.
    pub left_out: usize,
    /// Bytes this refresh fetched.
    pub fetched_bytes: u64,
}

/// One source's mirror: the client and the cache folder.
pub struct Mirror {
    remote: Remote,
    folder: CacheFolder,
    options: MirrorOptions,
    fetched: AtomicU64,
}

/// One session's objects, by path in the session.
type SessionObjects = BTreeMap<String, RemoteObject>;

impl Mirror {
    /// The mirror of `source`, its folder made under `options.cache_root` if missing. Nothing is
    /// asked of the bucket yet.
    pub fn open(source: &Source, options: MirrorOptions) -> Result<Mirror, Error> {
        let remote = Remote::connect(source, options.timeout)?;
        let folder = CacheFolder::open(source_folder(&options.cache_root, source))?;
        Ok(Mirror {
            remote,
            folder,
            options,
            fetched: AtomicU64::new(0),
        })
    }

    pub fn source(&self) -> &Source {
        self.remote.source()
    }

    /// The folder the core opens as the workspace of these sessions.
    pub fn workspace_root(&self) -> PathBuf {
        self.folder.workspace()
    }

    /// All bytes fetched from the bucket by this mirror so far.
    pub fn fetched_bytes(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// Lists the prefix and brings the mirror up to date (see the module's documentation): plans
    /// each session newest first within the bound, fetches what the plans want (across sessions,
    /// several reads at once), then commits each session's manifest after its files.
    pub fn refresh(&self, now: SystemTime) -> Result<Listing, Error> {
        let before = self.fetched_bytes();
        let mut listing = Listing::default();
        let grouped = self.group(self.remote.list_all()?, &mut listing.refused);
        let mut manifests = self.folder.manifests_read()?;
        let mut order: Vec<(&SessionId, &SessionObjects)> = grouped.iter().collect();
        order.sort_by_cached_key(|(id, objects)| std::cmp::Reverse((newest(objects), (*id).clone())));
        let mut budget = self.options.max_bytes;
        let mut plans = Vec::new();
        for (id, objects) in order {
            let old = manifests.remove(id);
            let cost = match &old {
                Some(manifest) if manifest.complete => manifest.stored_bytes(),
                _ => planned_bytes(objects),
            };
            if cost > budget {
                listing.left_out += 1;
                continue;
            }
            budget -= cost;
            plans.push(plan(id, objects, old, upload_state(objects, now, self.options.settle)));
        }
        self.fetch(&mut plans);
        self.folder.flush()?;
        let mut kept = BTreeSet::new();
        for plan in plans {
            let objects = &grouped[&plan.id];
            if let Some(error) = plan.failed {
                listing.refused.push(error);
                continue;
            }
            if let Some(old) = &plan.old {
                self.commit(&plan.id, objects, old, plan.manifest.as_ref())?;
            }
            kept.insert(plan.id.clone());
            let files = objects
                .iter()
                .filter(|(path, _)| path.as_str() != UPLOAD_COMPLETE_MARKER);
            let (count, bytes) = files.fold((0, 0), |(n, b), (_, o)| (n + 1, b + o.size));
            listing.sessions.push(ListedSession {
                id: plan.id,
                state: plan.state,
                objects: count,
                bytes,
            });
        }
        for id in self.folder.manifests_read()?.keys().filter(|id| !kept.contains(*id)) {
            self.folder.remove_session(id)?;
        }
        self.remove_unlisted_folders(&kept)?;
        listing.fetched_bytes = self.fetched_bytes() - before;
        Ok(listing)
    }

    /// The objects by session; refused keys and over-full sessions said in `refused`.
    fn group(&self, objects: Vec<RemoteObject>, refused: &mut Vec<Error>) -> BTreeMap<SessionId, SessionObjects> {
        let mut grouped: BTreeMap<SessionId, SessionObjects> = BTreeMap::new();
        let mut over_full = BTreeSet::new();
        for object in objects {
            match session_path(self.source(), &object.key) {
                Err(error) => refused.push(error),
                Ok(None) => {}
                Ok(Some((id, path))) => {
                    let session = grouped.entry(id.clone()).or_default();
                    if session.len() == MAX_SESSION_OBJECTS {
                        over_full.insert(id);
                    } else {
                        session.insert(path, object);
                    }
                }
            }
        }
        for id in over_full {
            grouped.remove(&id);
            refused.push(self.source().error(
                &format!("{id}/"),
                format!("refused: the session holds more than {MAX_SESSION_OBJECTS} objects"),
            ));
        }
        grouped
    }

    /// Fetches what `plans` want, [`FETCH_BATCH`] files at a time, writing each into place and
    /// into its plan's manifest; a plan whose read fails or whose object changed is marked failed.
    fn fetch(&self, plans: &mut [Plan]) {
        let wanted: Vec<(usize, String, RemoteObject)> = plans
            .iter()
            .enumerate()
            .flat_map(|(index, plan)| {
                plan.wanted
                    .iter()
                    .map(move |(path, object)| (index, path.clone(), object.clone()))
            })
            .collect();
        for batch in wanted.chunks(FETCH_BATCH) {
            let reads: Vec<(String, std::ops::Range<u64>)> = batch
                .iter()
                .map(|(_, _, object)| (object.key.clone(), first_range(object.size)))
                .collect();
            for ((index, path, object), read) in batch.iter().zip(self.remote.read_many(&reads)) {
                let plan = &mut plans[*index];
                if plan.failed.is_some() {
                    continue;
                }
                match read.and_then(|bytes| self.store(&plan.id, path, object, &bytes)) {
                    Ok(entry) => {
                        if let Some(manifest) = plan.manifest.as_mut() {
                            manifest.files.insert(path.clone(), entry);
                        }
                    }
                    Err(error) => plan.failed = Some(error),
                }
            }
        }
    }

    /// Writes the fetched `bytes` of `object` (all of it, or its tail into a sparse file).
    fn store(&self, id: &SessionId, path: &str, object: &RemoteObject, bytes: &[u8]) -> Result<FileEntry, Error> {
        let range = first_range(object.size);
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
        let modified = object
            .last_modified
            .as_deref()
            .and_then(Timestamp::parse_rfc3339)
            .map(Timestamp::to_system_time);
        if range.start == 0 {
            self.folder.write_whole(id, path, bytes, modified)?;
        } else {
            self.folder.write_tail(id, path, object.size, bytes, modified)?;
        }
        let mut entry = entry_of(object);
        entry.add(range.start, range.end);
        Ok(entry)
    }

    /// After its files: the mirrored files whose objects are gone removed, the folders' times
    /// set, the manifest written.
    fn commit(
        &self,
        id: &SessionId,
        objects: &SessionObjects,
        old: &SessionManifest,
        manifest: Option<&SessionManifest>,
    ) -> Result<(), Error> {
        let Some(manifest) = manifest else { return Ok(()) };
        for gone in old.files.keys().filter(|path| !manifest.files.contains_key(*path)) {
            self.folder.remove_file(id, gone)?;
        }
        self.stamp_folders(id, objects)?;
        self.folder.write_manifest(id, manifest)
    }

    /// Each node folder gets the time of its newest object: the core orders nodes by their
    /// folders' times when no events.json says the order (objects uploaded in one second keep
    /// the order of the listing).
    fn stamp_folders(&self, id: &SessionId, objects: &SessionObjects) -> Result<(), Error> {
        let mut newest_by_folder: BTreeMap<&str, &str> = BTreeMap::new();
        for (path, object) in objects {
            if let (Some((folder, _)), Some(stamp)) = (path.split_once('/'), object.last_modified.as_deref()) {
                let newest = newest_by_folder.entry(folder).or_insert(stamp);
                *newest = (*newest).max(stamp);
            }
        }
        for (folder, stamp) in newest_by_folder {
            let dir = self.folder.file_path(id, folder);
            let Some(time) = Timestamp::parse_rfc3339(stamp) else {
                continue;
            };
            if let Ok(handle) = std::fs::File::open(&dir) {
                handle
                    .set_modified(time.to_system_time())
                    .map_err(|e| Error::io_write(&dir, e))?;
            }
        }
        Ok(())
    }

    /// Session folders of the mirror that no manifest lists (a refresh cut short) are removed.
    fn remove_unlisted_folders(&self, kept: &BTreeSet<SessionId>) -> Result<(), Error> {
        let dir = self.folder.sessions_dir();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let listed = entry
                .file_name()
                .to_str()
                .and_then(|name| SessionId::parse(name).ok())
                .is_some_and(|id| kept.contains(&id));
            if !listed {
                let path = entry.path();
                std::fs::remove_dir_all(&path).map_err(|e| Error::io_write(&path, e))?;
            }
        }
        Ok(())
    }

    /// Bytes `range` of the mirrored file `path` of session `id` (an output's page): what the
    /// mirror lacks is fetched by range, written in place and recorded, then the cache is held
    /// to its bound (other sessions evicted, oldest first).
    pub fn read_range(&self, id: &SessionId, path: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>, Error> {
        let key = format!("{id}/{path}");
        let mut manifest = self
            .folder
            .manifest(id)
            .ok_or_else(|| self.source().error(&key, "not in the mirror: list the sessions first"))?;
        let entry = manifest
            .files
            .get_mut(path)
            .ok_or_else(|| self.source().error(&key, "no such file in the mirrored session"))?;
        let end = range.end.min(entry.size);
        let start = range.start.min(end);
        if !entry.covers(start, end) {
            let bytes = self.remote.read_range(&key, start..end)?;
            if bytes.len() as u64 != end - start {
                return Err(self
                    .source()
                    .error(&key, "changed since it was listed: fewer bytes than asked"));
            }
            self.fetched.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.folder.write_at(id, path, start, &bytes)?;
            self.folder.flush()?;
            entry.add(start, end);
            self.folder.write_manifest(id, &manifest)?;
            self.hold_bound(id)?;
            return Ok(bytes);
        }
        let file = self.folder.file_path(id, path);
        let mut bytes = vec![0; (end - start) as usize];
        std::os::unix::fs::FileExt::read_exact_at(
            &std::fs::File::open(&file).map_err(|e| Error::io(&file, e))?,
            &mut bytes,
            start,
        )
        .map_err(|e| Error::io(&file, e))?;
        Ok(bytes)
    }

    /// Evicts whole sessions, oldest first and `current` last of all, until the mirror is
    /// within its bound.
    fn hold_bound(&self, current: &SessionId) -> Result<(), Error> {
        let manifests = self.folder.manifests_read()?;
        let mut total: u64 = manifests.values().map(SessionManifest::stored_bytes).sum();
        let mut order: Vec<(&SessionId, &SessionManifest)> =
            manifests.iter().filter(|(id, _)| *id != current).collect();
        order.sort_by(|a, b| a.1.newest.cmp(&b.1.newest));
        for (id, manifest) in order {
            if total <= self.options.max_bytes {
                break;
            }
            self.folder.remove_session(id)?;
            total -= manifest.stored_bytes();
        }
        Ok(())
    }

    /// Fetches every file of session `id` whole into `into/<id>/` (a folder of the caller's,
    /// for an import), refusing a session of more than `max_bytes`.
    pub fn download_session(&self, id: &SessionId, into: &Path, max_bytes: u64) -> Result<PathBuf, Error> {
        let manifest = self.folder.manifest(id).ok_or_else(|| {
            self.source().error(
                &format!("{id}/"),
                "not in the bucket's listing (or left out of the cache)",
            )
        })?;
        let total: u64 = manifest.files.values().map(|f| f.size).sum();
        if total > max_bytes {
            return Err(self.source().error(
                &format!("{id}/"),
                format!("holds {total} bytes, more than the {max_bytes} the import takes"),
            ));
        }
        let target = into.join(id.as_str());
        for (path, entry) in &manifest.files {
            let bytes = if entry.covers(0, entry.size) {
                let file = self.folder.file_path(id, path);
                std::fs::read(&file).map_err(|e| Error::io(&file, e))?
            } else {
                let bytes = self.remote.read_range(&format!("{id}/{path}"), 0..entry.size)?;
                self.fetched.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                bytes
            };
            let file = target.join(path);
            crate::sessions::private::create_dir_all(file.parent().expect("a file has a folder"))?;
            crate::sessions::private::write_file(&file, &bytes)?;
        }
        Ok(target)
    }
}

/// What a refresh does for one session.
struct Plan {
    id: SessionId,
    state: UploadState,
    /// What the mirror had (`None`: the session is complete there, nothing to do).
    old: Option<SessionManifest>,
    /// The manifest being built: the unchanged files, then each one fetched.
    manifest: Option<SessionManifest>,
    /// The files to fetch, by path.
    wanted: Vec<(String, RemoteObject)>,
    failed: Option<Error>,
}

/// The plan of session `id`: nothing for a complete one, else its changed files.
fn plan(id: &SessionId, objects: &SessionObjects, old: Option<SessionManifest>, state: UploadState) -> Plan {
    let old = old.unwrap_or_default();
    let mut plan = Plan {
        id: id.clone(),
        state,
        old: None,
        manifest: None,
        wanted: Vec::new(),
        failed: None,
    };
    if old.complete {
        plan.state = UploadState::Complete;
        return plan;
    }
    let mut manifest = SessionManifest {
        complete: state == UploadState::Complete,
        newest: newest(objects),
        files: BTreeMap::new(),
    };
    for (path, object) in objects
        .iter()
        .filter(|(path, _)| path.as_str() != UPLOAD_COMPLETE_MARKER)
    {
        match old.files.get(path) {
            Some(entry) if same_object(entry, object) => {
                manifest.files.insert(path.clone(), entry.clone());
            }
            _ => plan.wanted.push((path.clone(), object.clone())),
        }
    }
    plan.old = Some(old);
    plan.manifest = Some(manifest);
    plan
}

/// The range fetched when a file is listed: all of a small one, the tail of a large one.
fn first_range(size: u64) -> std::ops::Range<u64> {
    if size <= SMALL_FILE_BYTES {
        0..size
    } else {
        size - TAIL_BYTES..size
    }
}

/// What fetching `objects` anew would store.
fn planned_bytes(objects: &SessionObjects) -> u64 {
    objects
        .values()
        .map(|o| first_range(o.size))
        .map(|r| r.end - r.start)
        .sum()
}

fn entry_of(object: &RemoteObject) -> FileEntry {
    FileEntry {
        size: object.size,
        etag: object.etag.clone(),
        last_modified: object.last_modified.clone(),
        present: Vec::new(),
    }
}

/// Whether the mirrored `entry` came from `object` as listed now: key (the map's), size, ETag and
/// last-modified all the same.
fn same_object(entry: &FileEntry, object: &RemoteObject) -> bool {
    entry.size == object.size && entry.etag == object.etag && entry.last_modified == object.last_modified
}

/// The newest last-modified of `objects` (RFC 3339 in UTC, so the text orders as the time).
fn newest(objects: &SessionObjects) -> Option<String> {
    objects.values().filter_map(|o| o.last_modified.clone()).max()
}

/// The module's "Upload evidence".
fn upload_state(objects: &SessionObjects, now: SystemTime, settle: Duration) -> UploadState {
    if objects.contains_key(UPLOAD_COMPLETE_MARKER) {
        return UploadState::Complete;
    }
    let settled = newest(objects)
        .and_then(|stamp| Timestamp::parse_rfc3339(&stamp))
        .is_some_and(|stamp| stamp.to_system_time() + settle <= now);
    if objects.contains_key(SESSION_INFO_FILE) && settled {
        UploadState::Complete
    } else {
        UploadState::Uploading
    }
}
