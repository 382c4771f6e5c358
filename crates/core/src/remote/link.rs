//! A remote workspace that stays reachable: [`Link`] owns the ssh connection
//! ([`crate::remote::ssh::Connection`]) and the studio server's client ([`RemoteClient`]),
//! notices when the link dies (the server's stream closes: at once when the socket closes, and
//! within the keep-alives' window when it stalls), connects again with backoff, subscribes to
//! changes again when it was subscribed, and says so to its events' reader
//! ([`LinkEvent::Reconnected`]) so that a follower reads on from the offset it holds
//! (a run's follower: the `follow` module beside this one). Its [`LinkState`] is for a window
//! or a terminal to show.
//!
//! A call is never retried on a new connection (a run started twice would be two runs): while
//! the link is down, calls fail with `remote_link`, and the caller decides.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::remote::client::{ClientOptions, RemoteClient};
use crate::remote::protocol::{Notification, CHANGES_SUBSCRIBE};
use crate::remote::ssh::{ConnectOptions, Connection, RemoteTarget};
use crate::vocabulary::error::{Error, ErrorCode};

pub use crate::app::elsewhere::LinkState;

/// How a [`Link`] connects and reconnects.
#[derive(Debug, Clone)]
pub struct LinkOptions {
    /// How ssh connects (its keep-alives say how soon a stalled link is noticed).
    pub connect: ConnectOptions,
    /// How the client waits for its server.
    pub client: ClientOptions,
    /// The local `zstudio` whose build is put on the host when missing (the running one).
    pub server_binary: PathBuf,
    /// The first wait between two attempts to connect again; doubled each time.
    pub first_retry: Duration,
    /// The longest wait between two attempts.
    pub max_retry: Duration,
    /// How long attempts go on before the link is [`LinkState::Failed`] (zero: none is made);
    /// `None`: for ever.
    pub give_up_after: Option<Duration>,
    /// How often the ssh master is checked while no frame comes.
    pub check_every: Duration,
    /// Serve through the workspace's kept server, kept that long after each command
    /// (`remote::kept_server`: reached through the kept master when it waits there); `None`: a
    /// server of the link's own, ended with it (`watch` and `run`, which follow their runs' events).
    pub kept_server: Option<Duration>,
}

impl LinkOptions {
    /// The defaults, with `server_binary` put on the host when missing.
    pub fn new(server_binary: PathBuf) -> LinkOptions {
        LinkOptions {
            connect: ConnectOptions::default(),
            client: ClientOptions::default(),
            server_binary,
            first_retry: Duration::from_millis(500),
            max_retry: Duration::from_secs(10),
            give_up_after: None,
            check_every: Duration::from_secs(1),
            kept_server: None,
        }
    }
}

/// What a link's reader is told, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkEvent {
    /// A notification of the server ([`crate::remote::protocol::CHANGE`], `RUN_EVENT`).
    Notification(Notification),
    /// The link's state changed.
    State(LinkState),
    /// Connected again (to a new server, subscribed again when it was): what was missed while
    /// the link was down is to be read again from the offsets held.
    Reconnected,
}

/// A server reached through its ssh connection; both end when it is dropped (the server first).
struct Live {
    client: RemoteClient,
    connection: Option<Connection>,
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.client.close(Duration::from_secs(2));
        if let Some(connection) = self.connection.take() {
            let _ = connection.close();
        }
    }
}

/// Connects to `target`'s host and starts the server on the target's workspace (one command
/// through the master: the host probed, the server found and started; put there first when
/// missing): one server and its connection.
fn connect(target: &RemoteTarget, options: &LinkOptions) -> Result<Live, Error> {
    let mut connection = Connection::attach(target, &options.connect)?;
    if options.kept_server.is_some() {
        let build = crate::remote::ssh::BuildInfo::of_binary(&options.server_binary)?;
        if let Some(client) = connection.reach_kept_server(&build.build, &options.client) {
            return Ok(Live {
                client,
                connection: Some(connection),
            });
        }
    }
    let client = connection.start_server(&options.server_binary, &options.client, options.kept_server)?;
    Ok(Live {
        client,
        connection: Some(connection),
    })
}

/// What the link's thread and its callers share.
struct Shared {
    host: String,
    /// The workspace folder on the host, absolute (as the first connection resolved it).
    workspace_path: String,
    target: RemoteTarget,
    options: LinkOptions,
    live: Mutex<Option<Arc<Live>>>,
    state: Mutex<LinkState>,
    subscribed: Mutex<bool>,
    /// Whether the events were taken ([`Link::events`]): before, the server's notifications are
    /// dropped, never queued for no one (a hostile host's flood grew a command that never
    /// reads them by 1.25 GB).
    events_taken: std::sync::atomic::AtomicBool,
}

