//! The client of a studio server: [`RemoteClient`] starts the server's command (the system `ssh`
//! running `zstudio serve --stdio` on a host, or `zstudio serve --stdio` itself), finds its
//! banner among what a remote shell printed first, checks its protocol version, then makes calls
//! matched to their replies by id and hands the server's notifications on. Every error names the
//! host and says what failed.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::remote::prelude::{quoted_junk, read_prelude, skip_junk_until, Prelude};
use crate::remote::protocol::{
    line_of, parse_server_frame, read_line_bounded, Banner, Hello, LineRead, Notification, Request, ServerFrame,
    SocketInput, WireError, HELLO, MAX_REPLY_BYTES, PROTOCOL_VERSION,
};
use crate::remote::table::read_result;
use crate::remote::transfer::{read_data, MAX_CHUNK};
use crate::vocabulary::error::Error;
use crate::vocabulary::visible::shown;

/// How long and how much a client waits for its server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// How long the banner may take to come (a remote shell's login, the server's start).
    pub banner_timeout: Duration,
    /// How many bytes before the banner are skipped (what a remote shell's rc files print).
    pub max_junk_bytes: usize,
    /// How long a call waits for its reply ([`RemoteClient::call_with_timeout`] for another).
    pub call_timeout: Duration,
    /// How many notifications wait unread before newer ones are dropped.
    pub notification_buffer: usize,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            banner_timeout: Duration::from_secs(10),
            max_junk_bytes: 64 * 1024,
            call_timeout: Duration::from_secs(60),
            notification_buffer: 4096,
        }
    }
}

/// The most of the server's stderr kept for error messages (its last bytes).
const STDERR_TAIL_BYTES: usize = 4096;

/// How many bytes of the server's output are read at once.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// How long dropping a client waits for its server to exit after its input closed.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// A connection to a studio server (`zstudio serve --stdio`) over a child process's pipes, or to
/// a kept server over its socket (`remote::kept_server`).
pub struct RemoteClient {
    host: String,
    banner: Banner,
    /// The server's process (none for a kept server's socket).
    child: Mutex<Option<Child>>,
    stdin: Mutex<Option<Box<dyn Write + Send>>>,
    link: Arc<Link>,
    next_id: AtomicU64,
    call_timeout: Duration,
    notifications: Mutex<Option<Receiver<Notification>>>,
}

/// What the reader thread and the callers share: the calls waiting for replies, and why the
/// link closed once it did.
struct Link {
    host: String,
    pending: Mutex<HashMap<u64, Waiting>>,
    closed: Mutex<Option<String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// What came before the banner (bounded by the client's `max_junk_bytes`).
    junk: Mutex<Vec<u8>>,
    /// How many bytes of frames came from the server (newlines included).
    received: AtomicU64,
    /// Whether the notifications were taken ([`RemoteClient::notifications`]): none is queued
    /// before, so a command that never reads them holds none.
    subscribed: std::sync::atomic::AtomicBool,
}

/// The largest notification handed on: a larger one is dropped (logged). The server's are a
/// change of a session or a run's event, a few KiB; a hostile host's could be up to a frame's
/// 64 MiB each, thousands of them queued.
pub const MAX_NOTIFICATION_BYTES: usize = 256 * 1024;

