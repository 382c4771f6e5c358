//! A bucket prefix mirrored into the cache as a read-only workspace.
//!
//! [`Mirror::refresh`] lists the prefix, groups the objects by session (the prefix's common
//! prefixes, held to the local id rules), and fetches what changed. The first listing lists every
//! key of the prefix (1,000 a page on S3); later ones list only the common prefixes (one name a
//! session; their pages asked at once, cut at the previous listing's ids), then inside the sessions the mirror does not hold complete (each on its own, several
//! at once, or the whole prefix again when that takes fewer requests). A file changed when its
//! size, ETag or last-modified did; a session whose upload was complete when fetched is never
//! listed inside or fetched again. Sessions are kept most recently used first (opened, else
//! uploaded: `recency`) within the cache's bound; the ones past it are left out (and counted). One manifest for the source (`cache`) says what is
//! there; a refresh that finds nothing changed writes nothing. [`Mirror::refresh_reading`] reads
//! the mirror's folder while the bucket is asked, and again only when the refresh changed it.
//!
//! **What a reader of the mirrored folder may read.** Every file in it is whole, except a node's
//! `raw_stream_output.txt` larger than [`SMALL_FILE_BYTES`]: of that one only its last
//! [`TAIL_BYTES`] are fetched, into a sparse file of the object's size (the manifest records
//! which ranges are there). The core reads such a file, when listing or showing a session, only
//! from its end, at most `cost::RAW_TAIL_BYTES` (asserted below to be within the tail). Readers
//! of other ranges go through [`Mirror::read_range`] (an output's page: the missing part fetched
//! first), and those that need the whole session (export, import, compare) call
//! [`Mirror::fetch_session`] first, which fetches every missing range, piece by piece onto the
//! disk. Other files larger than [`SMALL_FILE_BYTES`] are fetched whole when listed, piece by
//! piece into `tmp/` and then renamed into place.
//!
//! **Writers.** Every change to a mirror's folder is made holding its writer lock
//! (`cache::Writing`, an `flock` of the folder's `.lock`): one writer at a time, whether the
//! other is another process (the window and `zstudio --source` on one bucket) or another mirror
//! of this one. Taking it, a mirror reads the manifest again when another writer wrote it
//! since, so it never fetches again, nor removes, what the other fetched.
//!
//! **Upload evidence.** A session's upload is complete when it holds the uploader's marker
//! object ([`UPLOAD_COMPLETE_MARKER`]), or when it holds `.session-info.json` and none of its
//! objects changed for [`MirrorOptions::settle`] (uploaders that write no marker). Otherwise it
//! is [`UploadState::Uploading`]: mirrored as far as it got, fetched again on the next refresh.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::bucket::cache::{
    last_used, source_folder, CacheFolder, OpenedTimes, SessionManifest, SourceManifest, Writing,
};
use crate::bucket::keys::UPLOAD_COMPLETE_MARKER;
use crate::bucket::plan::{newest, plan, planned_bytes, upload_state, Plan, SessionObjects};
pub use crate::bucket::plan::{UploadState, SMALL_FILE_BYTES, TAIL_BYTES};
use crate::bucket::remote::Remote;
use crate::bucket::source::Source;
use crate::sessions::session::Timestamp;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Most objects one session may hold: past it the session is refused, naming it.
pub const MAX_SESSION_OBJECTS: usize = 10_000;
/// Sessions listed inside at once, by one request each, when that is fewer rounds than listing
/// the whole prefix again.
pub(super) const CONCURRENT_LISTINGS: usize = 32;
/// Keys on one page of a listing (S3's).
pub(super) const KEYS_A_PAGE: usize = 1_000;

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
    /// The options of a mirror under `cache_root`: its limit the one saved there
    /// (`cache::limit`, else `cache::DEFAULT_MAX_BYTES`).
    pub fn new(cache_root: PathBuf) -> MirrorOptions {
        MirrorOptions {
            max_bytes: crate::bucket::cache::limit(&cache_root),
            cache_root,
            timeout: Duration::from_secs(30),
            settle: Duration::from_secs(300),
        }
    }
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
    /// Whether this refresh changed the mirror's folder (wrote, removed or re-timed a file or a
    /// folder): a reading of the folder made during it may be out of date.
    pub changed: bool,
}

/// How far a first fill is: of the sessions it fetches (those within the cache's bound), how
/// many are in the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillProgress {
    pub fetched: usize,
    pub planned: usize,
}

