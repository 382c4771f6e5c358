//! The mirror's folder in the studio's cache: where it is, what each session's manifest says is
//! there, and the one way a file gets there (written to `tmp/`, then renamed into place), so a
//! file the manifest lists is never half-written. Nothing is written outside the source's folder.
//!
//! ```text
//! <cache>/zibby-studio/sources/<scheme>-<bucket>-<hash>/
//!   workspace/.zibby/output/sessions/<id>/…   the sessions, laid out as a local workspace
//!   manifest.json                             what of each session is there, and from which object
//!   tmp/                                      files being written (emptied when the mirror opens)
//! ```
//!
//! One manifest for the source, read once when the mirror opens and written after the files it
//! lists are in place: a warm listing reads one file, not one per session.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::bucket::source::Source;
use crate::sessions::private;
use crate::sessions::session::Timestamp;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// The cache's root when none is given: `$XDG_CACHE_HOME/zibby-studio/sources`, else
/// `~/.cache/zibby-studio/sources`.
pub fn default_cache_root() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .map(|cache| cache.join("zibby-studio").join("sources"))
}

/// The cache's bound by default (`MirrorOptions::max_bytes`).
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// The cache's settings (`settings.json` in its root), kept across mirrors and runs.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Settings {
    /// The most each source's folder holds, as set in the window's Open Cloud Workspace form.
    max_bytes: Option<u64>,
}

fn settings_path(cache_root: &Path) -> PathBuf {
    cache_root.join("settings.json")
}

/// The limit of each source's folder under `cache_root`: the one a user set ([`save_limit`]),
/// else [`DEFAULT_MAX_BYTES`].
pub fn limit(cache_root: &Path) -> u64 {
    std::fs::read(settings_path(cache_root))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Settings>(&bytes).ok())
        .and_then(|settings| settings.max_bytes)
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// Keeps `max_bytes` as the limit of each source's folder ([`limit`]): what mirrors opened
/// after use (`MirrorOptions::new`), in the window and in `zstudio --source` alike.
pub fn save_limit(cache_root: &Path, max_bytes: u64) -> Result<(), Error> {
    private::create_dir_all(cache_root)?;
    let settings = Settings {
        max_bytes: Some(max_bytes),
    };
    let bytes = serde_json::to_vec_pretty(&settings).expect("settings serialize");
    private::replace_file(&settings_path(cache_root), &bytes)
}

/// The folder of `source` under `cache_root`: one per source and endpoint (the same bucket name
/// on another endpoint is another bucket), the endpoint as the client uses it
/// ([`Source::resolved_endpoint`]: given or from the variables, written either way).
pub fn source_folder(cache_root: &Path, source: &Source) -> PathBuf {
    let endpoint = source.resolved_endpoint().unwrap_or_default();
    // Two accounts or profiles never share a mirror (issue 40); the default chain's folder keeps
    // the name it had.
    let digest = match source.account() {
        Some(account) => sha2::Sha256::digest(format!("{source}\n{endpoint}\n{account}")),
        None => sha2::Sha256::digest(format!("{source}\n{endpoint}")),
    };
    let hash = crate::vocabulary::digest::hex(&digest[..6]);
    let scheme = source.to_string();
    let scheme = scheme.split("://").next().unwrap_or("bucket");
    cache_root.join(format!("{scheme}-{}-{hash}", source.bucket))
}

/// One mirrored file: the object it came from and which of its bytes are here.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileEntry {
    pub size: u64,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The byte ranges present, `[start, end)`, sorted and apart; the rest of a large output is a
    /// hole of its sparse file until asked for.
    pub present: Vec<(u64, u64)>,
}

impl FileEntry {
    pub fn stored_bytes(&self) -> u64 {
        self.present.iter().map(|(start, end)| end - start).sum()
    }