/// A call waiting for its reply, called on the reader thread with its result's JSON text as the
/// line holds it (read there as the caller's type: no copy of the text, and the caller wakes to
/// its value) or the data that followed its line, or with its error.
type Waiting = Box<dyn FnOnce(Result<Answered<'_>, Error>) + Send>;

/// What a reply carried.
enum Answered<'a> {
    /// A result's JSON text.
    Result(&'a [u8]),
    /// Raw bytes after the reply's line (a file's chunk).
    Data(Vec<u8>),
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The other end of a client: a server it starts (`… zstudio serve --stdio`, through ssh), or a
/// kept server already listening, reached on a socket.
enum ServerEnd {
    Started(Command),
    KeptSocket(UnixStream),
}

impl RemoteClient {
    /// Starts `command` with `--nonce <nonce>` appended (so it must end with the server's
    /// invocation, `… zstudio serve --stdio`), waits for its banner, and says `hello`. `host`
    /// names the other end in every error.
    pub fn connect(host: impl Into<String>, command: Command, options: ClientOptions) -> Result<RemoteClient, Error> {
        RemoteClient::greeted(host.into(), ServerEnd::Started(command), options)
    }

    /// A client of a kept server already listening on `socket` (reached through ssh's forward:
    /// `host` names the other end in every error), once it has greeted.
    pub fn attach(host: impl Into<String>, socket: UnixStream, options: ClientOptions) -> Result<RemoteClient, Error> {
        RemoteClient::greeted(host.into(), ServerEnd::KeptSocket(socket), options)
    }

    /// Starts the client on `server`, waits for its banner and says `hello`.
    fn greeted(host: String, server: ServerEnd, options: ClientOptions) -> Result<RemoteClient, Error> {
        let (client, banner) = RemoteClient::start(host, server, &options, None)?;
        client.greet(&banner, Instant::now() + options.banner_timeout, options.banner_timeout)
    }

    /// [`RemoteClient::connect`] for a start script that says a [`Prelude`] before it starts the
    /// server (its nonce the one appended, `--nonce <nonce>`, which it hands on to the server):
    /// the prelude, and the client when the script said the server follows (`serve`).
    pub fn connect_after_prelude(
        host: impl Into<String>,
        command: Command,
        options: ClientOptions,
    ) -> Result<(Prelude, Option<RemoteClient>), Error> {
        let deadline = Instant::now() + options.banner_timeout;
        let (said, told) = mpsc::channel();
        let (client, banner) = RemoteClient::start(host.into(), ServerEnd::Started(command), &options, Some(said))?;
        let prelude = match told.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(prelude)) => prelude,
            Ok(Err(what)) => return Err(client.failed(client.link_error(what))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let junk = quoted_junk(&lock(&client.link.junk));
                let what = format!(
                    "the start script said nothing within {} s{junk}",
                    options.banner_timeout.as_secs()
                );
                return Err(client.failed(client.link_error(what)));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(client.failed(client.link.closed_error(&client))),
        };
        if !prelude.server_follows {
            // The script ends by itself: dropping the client waits for it.
            return Ok((prelude, None));
        }
        Ok((prelude, Some(client.greet(&banner, deadline, options.banner_timeout)?)))
    }

    /// Starts the server's command (or says the nonce on a kept server's socket) and its reader
    /// (a prelude read first when `prelude` is given): the client, and where its banner comes.
    #[allow(clippy::type_complexity)]
    fn start(
        host: String,
        server: ServerEnd,
        options: &ClientOptions,
        prelude: Option<Sender<Result<Prelude, String>>>,
    ) -> Result<(RemoteClient, Receiver<Result<Banner, String>>), Error> {
        let nonce = uuid::Uuid::now_v7().simple().to_string();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (child, stdin, stdout): (_, Box<dyn Write + Send>, Box<dyn Read + Send>) = match server {
            ServerEnd::Started(mut command) => {
                command
                    .arg("--nonce")
                    .arg(&nonce)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped());
                let mut child = command.stderr(Stdio::piped()).spawn().map_err(|e| Error::RemoteLink {
                    host: host.clone(),
                    what: format!("cannot start {}: {e}", shown(&command.get_program().to_string_lossy())),
                })?;
                if let Some(pipe) = child.stderr.take() {
                    keep_tail(pipe, stderr.clone());
                }
                let (stdin, stdout) = (child.stdin.take().expect("piped"), child.stdout.take().expect("piped"));
                (Some(child), Box::new(stdin), Box::new(stdout))
            }
            ServerEnd::KeptSocket(socket) => {
                let (input, output) = SocketInput::attach(socket, &nonce).map_err(|e| Error::RemoteLink {
                    host: host.clone(),
                    what: format!("cannot reach the kept studio server: {e}"),
                })?;
                (None, input, output)
            }
        };
        let link = Arc::new(Link {
            host: host.clone(),
            pending: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
            stderr,
            junk: Mutex::new(Vec::new()),
            received: AtomicU64::new(0),
            subscribed: std::sync::atomic::AtomicBool::new(false),
        });
        let (notify, notifications) = mpsc::sync_channel(options.notification_buffer);
        let (banner_found, banner) = mpsc::channel();
        let reader = Reader {
            link: link.clone(),
            nonce,
            max_junk: options.max_junk_bytes,
            prelude_found: prelude,
            banner_found,
            notify,
        };
        let client = RemoteClient {
            host,
            banner: Banner {
                zstudio: String::new(),
                protocol_version: 0,
                nonce: String::new(),
            },
            child: Mutex::new(child),
            stdin: Mutex::new(Some(stdin)),
            link,
            next_id: AtomicU64::new(1),
            call_timeout: options.call_timeout,
            notifications: Mutex::new(Some(notifications)),
        };
        let spawned = std::thread::Builder::new()
            .name("remote-reader".into())
            .spawn(move || reader.run(stdout));
        if let Err(e) = spawned {
            return Err(client.failed(Error::io_spawn("the remote client's reader thread", e)));
        }
        Ok((client, banner))
    }

    /// Waits for the banner (until `deadline`, `timeout` after the start) and says `hello`; the
    /// server is ended when either fails.
    fn greet(
        mut self,
        banner: &Receiver<Result<Banner, String>>,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<RemoteClient, Error> {
        let greeted = self.wait_banner(banner, deadline, timeout).and_then(|banner| {
            self.banner = banner;
            self.hello()
        });
        match greeted {
            Ok(()) => Ok(self),
            Err(error) => Err(self.failed(error)),
        }
    }

    /// `error`, once the server's process is ended (it failed to start or to greet).
    fn failed(&self, error: Error) -> Error {
        self.kill();
        error
    }

    /// Waits for the reader to find the banner; then checks its version.
    fn wait_banner(
        &self,
        found: &Receiver<Result<Banner, String>>,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Banner, Error> {
        let banner = match found.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(banner)) => banner,
            Ok(Err(what)) => return Err(self.link_error(what)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let junk = quoted_junk(&lock(&self.link.junk));
                return Err(self.link_error(format!("no studio server banner within {} s{junk}", timeout.as_secs())));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.link.closed_error(self)),
        };
        if banner.protocol_version != PROTOCOL_VERSION {
            return Err(Error::ProtocolMismatch {
                host: self.host.clone(),
                client: PROTOCOL_VERSION,
                server: banner.protocol_version,
            });
        }
        Ok(banner)
    }

    fn hello(&self) -> Result<(), Error> {
        let hello = Hello {
            protocol_version: PROTOCOL_VERSION,
        };
        let _: Banner = self.call(HELLO, &hello)?;
        Ok(())
    }

    /// The host this client talks to, as its errors name it.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The server's banner: its `zstudio` version and protocol version.
    pub fn server(&self) -> &Banner {
        &self.banner
    }

    /// Calls `method` with `params` (an object of the method's arguments by name) and reads its
    /// result as `T`, waiting at most the client's call timeout.
    pub fn call<T: DeserializeOwned + Send + 'static>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, Error> {
        self.call_with_timeout(method, params, self.call_timeout)
    }

    /// [`RemoteClient::call`], waiting at most `timeout`.
    pub fn call_with_timeout<T: DeserializeOwned + Send + 'static>(
        &self,
        method: &str,
        params: &impl Serialize,
        timeout: Duration,
    ) -> Result<T, Error> {
        self.request(method, params, None, timeout, result_as::<T>)
    }

    /// [`RemoteClient::call`] with `data` (a file's chunk, at most [`MAX_CHUNK`] bytes) sent as
    /// raw bytes after the request's line.
    pub fn call_sending<T: DeserializeOwned + Send + 'static>(
        &self,
        method: &str,
        params: &impl Serialize,
        data: &[u8],
    ) -> Result<T, Error> {
        self.request(method, params, Some(data), self.call_timeout, result_as::<T>)
    }

    /// Calls `method`, answered with raw bytes after the reply's line (a file's chunk).
    pub fn call_for_data(&self, method: &str, params: &impl Serialize) -> Result<Vec<u8>, Error> {
        self.request(
            method,
            params,
            None,
            self.call_timeout,
            |name, answered| match answered {
                Answered::Data(data) => Ok(data),
                Answered::Result(_) => Err(format!("`{name}` was answered with a result where data was expected")),
            },
        )
    }

    /// Sends request `method` (and `data` after its line) and waits at most `timeout` for its
    /// reply, read on the reader thread by `read`.
    fn request<T: Send + 'static>(
        &self,
        method: &str,
        params: &impl Serialize,
        data: Option<&[u8]>,
        timeout: Duration,
        read: impl FnOnce(&str, Answered<'_>) -> Result<T, String> + Send + 'static,
    ) -> Result<T, Error> {
        let params = serde_json::to_value(params).map_err(|e| Error::InvalidRequest {
            reason: format!("the parameters of `{method}` do not serialise: {e}"),
        })?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = mpsc::channel();
        let (link, name) = (self.link.clone(), method.to_owned());
        let waiting: Waiting = Box::new(move |outcome| {
            let read = outcome.and_then(|answered| read(&name, answered).map_err(|what| link.error(what)));
            let _ = answer.send(read);
        });
        lock(&self.link.pending).insert(id, waiting);
        if lock(&self.link.closed).is_some() {
            lock(&self.link.pending).remove(&id);
            return Err(self.link.closed_error(self));
        }
        let frame = line_of(&Request {
            id,
            method: method.to_owned(),
            params,
            data: data.map(|data| data.len() as u64),
        });
        if let Err(error) = self.send(&frame, data.unwrap_or_default()) {
            lock(&self.link.pending).remove(&id);
            return Err(error);
        }
        match answered.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                lock(&self.link.pending).remove(&id);
                Err(self.link_error(format!("no answer to `{method}` within {} s", timeout.as_secs_f64())))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self.link.closed_error(self)),
        }
    }

    /// Writes a frame's line and the data that follows it, nothing between them.
    fn send(&self, frame: &[u8], data: &[u8]) -> Result<(), Error> {
        let mut stdin = lock(&self.stdin);
        let Some(pipe) = stdin.as_mut() else {
            return Err(self.link_error("the link was closed by this studio".to_owned()));
        };
        pipe.write_all(frame)
            .and_then(|()| pipe.write_all(data))
            .and_then(|()| pipe.flush())
            .map_err(|e| {
                // Looked at apart from the error built next: `closed_error` locks `closed` too (a
                // guard held through a `match` deadlocked here when the reader closed the link
                // between the call's check and this write).
                let closed = lock(&self.link.closed).is_some();
                match closed {
                    true => self.link.closed_error(self),
                    false => self.link_error(format!("cannot write to the studio server: {e}")),
                }
            })
    }

    /// The server's notifications ([`crate::remote::protocol::CHANGE`],
    /// [`crate::remote::protocol::RUN_EVENT`]), once: `None` when taken before. The channel
    /// closes when the link does.
    pub fn notifications(&self) -> Option<Receiver<Notification>> {
        let taken = lock(&self.notifications).take();
        if taken.is_some() {
            self.link.subscribed.store(true, Ordering::SeqCst);
        }
        taken
    }

    /// How many bytes of frames the server sent so far (what a call carried, measured).
    pub fn bytes_received(&self) -> u64 {
        self.link.received.load(Ordering::Relaxed)
    }

    /// Why the link closed, once it did (the server exited, the connection dropped).
    pub fn closed(&self) -> Option<String> {
        lock(&self.link.closed).clone()
    }

    /// Closes the server's input (it exits on its end) and waits for it to exit, at most
    /// `timeout`; past it the process is killed. Returns how it exited.
    pub fn close(&self, timeout: Duration) -> Result<ExitStatus, Error> {
        drop(lock(&self.stdin).take());
        let mut child = lock(&self.child);
        let Some(child) = child.as_mut() else {
            // A kept server's socket: closed with its input (the server goes on).
            return Ok(ExitStatus::default());
        };
        let deadline = Instant::now() + timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                // A server exits within milliseconds of its input closing: looked at often (a
                // `--remote` command ends as soon as its server has).
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(self.link_error(format!(
                        "the studio server did not exit within {} s of its input closing: killed",
                        timeout.as_secs_f64()
                    )));
                }
                Err(e) => return Err(self.link_error(format!("cannot wait for the studio server: {e}"))),
            }
        }
    }

    /// Ends the server process now (it failed to greet).
    fn kill(&self) {
        drop(lock(&self.stdin).take());
        if let Some(child) = lock(&self.child).as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A `remote_link` error saying `what`, with the server's last stderr lines.
    pub(super) fn link_error(&self, what: String) -> Error {
        self.link.error(what)
    }

    /// How the server process ended, if it did.
    fn exit_said(&self) -> String {
        let mut child = lock(&self.child);
        let Some(child) = child.as_mut() else {
            return String::new();
        };
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return format!(" ({status})"),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => return String::new(),
            }
        }
    }
}

