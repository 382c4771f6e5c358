//! The window's remote workspace ([`RemoteWorkspace`]): a workspace on another machine opened
//! over ssh as `zstudio --remote` opens one (one ControlMaster, the same server build put there
//! when missing, `zstudio serve --stdio --workspace PATH` started through it), held by the app
//! service as an [`Elsewhere`]. The window's commands that are server methods
//! ([`IPC_METHODS`]) are answered by the server; its `change` and `run_event` notifications go to
//! the sinks the window gave ([`RemoteSinks`]), the changes to the same sink as the local
//! watcher's. When the link drops, the workspace is marked lost once (its [`RemoteStatus`]),
//! the window is told, and every command fails with why.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{json, Value};

use crate::app::elsewhere::{Elsewhere, RemoteStatus};
use crate::remote::client::{ClientOptions, RemoteClient};
use crate::remote::methods::IPC_METHODS;
use crate::remote::protocol::{Notification, CHANGES_SUBSCRIBE};
use crate::remote::ssh::{ConnectOptions, Connection, RemoteTarget, SshError};
use crate::runs::runner::RunEvent;
use crate::sessions::change::ChangeSink;
use crate::share::Exported;
use crate::vocabulary::error::Error;

/// How long closing waits for the server to exit after its input closed.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Where a remote workspace's news goes.
#[derive(Clone)]
pub struct RemoteSinks {
    /// Its sessions' changes (the server's `change` notifications), as the local watcher's.
    pub changes: ChangeSink,
    /// The events of the runs its server started (`run_event`).
    pub run_events: Arc<dyn Fn(RunEvent) + Send + Sync>,
    /// The link was lost: the status says why.
    pub link: Arc<dyn Fn(RemoteStatus) + Send + Sync>,
}

/// A workspace on another machine, reached through its studio server.
pub struct RemoteWorkspace {
    target: RemoteTarget,
    /// The workspace folder there, absolute.
    path: String,
    client: RemoteClient,
    connection: Mutex<Option<Connection>>,
    lost: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An ssh error as the app service's: it names the host and what failed.
fn link_error(target: &RemoteTarget, error: SshError) -> Error {
    let host = target.label();
    let said = error.to_string();
    let what = said.strip_prefix(&format!("{host}: ")).unwrap_or(&said).to_owned();
    Error::RemoteLink { host, what }
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
    /// Connects to `target` (`options`: the ssh config, askpass), puts `server_binary` (this
    /// machine's `zstudio`) there when that build is missing, starts the server on the workspace
    /// and subscribes to its changes, which go with its run events to `sinks` from a thread of
    /// its own. Errors name the host and what failed.
    pub fn open(
        target: &RemoteTarget,
        options: &ConnectOptions,
        server_binary: &Path,
        sinks: RemoteSinks,
    ) -> Result<Arc<RemoteWorkspace>, Error> {
        let connection = Connection::open(target, options).map_err(|e| link_error(target, e))?;
        let server = connection
            .ensure_server(server_binary)
            .map_err(|e| link_error(target, e))?;
        let command = connection
            .command([
                server.program.as_str(),
                "serve",
                "--stdio",
                "--workspace",
                connection.workspace_path(),
            ])
            .map_err(|e| link_error(target, e))?;
        let client = RemoteClient::connect(connection.host(), command, ClientOptions::default())?;
        let notifications = client.notifications();
        client.call::<()>(CHANGES_SUBSCRIBE, &json!({}))?;
        let workspace = Arc::new(RemoteWorkspace {
            target: target.clone(),
            path: connection.workspace_path().to_owned(),
            client,
            connection: Mutex::new(Some(connection)),
            lost: Mutex::new(None),
        });
        if let Some(notifications) = notifications {
            let weak = Arc::downgrade(&workspace);
            std::thread::Builder::new()
                .name("remote-notices".into())
                .spawn(move || pass_on(notifications, &sinks, &weak))
                .map_err(|e| Error::io_spawn("the remote workspace's notice thread", e))?;
        }
        Ok(workspace)
    }

    /// Marks the link lost, once: `None` when it already was.
    fn mark_lost(&self) -> Option<RemoteStatus> {
        let why = self
            .client
            .closed()
            .unwrap_or_else(|| "the studio server closed the link".to_owned());
        let mut lost = lock(&self.lost);
        if lost.is_some() {
            return None;
        }
        *lost = Some(why);
        drop(lost);
        Some(self.status())
    }
}

/// Hands each notification to its sink until the link closes; then marks the workspace lost and
/// says so (unless it was closed on purpose first).
fn pass_on(
    notifications: std::sync::mpsc::Receiver<Notification>,
    sinks: &RemoteSinks,
    workspace: &Weak<RemoteWorkspace>,
) {
    for notification in notifications {
        if let Some(change) = notification.change() {
            (sinks.changes)(change);
        } else if let Some(event) = notification.run_event() {
            (sinks.run_events)(event);
        }
    }
    if let Some(status) = workspace.upgrade().and_then(|workspace| workspace.mark_lost()) {
        tracing::warn!(host = %status.host, lost = ?status.lost, "the remote workspace's link was lost");
        (sinks.link)(status);
    }
}

impl Elsewhere for RemoteWorkspace {
    fn forward(&self, method: &str, params: Value) -> Option<Result<Value, Error>> {
        if !IPC_METHODS.iter().any(|(name, _)| *name == method) {
            return None;
        }
        if let Some(error) = self.status().lost_error() {
            return Some(Err(error));
        }
        Some(self.client.call(method, &params))
    }

    fn export_session(&self, session_id: &str, include_config: bool, out: &Path) -> Result<Exported, Error> {
        if let Some(error) = self.status().lost_error() {
            return Err(error);
        }
        self.client.export_session(session_id, include_config, out)
    }

    fn status(&self) -> RemoteStatus {
        RemoteStatus {
            host: self.target.label(),
            path: self.path.clone(),
            target: self.target.to_string(),
            lost: lock(&self.lost).clone(),
        }
    }

    fn close(&self) {
        // Closed on purpose: not news for the window.
        lock(&self.lost).get_or_insert_with(|| "the remote workspace was closed".to_owned());
        let _ = self.client.close(CLOSE_WAIT);
        if let Some(connection) = lock(&self.connection).take() {
            let _ = connection.close();
        }
    }
}
