//! Which sessions a mirror keeps when its bound is reached: the ones used most recently. A
//! session's last use is when it was last opened (read, shown, exported, compared, imported:
//! [`Mirror::record_opened`], kept in `opened.json` as [`OpenedTimes`]) or, when later, when it
//! was uploaded (its newest object's time: `cache::last_used`). A session opened yesterday is kept over one uploaded
//! last week and never opened; the least recently used go first, whether a refresh plans the
//! sessions within the bound or a page or a whole session fetched past it evicts others.

use std::time::{Duration, SystemTime};

use crate::bucket::cache::OpenedTimes;
use crate::bucket::mirror::Mirror;
use crate::sessions::session::Timestamp;
use crate::vocabulary::id::SessionId;

/// A session opened again within this time of its recorded opening is not written down again:
/// the record orders evictions, which a minute does not change.
const RECORD_EVERY: Duration = Duration::from_secs(60);

impl Mirror {
    /// Session `id` is being opened at `now` (read, shown, exported, compared, imported): the
    /// cache's bound keeps it over sessions used less recently. Written to `opened.json` at
    /// most once a minute per session, merged with what another writer recorded; a failure to
    /// write is logged, never the reader's error.
    pub fn record_opened(&self, id: &SessionId, now: SystemTime) {
        let now_ms = Timestamp::from_system_time(now).0;
        let mut opened = self.opened.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let recorded = opened.get(id).copied().unwrap_or(0);
        if now_ms.saturating_sub(recorded) < RECORD_EVERY.as_millis() as u64 {
            return;
        }
        let mut merged = self.folder.read_opened();
        for (id, at) in opened.iter() {
            let kept = merged.entry(id.clone()).or_insert(*at);
            *kept = (*kept).max(*at);
        }
        merged.insert(id.clone(), now_ms);
        if let Err(error) = self.folder.write_opened(&merged) {
            tracing::warn!("{}: cannot record that session {id} was opened: {error}", self.source());
        }
        *opened = merged;
    }

    /// When each session was last opened, as this mirror knows it now.
    pub(super) fn opened_times(&self) -> OpenedTimes {
        self.opened
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}