/// A reply's result read as `T` (a call that expected one).
fn result_as<T: DeserializeOwned>(name: &str, answered: Answered<'_>) -> Result<T, String> {
    match answered {
        Answered::Result(text) => read_result::<T>(name, text),
        Answered::Data(_) => Err(format!("`{name}` was answered with data where a result was expected")),
    }
}

impl Drop for RemoteClient {
    fn drop(&mut self) {
        let _ = self.close(EXIT_WAIT);
    }
}

impl Link {
    /// A `remote_link` error saying `what`, with the server's last stderr lines.
    fn error(&self, what: String) -> Error {
        Error::RemoteLink {
            host: self.host.clone(),
            what: format!("{what}{}", self.stderr_said()),
        }
    }

    /// The error of a call on a closed link: why it closed, how the server exited, its stderr.
    fn closed_error(&self, client: &RemoteClient) -> Error {
        let why = lock(&self.closed)
            .clone()
            .unwrap_or_else(|| "the link closed".to_owned());
        Error::RemoteLink {
            host: self.host.clone(),
            what: format!("{why}{}{}", client.exit_said(), self.stderr_said()),
        }
    }

    /// The server's last stderr lines, quoted, for an error message.
    fn stderr_said(&self) -> String {
        let tail = lock(&self.stderr);
        let text = String::from_utf8_lossy(&tail);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!("; it said on stderr: {}", shown(text))
        }
    }

    /// Marks the link closed (`why`) and fails every waiting call.
    fn close(&self, why: String) {
        lock(&self.closed).get_or_insert(why);
        // Each waiting call's answer is dropped unsent: the caller hears that the link closed.
        let waiting: Vec<_> = lock(&self.pending).drain().collect();
        drop(waiting);
    }
}

