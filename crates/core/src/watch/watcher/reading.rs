//! Reading sessions: which appeared or went, which may have changed unseen, and each read that
//! sends what changed (a session's summary and its followed files' new lines).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::layout::{output_files, FOLLOWED_FILES};
use super::state::{mark_pending, KnownSession, SessionKey, WatchLoop};
use crate::sessions::change::Change;
use crate::sessions::session::{fingerprint, read_summary, session_folders, SessionSummary, SessionsFolder};
use crate::sessions::tail::FileTail;
use crate::status::Status;
use crate::vocabulary::id::SessionId;

/// The most bytes of one output file read into one [`Change::OutputAppended`]; the rest follows
/// in the next window.
pub const MAX_APPENDED_BYTES: usize = 1024 * 1024;

impl WatchLoop {
    /// Marks for reading the known sessions that may have changed unseen, found by metadata alone
    /// (reading every session would open files, and each open is an inotify event): a changed
    /// fingerprint (as the folder index uses), a followed file that changed, or a running session
    /// (its node folders are not in the fingerprint), whose output files are looked for anew.
    /// Only the watched sessions, unless `every` (the swept ones are the sweep's).
    pub(super) fn mark_stale_sessions(&mut self, index: usize, every: bool) {
        let now = Instant::now();
        let workspace = &self.workspaces[index];
        let watched = self.watched_ids(index);
        let mut stale = Vec::new();
        for (id, known) in &workspace.sessions {
            if !every && !watched.contains(id) {
                continue;
            }
            let dir = workspace.sessions_dir.join(id.as_str());
            let mut files: Vec<PathBuf> = known
                .tails
                .values()
                .filter(|t| t.has_changed())
                .map(|t| t.path().to_owned())
                .collect();
            let running = known.running;
            if running {
                files.extend(output_files(&dir));
            }
            if running || !files.is_empty() || fingerprint(&dir, known.fingerprint.as_deref()) != known.fingerprint {
                stale.push((id.clone(), files));
            }
        }
        for (id, files) in stale {
            for file in files {
                mark_pending(&mut self.pending, (index, id.clone()), Some(file), now);
            }
            mark_pending(&mut self.pending, (index, id), None, now);
        }
    }