/// How many events wait unread before newer notifications are dropped.
const EVENTS_BUFFER: usize = 4096;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A remote workspace's server, connected again whenever its link drops (see the module).
pub struct Link {
    shared: Arc<Shared>,
    events: Mutex<Option<Receiver<LinkEvent>>>,
    /// Dropped to end the link's thread (its waits end at once).
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Link {
    /// Connects to `target` (an error when the first connection fails: nothing is retried
    /// then) and starts watching the link.
    pub fn open(target: &RemoteTarget, options: LinkOptions) -> Result<Link, Error> {
        let live = Arc::new(connect(target, &options)?);
        let notifications = live.client.notifications();
        let shared = Arc::new(Shared {
            host: live.client.host().to_owned(),
            workspace_path: live
                .connection
                .as_ref()
                .map_or_else(String::new, |connection| connection.workspace_path().to_owned()),
            target: target.clone(),
            options,
            live: Mutex::new(Some(live)),
            state: Mutex::new(LinkState::Connected),
            subscribed: Mutex::new(false),
            events_taken: std::sync::atomic::AtomicBool::new(false),
        });
        let (events, received) = mpsc::sync_channel(EVENTS_BUFFER);
        let (stop, stopped) = mpsc::channel();
        let keeper = Keeper {
            shared: shared.clone(),
            events,
            stopped,
        };
        let thread = std::thread::Builder::new()
            .name("remote-link".into())
            .spawn(move || keeper.run(notifications))
            .map_err(|e| Error::io_spawn("the remote link's thread", e))?;
        Ok(Link {
            shared,
            events: Mutex::new(Some(received)),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The host, as errors name it.
    pub fn host(&self) -> &str {
        &self.shared.host
    }

    /// The workspace folder on the host, absolute.
    pub fn workspace_path(&self) -> &str {
        &self.shared.workspace_path
    }

    /// Where the link is now.
    pub fn state(&self) -> LinkState {
        lock(&self.shared.state).clone()
    }

    /// The link's events, once (`None` when taken before); the channel closes with the link.
    pub fn events(&self) -> Option<Receiver<LinkEvent>> {
        let taken = lock(&self.events).take();
        if taken.is_some() {
            self.shared
                .events_taken
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        taken
    }

    /// Calls `method` of the server connected now; while the link is down, a `remote_link`
    /// error saying so (never queued or retried).
    pub fn call<T: DeserializeOwned + Send + 'static>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, Error> {
        self.client()?.client.call(method, params)
    }

    /// The client of the server connected now (for what [`Link::call`] does not cover, as an
    /// export); a `remote_link` error while the link is down.
    fn client(&self) -> Result<Arc<Live>, Error> {
        lock(&self.shared.live).clone().ok_or_else(|| Error::RemoteLink {
            host: self.shared.host.clone(),
            what: match self.state() {
                LinkState::Failed { reason } => format!("the link failed: {reason}"),
                _ => "the link is down, connecting again".to_owned(),
            },
        })
    }

    /// Runs `with` on the client of the server connected now.
    pub fn with_client<T>(&self, with: impl FnOnce(&RemoteClient) -> Result<T, Error>) -> Result<T, Error> {
        with(&self.client()?.client)
    }

    /// Whether `error`, of a call through this link, is the link dropping while it is not given
    /// up: what was asked is to be asked again once connected (a reader reading from an offset
    /// it holds), not reported.
    pub fn dropped(&self, error: &Error) -> bool {
        matches!(error.code(), ErrorCode::RemoteLink | ErrorCode::SshLinkLost)
            && !matches!(self.state(), LinkState::Failed { .. })
    }

    /// Subscribes to the workspace's changes, now and on every reconnection.
    pub fn subscribe_changes(&self) -> Result<(), Error> {
        *lock(&self.shared.subscribed) = true;
        self.call::<()>(CHANGES_SUBSCRIBE, &serde_json::json!({}))
    }

    /// Ends the link: its thread, its server and its ssh master.
    pub fn close(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        drop(self.stop.take());
        // The server and the master end first: the thread sees its notifications end.
        let live = lock(&self.shared.live).take();
        drop(live);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        drop(lock(&self.shared.live).take());
        *lock(&self.shared.state) = LinkState::Failed {
            reason: "the link was closed".to_owned(),
        };
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// The link's thread: hands the server's notifications on, notices the link's end, connects
/// again.
struct Keeper {
    shared: Arc<Shared>,
    events: SyncSender<LinkEvent>,
    stopped: Receiver<()>,
}

impl Keeper {
    fn run(self, mut notifications: Option<Receiver<Notification>>) {
        loop {
            let reason = self.pass_on(notifications.take());
            let Some(reason) = reason else { return };
            let Some(live) = self.reconnect(reason) else { return };
            notifications = live.client.notifications();
            *lock(&self.shared.live) = Some(live);
            self.say_state(LinkState::Connected);
            self.tell(LinkEvent::Reconnected);
        }
    }

    /// Hands notifications on until the link ends (why) or the link is closed (`None`).
    /// Tells the events' reader of a change of the link (waiting for room while there is one;
    /// dropped when no one reads the events and they are full).
    fn tell(&self, event: LinkEvent) {
        if self.shared.events_taken.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = self.events.send(event);
        } else {
            let _ = self.events.try_send(event);
        }
    }

    fn pass_on(&self, notifications: Option<Receiver<Notification>>) -> Option<String> {
        // Not held: closing the link drops the server, which ends its notifications at once.
        let live = Arc::downgrade(lock(&self.shared.live).as_ref()?);
        let Some(notifications) = notifications else {
            return Some("the server's notifications were taken".to_owned());
        };
        loop {
            match notifications.recv_timeout(self.shared.options.check_every) {
                Ok(notification) => {
                    // Dropped when no one reads the events, or when their reader is far behind.
                    if self.shared.events_taken.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = self.events.try_send(LinkEvent::Notification(notification));
                    }
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return live.upgrade().map(|live| self.why_down(&live));
                }
            }
            if self.is_stopped() {
                return None;
            }
            let current = live.upgrade()?;
            if let Some(connection) = &current.connection {
                if let Err(error) = connection.check() {
                    return Some(error.to_string());
                }
            }
        }
    }

    /// What ended a link: the master's words when it ended (it may take a moment after the
    /// server's stream closed), else the client's; each naming the host.
    fn why_down(&self, live: &Live) -> String {
        let deadline = Instant::now() + Duration::from_millis(300);
        while let Some(connection) = &live.connection {
            match connection.check() {
                Err(error) => return error.to_string(),
                Ok(()) if Instant::now() >= deadline => break,
                Ok(()) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let closed = live.client.closed();
        format!(
            "{}: {}",
            self.shared.host,
            closed.as_deref().unwrap_or("the studio server's output ended")
        )
    }

    /// Connects again, waiting longer each time; `None` when the link is closed or attempts
    /// stopped.
    fn reconnect(&self, reason: String) -> Option<Arc<Live>> {
        if self.is_stopped() {
            return None;
        }
        // The dead server and master go first (nothing of them is left running).
        drop(lock(&self.shared.live).take());
        let options = &self.shared.options;
        let (since, started) = (SystemTime::now(), Instant::now());
        let since_ms = since
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        tracing::warn!(host = %self.shared.host, %reason, "the remote link dropped: connecting again");
        let mut state = (reason, 0u32);
        self.say_state(LinkState::Reconnecting {
            since_ms,
            reason: state.0.clone(),
            attempts: 0,
        });
        let mut wait = options.first_retry;
        loop {
            match self.stopped.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return None,
            }
            if options.give_up_after.is_some_and(|limit| started.elapsed() >= limit) {
                self.say_state(LinkState::Failed {
                    reason: format!(
                        "not connected again within {} s: {}",
                        started.elapsed().as_secs(),
                        state.0
                    ),
                });
                return None;
            }
            match connect(&self.shared.target, options).and_then(|live| self.resubscribe(live)) {
                Ok(live) => {
                    tracing::info!(host = %self.shared.host, attempts = state.1 + 1, "the remote link is back");
                    return Some(Arc::new(live));
                }
                Err(error) => state = (error.to_string(), state.1 + 1),
            }
            self.say_state(LinkState::Reconnecting {
                since_ms,
                reason: state.0.clone(),
                attempts: state.1,
            });
            wait = (wait * 2).min(options.max_retry);
        }
    }

    /// A new server, subscribed to changes when the link was.
    fn resubscribe(&self, live: Live) -> Result<Live, Error> {
        if *lock(&self.shared.subscribed) {
            live.client.call::<()>(CHANGES_SUBSCRIBE, &serde_json::json!({}))?;
        }
        Ok(live)
    }

    fn say_state(&self, state: LinkState) {
        *lock(&self.shared.state) = state.clone();
        self.tell(LinkEvent::State(state));
    }

    fn is_stopped(&self) -> bool {
        !matches!(self.stopped.try_recv(), Err(mpsc::TryRecvError::Empty))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_state_reads_as_the_window_shows_it() {
        let reconnecting = LinkState::Reconnecting {
            since_ms: 1_700_000_000_000,
            reason: "box: the connection was lost".into(),
            attempts: 2,
        };
        assert_eq!(
            serde_json::to_value(&reconnecting).unwrap(),
            serde_json::json!({
                "state": "reconnecting",
                "since_ms": 1_700_000_000_000u64,
                "reason": "box: the connection was lost",
                "attempts": 2
            })
        );
        assert_eq!(
            serde_json::to_value(LinkState::Connected).unwrap(),
            serde_json::json!({ "state": "connected" })
        );
    }
}
