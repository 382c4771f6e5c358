//! What a mirror fetches of one session: its plan (the files changed since the manifest's),
//! which range of each file a listing fetches (a large raw stream's tail, everything else whole),
//! and whether its upload is done (the mirror's "Upload evidence").

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use crate::bucket::cache::{FileEntry, SessionManifest};
use crate::bucket::keys::UPLOAD_COMPLETE_MARKER;
use crate::bucket::remote::RemoteObject;
use crate::sessions::cost::RAW_TAIL_BYTES;
use crate::sessions::session::{Timestamp, RAW_STREAM_FILE, SESSION_INFO_FILE};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Objects up to this size are fetched whole when their session is listed.
pub const SMALL_FILE_BYTES: u64 = 1024 * 1024;
/// How much of a larger raw stream's end is fetched when its session is listed.
pub const TAIL_BYTES: u64 = 1024 * 1024;
// The core reads a raw stream, when listing, from its end only: never past the tail fetched.
const _: () = assert!(RAW_TAIL_BYTES <= TAIL_BYTES && TAIL_BYTES <= SMALL_FILE_BYTES);
/// Whether a session's upload is done (see the module's "Upload evidence").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadState {
    Complete,
    Uploading,
}

/// One session's objects, by path in the session.
pub(super) type SessionObjects = BTreeMap<String, RemoteObject>;

/// What a refresh does for one session not complete in the mirror.
pub(super) struct Plan {
    pub(super) id: SessionId,
    pub(super) state: UploadState,
    /// The manifest being built: the unchanged files, then each one fetched.
    pub(super) manifest: SessionManifest,
    /// The files to fetch, by path.
    pub(super) wanted: Vec<(String, RemoteObject)>,
    pub(super) failed: Option<Error>,
}

/// The plan of session `id`: its changed files.
pub(super) fn plan(id: &SessionId, objects: &SessionObjects, old: SessionManifest, state: UploadState) -> Plan {
    let mut plan = Plan {
        id: id.clone(),
        state,
        manifest: SessionManifest {
            complete: state == UploadState::Complete,
            newest: newest(objects),
            files: BTreeMap::new(),
        },
        wanted: Vec::new(),
        failed: None,
    };
    for (path, object) in objects
        .iter()
        .filter(|(path, _)| path.as_str() != UPLOAD_COMPLETE_MARKER)
    {
        match old.files.get(path) {
            Some(entry) if same_object(entry, object) => {
                plan.manifest.files.insert(path.clone(), entry.clone());
            }
            _ => plan.wanted.push((path.clone(), object.clone())),
        }
    }
    plan
}

/// Whether only the tail of `path` is fetched when listed: a raw stream larger than
/// [`SMALL_FILE_BYTES`] (see the module's "What a reader of the mirrored folder may read").
pub(super) fn tail_only(path: &str, size: u64) -> bool {
    size > SMALL_FILE_BYTES && path.rsplit('/').next() == Some(RAW_STREAM_FILE)
}

/// The range fetched when a file is listed: its tail for [`tail_only`] ones, else all of it.
pub(super) fn first_range(path: &str, size: u64) -> std::ops::Range<u64> {
    if tail_only(path, size) {
        size - TAIL_BYTES..size
    } else {
        0..size
    }
}

/// What fetching `objects` anew would store.
pub(super) fn planned_bytes(objects: &SessionObjects) -> u64 {
    objects
        .iter()
        .map(|(path, o)| first_range(path, o.size))
        .map(|r| r.end - r.start)
        .sum()
}

pub(super) fn entry_of(object: &RemoteObject) -> FileEntry {
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
pub(super) fn newest(objects: &SessionObjects) -> Option<String> {
    objects.values().filter_map(|o| o.last_modified.clone()).max()
}

/// The module's "Upload evidence".
pub(super) fn upload_state(objects: &SessionObjects, now: SystemTime, settle: Duration) -> UploadState {
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