/// The thread that reads the server's output: the banner, then frames.
struct Reader {
    link: Arc<Link>,
    nonce: String,
    max_junk: usize,
    /// Where the start script's prelude goes, when one comes before the banner.
    prelude_found: Option<Sender<Result<Prelude, String>>>,
    banner_found: Sender<Result<Banner, String>>,
    notify: SyncSender<Notification>,
}

impl Reader {
    fn run(mut self, stdout: Box<dyn Read + Send>) {
        // A pipe holds 64 KiB: read it whole at each wakeup.
        let mut input = BufReader::with_capacity(READ_BUFFER_BYTES, stdout);
        if let Some(found) = self.prelude_found.take() {
            let prelude = read_prelude(&mut input, &self.nonce, self.max_junk, &self.link.junk);
            let why = match &prelude {
                Ok(prelude) if prelude.server_follows => None,
                Ok(_) => Some("the start script ended before the studio server".to_owned()),
                Err(what) => Some(what.clone()),
            };
            let _ = found.send(prelude);
            if let Some(why) = why {
                self.link.close(why);
                return;
            }
        }
        let why = match self.find_banner(&mut input) {
            Ok(banner) => {
                let _ = self.banner_found.send(Ok(banner));
                self.read_frames(&mut input)
            }
            Err(what) => {
                let _ = self.banner_found.send(Err(what.clone()));
                what
            }
        };
        self.link.close(why);
    }

