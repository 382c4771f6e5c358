//! A private folder of the studio server's (0700, in the temporary folder) for the bundles it
//! writes for the client and the files the client uploads: made on first use, removed when the
//! server ends, and named by its process ([`crate::vocabulary::owned`]) so that the folder of a
//! server that was killed is removed by the next one ([`sweep_stale`], when a server starts).

use std::path::PathBuf;
use std::sync::Mutex;

use crate::vocabulary::error::Error;
use crate::vocabulary::owned::{owned_name, sweep_orphans};

/// What the name of every server's folder starts with.
const PREFIX: &str = "zstudio-serve-";

/// A private folder of the server's, made on first use.
#[derive(Default)]
pub struct ServerFolder {
    folder: Mutex<Option<PathBuf>>,
}

impl ServerFolder {
    /// The folder, made (0700) on first use.
    pub fn path(&self) -> Result<PathBuf, Error> {
        let mut folder = self.folder.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(path) = &*folder {
            return Ok(path.clone());
        }
        let path = std::env::temp_dir().join(owned_name(PREFIX));
        crate::sessions::private::create_dir_all(&path)?;
        *folder = Some(path.clone());
        Ok(path)
    }

    /// Removes the folder and what it holds (the server ends).
    pub fn remove_all(&self) {
        let taken = self.folder.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(path) = taken {
            if let Err(error) = std::fs::remove_dir_all(&path) {
                tracing::warn!(%error, path = %path.display(), "cannot remove the server's folder");
            }
        }
    }
}

/// Removes the folders of servers that are gone (killed before they could remove them).
pub fn sweep_stale() -> Vec<PathBuf> {
    sweep_orphans(&std::env::temp_dir(), PREFIX)
}