/// One source's mirror: the client, the cache folder and its manifest.
pub struct Mirror {
    pub(super) remote: Remote,
    pub(super) folder: CacheFolder,
    pub(super) options: MirrorOptions,
    pub(super) fetched: AtomicU64,
    /// The source's manifest as last written (read once when the mirror opens).
    pub(super) manifest: Mutex<SourceManifest>,
    /// Held by a refresh: one at a time.
    pub(super) refreshing: Mutex<()>,
    /// Set by [`Mirror::stop`]: a first fill ends after its chunk.
    pub(super) stopping: AtomicBool,
    /// When each session was last opened (`recency`), as read when the mirror opened and since
    /// recorded.
    pub(super) opened: Mutex<OpenedTimes>,
}

/// The manifest of a [`Mirror`], locked in this process and its folder's writer lock held.
pub(super) struct Locked<'a> {
    manifest: MutexGuard<'a, SourceManifest>,
    _writing: Writing,
}

impl std::ops::Deref for Locked<'_> {
    type Target = SourceManifest;
    fn deref(&self) -> &SourceManifest {
        &self.manifest
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut SourceManifest {
        &mut self.manifest
    }
}

/// What a listing found of one session.
pub(super) enum Found {
    /// Complete in the mirror: not listed inside.
    Complete,
    /// Its objects, as listed now.
    Objects(SessionObjects),
}

impl Mirror {
    /// The mirror of `source`, its folder made under `options.cache_root` if missing. Nothing is
    /// asked of the bucket yet.
    pub fn open(source: &Source, options: MirrorOptions) -> Result<Mirror, Error> {
        let remote = Remote::connect(source, options.timeout)?;
        let folder = CacheFolder::open(source_folder(&options.cache_root, source))?;
        let manifest = Mutex::new(folder.read_manifest());
        let opened = Mutex::new(folder.read_opened());
        Ok(Mirror {
            remote,
            folder,
            options,
            fetched: AtomicU64::new(0),
            manifest,
            refreshing: Mutex::new(()),
            stopping: AtomicBool::new(false),
            opened,
        })
    }

    pub fn source(&self) -> &Source {
        self.remote.source()
    }

    /// The folder the core opens as the workspace of these sessions (see the module's "What a
    /// reader of the mirrored folder may read").
    pub fn workspace_root(&self) -> PathBuf {
        self.folder.workspace()
    }

    /// The folder of session `id` in the mirror.
    pub fn session_path(&self, id: &SessionId) -> PathBuf {
        self.folder.sessions_dir().join(id.as_str())
    }

    /// Whether session `id` is in the mirror (listed, within the cache's bound).
    pub fn holds(&self, id: &SessionId) -> bool {
        self.lock().is_ok_and(|manifest| manifest.sessions.contains_key(id))
    }

    /// Whether the mirror holds the whole listing of an earlier refresh (a first fill ran to its
    /// end), which can then be shown before the bucket is asked. Either way the folders a refresh
    /// cut short left beside the manifest (sessions it does not list, perhaps part-written) are
    /// removed first, so that the folder is what the manifest says. A mirror whose first fill
    /// did not end (never started, or cut short: [`holds_any`](Self::holds_any) may still be
    /// true) is cold: `false`.
    pub fn holds_listing(&self) -> Result<bool, Error> {
        let manifest = self.lock()?;
        self.remove_unlisted_folders(&manifest)?;
        Ok(manifest.filled)
    }

    /// Whether the mirror holds any session (fetched by a fill cut short, or on its own).
    pub fn holds_any(&self) -> bool {
        self.lock().is_ok_and(|manifest| !manifest.sessions.is_empty())
    }

