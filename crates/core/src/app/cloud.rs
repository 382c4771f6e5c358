//! A bucket prefix open in the window as a read-only workspace ([`CloudWorkspace`]): its mirror
//! (`bucket::Mirror`, a folder of the studio's cache, one per source) is opened as a local
//! workspace, and a poller thread refreshes the mirror every [`POLL_INTERVAL`] and when asked
//! ([`CloudWorkspace::refresh_soon`], the window gaining focus). The files a refresh writes into
//! the mirror's folder reach the window as any workspace's changes do, through the watcher.
//!
//! Read-only: the window's commands that would start, stop, continue or delete a run, or write
//! the agents file, are refused by [`Studio::forward`](crate::app::Studio::forward) while one is
//! open ([`READ_ONLY_REFUSED`]), naming the source. Pins are kept in the local store, keyed by
//! the mirror's folder (one per source). A page of a large output not yet fetched is fetched
//! before it is read ([`CloudWorkspace::ensure_range`]): never shown as the sparse file's zeros.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::bucket::{Mirror, Source};
use crate::sessions::session::RAW_STREAM_FILE;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// How often the poller refreshes the mirror.
pub const POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The window's commands a cloud workspace refuses (run, replay and continue are `run_start` and
/// `run_replay`; stop; delete; the agents file).
pub const READ_ONLY_REFUSED: &[&str] = &[
    "run_start",
    "run_replay",
    "run_stop",
    "session_stop_outside",
    "session_delete",
    "agent_save",
];

/// A cloud workspace as the window shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CloudStatus {
    /// The source's URL (`s3://bucket/prefix`), which opens it again (Open Recent).
    pub url: String,
    /// The endpoint given in the form, when one was.
    pub endpoint: Option<String>,
    /// Why the last refresh failed, while it does.
    pub error: Option<String>,
}

/// An open cloud workspace: its mirror and the poller that keeps it current.
pub struct CloudWorkspace {
    mirror: Arc<Mirror>,
    url: String,
    endpoint: Option<String>,
    error: Arc<Mutex<Option<String>>>,
    /// Wakes the poller (a refresh now); dropped, it ends the poller.
    wake: Mutex<Option<Sender<()>>>,
}

impl CloudWorkspace {
    /// Refreshes `mirror` once (an error there, such as access refused, is the caller's), then
    /// starts its poller.
    pub fn open(mirror: Mirror, endpoint: Option<String>) -> Result<Arc<CloudWorkspace>, Error> {
        mirror.refresh(SystemTime::now())?;
        let mirror = Arc::new(mirror);
        let (wake, woken) = mpsc::channel::<()>();
        let error = Arc::new(Mutex::new(None));
        let (polled, said) = (Arc::clone(&mirror), Arc::clone(&error));
        std::thread::Builder::new()
            .name("cloud-poller".into())
            .spawn(move || loop {
                match woken.recv_timeout(POLL_INTERVAL) {
                    Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                let failed = polled.refresh(SystemTime::now()).err().map(|e| e.to_string());
                if let Some(failure) = &failed {
                    tracing::warn!(source = %polled.source(), "the cloud workspace's refresh failed: {failure}");
                }
                *said.lock().unwrap_or_else(|p| p.into_inner()) = failed;
            })
            .map_err(|e| Error::io_spawn("the cloud workspace's poller", e))?;
        Ok(Arc::new(CloudWorkspace {
            url: mirror.source().to_string(),
            mirror,
            endpoint,
            error,
            wake: Mutex::new(Some(wake)),
        }))
    }

    /// The mirror's folder, opened as the workspace.
    pub fn workspace_root(&self) -> PathBuf {
        self.mirror.workspace_root()
    }

    pub fn source(&self) -> &Source {
        self.mirror.source()
    }

    pub fn status(&self) -> CloudStatus {
        CloudStatus {
            url: self.url.clone(),
            endpoint: self.endpoint.clone(),
            error: self.error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }

    /// Asks the poller for a refresh now (the window gained focus).
    pub fn refresh_soon(&self) {
        if let Some(wake) = &*self.wake.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = wake.send(());
        }
    }

    /// The error a write command `method` gets: the source is read-only.
    pub fn read_only_error(&self, method: &str) -> Error {
        self.source().error(
            "",
            format!("a cloud workspace is read-only: `{method}` (run, stop, continue, delete) is refused"),
        )
    }

    /// Makes bytes `offset..offset + limit` of `path` of session `session_id` present in the
    /// mirror (fetched by range when missing): only a raw stream may be partly fetched.
    pub fn ensure_range(&self, session_id: &str, path: &str, offset: u64, limit: usize) -> Result<(), Error> {
        let id = SessionId::parse(session_id)?;
        let is_raw_stream = std::path::Path::new(path).file_name() == Some(std::ffi::OsStr::new(RAW_STREAM_FILE));
        if is_raw_stream && self.mirror.holds(&id) {
            self.mirror
                .read_range(&id, path, offset..offset.saturating_add(limit as u64))?;
        }
        Ok(())
    }

    /// Stops the poller.
    pub fn close(&self) {
        self.wake.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}
