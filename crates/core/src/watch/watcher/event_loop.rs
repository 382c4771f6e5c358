//! The watching thread's loop: it waits for the next event or deadline, takes every event
//! waiting, then does what is due (reconciling, polling, the store's runs, quiet sessions, the
//! sweep, reads).

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Instant;

use notify::event::{AccessKind, AccessMode};
use notify::EventKind;

use super::state::{agents_file_state, mark_pending, Message, SessionKey, WatchLoop};
use crate::sessions::session::{Timestamp, RUNNING_QUIET_WINDOW};
use crate::vocabulary::id::SessionId;

impl WatchLoop {
    pub(super) fn run(&mut self, receiver: Receiver<Message>, watching: mpsc::SyncSender<()>) {
        // The initial scan reads every session before anything is watched: reading opens files,
        // and inotify reports every open; thousands of sessions would overflow its queue. What
        // changed between a read and the watch is found after by metadata alone.
        for index in 0..self.workspaces.len() {
            self.rescan(index, true);
            self.mark_recent_watched(index);
        }
        self.next_sweep = Instant::now() + self.sweep_step().0;
        for index in 0..self.workspaces.len() {
            self.point_watch(index);
            // Only the sessions live or changed recently get watches of their own (`sweep`).
            let watched: Vec<SessionId> = self.watched_ids(index).into_iter().cloned().collect();
            for id in watched {
                self.watch_session(index, &id);
            }
            self.rescan(index, false);
            self.mark_stale_sessions(index, false);
            self.point_agents_watch(index);
            // What changed before the watch was in place is reported (what is there is not news).
            let workspace = &mut self.workspaces[index];
            if agents_file_state(&workspace.agents.file) != workspace.agents.state {
                workspace.agents.due_since = Some(Instant::now());
            }
        }
        let _ = watching.send(());
        loop {
            let message = match self.next_deadline() {
                None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(deadline) => receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            };
            match message {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(Message::Filesystem(event)) => self.on_event(event),
                Ok(Message::AgentsFile(event)) => self.on_agents_event(event),
                Ok(Message::StoreFile(event)) => self.on_store_event(event),
                Ok(Message::CountHeld(reply)) => self.count_held(&reply),
                Ok(Message::CountLooks(reply)) => drop(reply.send(self.sweep_looks)),
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Take what else is waiting before reading anything.
            for _ in 0..100_000 {
                match receiver.try_recv() {
                    Ok(Message::Filesystem(event)) => self.on_event(event),
                    Ok(Message::AgentsFile(event)) => self.on_agents_event(event),
                    Ok(Message::StoreFile(event)) => self.on_store_event(event),
                    Ok(Message::CountHeld(reply)) => self.count_held(&reply),
                    Ok(Message::CountLooks(reply)) => drop(reply.send(self.sweep_looks)),
                    Ok(Message::Stop) | Err(mpsc::TryRecvError::Disconnected) => return,
                    Err(mpsc::TryRecvError::Empty) => break,
                }
            }
            for index in 0..self.workspaces.len() {
                if std::mem::take(&mut self.workspaces[index].reconcile_due) {
                    self.reconcile(index, false);
                }
            }
            if self.any_polling() && Instant::now() >= self.next_poll {
                self.poll();
                self.next_poll = Instant::now() + self.options.poll_interval;
            }
            self.check_due_agents_files();
            self.check_recorded_runs();
            if self.any_running() && Instant::now() >= self.next_quiet_check {
                self.check_quiet_sessions();
                self.next_quiet_check = Instant::now() + self.options.quiet_check_interval;
            }
            self.check_sweep();
            self.read_due_sessions();
        }
    }

    /// Answers [`Message::CountHeld`].
    fn count_held(&self, reply: &mpsc::Sender<(usize, usize)>) {
        let known = self.workspaces.iter().flat_map(|w| w.sessions.values());
        let (sessions, summaries) = known.fold((0, 0), |(n, held), k| (n + 1, held + usize::from(k.summary.is_some())));
        let _ = reply.send((sessions, summaries));
    }

    pub(super) fn any_polling(&self) -> bool {
        self.notify.is_none()
            || self.agents_notify.is_none()
            || self.workspaces.iter().any(|w| w.polling || w.agents.polled)
    }

    /// When the loop must wake without an event: a pending session's turn, the next poll, quiet
    /// check, agents file's or store's look, or step of the sweep.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let settle = self.options.window / 4;
        let pending = self.pending.iter().map(|(key, pending)| {
            let after_last = self.last_read.get(key).map(|t| *t + self.options.window);
            (pending.since + settle).max(after_last.unwrap_or(pending.since))
        });
        let poll = self.any_polling().then_some(self.next_poll);
        let quiet = self.any_running().then_some(self.next_quiet_check);
        let agents = self
            .workspaces
            .iter()
            .filter_map(|w| w.agents.due_since.map(|since| since + self.options.window));
        let runs = self.recorded_runs_due_at();
        let sweep = self.sweep_due_at();
        pending
            .chain(poll)
            .chain(quiet)
            .chain(agents)
            .chain(runs)
            .chain(sweep)
            .min()
    }