    /// Asks a first fill under way to stop after its chunk (the workspace was closed): it then
    /// fails, saying so, and leaves the chunks it finished.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Whether [`stop`](Self::stop) was asked (the workspace was closed).
    pub fn stopped(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// All bytes fetched from the bucket by this mirror so far.
    pub fn fetched_bytes(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// The manifest, to read or change, with the right to write the mirror ([`Writing`]): as
    /// another writer (a process, or a mirror of this one, on the same folder) last wrote it, when
    /// one did. Fails only when the lock file cannot be opened or locked (then nothing is written).
    pub(super) fn lock(&self) -> Result<Locked<'_>, Error> {
        let mut manifest = self.manifest.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let writing = self.folder.writing()?;
        if let Some(newer) = self.folder.manifest_written_elsewhere() {
            *manifest = newer;
        }
        Ok(Locked {
            manifest,
            _writing: writing,
        })
    }

    /// Lists the prefix and brings the mirror up to date (see the module's documentation): plans
    /// each session most recently used first within the bound, fetches what the plans want (across sessions,
    /// several reads at once), then writes the manifest after the files, and removes the
    /// folders it no longer lists.
    pub fn refresh(&self, now: SystemTime) -> Result<Listing, Error> {
        self.refresh_telling(now, &mut |_| {})
    }

    /// [`refresh`](Self::refresh), telling `told` how far a first fill is after each chunk.
    pub fn refresh_telling(&self, now: SystemTime, told: &mut dyn FnMut(FillProgress)) -> Result<Listing, Error> {
        let _one_at_a_time = self.refreshing.lock().unwrap_or_else(|p| p.into_inner());
        let mut manifest = self.lock()?;
        if !manifest.filled {
            drop(manifest);
            return self.fill_all(now, told);
        }
        let before = self.fetched_bytes();
        let mut listing = Listing::default();
        let found = self.list(&manifest, &mut listing.refused)?;
        let newest_of = |id: &SessionId, found: &Found| match found {
            Found::Complete => manifest.sessions.get(id).and_then(|m| m.newest.clone()),
            Found::Objects(objects) => newest(objects),
        };
        let opened = self.opened_times();
        let mut order: Vec<(&SessionId, &Found)> = found.iter().collect();
        order.sort_by_cached_key(|(id, found)| {
            let used = last_used(&opened, id, newest_of(id, found).as_deref());
            std::cmp::Reverse((used, (*id).clone()))
        });
        let mut old = manifest.sessions.clone();
        let mut next = SourceManifest {
            filled: true,
            ..SourceManifest::default()
        };
        let mut budget = self.options.max_bytes;
        let mut plans = Vec::new();
        for (id, found) in order {
            let old = old.remove(id);
            let (cost, planned) = match (found, old) {
                (_, Some(kept)) if kept.complete => (kept.stored_bytes(), Err(kept)),
                (Found::Objects(objects), old) => {
                    let state = upload_state(objects, now, self.options.settle);
                    (
                        planned_bytes(objects),
                        Ok(plan(id, objects, old.unwrap_or_default(), state)),
                    )
                }
                (Found::Complete, _) => unreachable!("a complete session is one the manifest holds complete"),
            };
            if cost > budget {
                listing.left_out += 1;
                continue;
            }
            budget -= cost;
            match planned {
                Ok(plan) => plans.push(plan),
                Err(kept) => {
                    listing.sessions.push(listed_from_manifest(id, &kept));
                    next.sessions.insert(id.clone(), kept);
                }
            }
        }
        let fetched = self.fetch(&mut plans);
        if fetched {
            self.folder.flush()?;
        }
        listing.changed = fetched;
        for plan in plans {
            if let Some(error) = plan.failed {
                listing.refused.push(error);
                continue;
            }
            let objects = match &found[&plan.id] {
                Found::Objects(objects) => objects,
                Found::Complete => unreachable!("only listed sessions are planned"),
            };
            listing.changed |= self.commit(&plan, objects, manifest.sessions.get(&plan.id))?;
            listing.sessions.push(listed(&plan.id, plan.state, objects));
            next.sessions.insert(plan.id, plan.manifest);
        }
        let newest = |id: &SessionId| next.sessions.get(id).and_then(|m| m.newest.clone());
        listing
            .sessions
            .sort_by_cached_key(|s| std::cmp::Reverse((newest(&s.id), s.id.clone())));
        if next.sessions != manifest.sessions {
            self.folder.write_manifest(&next)?;
        }
        *manifest = next;
        listing.changed |= self.remove_unlisted_folders(&manifest)?;
        listing.fetched_bytes = self.fetched_bytes() - before;
        Ok(listing)
    }

    /// Fetches session `id` now, as a refresh would, when the mirror does not hold it yet (a cold
    /// workspace's session opened before the first refresh came to it): its objects listed, its
    /// small files and a large output's tail fetched, recorded in the manifest (which a first
    /// refresh then keeps as it is). Waits for the chunk of a first refresh under way. Its folder.
    pub fn fetch_now(&self, id: &SessionId, now: SystemTime) -> Result<PathBuf, Error> {
        let mut manifest = self.lock()?;
        if manifest.sessions.contains_key(id) {
            return Ok(self.session_path(id));
        }
        let mut refused = Vec::new();
        let mut objects = Vec::new();
        for listed in self.remote.list_under(&[id.to_string()], MAX_SESSION_OBJECTS + 1) {
            objects.extend(listed?);
        }
        let grouped = self.group(objects, &mut refused);
        let Some(objects) = grouped.get(id) else {
            // The session refused whole (too many objects), or gone.
            return Err(refused.into_iter().next().unwrap_or_else(|| {
                self.source()
                    .error(&format!("{id}/"), "not in the bucket: removed since it was listed")
            }));
        };
        // Its keys refused (`..`, odd segments) are left out, as a refresh leaves them (and says so).
        for error in refused {
            tracing::warn!("{error}");
        }
        let state = upload_state(objects, now, self.options.settle);
        let mut plans = [plan(id, objects, SessionManifest::default(), state)];
        if self.fetch(&mut plans) {
            self.folder.flush()?;
        }
        let [mut fetched] = plans;
        if let Some(error) = fetched.failed.take() {
            return Err(error);
        }
        self.commit(&fetched, objects, None)?;
        manifest.sessions.insert(id.clone(), fetched.manifest);
        self.folder.write_manifest(&manifest)?;
        Ok(self.session_path(id))
    }

    /// [`refresh`](Self::refresh) while `read` reads the mirror's folder (as the core lists it)
    /// on another thread: a re-listing takes the longer of the bucket's answer and the folder's
    /// reading, not both. When the refresh changed the folder (`Listing::changed`), `read` reads
    /// it again after, so what it returns is always the folder as refreshed. A failed refresh is
    /// the error, once `read` is done.
    pub fn refresh_reading<T: Send>(
        &self,
        now: SystemTime,
        read: impl Fn() -> T + Sync,
    ) -> Result<(Listing, T), Error> {
        let (listing, during) = std::thread::scope(|scope| {
            let reading = scope.spawn(&read);
            let listing = self.refresh(now);
            let during = match reading.join() {
                Ok(read) => read,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            (listing, during)
        });
        let listing = listing?;
        let read = if listing.changed { read() } else { during };
        Ok((listing, read))
    }

    /// After its files: the mirrored files whose objects are gone removed, the folders' times
    /// set. Whether that changed the session's folder.
    pub(super) fn commit(
        &self,
        plan: &Plan,
        objects: &SessionObjects,
        old: Option<&SessionManifest>,
    ) -> Result<bool, Error> {
        let mut changed = false;
        for gone in old
            .into_iter()
            .flat_map(|old| old.files.keys())
            .filter(|path| !plan.manifest.files.contains_key(*path))
        {
            self.folder.remove_file(&plan.id, gone)?;
            changed = true;
        }
        Ok(self.stamp_folders(&plan.id, objects)? || changed)
    }

    /// Each node folder gets the time of its newest object: the core orders nodes by their
    /// folders' times when no events.json says the order (objects uploaded in one second keep
    /// the order of the listing). The session folder gets its newest object's time too: a
    /// session's `updated_at` is when it was last uploaded, not when it was fetched (issue 41).
    /// Whether a folder's time changed.
    fn stamp_folders(&self, id: &SessionId, objects: &SessionObjects) -> Result<bool, Error> {
        let mut newest_by_folder: BTreeMap<&str, &str> = BTreeMap::new();
        for (path, object) in objects {
            if let (Some((folder, _)), Some(stamp)) = (path.split_once('/'), object.last_modified.as_deref()) {
                let newest = newest_by_folder.entry(folder).or_insert(stamp);
                *newest = (*newest).max(stamp);
            }
        }
        let session_newest = newest(objects);
        if let Some(stamp) = session_newest.as_deref() {
            // The session folder itself (stamping a folder inside it leaves its time as it is).
            newest_by_folder.insert("", stamp);
        }
        let mut changed = false;
        for (folder, stamp) in newest_by_folder {
            let dir = self.folder.file_path(id, folder);
            let Some(time) = Timestamp::parse_rfc3339(stamp).map(Timestamp::to_system_time) else {
                continue;
            };
            let Ok(handle) = std::fs::File::open(&dir) else {
                continue;
            };
            if handle.metadata().and_then(|m| m.modified()).ok() != Some(time) {
                handle.set_modified(time).map_err(|e| Error::io_write(&dir, e))?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Session folders of the mirror that `manifest` does not list (left out, gone from the
    /// bucket, failed, or a refresh cut short) are removed. Whether there was one.
    pub(super) fn remove_unlisted_folders(&self, manifest: &SourceManifest) -> Result<bool, Error> {
        let mut removed = false;
        let dir = self.folder.sessions_dir();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let listed = entry
                .file_name()
                .to_str()
                .and_then(|name| SessionId::parse(name).ok())
                .is_some_and(|id| manifest.sessions.contains_key(&id));
            if !listed {
                let path = entry.path();
                std::fs::remove_dir_all(&path).map_err(|e| Error::io_write(&path, e))?;
                removed = true;
            }
        }
        Ok(removed)
    }
}

pub(super) fn listed(id: &SessionId, state: UploadState, objects: &SessionObjects) -> ListedSession {
    let files = objects
        .iter()
        .filter(|(path, _)| path.as_str() != UPLOAD_COMPLETE_MARKER);
    let (count, bytes) = files.fold((0, 0), |(n, b), (_, o)| (n + 1, b + o.size));
    ListedSession {
        id: id.clone(),
        state,
        objects: count,
        bytes,
    }
}

fn listed_from_manifest(id: &SessionId, manifest: &SessionManifest) -> ListedSession {
    ListedSession {
        id: id.clone(),
        state: UploadState::Complete,
        objects: manifest.files.len(),
        bytes: manifest.files.values().map(|f| f.size).sum(),
    }
}
