//! The inotify watches of the session folders: the sessions folder (or the deepest real folder on
//! the way), each session's layout, their budget, and the fallback to polling when they fail.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use notify::{RecursiveMode, Watcher as _};

use super::layout::{deepest_real_folder, session_watch_dirs};
use super::state::WatchLoop;
use crate::sessions::change::Change;
use crate::vocabulary::id::SessionId;

impl WatchLoop {
    /// Points the workspace's watch at its sessions folder (or the nearest existing ancestor),
    /// then compares the folder's sessions with the known ones.
    pub(super) fn reconcile(&mut self, index: usize, initial: bool) {
        self.point_watch(index);
        self.rescan(index, initial);
    }

    /// Watches the sessions folder, or the deepest real folder on the way while it is missing (or
    /// a link stands in its place).
    pub(super) fn point_watch(&mut self, index: usize) {
        for _ in 0..10 {
            let workspace = &mut self.workspaces[index];
            let target = deepest_real_folder(workspace.workspace.root());
            let mode = RecursiveMode::NonRecursive;
            let identity = std::fs::symlink_metadata(&target).ok().map(|m| (m.dev(), m.ino()));
            if workspace.watched.as_ref() == Some(&(target.clone(), identity)) {
                break;
            }
            if let (Some((old, _)), Some(notify)) = (workspace.watched.take(), self.notify.as_mut()) {
                let _ = notify.unwatch(&old);
            }
            let mut failed = None;
            if let (false, Some(notify)) = (workspace.polling, self.notify.as_mut()) {
                if let Err(e) = notify.watch(&target, mode) {
                    failed = Some(format!("cannot watch {}: {e}", target.display()));
                }
            }
            workspace.watched = Some((target, identity));
            if let Some(reason) = failed {
                self.fall_back_to_polling(index, reason);
            }
        }
    }

    /// Watches what the session layout has below a session folder (and releases the watches of
    /// folders it no longer has); a failed watch makes the workspace polled.
    pub(super) fn watch_session(&mut self, index: usize, id: &SessionId) {
        let workspace = &mut self.workspaces[index];
        let (false, Some(notify)) = (workspace.polling, self.notify.as_mut()) else {
            return;
        };
        let wanted = session_watch_dirs(&workspace.sessions_dir.join(id.as_str()));
        let had = workspace.session_watches.remove(id).unwrap_or_default();
        for gone in had.iter().filter(|dir| !wanted.contains(dir)) {
            let _ = notify.unwatch(gone);
            self.session_watch_count -= 1;
        }
        let (mut watched, new): (Vec<PathBuf>, Vec<PathBuf>) = wanted.into_iter().partition(|dir| had.contains(dir));
        let adding = new.len();
        let mut failed = None;
        if self.session_watch_count + adding > self.options.max_watches {
            failed = Some(format!(
                "the studio's budget of {} inotify watches is used up (half of fs.inotify.max_user_watches)",
                self.options.max_watches
            ));
        } else {
            for dir in new {
                match notify.watch(&dir, RecursiveMode::NonRecursive) {
                    Ok(()) => {
                        self.session_watch_count += 1;
                        watched.push(dir);
                    }
                    // Gone since it was listed.
                    Err(e) if matches!(e.kind, notify::ErrorKind::PathNotFound) => {}
                    Err(e) => {
                        failed = Some(format!("cannot watch {}: {e}", dir.display()));
                        break;
                    }
                }
            }
        }
        if !watched.is_empty() {
            workspace.session_watches.insert(id.clone(), watched);
        }
        if let Some(reason) = failed {
            self.fall_back_to_polling(index, reason);
        }
    }

    /// Releases a removed session's watches.
    pub(super) fn unwatch_session(&mut self, index: usize, id: &SessionId) {
        let had = self.workspaces[index].session_watches.remove(id).unwrap_or_default();
        self.session_watch_count -= had.len();
        if let Some(notify) = self.notify.as_mut() {
            for dir in had {
                let _ = notify.unwatch(&dir);
            }
        }
    }

    /// inotify cannot cover a workspace (typically the watch limit): it is polled from now on, and
    /// every watch it had is released (they would only use up the user's budget).
    pub(super) fn fall_back_to_polling(&mut self, index: usize, reason: String) {
        let workspace = &mut self.workspaces[index];
        if workspace.polling {
            return;
        }
        tracing::warn!(
            workspace = %workspace.workspace.root().display(),
            %reason,
            "cannot watch the session folders; polling them every {:?} instead",
            self.options.poll_interval
        );
        workspace.polling = true;
        workspace.reconcile_due = true;
        if let Some(notify) = self.notify.as_mut() {
            for dir in workspace.session_watches.drain().flat_map(|(_, dirs)| dirs) {
                let _ = notify.unwatch(&dir);
                self.session_watch_count -= 1;
            }
            if let Some((dir, _)) = &workspace.watched {
                let _ = notify.unwatch(dir);
            }
        }
        // The agents file's watch goes too: it is polled with the rest.
        workspace.agents.polled = true;
        if let (Some((dir, _)), Some(notify)) = (workspace.agents.watched.take(), self.agents_notify.as_mut()) {
            let _ = notify.unwatch(&dir);
        }
        let workspace = workspace.workspace.root().to_owned();
        (self.sink)(Change::WatchPolling {
            workspace,
            reason: format!("{reason}; polling every {:?} instead", self.options.poll_interval),
        });
    }
}

/// The inotify watches this process holds, as the kernel counts them (`/proc/self/fdinfo`: every
/// inotify instance's watches): what the tests and the `watching` bench count.
pub fn inotify_watches_held() -> usize {
    let Ok(fds) = std::fs::read_dir("/proc/self/fdinfo") else {
        return 0;
    };
    fds.flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .map(|info| info.lines().filter(|l| l.starts_with("inotify wd:")).count())
        .sum()
}