    /// Whether `range` is all present.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        self.present.iter().any(|&(s, e)| s <= start && end <= e)
    }

    /// The ranges of `start..end` not present, in order.
    pub fn missing(&self, start: u64, end: u64) -> Vec<std::ops::Range<u64>> {
        let mut missing = Vec::new();
        let mut at = start;
        for &(s, e) in &self.present {
            if e <= at || s >= end {
                continue;
            }
            if s > at {
                missing.push(at..s);
            }
            at = at.max(e);
        }
        if at < end {
            missing.push(at..end);
        }
        missing
    }

    /// Records `[start, end)` as present, merged with what touches it.
    pub fn add(&mut self, start: u64, end: u64) {
        self.present.push((start, end));
        self.present.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.present.len());
        for &(s, e) in &self.present {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.present = merged;
    }
}

/// What of one session is in the mirror.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SessionManifest {
    /// Its upload was complete when fetched: it is never fetched again.
    pub complete: bool,
    /// The newest last-modified of its objects (eviction takes the oldest sessions first).
    pub newest: Option<String>,
    /// By path in the session folder.
    pub files: BTreeMap<String, FileEntry>,
}

impl SessionManifest {
    pub fn stored_bytes(&self) -> u64 {
        self.files.values().map(FileEntry::stored_bytes).sum()
    }
}

/// What of each session of the source is in the mirror (`manifest.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SourceManifest {
    pub sessions: BTreeMap<SessionId, SessionManifest>,
    /// A first fill of the mirror ran to its end: every session of the prefix was fetched once
    /// (or left out by the bound). Until then the mirror holds only part of a listing, and the
    /// sessions it does not hold yet are shown as being fetched (absent in manifests written
    /// before it was kept: filled again once, which keeps what they hold).
    #[serde(default)]
    pub filled: bool,
}

impl SourceManifest {
    pub fn stored_bytes(&self) -> u64 {
        self.sessions.values().map(SessionManifest::stored_bytes).sum()
    }
}

/// When each session of a source was last opened (read, shown, exported, compared), in
/// milliseconds since the epoch, by id: `opened.json` beside the manifest. A hint for the cache's
/// bound, which keeps the sessions used most recently (`bucket::recency`): two writers at once may
/// lose one's newest entry, which costs at most an eviction in the wrong order.
pub type OpenedTimes = BTreeMap<SessionId, u64>;

/// Session `id`'s last use (`bucket::recency`), in milliseconds since the epoch: its last opening in `opened`, or
/// its newest object's time `newest` (RFC 3339) when that is later; 0 when neither is known.
pub fn last_used(opened: &OpenedTimes, id: &SessionId, newest: Option<&str>) -> u64 {
    let uploaded = newest.and_then(Timestamp::parse_rfc3339).map_or(0, |time| time.0);
    opened.get(id).copied().unwrap_or(0).max(uploaded)
}

const OPENED_FILE: &str = "opened.json";

/// The most `opened.json` is read at: about 100,000 sessions' times.
pub const MAX_OPENED_FILE_BYTES: u64 = 4 << 20;

/// The folders of one source's mirror.
#[derive(Debug)]
pub struct CacheFolder {
    pub root: PathBuf,
    /// The manifest file as this folder last read or wrote it.
    known: Mutex<Option<ManifestStamp>>,
}

/// Which manifest file is in place: each write renames a new one into place (a new inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ManifestStamp {
    inode: u64,
    len: u64,
    modified: (i64, i64),
}

/// The right to write one source's mirror: an exclusive lock (`flock`) on its `.lock` file, held
/// by one writer at a time, across processes (the window and `zstudio --source` on one bucket)
/// and across mirrors of one process (a workspace opened again while the poller of the one
/// closed ends its chunk). Released when dropped.
#[derive(Debug)]
pub struct Writing {
    _lock: std::fs::File,
}

