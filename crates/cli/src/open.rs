//! What the global options name, opened: the workspace(s) of `--workspace` and the store of
//! `--db | --memory`.

use std::path::PathBuf;

use studio_core::store::{Store, StoreLocation};
use studio_core::{SessionId, Workspace};

use crate::cli::Globals;

impl Globals {
    /// The one workspace of `--workspace`, else the current folder ([`crate::cli::Cli::check`]
    /// refused more than one).
    pub fn open_workspace(&self) -> anyhow::Result<Workspace> {
        let root = match self.workspace.first() {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()?,
        };
        Ok(Workspace::open(root)?)
    }

    /// Every workspace of `--workspace`, else the current folder.
    pub fn open_workspaces(&self) -> anyhow::Result<Vec<Workspace>> {
        let roots = match self.workspace.as_slice() {
            [] => vec![std::env::current_dir()?],
            roots => roots.to_vec(),
        };
        Ok(roots.into_iter().map(Workspace::open).collect::<Result<Vec<_>, _>>()?)
    }

    /// The app service over the workspace and the store (opened in that order), for one command
    /// ([`studio_core::app::Studio::for_command`]: nothing started).
    pub fn open_studio(&self) -> anyhow::Result<studio_core::app::Studio> {
        let workspace = self.open_workspace()?;
        Ok(studio_core::app::Studio::for_command(workspace, self.open_store()?))
    }

    /// Where the store is. Resolved once per command: each in-memory location is a store of
    /// its own.
    pub fn store_location(&self) -> anyhow::Result<StoreLocation> {
        Ok(self.store.location()?)
    }

    /// The store, opened (see [`open_store`]).
    pub fn open_store(&self) -> anyhow::Result<Store> {
        open_store(&self.store_location()?)
    }
}

/// Opens the store as the window does ([`studio_core::app::open_store`]): the runs no studio
/// process follows any more are settled first (`zstudio runs` shows what became of them).
pub fn open_store(location: &StoreLocation) -> anyhow::Result<Store> {
    Ok(studio_core::app::open_store(location)?)
}

/// A folder of the system's temp folder, removed (with the folder named after it) when dropped.
pub struct TempFolder(pub PathBuf);

impl Drop for TempFolder {
    fn drop(&mut self) {
        let owner = self
            .0
            .parent()
            .filter(|parent| parent.starts_with(std::env::temp_dir()));
        let _ = std::fs::remove_dir_all(owner.unwrap_or(&self.0));
    }
}

/// An error naming the session and where it was looked for, unless the store or the folder
/// knows it.
pub fn require_session(store: &Store, workspace: &Workspace, id: &SessionId) -> anyhow::Result<()> {
    if store.session_exists(workspace, id)? {
        Ok(())
    } else {
        Err(studio_core::Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        }
        .into())
    }
}
