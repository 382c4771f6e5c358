//! Where an imported session is built (a folder of its own beside the sessions folder) and how it
//! is committed: its records in one store transaction, the folder moved into place (never over
//! another) before the transaction commits; a failure anywhere leaves neither.
//!
//! An import that is killed part-way (SIGKILL, a power cut) cannot remove its folder. Each folder
//! is therefore named by the process that builds it, `.import-<boot>-<pid>-<start time>-<uuid>`
//! ([`crate::vocabulary::owned`]), and [`sweep_stale_imports`] removes those whose process is
//! gone, at every import and when the studio opens a workspace. A live import's folder is never
//! swept: its process is still the one its name says. A folder named otherwise (an older studio's
//! `.import-<uuid>`) is left alone.

use std::fs::File;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::sessions::private;
use crate::sessions::session::Workspace;
use crate::store::Store;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::owned::{owned_name, sweep_orphans};

/// What every staging folder's name starts with.
const STAGING_PREFIX: &str = ".import-";

/// The folder a session is built in before it is moved into place; removed unless it was.
/// The folders it made on the way (`.zibby`, `output`, `sessions` of a workspace that had none)
/// go too when nothing was imported.
pub(super) struct Staging {
    dir: PathBuf,
    sessions: PathBuf,
    /// The folders made for it, outermost first (a session moved into place keeps them: they are
    /// not empty any more).
    made: Vec<PathBuf>,
}

impl Staging {
    pub(super) fn new(workspace: &Workspace) -> Result<Staging, Error> {
        let mut made = Vec::new();
        if workspace.sessions_folder()?.is_none() {
            let sessions = workspace.sessions_dir();
            made = sessions
                .ancestors()
                .take_while(|folder| *folder != workspace.root())
                .filter(|folder| std::fs::symlink_metadata(folder).is_err())
                .map(Path::to_path_buf)
                .collect();
            made.reverse();
            private::create_dir_all(&sessions)?;
        }
        let sessions = workspace.sessions_folder()?.ok_or_else(|| Error::NotAFolder {
            path: workspace.sessions_dir(),
        })?;
        let parent = sessions.parent().unwrap_or(&sessions);
        sweep_orphans(parent, STAGING_PREFIX);
        let dir = parent.join(owned_name(STAGING_PREFIX));
        let staging = Staging {
            dir,
            sessions: sessions.clone(),
            made,
        };
        create_private_dir(&staging.dir)?;
        Ok(staging)
    }

    /// Where the session is built.
    pub(super) fn session(&self) -> PathBuf {
        self.dir.join("session")
    }

    /// Moves the session into the sessions folder as `id`, never over anything there.
    fn move_into_place(&self, id: &SessionId, modified: Option<SystemTime>) -> Result<PathBuf, Error> {
        let target = self.sessions.join(id.as_str());
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &self.session(),
            nix::fcntl::AT_FDCWD,
            &target,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(|e| match e {
            nix::errno::Errno::EEXIST => Error::SessionExists {
                id: id.to_string(),
                sessions_dir: self.sessions.clone(),
            },
            e => Error::io_write(&target, e.into()),
        })?;
        if let Some(modified) = modified {
            set_modified(&target, modified);
        }
        Ok(target)
    }

    /// Takes back a session moved into place (its import failed after all).
    fn unplace(&self, target: &Path) {
        let _ = std::fs::remove_dir_all(target);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        // Innermost first; a folder that is not empty (a session placed in it, or something else
        // wrote into it meanwhile) stays.
        for folder in self.made.iter().rev() {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// Removes the staging folders of `workspace` whose import was killed part-way (their process is
/// gone); returns the folders removed. Never follows a link: `.zibby` or `output` that is one
/// sweeps nothing, and a staging name that is a link or a file is left alone.
pub fn sweep_stale_imports(workspace: &Workspace) -> Vec<PathBuf> {
    match workspace.sessions_folder() {
        Ok(Some(sessions)) => sessions
            .parent()
            .map(|parent| sweep_orphans(parent, STAGING_PREFIX))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A new folder, 0700 (its parent exists).
pub(super) fn create_private_dir(path: &Path) -> Result<(), Error> {
    std::fs::DirBuilder::new()
        .mode(private::DIR_MODE)
        .create(path)
        .map_err(|e| Error::io_write(path, e))
}

pub(super) fn set_modified(path: &Path, modified: SystemTime) {
    let set = File::open(path).and_then(|file| file.set_modified(modified));
    if let Err(error) = set {
        tracing::debug!(path = %path.display(), %error, "cannot keep the modification time");
    }
}

/// Refuses an id the workspace has already (its folder or its records).
pub(super) fn refuse_existing(store: &Store, workspace: &Workspace, id: &SessionId) -> Result<(), Error> {
    if store.session_exists(workspace, id)? {
        return Err(Error::SessionExists {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        });
    }
    Ok(())
}

/// Writes the records of `write` in one transaction, then moves the staged folder into place as
/// the id `write` returns, then commits; a failure anywhere leaves neither the records nor the
/// folder.
pub(super) fn commit_import(
    store: &Store,
    staging: &Staging,
    folder_modified: Option<SystemTime>,
    write: impl FnOnce() -> Result<SessionId, Error>,
) -> Result<(SessionId, PathBuf), Error> {
    let mut moved: Option<PathBuf> = None;
    let result = store.atomically(|| {
        let id = write()?;
        moved = Some(staging.move_into_place(&id, folder_modified)?);
        Ok(id)
    });
    match (result, moved) {
        (Ok(id), Some(path)) => Ok((id, path)),
        (Err(error), moved) => {
            if let Some(path) = moved {
                // The commit failed after the move.
                staging.unplace(&path);
            }
            Err(error)
        }
        (Ok(_), None) => unreachable!("the folder moves before the commit"),
    }
}
