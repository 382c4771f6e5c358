//! The store's runs as a watcher follows them: a run's start or end recorded in the store (by
//! this process or another: a CLI run, a detached run's keeper, a recovery) names the session
//! whose listing it changes, though its folder may not change at all (a last node that writes no
//! folder, a failed node, a stop).
//!
//! The store's own files are watched (the database and its write-ahead log, in the store's
//! folder, with an inotify instance of their own): a write to either makes the runs due for a
//! look, at most once per watcher window; the look is one query over the `running` runs and the
//! runs recorded since ([`Store::runs_running_or_newer`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::store::{Store, StoreLocation};
use crate::vocabulary::id::SessionId;

/// The runs of a store as last read.
pub(super) struct RecordedRuns {
    store: Arc<Store>,
    /// The store's folder, watched, and the names of its files in it (the database, its `-wal`
    /// and `-journal`).
    folder: Option<PathBuf>,
    file_names: Vec<OsString>,
    notify: Option<RecommendedWatcher>,
    /// The runs `running` at the last look, with their session.
    running: HashMap<String, (PathBuf, SessionId)>,
    /// The last run recorded at the last look.
    last_key: i64,
    /// A store file changed: the runs are looked at once the window since then has passed.
    pub(super) due_since: Option<Instant>,
    pub(super) last_look: Option<Instant>,
}

impl RecordedRuns {
    /// Follows `store`'s runs; `on_event` receives its files' events (an in-memory store has none:
    /// only this process writes it, and its runs are followed through the supervisor).
    pub(super) fn new(store: Arc<Store>, on_event: impl notify::EventHandler) -> RecordedRuns {
        let (folder, file_names) = match store.location() {
            StoreLocation::File(path) => match (path.parent(), path.file_name()) {
                (Some(folder), Some(name)) => {
                    let names = ["", "-wal", "-journal"]
                        .iter()
                        .map(|suffix| {
                            let mut name = name.to_owned();
                            name.push(suffix);
                            name
                        })
                        .collect();
                    (Some(folder.to_owned()), names)
                }
                _ => (None, Vec::new()),
            },
            StoreLocation::Memory { .. } => (None, Vec::new()),
        };
        let notify = folder.as_deref().and_then(|folder| watch_folder(folder, on_event));
        let mut runs = RecordedRuns {
            store,
            folder,
            file_names,
            notify,
            running: HashMap::new(),
            last_key: 0,
            due_since: None,
            last_look: None,
        };
        // What runs now is the baseline: only what changes after is news.
        runs.look();
        runs
    }

    /// inotify could not watch the store's folder: it is looked at every poll interval.
    pub(super) fn polled(&self) -> bool {
        self.folder.is_some() && self.notify.is_none()
    }

    /// An event of the store folder's watch: one naming a store file makes the runs due.
    pub(super) fn on_event(&mut self, event: notify::Result<notify::Event>, now: Instant) {
        let concerned = match event {
            Ok(event) => {
                event.need_rescan()
                    || event.paths.iter().any(|path| {
                        path.file_name()
                            .is_some_and(|name| self.file_names.iter().any(|n| n == name))
                    })
            }
            Err(_) => true,
        };
        if concerned {
            self.due_since.get_or_insert(now);
        }
    }

    /// Reads the store's runs and returns the sessions (workspace root, id) whose run started or
    /// ended since the last look.
    pub(super) fn look(&mut self) -> Vec<(PathBuf, SessionId)> {
        self.due_since = None;
        self.last_look = Some(Instant::now());
        let runs = match self.store.runs_running_or_newer(self.last_key) {
            Ok(runs) => runs,
            Err(error) => {
                tracing::warn!(%error, "cannot read the store's runs; a run's end is seen with its folder's next change");
                return Vec::new();
            }
        };
        let mut changed = Vec::new();
        let mut running = HashMap::new();
        for run in runs {
            let Ok(session) = SessionId::parse(&run.session_id) else {
                continue;
            };
            let known = self.running.remove(&run.run_id).is_some();
            if run.key > self.last_key {
                self.last_key = run.key;
            }
            if !known {
                // Recorded since the last look (started, or started and ended).
                changed.push((run.workspace.clone(), session.clone()));
            }
            if run.running {
                running.insert(run.run_id, (run.workspace, session));
            }
        }
        // Runs running at the last look and no longer: ended (or deleted with their session).
        changed.extend(std::mem::replace(&mut self.running, running).into_values());
        changed.sort();
        changed.dedup();
        changed
    }
}

fn watch_folder(folder: &Path, on_event: impl notify::EventHandler) -> Option<RecommendedWatcher> {
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut watcher = match RecommendedWatcher::new(on_event, config) {
        Ok(watcher) => watcher,
        Err(error) => {
            tracing::warn!(%error, "cannot watch the store's files; looking at its runs every poll interval");
            return None;
        }
    };
    match watcher.watch(folder, RecursiveMode::NonRecursive) {
        Ok(()) => Some(watcher),
        Err(error) => {
            tracing::warn!(%error, folder = %folder.display(), "cannot watch the store's folder; looking at its runs every poll interval");
            None
        }
    }
}