    /// When the store's runs are to be looked at: a window after the last look, once a store file
    /// changed (or every poll interval when its folder cannot be watched).
    pub(super) fn recorded_runs_due_at(&self) -> Option<Instant> {
        let runs = self.recorded_runs.as_ref()?;
        let after_last = runs.last_look.map(|t| t + self.options.window);
        if runs.polled() {
            return Some(
                runs.last_look
                    .map_or_else(Instant::now, |t| t + self.options.poll_interval),
            );
        }
        let since = runs.due_since?;
        Some((since + self.options.window / 4).max(after_last.unwrap_or(since)))
    }

    pub(super) fn on_store_event(&mut self, event: notify::Result<notify::Event>) {
        if let Some(runs) = self.recorded_runs.as_mut() {
            runs.on_event(event, Instant::now());
        }
    }

    /// Looks at the store's runs when due: each session whose run started or ended there is read
    /// again and reported, whether or not its folder changed.
    pub(super) fn check_recorded_runs(&mut self) {
        if self.recorded_runs_due_at().is_none_or(|at| Instant::now() < at) {
            return;
        }
        let Some(runs) = self.recorded_runs.as_mut() else {
            return;
        };
        let now = Instant::now();
        for (root, id) in runs.look() {
            let Some(index) = self.workspaces.iter().position(|w| w.workspace.root() == root) else {
                continue;
            };
            if self.workspaces[index].sessions.contains_key(&id) {
                self.store_changed.insert((index, id.clone()));
                mark_pending(&mut self.pending, (index, id), None, now);
            }
        }
    }

    pub(super) fn any_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// A `running` session quiet for [`RUNNING_QUIET_WINDOW`] is no longer taken as running, nor
    /// one whose engine's process is gone (`session::read_summary`): each is read again so that
    /// its new status is reported, though no file changed.
    pub(super) fn check_quiet_sessions(&mut self) {
        let clock_now = Timestamp::from_system_time((self.options.clock)());
        let quiet = RUNNING_QUIET_WINDOW.as_millis() as u64;
        let now = Instant::now();
        let went_quiet: Vec<SessionKey> = self
            .running
            .iter()
            .filter(|(index, id)| {
                // An engine's id says when its process started: whether it is still there is
                // read with the session.
                id.unix_ms().is_some()
                    || self.workspaces[*index]
                        .sessions
                        .get(id)
                        .is_some_and(|known| known.updated_at.0 + quiet <= clock_now.0)
            })
            .cloned()
            .collect();
        for key in went_quiet {
            mark_pending(&mut self.pending, key, None, now);
        }
    }

    pub(super) fn on_event(&mut self, event: notify::Result<notify::Event>) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                // Typically the watch limit reached while adding watches for new folders: which
                // folder is not said, so every workspace is polled from now on.
                for index in 0..self.workspaces.len() {
                    self.fall_back_to_polling(index, format!("a filesystem watch failed: {e}"));
                }
                return;
            }
        };
        if event.need_rescan() {
            tracing::warn!("filesystem events were lost (queue overflow); reading every session again");
            self.rescan_everything();
            return;
        }
        // Our own reads open files: not a change (a close after writing is).
        if matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write)) {
            return;
        }
        let now = Instant::now();
        for path in &event.paths {
            for index in 0..self.workspaces.len() {
                let workspace = &mut self.workspaces[index];
                if let Ok(relative) = path.strip_prefix(&workspace.sessions_dir) {
                    let mut parts = relative.components();
                    let Some(first) = parts.next() else {
                        workspace.reconcile_due = true;
                        continue;
                    };
                    let Some(id) = first.as_os_str().to_str().and_then(|n| SessionId::parse(n).ok()) else {
                        continue;
                    };
                    let file = parts.next().is_some().then(|| path.clone());
                    mark_pending(&mut self.pending, (index, id), file, now);
                } else if workspace.sessions_dir.starts_with(path) {
                    workspace.reconcile_due = true;
                }
            }
        }
    }

    /// After lost events: every watched session whose files say it may have changed is read
    /// again (the swept ones are looked at by the sweep).
    pub(super) fn rescan_everything(&mut self) {
        for index in 0..self.workspaces.len() {
            self.workspaces[index].reconcile_due = true;
            self.mark_stale_sessions(index, false);
        }
    }

    /// The fallback: looks at every polled workspace's sessions for what inotify would have said.
    pub(super) fn poll(&mut self) {
        let all = self.notify.is_none();
        let all_agents = self.agents_notify.is_none();
        let now = Instant::now();
        for workspace in &mut self.workspaces {
            if (all_agents || workspace.agents.polled) && workspace.agents.due_since.is_none() {
                workspace.agents.due_since = Some(now.checked_sub(self.options.window).unwrap_or(now));
            }
        }
        for index in 0..self.workspaces.len() {
            if !(all || self.workspaces[index].polling) {
                continue;
            }
            self.reconcile(index, false);
            self.mark_stale_sessions(index, true);
        }
    }
}
