//! The session layout as the watcher sees it: which folders of a session are watched, which of
//! its files are followed, and where a workspace's watch goes while its sessions folder is missing.

use std::path::{Path, PathBuf};

#[cfg(doc)]
use crate::sessions::change::Change;
use crate::sessions::session::{EVENTS_FILE, RAW_STREAM_FILE, SESSIONS_DIR};

/// The files whose new lines are sent as [`Change::OutputAppended`].
pub const FOLLOWED_FILES: [&str; 2] = [RAW_STREAM_FILE, EVENTS_FILE];

/// The workspace's sessions folder when it is there, else the deepest real folder on the way to
/// it (a component that is missing, or a symbolic link, ends the way).
pub(super) fn deepest_real_folder(root: &Path) -> PathBuf {
    let mut path = root.to_path_buf();
    for component in SESSIONS_DIR {
        let next = path.join(component);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.is_dir() => path = next,
            _ => break,
        }
    }
    path
}

/// The folders watched for one session: its folder, its node folders (and `nodes/`), and
/// `nodes/<node>/`: real folders only, never links. Empty when the session folder is not a real
/// folder.
pub(super) fn session_watch_dirs(session_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = layout_dirs(session_dir);
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The session layout's real folders: the session folder itself, its node folders (and `nodes/`)
/// and `nodes/<node>/`, each a real folder (a link, or anything reached through one, is not);
/// nothing when the session folder is not a real folder. At most [`MAX_WATCHED_NODE_FOLDERS`] of
/// each parent's.
fn layout_dirs(session_dir: &Path) -> Vec<PathBuf> {
    let real_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !real_dir(session_dir) {
        return Vec::new();
    }
    let mut dirs = vec![session_dir.to_owned()];
    let nodes = session_dir.join("nodes");
    let parents = [Some(session_dir.to_owned()), real_dir(&nodes).then_some(nodes)];
    for parent in parents.into_iter().flatten() {
        if let Ok(entries) = std::fs::read_dir(&parent) {
            let children = entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir()));
            dirs.extend(children.map(|e| e.path()).take(MAX_WATCHED_NODE_FOLDERS));
        }
    }
    dirs
}

/// A session has a few node folders; a folder with more than this is not watched past them.
const MAX_WATCHED_NODE_FOLDERS: usize = 1_000;

/// The followed output files of a session folder: its own, and those of its node folders (at
/// `<session>/<node>/` and `<session>/nodes/<node>/`).
pub fn output_files(session_dir: &Path) -> Vec<PathBuf> {
    // Only real folders of the layout: a linked session or `nodes` is never read through.
    let mut dirs = layout_dirs(session_dir);
    if dirs.is_empty() {
        return Vec::new();
    }
    dirs[1..].sort();
    let mut files = Vec::new();
    for dir in dirs {
        for name in FOLLOWED_FILES {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                files.push(path);
            }
        }
    }
    files
}