    /// Skips every line before the banner with this client's nonce: at most `max_junk` bytes.
    fn find_banner(&self, input: &mut impl BufRead) -> Result<Banner, String> {
        skip_junk_until(
            input,
            self.max_junk,
            &self.link.junk,
            "the studio server's banner",
            |line| {
                serde_json::from_slice::<Banner>(line)
                    .ok()
                    .filter(|banner| banner.nonce == self.nonce)
            },
        )
    }

    /// Reads replies and notifications until the link closes; returns why it closed.
    fn read_frames(&self, input: &mut impl BufRead) -> String {
        let mut line = Vec::new();
        loop {
            match read_line_bounded(input, MAX_REPLY_BYTES, &mut line) {
                Ok(LineRead::Line) => {}
                Ok(LineRead::End) => return "the studio server closed the link".to_owned(),
                Ok(LineRead::TooLong) => {
                    return format!("the studio server sent a frame larger than {MAX_REPLY_BYTES} bytes")
                }
                Err(e) => return format!("cannot read from the studio server: {e}"),
            }
            self.link.received.fetch_add(line.len() as u64 + 1, Ordering::Relaxed);
            match parse_server_frame(&line) {
                Ok(ServerFrame::Reply { id, outcome }) => {
                    let waiting = lock(&self.link.pending).remove(&id);
                    if let Some(waiting) = waiting {
                        waiting(
                            outcome
                                .map(Answered::Result)
                                .map_err(|e: WireError| e.into_error(&self.link.host)),
                        );
                    }
                }
                Ok(ServerFrame::Data { id, len }) => {
                    if len > MAX_CHUNK as u64 {
                        return format!(
                            "the studio server sent {len} bytes of data after a reply: at most {MAX_CHUNK}"
                        );
                    }
                    let data = match read_data(input, len as usize) {
                        Ok(data) => data,
                        Err(e) => return format!("cannot read the data of a reply from the studio server: {e}"),
                    };
                    self.link.received.fetch_add(len, Ordering::Relaxed);
                    let waiting = lock(&self.link.pending).remove(&id);
                    if let Some(waiting) = waiting {
                        waiting(Ok(Answered::Data(data)));
                    }
                }
                Ok(ServerFrame::Notification(notification)) => {
                    if line.len() > MAX_NOTIFICATION_BYTES {
                        tracing::warn!(
                            host = %self.link.host,
                            bytes = line.len(),
                            "a notification over {MAX_NOTIFICATION_BYTES} bytes was dropped"
                        );
                    } else if self.link.subscribed.load(Ordering::SeqCst) {
                        // A reader that falls behind loses notifications, never replies.
                        let _ = self.notify.try_send(notification);
                    }
                }
                Ok(ServerFrame::Unmatched(error)) => {
                    tracing::warn!(host = %self.link.host, code = %error.code, "{}", error.message);
                }
                Err(what) => {
                    let start = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
                    return format!("the studio server sent {what}: {}", shown(&start));
                }
            }
        }
    }
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of the server's stderr (its messages, ssh's).
fn keep_tail(mut pipe: impl Read + Send + 'static, tail: Arc<Mutex<Vec<u8>>>) {
    let spawned = std::thread::Builder::new().name("remote-stderr".into()).spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(read) = pipe.read(&mut buffer) {
            if read == 0 {
                break;
            }
            let mut kept = lock(&tail);
            kept.extend_from_slice(&buffer[..read]);
            let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
            kept.drain(..excess);
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot keep the studio server's stderr");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client whose server is gone: its input a pipe nobody reads, its link marked closed by
    /// the reader (`why`), as after the server was killed.
    fn client_of_a_dead_server(why: &str) -> RemoteClient {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        RemoteClient {
            host: "buildbox".to_owned(),
            banner: Banner {
                zstudio: String::new(),
                protocol_version: PROTOCOL_VERSION,
                nonce: String::new(),
            },
            child: Mutex::new(None),
            stdin: Mutex::new(Some(Box::new(writer))),
            link: Arc::new(Link {
                host: "buildbox".to_owned(),
                pending: Mutex::new(HashMap::new()),
                closed: Mutex::new(Some(why.to_owned())),
                stderr: Arc::default(),
                junk: Mutex::default(),
                received: AtomicU64::new(0),
                subscribed: std::sync::atomic::AtomicBool::new(false),
            }),
            next_id: AtomicU64::new(1),
            call_timeout: Duration::from_secs(1),
            notifications: Mutex::new(None),
        }
    }

    /// A write that fails once the reader has closed the link says why it closed, and returns:
    /// it once deadlocked, locking `closed` twice (the race of a server killed between a call's
    /// check of the link and its write; CI hung for 90 minutes on it).
    #[test]
    fn a_write_to_a_server_gone_meanwhile_fails_saying_why_the_link_closed() {
        let (done, outcome) = mpsc::channel();
        std::thread::spawn(move || {
            let client = client_of_a_dead_server("the studio server closed the link");
            let _ = done.send(client.send(b"{}\n", &[]).map_err(|e| e.to_string()));
        });
        let sent = outcome
            .recv_timeout(Duration::from_secs(20))
            .expect("the failed write returns (no lock is taken twice)");
        let error = sent.expect_err("nobody reads the pipe");
        assert!(
            error.starts_with("buildbox: the studio server closed the link"),
            "{error}"
        );
    }
}