impl CacheFolder {
    /// The source's folder, made if missing, its `tmp/` emptied (what a stopped write left there
    /// was never complete) once no other writer is at work in it.
    pub fn open(root: PathBuf) -> Result<CacheFolder, Error> {
        let folder = CacheFolder::at(root);
        private::create_dir_all(&folder.root)?;
        let _writing = folder.writing()?;
        let tmp = folder.tmp();
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| Error::io_write(&tmp, e))?;
        }
        // The per-session manifests of an older mirror: its sessions are fetched again.
        let old_manifests = folder.root.join("manifests");
        if old_manifests.exists() {
            std::fs::remove_dir_all(&old_manifests).map_err(|e| Error::io_write(&old_manifests, e))?;
        }
        for dir in [folder.sessions_dir(), tmp] {
            private::create_dir_all(&dir)?;
        }
        Ok(folder)
    }

    /// The mirror laid out as a workspace: the core opens it as any other.
    pub fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.workspace().join(".zibby").join("output").join("sessions")
    }

    fn manifest_path(&self) -> PathBuf {
        self.root.join("manifest.json")
    }

    fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Where `path` (checked by `keys::session_path`) of session `id` is mirrored.
    pub fn file_path(&self, id: &SessionId, path: &str) -> PathBuf {
        self.sessions_dir().join(id.as_str()).join(path)
    }

    /// The folder at `root`, as it is (nothing made or emptied).
    fn at(root: PathBuf) -> CacheFolder {
        CacheFolder {
            root,
            known: Mutex::new(None),
        }
    }

    /// Waits for the right to write the mirror ([`Writing`]): another writer's refresh, or its
    /// chunk of a first fill, ends first.
    pub fn writing(&self) -> Result<Writing, Error> {
        let path = self.root.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io_write(&path, e))?;
        file.lock().map_err(|e| Error::io_write(&path, e))?;
        Ok(Writing { _lock: file })
    }

    /// The source's manifest; one missing or that does not read is empty (its sessions'
    /// folders are then removed and fetched again).
    pub fn read_manifest(&self) -> SourceManifest {
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = self.manifest_stamp();
        std::fs::read(self.manifest_path())
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// The manifest written by another writer since this folder last read or wrote it, when one
    /// was (call it holding [`Writing`]).
    pub fn manifest_written_elsewhere(&self) -> Option<SourceManifest> {
        let now = self.manifest_stamp();
        let known = *self.known.lock().unwrap_or_else(|p| p.into_inner());
        (now != known).then(|| self.read_manifest())
    }

    /// Writes the source's manifest (after the files it lists are in place and flushed).
    pub fn write_manifest(&self, manifest: &SourceManifest) -> Result<(), Error> {
        let bytes = serde_json::to_vec(manifest).expect("a manifest serializes");
        let target = self.manifest_path();
        self.put(&target, |file| {
            file.write_all(&bytes)
                .and_then(|()| file.sync_data())
                .map_err(|e| Error::io_write(&target, e))
        })?;
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = self.manifest_stamp();
        Ok(())
    }

    /// When each session was last opened ([`OpenedTimes`], `opened.json`); a file missing, larger
    /// than [`MAX_OPENED_FILE_BYTES`] or that does not read is empty.
    pub fn read_opened(&self) -> OpenedTimes {
        let path = self.root.join(OPENED_FILE);
        std::fs::metadata(&path)
            .ok()
            .filter(|meta| meta.len() <= MAX_OPENED_FILE_BYTES)
            .and_then(|_| std::fs::read(&path).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes when each session was last opened (by temp file and rename).
    pub fn write_opened(&self, opened: &OpenedTimes) -> Result<(), Error> {
        let bytes = serde_json::to_vec(opened).expect("opening times serialize");
        let target = self.root.join(OPENED_FILE);
        self.put(&target, |file| {
            file.write_all(&bytes).map_err(|e| Error::io_write(&target, e))
        })
    }

    fn manifest_stamp(&self) -> Option<ManifestStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(self.manifest_path()).ok()?;
        Some(ManifestStamp {
            inode: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
        })
    }

    /// Writes a whole file of session `id`, modified at `modified` (its object's time, which the
    /// core's listing reads as the session's).
    pub fn write_whole(
        &self,
        id: &SessionId,
        path: &str,
        bytes: &[u8],
        modified: Option<SystemTime>,
    ) -> Result<(), Error> {
        let target = self.file_path(id, path);
        self.put(&target, |file| {
            file.write_all(bytes)
                .and_then(|()| stamp(file, modified))
                .map_err(|e| Error::io_write(&target, e))
        })
    }

    /// Writes a sparse file of `size` bytes holding `tail` at its end (the rest a hole, which
    /// the manifest records as missing).
    pub fn write_tail(
        &self,
        id: &SessionId,
        path: &str,
        size: u64,
        tail: &[u8],
        modified: Option<SystemTime>,
    ) -> Result<(), Error> {
        let target = self.file_path(id, path);
        self.put(&target, |file| {
            file.set_len(size)
                .and_then(|()| file.write_all_at(tail, size - tail.len() as u64))
                .and_then(|()| stamp(file, modified))
                .map_err(|e| Error::io_write(&target, e))
        })
    }

    /// Writes a whole file of `size` bytes that `fill` writes piece by piece (`write_all_at`):
    /// in `tmp/` until `fill` returns, so the session folder never holds it part-written.
    pub fn write_filled(
        &self,
        id: &SessionId,
        path: &str,
        size: u64,
        modified: Option<SystemTime>,
        fill: impl FnOnce(&std::fs::File) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let target = self.file_path(id, path);
        self.put(&target, |file| {
            file.set_len(size).map_err(|e| Error::io_write(&target, e))?;
            fill(file)?;
            stamp(file, modified).map_err(|e| Error::io_write(&target, e))
        })
    }

    /// Lets `fill` write the missing ranges of a mirrored file in place, then syncs it: the
    /// manifest records the ranges only after this returns, so a write cut short is a range
    /// still missing. The file keeps its object's time (a page fetched is not the session
    /// changing).
    pub fn fill_in_place(
        &self,
        id: &SessionId,
        path: &str,
        fill: impl FnOnce(&std::fs::File) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let target = self.file_path(id, path);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .map_err(|e| Error::io_write(&target, e))?;
        let modified = file.metadata().and_then(|m| m.modified()).ok();
        fill(&file)?;
        stamp(&file, modified)
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::io_write(&target, e))
    }

    /// Flushes the files written so far to the disk (one `syncfs` for them all), before the
    /// manifests that list them are written: a power cut cannot leave a manifest listing a
    /// file whose bytes never reached the disk.
    pub fn flush(&self) -> Result<(), Error> {
        let root = std::fs::File::open(&self.root).map_err(|e| Error::io(&self.root, e))?;
        nix::unistd::syncfs(&root).map_err(|e| Error::io_write(&self.root, e.into()))
    }

    /// Removes session `id`'s folder (its manifest entry is gone first: written without it).
    pub fn remove_session(&self, id: &SessionId) -> Result<(), Error> {
        let folder = self.sessions_dir().join(id.as_str());
        match std::fs::remove_dir_all(&folder) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io_write(&folder, e)),
            _ => Ok(()),
        }
    }

    /// Removes one mirrored file (its object is gone from the bucket).
    pub fn remove_file(&self, id: &SessionId, path: &str) -> Result<(), Error> {
        let target = self.file_path(id, path);
        match std::fs::remove_file(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io_write(&target, e)),
            _ => Ok(()),
        }
    }

    /// `write` fills a new file in `tmp/`, which is then renamed to `target` (synced by
    /// [`flush`](Self::flush) before a manifest lists it).
    fn put(&self, target: &Path, write: impl FnOnce(&mut std::fs::File) -> Result<(), Error>) -> Result<(), Error> {
        let parent = target.parent().expect("a mirrored file has a folder");
        private::create_dir_all(parent)?;
        let tmp = self.tmp().join(uuid::Uuid::now_v7().to_string());
        let mut file = private::create_new(&tmp)?;
        let written = write(&mut file);
        drop(file);
        let renamed = written.and_then(|()| std::fs::rename(&tmp, target).map_err(|e| Error::io_write(target, e)));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        renamed
    }
}

