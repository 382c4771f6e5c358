//! The window's remote workspace ([`RemoteWorkspace`]): a workspace on another machine opened
//! over ssh through a [`Link`] (the one connect sequence `zstudio --remote` uses too: one
//! ControlMaster, the same server build put there when missing, `zstudio serve --stdio
//! --workspace PATH` started through it, connected again when the link drops), held by the app
//! service as an [`Elsewhere`]. The window's commands that are server methods ([`IPC_METHODS`])
//! are answered by the server; its `change` and `run_event` notifications go to the sinks the
//! window gave ([`RemoteSinks`]), the changes to the same sink as the local watcher's.
//!
//! When the link drops, the workspace's [`RemoteStatus`] says it is reconnecting (its `link`),
//! the window is told, and commands fail with `remote_link` until it is back; then the window is
//! told to read its listing again ([`RemoteSinks::reconnected`]). When the link is given up
//! ([`LinkOptions::give_up_after`]), the workspace is marked lost once and every command then
//! fails with why.
//!
//! Resuming after a reconnect: the window reads each followed output on from the lines it holds
//! (its pages by line number, `run_output`; the UI's `output.ts` owns that). The new server did
//! not start the runs under way (they went on through their keepers): it adopts them, at its
//! start or at the `runs_reconcile` of [`run_ends`], and then tells of their lines, nodes and end
//! as `run_event`s again. The end of every run the old one started and did not see end is also
//! read from its record ([`run_ends`], every [`RECORD_EVERY`] until it ended: a run that ended
//! while the link was down is told of by no server) and told to the window as the run's
//! `run_finished`, once: the first of the notification and the record.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::app::elsewhere::{Elsewhere, RemoteStatus};
use crate::remote::follow::{run_ends, RECORD_EVERY};
use crate::remote::import::{import_file, RemoteImport};
use crate::remote::link::{Link, LinkEvent, LinkOptions, LinkState};
use crate::remote::methods::{IPC_METHODS, WINDOW_PROTOCOL_METHODS};
use crate::remote::ssh::{RemoteTarget, SshError};
use crate::runs::runner::RunEvent;
use crate::sessions::change::ChangeSink;
use crate::share::{Exported, ImportedSession};
use crate::vocabulary::error::Error;

/// Where a remote workspace's news goes.
#[derive(Clone)]
pub struct RemoteSinks {
    /// Its sessions' changes (the server's `change` notifications), as the local watcher's.
    pub changes: ChangeSink,
    /// The events of the runs its server started (`run_event`).
    pub run_events: Arc<dyn Fn(RunEvent) + Send + Sync>,
    /// The link's state changed (reconnecting, back, lost): the status says where it is.
    pub link: Arc<dyn Fn(RemoteStatus) + Send + Sync>,
    /// The link is back (a new server, subscribed to changes again): what changed meanwhile is
    /// to be read again (the listing).
    pub reconnected: Arc<dyn Fn() + Send + Sync>,
}

/// A workspace on another machine, reached through its studio server.
pub struct RemoteWorkspace {
    target: RemoteTarget,
    /// The workspace folder there, absolute.
    path: String,
    /// `None` once closed; shared so that closing does not wait for a call under way.
    link: Mutex<Option<Arc<Link>>>,
    lost: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `HOST:PATH` or `ssh://HOST/PATH` read as a remote workspace; a mistake names the text given.
pub fn parse_target(text: &str) -> Result<RemoteTarget, Error> {
    RemoteTarget::parse(text).map_err(|error| match error {
        SshError::BadTarget { input, reason } => Error::RemoteLink {
            host: input,
            what: reason,
        },
        other => Error::RemoteLink {
            host: text.to_owned(),
            what: other.to_string(),
        },
    })
}

impl RemoteWorkspace {
    /// Connects to `target` through a [`Link`] (`options`: ssh's, the server build put there
    /// when missing, how long reconnecting goes on), subscribes to its changes, which go with its
    /// run events and its link's states to `sinks` from a thread of its own. Errors name the
    /// host and what failed.
    pub fn open(
        target: &RemoteTarget,
        options: LinkOptions,
        sinks: RemoteSinks,
    ) -> Result<Arc<RemoteWorkspace>, Error> {
        let link = Link::open(target, options)?;
        let events = link.events();
        link.subscribe_changes()?;
        let workspace = Arc::new(RemoteWorkspace {
            target: target.clone(),
            path: link.workspace_path().to_owned(),
            link: Mutex::new(Some(Arc::new(link))),
            lost: Mutex::new(None),
        });
        if let Some(events) = events {
            let weak = Arc::downgrade(&workspace);
            std::thread::Builder::new()
                .name("remote-notices".into())
                .spawn(move || pass_on(events, &sinks, &weak))
                .map_err(|e| Error::io_spawn("the remote workspace's notice thread", e))?;
        }
        Ok(workspace)
    }

