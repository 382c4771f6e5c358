//! Stopping a run the studio did not start (one started from a terminal, CI, another tool): the
//! engine checks the stop files in its session folder before each node, whoever started it
//! (docs/protocol.md §3), so a graceful stop is the stop files alone. The studio knows none of its
//! processes: it cannot force it, and never signals anything.

use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;

use super::live_run::LiveRun;
use super::request::DEFAULT_GRACE;
use super::run_files::STOP_FILES;
use crate::sessions::session::{read_summary, Workspace};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// A graceful stop asked of a run the studio did not start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OutsideStop {
    pub session_id: String,
    /// The stop files written in its session folder (both names every engine era knows).
    pub stop_files: Vec<PathBuf>,
}

/// Asks the run of session `id`, which the studio did not start, to stop before its next node:
/// both stop files in its session folder, never through a link. The session's folder must say
/// it is still going ([`Error::SessionNotLive`] otherwise). Nothing is signalled: the current
/// node finishes first, and a run whose engine does not check the stop files (or that is stuck
/// in a node) goes on; only whoever started it can end it otherwise.
pub fn stop_outside(workspace: &Workspace, id: &SessionId, now: SystemTime) -> Result<OutsideStop, Error> {
    let path = workspace.session_folder(id)?;
    let summary = read_summary(&path, id, now).ok_or_else(|| Error::SessionNotFound {
        id: id.to_string(),
        sessions_dir: workspace.sessions_dir(),
    })?;
    if summary.status != Status::Running {
        return Err(Error::SessionNotLive {
            id: id.as_str().to_owned(),
            status: summary.status.to_string(),
        });
    }
    // No run id of the studio's, no leader: only its stop files, never a signal.
    LiveRun::new("", path.clone(), None, Vec::new(), DEFAULT_GRACE, None).write_stop_files()?;
    Ok(OutsideStop {
        session_id: id.as_str().to_owned(),
        stop_files: STOP_FILES.iter().map(|name| path.join(name)).collect(),
    })
}
