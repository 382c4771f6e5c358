//! A workspace on another machine, as the app service holds it: [`Elsewhere`] is what the window's
//! studio (`Studio`) asks of it, implemented by the remote lane
//! (`remote::window::RemoteWorkspace`: a studio server reached over ssh), so this lane needs
//! nothing of the link but its state's shape (`LinkState`, shown). While one is open, `Studio::forward` sends the window's
//! commands to it by name, and what needs the workspace's folder on this machine is refused with
//! [`Error::LocalOnly`].

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::share::{Exported, ImportedSession};
use crate::vocabulary::error::Error;

/// An open workspace on another machine.
pub trait Elsewhere: Send + Sync {
    /// The answer to the window's command `method` with its arguments `params` (an object, by
    /// their IPC names), from the other machine; `None` when `method` is not one it answers (the
    /// command then runs here).
    fn forward(&self, method: &str, params: Value) -> Option<Result<Value, Error>>;

    /// Writes session `session_id` there as a bundle and brings it back to `out`, a file here.
    fn export_session(&self, session_id: &str, include_config: bool, out: &Path) -> Result<Exported, Error>;

    /// Uploads `file` (a bundle or a captured log here) and imports it there, as a session of
    /// its workspace and store.
    fn import_file(&self, file: &Path, as_new: bool) -> Result<ImportedSession, Error>;

    /// Where it is and whether it is still reached.
    fn status(&self) -> RemoteStatus;

    /// Lets it go: the link is closed, nothing is left running here (runs there go on).
    fn close(&self);
}

/// A remote workspace as the window shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RemoteStatus {
    /// The host as errors name it (`user@host:port`, what was given).
    pub host: String,
    /// The workspace folder there, absolute.
    pub path: String,
    /// `ssh://host/path`, which opens it again (Open Recent).
    pub target: String,
    /// Where its link is: connected, or reconnecting (commands fail with `remote_link`
    /// meanwhile, and the listing is read again once it is back).
    pub link: LinkState,
    /// Why the link was lost, once it was given up (or closed): every command then fails with it.
    pub lost: Option<String>,
}

impl RemoteStatus {
    /// The error a command gets while the link is lost.
    pub fn lost_error(&self) -> Option<Error> {
        self.lost.as_ref().map(|what| Error::RemoteLink {
            host: self.host.clone(),
            what: what.clone(),
        })
    }
}

/// Where a link is: what a window shows on the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LinkState {
    Connected,
    /// The link dropped at `since` (milliseconds since the Unix epoch) for `reason`; `attempts`
    /// to connect again failed so far.
    Reconnecting {
        since_ms: u64,
        reason: String,
        attempts: u32,
    },
    /// Attempts stopped (`LinkOptions::give_up_after` in the remote lane), or the link was closed.
    Failed {
        reason: String,
    },
}
