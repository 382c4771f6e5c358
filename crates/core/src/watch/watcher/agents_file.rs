//! The agents file (`.zibby/studio.toml`) of each workspace: its own watch, what its events make
//! due, and the one [`crate::sessions::change::Change::AgentsChanged`] per window when it changed.

use std::os::unix::fs::MetadataExt;
use std::time::Instant;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher as _};

use super::state::{agents_file_state, WatchLoop};
use crate::sessions::change::Change;

impl WatchLoop {
    /// An event of the agents files' watches: one naming a workspace's `.zibby` or its
    /// `studio.toml` makes that file due for a look (the studio's own reads are no change).
    pub(super) fn on_agents_event(&mut self, event: notify::Result<notify::Event>) {
        let now = Instant::now();
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(error = %e, "an agents file watch failed; polling the agents files");
                for workspace in &mut self.workspaces {
                    workspace.agents.polled = true;
                    workspace.agents.due_since.get_or_insert(now);
                }
                return;
            }
        };
        let lost = event.need_rescan();
        if !lost && matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write)) {
            return;
        }
        for workspace in &mut self.workspaces {
            let agents = &mut workspace.agents;
            let concerned = lost
                || event
                    .paths
                    .iter()
                    .any(|path| *path == agents.file || *path == agents.folder);
            if concerned {
                agents.due_since.get_or_insert(now);
            }
        }
    }

    /// Watches a workspace's `.zibby` folder when it is a real folder, else its root (until
    /// `.zibby` appears): never through a link; not while the workspace is polled.
    pub(super) fn point_agents_watch(&mut self, index: usize) {
        let workspace = &mut self.workspaces[index];
        if workspace.polling {
            return; // polled with its sessions
        }
        let (root, agents) = (workspace.workspace.root(), &mut workspace.agents);
        let real_folder = std::fs::symlink_metadata(&agents.folder).is_ok_and(|m| m.is_dir());
        let target = if real_folder {
            agents.folder.clone()
        } else {
            root.to_owned()
        };
        let identity = std::fs::symlink_metadata(&target).ok().map(|m| (m.dev(), m.ino()));
        if agents.watched.as_ref() == Some(&(target.clone(), identity)) {
            return;
        }
        let Some(notify) = self.agents_notify.as_mut() else {
            return;
        };
        if let Some((old, _)) = agents.watched.take() {
            let _ = notify.unwatch(&old);
        }
        match notify.watch(&target, RecursiveMode::NonRecursive) {
            Ok(()) => {
                agents.watched = Some((target, identity));
                agents.polled = false;
            }
            Err(e) => {
                if !agents.polled {
                    tracing::warn!(error = %e, path = %target.display(), "cannot watch the agents file; polling it");
                }
                agents.polled = true;
            }
        }
    }

    /// Looks at the agents files whose window has passed, and reports those that changed.
    pub(super) fn check_due_agents_files(&mut self) {
        let now = Instant::now();
        for index in 0..self.workspaces.len() {
            let due = self.workspaces[index]
                .agents
                .due_since
                .is_some_and(|since| now >= since + self.options.window);
            if !due {
                continue;
            }
            self.point_agents_watch(index);
            let workspace = &mut self.workspaces[index];
            workspace.agents.due_since = None;
            let state = agents_file_state(&workspace.agents.file);
            if state != workspace.agents.state {
                workspace.agents.state = state;
                (self.sink)(Change::AgentsChanged {
                    workspace: workspace.workspace.root().to_owned(),
                });
            }
        }
    }
}