    /// Marks the link lost for `why`, once: `None` when it already was (or was closed).
    fn mark_lost(&self, why: String) -> Option<RemoteStatus> {
        let mut lost = lock(&self.lost);
        if lost.is_some() {
            return None;
        }
        *lost = Some(why);
        drop(lost);
        Some(self.status())
    }

    /// The link, unless the workspace is lost or closed (then the error says why).
    fn link(&self) -> Result<Arc<Link>, Error> {
        if let Some(error) = self.status().lost_error() {
            return Err(error);
        }
        lock(&self.link).clone().ok_or_else(|| Error::RemoteLink {
            host: self.target.label(),
            what: "the remote workspace was closed".to_owned(),
        })
    }
}

/// Hands each of the link's events on until it ends: notifications to their sinks, its states to
/// the window (a given-up link marks the workspace lost, once), its return as a reload; and the
/// ends of the runs no server tells of any more ([`Unended`]). When the link ends otherwise, marks
/// the workspace lost too (unless it was closed on purpose first).
fn pass_on(events: Receiver<LinkEvent>, sinks: &RemoteSinks, workspace: &Weak<RemoteWorkspace>) {
    let mut unended = Unended::default();
    loop {
        let event = match unended.wait() {
            None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(wait) => events.recv_timeout(wait),
        };
        match event {
            Ok(event) => {
                if !hand_on(event, sinks, workspace, &mut unended) {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        unended.read_ends(sinks, workspace);
    }
    lose(sinks, workspace, "the studio server closed the link".to_owned());
}

/// One event of the link to the window; `false` once the workspace is gone.
fn hand_on(event: LinkEvent, sinks: &RemoteSinks, workspace: &Weak<RemoteWorkspace>, unended: &mut Unended) -> bool {
    match event {
        LinkEvent::Notification(notification) => {
            if let Some(change) = notification.change() {
                (sinks.changes)(change);
            } else if let Some(event) = notification.run_event() {
                if unended.told(&event) {
                    (sinks.run_events)(event);
                }
            }
        }
        LinkEvent::State(LinkState::Failed { reason }) => lose(sinks, workspace, reason),
        LinkEvent::State(state) => {
            let Some(workspace) = workspace.upgrade() else {
                return false;
            };
            let status = workspace.status();
            if status.lost.is_none() {
                tracing::info!(host = %status.host, ?state, "the remote workspace's link changed");
                (sinks.link)(status);
            }
        }
        LinkEvent::Reconnected => {
            unended.reconnected();
            (sinks.reconnected)();
        }
    }
    true
}

/// The runs the workspace's server told of starting and not of ending: their sessions by run id,
/// and whether the server connected now does not follow them (connected again since).
/// Also the runs whose end was read from their record, and when: the server that adopted one may
/// tell it a moment later, which is not said twice; one whose end no server tells within
/// [`ENDED_FROM_RECORD_KEPT`] is forgotten.
#[derive(Default)]
struct Unended {
    runs: HashMap<String, (String, bool)>,
    read_at: Option<Instant>,
    ended_from_record: HashMap<String, Instant>,
}

/// How long the end of a run read from its record waits for a server's `run_finished` of the
/// same run (said once: the first of the two).
const ENDED_FROM_RECORD_KEPT: Duration = Duration::from_secs(300);

impl Unended {
    /// Takes note of an event the server told of; `false` when it is not to be said (the end of
    /// a run said already from its record).
    fn told(&mut self, event: &RunEvent) -> bool {
        match event {
            RunEvent::RunStarted { run_id, session_id, .. } => {
                self.runs.insert(run_id.clone(), (session_id.clone(), false));
            }
            RunEvent::RunFinished { run_id, .. } => {
                self.runs.remove(run_id);
                self.ended_from_record
                    .retain(|_, read| read.elapsed() < ENDED_FROM_RECORD_KEPT);
                return self.ended_from_record.remove(run_id).is_none();
            }
            _ => {}
        }
        true
    }

    /// A new server: none of the runs is followed by it.
    fn reconnected(&mut self) {
        for (_, unfollowed) in self.runs.values_mut() {
            *unfollowed = true;
        }
        self.read_at = None;
    }

    /// How long the next event is waited for: `None` (for ever) unless an end is to be read.
    fn wait(&self) -> Option<Duration> {
        if !self.runs.values().any(|(_, unfollowed)| *unfollowed) {
            return None;
        }
        Some(
            self.read_at
                .map_or(Duration::ZERO, |at| RECORD_EVERY.saturating_sub(at.elapsed())),
        )
    }

    /// Reads the records of the runs not followed, when due: each that ended is told as its
    /// `run_finished` and forgotten. A dropped link reads them again once back.
    fn read_ends(&mut self, sinks: &RemoteSinks, workspace: &Weak<RemoteWorkspace>) {
        if self.wait().is_none_or(|wait| !wait.is_zero()) {
            return;
        }
        self.read_at = Some(Instant::now());
        let Some(link) = workspace.upgrade().and_then(|workspace| workspace.link().ok()) else {
            return;
        };
        let unfollowed: Vec<(String, String)> = self
            .runs
            .iter()
            .filter(|(_, (_, unfollowed))| *unfollowed)
            .map(|(run_id, (session_id, _))| (run_id.clone(), session_id.clone()))
            .collect();
        let mut ends = match run_ends(
            &link,
            unfollowed.iter().map(|(run, session)| (run.as_str(), session.as_str())),
        ) {
            Ok(ends) => ends,
            Err(error) if link.dropped(&error) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot read the ends of remote runs: not followed any more");
                HashMap::new()
            }
        };
        for (run_id, _) in unfollowed {
            match ends.remove(&run_id) {
                Some(None) => {}
                Some(Some(end)) => {
                    tracing::info!(host = %link.host(), %run_id, "a run ended while no server followed it");
                    self.runs.remove(&run_id);
                    self.ended_from_record.insert(run_id, Instant::now());
                    (sinks.run_events)(end);
                }
                None => {
                    tracing::warn!(%run_id, "no record of a remote run's end: not followed any more");
                    self.runs.remove(&run_id);
                }
            }
        }
    }
}

fn lose(sinks: &RemoteSinks, workspace: &Weak<RemoteWorkspace>, why: String) {
    if let Some(status) = workspace.upgrade().and_then(|workspace| workspace.mark_lost(why)) {
        tracing::warn!(host = %status.host, lost = ?status.lost, "the remote workspace's link was lost");
        (sinks.link)(status);
    }
}

impl Elsewhere for RemoteWorkspace {
    fn forward(&self, method: &str, params: Value) -> Option<Result<Value, Error>> {
        if !IPC_METHODS.iter().any(|(name, _)| *name == method) && !WINDOW_PROTOCOL_METHODS.contains(&method) {
            return None;
        }
        Some(self.link().and_then(|link| link.call(method, &params)))
    }

    fn export_session(&self, session_id: &str, include_config: bool, out: &Path) -> Result<Exported, Error> {
        self.link()?
            .with_client(|client| client.export_session(session_id, include_config, out))
    }

    fn import_file(&self, file: &Path, as_new: bool) -> Result<ImportedSession, Error> {
        let request = RemoteImport {
            as_new,
            ..RemoteImport::default()
        };
        self.link()?.with_client(|client| import_file(client, file, &request))
    }

    fn status(&self) -> RemoteStatus {
        let lost = lock(&self.lost).clone();
        let link = match (&lost, lock(&self.link).as_ref()) {
            (None, Some(link)) => link.state(),
            (Some(reason), _) => LinkState::Failed { reason: reason.clone() },
            (None, None) => LinkState::Failed {
                reason: "the remote workspace was closed".to_owned(),
            },
        };
        RemoteStatus {
            host: self.target.label(),
            path: self.path.clone(),
            target: self.target.to_string(),
            link,
            lost,
        }
    }

    fn close(&self) {
        // Closed on purpose: not news for the window.
        lock(&self.lost).get_or_insert_with(|| "the remote workspace was closed".to_owned());
        // The server and the ssh master end here, or when a call under way returns.
        drop(lock(&self.link).take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    fn finished(run_id: &str) -> RunEvent {
        RunEvent::RunFinished {
            run_id: run_id.to_owned(),
            session_id: "s".to_owned(),
            status: Status::Success,
            exit_code: Some(0),
            elapsed_ms: 1,
            stopped_by: None,
            error: None,
        }
    }

    #[test]
    fn an_end_read_from_the_record_is_said_once_and_then_forgotten() {
        let mut unended = Unended::default();
        unended.ended_from_record.insert("told".to_owned(), Instant::now());
        let long_ago = Instant::now()
            .checked_sub(ENDED_FROM_RECORD_KEPT + Duration::from_secs(1))
            .expect("the clock is past the kept time");
        unended.ended_from_record.insert("never-told".to_owned(), long_ago);
        // The adopting server tells the end read from the record already: not said again.
        assert!(!unended.told(&finished("told")));
        // Any other end is said, and what no server told in time is forgotten.
        assert!(unended.told(&finished("other")));
        assert!(unended.ended_from_record.is_empty(), "{:?}", unended.ended_from_record);
        assert!(unended.told(&finished("told")), "said once, then a new end is said");
    }
}
