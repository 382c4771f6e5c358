//! A run its own thread follows, from its first byte to its end: what `follow`, `stopping` and
//! `finish` know of it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::live_run::LiveRun;
use super::shared::Shared;
use crate::store::Level;
use crate::vocabulary::id::SessionId;

pub(super) struct FollowedRun {
    pub(super) shared: Arc<Shared>,
    pub(super) live: Arc<LiveRun>,
    pub(super) session_id: SessionId,
    pub(super) run_id: String,
    /// When its child was spawned: output times and the elapsed time are counted from here.
    pub(super) started: Instant,
    pub(super) started_at: SystemTime,
    pub(super) messages_file: PathBuf,
}

impl FollowedRun {
    /// A line of the run's log; one that cannot be recorded is traced.
    pub(super) fn log(&self, level: Level, event: &str, message: &str, fields: serde_json::Value) {
        let logged = self
            .shared
            .store
            .run_log(&self.run_id, level, event, message, fields, SystemTime::now());
        if let Err(error) = logged {
            tracing::error!(run_id = %self.run_id, %error, "cannot record a log line");
        }
    }
}
