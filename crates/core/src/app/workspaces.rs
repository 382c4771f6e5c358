//! Which workspace the app service has open, and the switch to another: a folder here, a bucket
//! prefix (read-only, through its mirror) or a workspace on another machine (its commands sent
//! there); the recent list the window's Open Recent shows.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::app::cloud::{CloudWorkspace, READ_ONLY_REFUSED};
use crate::app::elsewhere::{Elsewhere, RemoteStatus};
use crate::app::{lock, replace, NotLocal, Studio, RECENT_WORKSPACES};
use crate::sessions::session::Workspace;
use crate::share;
use crate::vocabulary::error::Error;

impl Studio {
    /// Opens another workspace: the window, the watcher and the recent list move to it. Runs of
    /// the previous one go on.
    pub fn open_workspace(&self, path: &Path) -> Result<Workspace, Error> {
        let workspace = Workspace::open(path)?;
        self.store()?.workspace_opened(&workspace, SystemTime::now())?;
        self.switch_to(workspace, None)
    }

    /// Makes `cloud` the open workspace: its mirror's folder is opened as a local one (read-only,
    /// [`READ_ONLY_REFUSED`]), and its URL becomes the most recent workspace (Open Recent opens
    /// it again).
    pub fn open_cloud(&self, cloud: Arc<CloudWorkspace>) -> Result<Workspace, Error> {
        let workspace = Workspace::open(cloud.workspace_root())?;
        let recorded = Workspace::from_canonical_root(PathBuf::from(cloud.status().target));
        self.store()?.workspace_opened(&recorded, SystemTime::now())?;
        self.switch_to(workspace, Some(cloud))
    }

    pub(super) fn switch_to(
        &self,
        workspace: Workspace,
        cloud: Option<Arc<CloudWorkspace>>,
    ) -> Result<Workspace, Error> {
        share::sweep_stale_imports(&workspace);
        *self.workspace.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Ok(workspace.clone());
        self.set_not_local(cloud.map(NotLocal::Cloud));
        tracing::info!(root = %workspace.root().display(), "workspace opened");
        // Cloned out first: `watch` takes the lock again.
        let changes = lock(&self.changes).clone();
        if let Some(sink) = changes {
            self.watch(sink)?;
        }
        Ok(workspace)
    }

    pub(super) fn not_local(&self) -> Option<NotLocal> {
        self.not_local
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The open workspace when it is a bucket prefix.
    pub fn cloud(&self) -> Option<Arc<CloudWorkspace>> {
        match self.not_local()? {
            NotLocal::Cloud(cloud) => Some(cloud),
            NotLocal::Remote(_) => None,
        }
    }

    /// Makes `not_local` the open workspace that is not a folder here (or none): the one before
    /// is let go, with the remote session compared last.
    pub(super) fn set_not_local(&self, not_local: Option<NotLocal>) {
        drop(lock(&self.across).take());
        if let Some(previous) = replace(&self.not_local, not_local) {
            previous.close();
        }
    }

    /// Makes `remote` the open workspace (its commands go there, [`Studio::forward`]): the local
    /// watcher stops, the one open before is let go, and its `ssh://` target becomes the most
    /// recent workspace (Open Recent opens it again).
    pub fn open_elsewhere(&self, remote: Arc<dyn Elsewhere>) -> Result<RemoteStatus, Error> {
        let status = remote.status();
        let recorded = Workspace::from_canonical_root(PathBuf::from(&status.target));
        if let Err(error) = self.store()?.workspace_opened(&recorded, SystemTime::now()) {
            tracing::warn!(%error, "cannot record the remote workspace as recent");
        }
        drop(lock(&self.watcher).take());
        self.set_not_local(Some(NotLocal::Remote(remote)));
        tracing::info!(host = %status.host, path = %status.path, "remote workspace opened");
        Ok(status)
    }

    /// The open workspace when it is on another machine.
    pub fn remote(&self) -> Option<Arc<dyn Elsewhere>> {
        match self.not_local()? {
            NotLocal::Remote(remote) => Some(remote),
            NotLocal::Cloud(_) => None,
        }
    }

    /// The answer of the open remote workspace to the window's command `method` (its arguments
    /// by their IPC names); `None` when the workspace is on this machine or the command is not
    /// one the other machine answers. A cloud workspace's answer to a command that would write
    /// ([`READ_ONLY_REFUSED`]) is its refusal, naming the source: the one read-only check.
    pub fn forward(&self, method: &str, params: serde_json::Value) -> Option<Result<serde_json::Value, Error>> {
        match self.not_local()? {
            NotLocal::Cloud(cloud) => READ_ONLY_REFUSED
                .contains(&method)
                .then(|| Err(cloud.read_only_error(method))),
            NotLocal::Remote(remote) => remote.forward(method, params),
        }
    }

    /// The workspaces the window opened, most recent first.
    pub fn recent_workspaces(&self) -> Result<Vec<PathBuf>, Error> {
        self.store()?.recent_workspaces(RECENT_WORKSPACES)
    }
}
