//! A workspace and its session folders: opening it, finding a session's folder, listing them all.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::model::{Detail, Session, SessionSummary, SESSIONS_DIR};
use super::read::{read_session_folder, read_summary};
use crate::sessions::untrusted;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// A project folder whose sessions live in `<root>/.zibby/output/sessions/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens an existing folder as a workspace (it need not have any sessions yet).
    pub fn open(root: impl AsRef<Path>) -> Result<Workspace, Error> {
        let root = root.as_ref();
        let metadata = fs::metadata(root).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => Error::WorkspaceNotFound { path: root.into() },
            _ => Error::io(root, source),
        })?;
        if !metadata.is_dir() {
            return Err(Error::NotAFolder { path: root.into() });
        }
        let root = fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
        Ok(Workspace { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the sessions folder is (it may be missing, or refused by [`Workspace::sessions_folder`]).
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join(SESSIONS_DIR.join("/"))
    }

    /// The sessions folder when it exists, checked on the way down: a symbolic link as `.zibby`,
    /// `output` or `sessions` is refused (a cloned repository could point it anywhere).
    pub fn sessions_folder(&self) -> Result<Option<PathBuf>, Error> {
        untrusted::confined_folder(&self.root, &SESSIONS_DIR)
    }

    /// The folder of a session; the id is validated, so the path stays inside the sessions folder.
    pub fn session_path(&self, id: &SessionId) -> PathBuf {
        self.sessions_dir().join(id.as_str())
    }

    /// Makes the folder of a new (or continued) session, never through a symbolic link.
    pub fn create_session_folder(&self, id: &SessionId) -> Result<PathBuf, Error> {
        self.sessions_folder()?;
        let path = self.session_path(id);
        crate::sessions::private::create_dir_all(&path)?;
        self.session_folder(id)
    }

    /// Reads one session in full.
    pub fn read_session(&self, id: &SessionId, now: SystemTime) -> Result<Session, Error> {
        read_session_folder(&self.session_folder(id)?, id.clone(), Detail::Full, now)
    }

    /// The folder of a session that exists (`session_not_found` otherwise): a real folder inside
    /// the workspace's sessions folder, never a symbolic link or one reached through a link.
    pub fn session_folder(&self, id: &SessionId) -> Result<PathBuf, Error> {
        let not_found = || Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: self.sessions_dir(),
        };
        let sessions = self.sessions_folder()?.ok_or_else(not_found)?;
        untrusted::confined_folder(&sessions, &[id.as_str()])?.ok_or_else(not_found)
    }

    /// Every session of the workspace, most recently updated first. A workspace with no sessions
    /// folder yet has no sessions; folders whose names are not valid ids are skipped.
    pub fn list_sessions(&self, now: SystemTime) -> Result<Vec<SessionSummary>, Error> {
        let folders = session_folders(self)?;
        let read = in_parallel(&folders, |(path, id)| Ok(read_summary(path, id, now)))?;
        let mut sessions: Vec<SessionSummary> = read.into_iter().flatten().collect();
        sort_most_recent_first(&mut sessions);
        Ok(sessions)
    }

    /// A workspace whose root is already canonical (as the store records it); it may be gone.
    pub fn from_canonical_root(root: PathBuf) -> Workspace {
        Workspace { root }
    }
}

/// The session folders of a workspace, with their ids; none when there is no sessions folder.
/// Symbolic links named like sessions are included: reading one gives a session that names the
/// problem (see [`read_summary`]), so that a listing shows them without following them.
pub fn session_folders(workspace: &Workspace) -> Result<Vec<(PathBuf, SessionId)>, Error> {
    let Some(dir) = workspace.sessions_folder()? else {
        return Ok(Vec::new());
    };
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        if !entry.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()) {
            continue;
        }
        let Some(id) = entry.file_name().to_str().and_then(|n| SessionId::parse(n).ok()) else {
            continue;
        };
        folders.push((entry.path(), id));
    }
    Ok(folders)
}

/// Maps `work` over `items` on a few threads (folder reads wait on the disk), keeping the order.
pub fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    work: impl Fn(&I) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let chunk = items.len().div_ceil(threads).max(64);
    std::thread::scope(|scope| {
        let work = &work;
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Result<Vec<T>, Error>>()))
            .collect();
        let mut all = Vec::with_capacity(items.len());
        for worker in workers {
            all.extend(worker.join().expect("session reader thread panicked")?);
        }
        Ok(all)
    })
}

/// Sessions most recently updated first (then the later id first).
pub fn sort_most_recent_first(sessions: &mut [SessionSummary]) {
    sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| b.id.cmp(&a.id)));
}