    /// Sessions that appeared or disappeared since the last look.
    pub(super) fn rescan(&mut self, index: usize, initial: bool) {
        let workspace = &self.workspaces[index];
        let folders = match session_folders(&workspace.workspace) {
            Ok(folders) => folders,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the sessions folder");
                return;
            }
        };
        let present: HashSet<SessionId> = folders.into_iter().map(|(_, id)| id).collect();
        let now = Instant::now();
        let gone: Vec<SessionId> = workspace
            .sessions
            .keys()
            .filter(|id| !present.contains(*id))
            .cloned()
            .collect();
        let mut new: Vec<SessionId> = present
            .into_iter()
            .filter(|id| !workspace.sessions.contains_key(id))
            .collect();
        new.sort();
        for id in gone {
            mark_pending(&mut self.pending, (index, id), None, now);
        }
        // The start looks at every seeded session: through the sessions folder held open, as the
        // sweep does (two names resolved a file, not the whole path's).
        let folder = initial
            .then(|| SessionsFolder::open(&self.workspaces[index].sessions_dir).ok())
            .flatten();
        for id in new {
            if initial {
                self.scan_at_start(index, &id, folder.as_ref());
            } else {
                mark_pending(&mut self.pending, (index, id), None, now);
            }
        }
        if initial {
            self.report_seed_gone(index);
        }
    }

    /// The initial scan's look at one session: taken as the seed says while its folder has the
    /// seed's fingerprint (neither read nor reported), else read and reported.
    fn scan_at_start(&mut self, index: usize, id: &SessionId, folder: Option<&SessionsFolder>) {
        let workspace = &mut self.workspaces[index];
        if let Some(seeded) = workspace.seed.remove(id) {
            let print = match folder {
                Some(folder) => folder.fingerprint(id.as_str(), Some(&seeded.fingerprint)),
                None => fingerprint(&workspace.sessions_dir.join(id.as_str()), Some(&seeded.fingerprint)),
            };
            let unchanged = print.as_deref() == Some(seeded.fingerprint.as_str()) && !seeded.running;
            // Known as the seed says (its output followed once it is watched): a read after this
            // reports only how the session differs from the folder index's summary.
            let known = KnownSession {
                updated_at: seeded.updated_at,
                running: seeded.running,
                summary: None,
                fingerprint: print.filter(|_| unchanged),
                tails: HashMap::new(),
            };
            workspace.sessions.insert(id.clone(), known);
            if unchanged {
                return;
            }
        }
        self.read_session(index, id, BTreeSet::new(), true);
    }

    /// The sessions of the seed that the initial scan did not find, reported removed.
    fn report_seed_gone(&mut self, index: usize) {
        let workspace = &mut self.workspaces[index];
        let mut gone: Vec<SessionId> = std::mem::take(&mut workspace.seed).into_keys().collect();
        gone.sort();
        let root = workspace.workspace.root().to_owned();
        for session_id in gone {
            (self.sink)(Change::SessionRemoved {
                workspace: root.clone(),
                session_id,
            });
        }
    }

    pub(super) fn read_due_sessions(&mut self) {
        let now = Instant::now();
        let settle = self.options.window / 4;
        let window = self.options.window;
        let due: Vec<SessionKey> = self
            .pending
            .iter()
            .filter(|(key, pending)| {
                now >= pending.since + settle && self.last_read.get(*key).is_none_or(|last| now >= *last + window)
            })
            .map(|(key, _)| key.clone())
            .collect();
        self.last_read.retain(|_, last| now < *last + window);
        for key in due {
            let Some(pending) = self.pending.remove(&key) else {
                continue;
            };
            self.last_read.insert(key.clone(), now);
            self.read_session(key.0, &key.1, pending.files, false);
        }
    }

    /// Reads one session again and sends what changed.
    pub(super) fn read_session(&mut self, index: usize, id: &SessionId, files: BTreeSet<PathBuf>, initial: bool) {
        let clock_now = (self.options.clock)();
        let dir = self.workspaces[index].sessions_dir.join(id.as_str());
        let is_folder = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
        // Watched before it is read: what changes after the read is seen.
        if is_folder && !initial {
            self.keep_watched(index, id);
        }
        // Nothing is followed through a link standing in for a session folder.
        let files = if is_folder { files } else { BTreeSet::new() };
        let workspace = &mut self.workspaces[index];
        let root = workspace.workspace.root().to_owned();
        // Taken before the read: a change during the read shows in the next comparison.
        let print = fingerprint(&dir, workspace.sessions.get(id).and_then(|k| k.fingerprint.as_deref()));
        // A folder that cannot be read is a session naming its problem, as in a listing.
        let Some(summary) = read_summary(&dir, id, clock_now) else {
            self.forget_watched(index, id);
            let workspace = &mut self.workspaces[index];
            self.running.remove(&(index, id.clone()));
            if workspace.sessions.remove(id).is_some() {
                (self.sink)(Change::SessionRemoved {
                    workspace: root,
                    session_id: id.clone(),
                });
            }
            return;
        };
        if summary.status == Status::Running {
            self.running.insert((index, id.clone()));
        } else {
            self.running.remove(&(index, id.clone()));
        }
        let store_changed = self.store_changed.remove(&(index, id.clone()));
        let previous = self.read_before(index, id);
        let workspace = &mut self.workspaces[index];
        let known = match previous {
            None => {
                // A session found by the initial scan follows its files once it is watched, from
                // their end (lines already there are not news: `sweep`); every other's files are
                // followed from their start.
                (self.sink)(Change::SessionAdded {
                    workspace: root.clone(),
                    session_id: id.clone(),
                    summary: summary.clone(),
                    tags: Vec::new(),
                });
                workspace
                    .sessions
                    .entry(id.clone())
                    .or_insert(KnownSession::read_as(summary))
            }
            Some(previous) => {
                // What the folder cannot order (or no longer names), the order seen live tells.
                let mut summary = summary;
                if let Some(previous) = &previous {
                    summary.keep_order_seen(previous);
                }
                if previous.as_ref() != Some(&summary) || store_changed {
                    (self.sink)(Change::SessionUpdated {
                        workspace: root.clone(),
                        session_id: id.clone(),
                        summary: summary.clone(),
                        tags: Vec::new(),
                    });
                }
                let known = workspace.sessions.get_mut(id).expect("a session known before its read");
                known.hold(summary);
                known
            }
        };
        known.fingerprint = print;
        // A node folder made and written at once can beat the watch added for it: output files
        // the session has and nobody follows yet are followed now, from their start.
        let mut files = files;
        if !initial {
            files.extend(output_files(&dir).into_iter().filter(|f| !known.tails.contains_key(f)));
        }
        let mut more = Vec::new();
        for file in files {
            let followed = file
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| FOLLOWED_FILES.contains(&n));
            if !followed {
                continue;
            }
            let tail = known
                .tails
                .entry(file.clone())
                .or_insert_with(|| FileTail::from_start(&file));
            match tail.read_new_lines(MAX_APPENDED_BYTES) {
                Ok(new) => {
                    if new.more {
                        more.push(file.clone());
                    }
                    if !new.lines.is_empty() {
                        (self.sink)(Change::OutputAppended {
                            workspace: root.clone(),
                            session_id: id.clone(),
                            file,
                            offset: new.offset,
                            lines: new.lines,
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read an output file"),
            }
        }
        let now = Instant::now();
        for file in more {
            mark_pending(&mut self.pending, (index, id.clone()), Some(file), now);
        }
    }
}

impl WatchLoop {
    /// What a known session was read as before (`None` for a session not known): its summary
    /// held while it is watched, taken; else the folder index's, when the watcher has a store.
    fn read_before(&mut self, index: usize, id: &SessionId) -> Option<Option<SessionSummary>> {
        let workspace = &mut self.workspaces[index];
        let known = workspace.sessions.get_mut(id)?;
        if let Some(held) = known.summary.take() {
            return Some(Some(*held));
        }
        let indexed = self.options.store.as_deref().and_then(|store| {
            crate::store::index::indexed_summary(store, &workspace.workspace, id)
                .inspect_err(|error| tracing::warn!(%error, "cannot read a session's indexed summary"))
                .ok()
                .flatten()
        });
        Some(indexed)
    }
}

/// The session's followed files, each followed from its end (what they have is not news).
pub(super) fn tails_from_end(session_dir: &Path) -> HashMap<PathBuf, FileTail> {
    let mut tails = HashMap::new();
    for file in output_files(session_dir) {
        match FileTail::from_end(&file) {
            Ok(tail) => {
                tails.insert(file, tail);
            }
            Err(e) => tracing::warn!(error = %e, "cannot follow an output file"),
        }
    }
    tails
}