fn stamp(file: &std::fs::File, modified: Option<SystemTime>) -> std::io::Result<()> {
    match modified {
        Some(time) => file.set_modified(time),
        None => Ok(()),
    }
}

/// Removes the mirror of `source` under `cache_root` (once no writer is at work in it), or every
/// mirror when `source` is `None` (the settings kept); the bucket is not touched.
pub fn clear(cache_root: &Path, source: Option<&Source>) -> Result<(), Error> {
    let targets = match source {
        Some(source) => vec![source_folder(cache_root, source)],
        None => match std::fs::read_dir(cache_root) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
                .map(|entry| entry.path())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(cache_root, e)),
        },
    };
    for target in targets {
        if !target.is_dir() {
            continue;
        }
        let _writing = CacheFolder::at(target.clone()).writing()?;
        if let Err(e) = std::fs::remove_dir_all(&target) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(Error::io_write(&target, e));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_cover() {
        let mut entry = FileEntry {
            size: 100,
            etag: None,
            last_modified: None,
            present: vec![(90, 100)],
        };
        entry.add(10, 20);
        entry.add(20, 40);
        assert_eq!(entry.present, [(10, 40), (90, 100)]);
        assert!(entry.covers(15, 40) && !entry.covers(30, 95));
        assert_eq!(entry.missing(0, 100), [0..10, 40..90]);
        assert_eq!(entry.missing(30, 95), vec![40..90]);
        assert!(entry.missing(12, 38).is_empty());
        assert_eq!(entry.stored_bytes(), 40);
    }

    #[test]
    fn one_bucket_is_one_folder_however_its_endpoint_is_written() {
        let root = Path::new("/cache");
        let at = |endpoint: &str| {
            let source = Source::parse("s3://team-runs/ci").unwrap().with_endpoint(endpoint);
            source_folder(root, &source)
        };
        assert_eq!(at("http://127.0.0.1:9000"), at("HTTP://127.0.0.1:9000/"));
        assert_ne!(at("http://127.0.0.1:9000"), at("http://127.0.0.1:9001"));
        // Issue 40: one profile's private sessions never show under another's.
        let as_profile = |profile: &str| {
            let source = Source::parse("s3://team-runs/ci")
                .unwrap()
                .with_profile(profile)
                .unwrap();
            source_folder(root, &source)
        };
        assert_ne!(as_profile("alice"), as_profile("bob"));
        assert_eq!(as_profile("alice"), as_profile("alice"));
    }

    #[test]
    fn a_saved_limit_is_every_mirrors_and_outlives_clearing_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("sources");
        assert_eq!(limit(&root), DEFAULT_MAX_BYTES);
        save_limit(&root, 5 << 20).unwrap();
        assert_eq!(limit(&root), 5 << 20);
        let options = crate::bucket::MirrorOptions::new(root.clone());
        assert_eq!(options.max_bytes, 5 << 20);
        CacheFolder::open(root.join("s3-a-1")).unwrap();
        clear(&root, None).unwrap();
        assert!(!root.join("s3-a-1").exists());
        assert_eq!(limit(&root), 5 << 20);
    }

    #[test]
    fn a_write_left_in_tmp_is_gone_when_the_mirror_opens() {
        let dir = tempfile::tempdir().unwrap();
        let folder = CacheFolder::open(dir.path().join("m")).unwrap();
        std::fs::write(folder.tmp().join("half"), "half a file").unwrap();
        let folder = CacheFolder::open(folder.root.clone()).unwrap();
        assert_eq!(std::fs::read_dir(folder.tmp()).unwrap().count(), 0);
    }

    #[test]
    fn a_session_was_last_used_when_opened_or_uploaded_whichever_is_later() {
        let id = |text: &str| SessionId::parse(text).unwrap();
        let opened: OpenedTimes = [(id("1795952464999_a"), 2_000_000_000_000)].into();
        let uploaded = "2026-12-01T10:00:00Z";
        let uploaded_ms = Timestamp::parse_rfc3339(uploaded).unwrap().0;
        assert_eq!(
            last_used(&opened, &id("1795952464999_a"), Some(uploaded)),
            2_000_000_000_000
        );
        assert_eq!(last_used(&opened, &id("1795952464999_b"), Some(uploaded)), uploaded_ms);
        assert_eq!(last_used(&opened, &id("1795952464999_b"), None), 0);
        let long_ago: OpenedTimes = [(id("1795952464999_a"), 1)].into();
        assert_eq!(
            last_used(&long_ago, &id("1795952464999_a"), Some(uploaded)),
            uploaded_ms
        );
    }
}
