//! A studio server kept on the host between commands (issue 41, point 7): `zstudio serve --stdio
//! --keep-for SECS --kept-build BUILD`, started by a command's start script, hands its client to
//! the workspace's kept server ([`attach_to_kept`]: started first, detached, when none answers) and
//! relays the client's frames to it ([`KeptRelay::run`]); the kept server (`zstudio serve --listen SOCKET --keep-for
//! SECS`, [`serve_kept`]) serves each client that connects as `serve --stdio` serves its one, over
//! the one studio it opened (its store, workspace and listing warm), until no client has come for
//! SECS: then it removes its socket and ends (the runs it follows going on through the keeper).
//! As a server started for each client would, it follows the runs of its workspace no studio
//! process follows, looked for as each client comes (a `stop` through it sees the run's end
//! recorded); once it ends, the next server does.
//!
//! Its socket ([`kept_socket_path`](crate::remote::protocol::kept_socket_path)) is in `~/.zibby-studio/run` (0700, the login's own: refused when
//! it is a link or another user's), named by the build the start script verified and the
//! workspace: a later command of the same build reaches it through its kept ssh master (a
//! forwarded socket, `ssh::Connection::reach_kept_server`) without starting anything on the host.
//! A client connects, says [`ATTACH`] and its nonce in one line, and is then a `serve --stdio`
//! client. Only the login reaches the socket: it is 0600 in that 0700 folder (no peer credential
//! is checked beyond the folder's and the socket's modes).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::Studio;
use crate::remote::protocol::ATTACH;
use crate::remote::server::{serve_one, ServeOptions};
use crate::vocabulary::error::Error;

/// How long a kept server may take to answer once started (within the client's 10 s for the
/// banner: past it, this process serves its client itself).
const START_WAIT: Duration = Duration::from_secs(5);

/// The longest first line a client may say.
const MAX_ATTACH_BYTES: u64 = 256;

fn error(what: &'static str, path: &Path, source: std::io::Error) -> Error {
    Error::from(crate::remote::ssh::SshError::Io {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// The socket's folder, made private (0700, the login's own, not a link).
fn private_folder(socket: &Path) -> Result<PathBuf, Error> {
    let dir = socket.parent().unwrap_or(Path::new("/"));
    if let Some(parent) = dir.parent() {
        // `~/.zibby-studio` made as the store's own folders are: 0700.
        crate::sessions::private::create_dir_all(parent)?;
    }
    Ok(crate::remote::ssh::private_dir(dir)?)
}

/// `socket` when a server answers on it and it is the login's own socket file.
fn answering(socket: &Path) -> Option<UnixStream> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::symlink_metadata(socket).ok()?;
    let ours = meta.file_type().is_socket() && meta.uid() == nix::unistd::getuid().as_raw();
    ours.then(|| UnixStream::connect(socket).ok()).flatten()
}

/// `serve --stdio --keep-for`: attaches to the kept server on `socket`, started with `start`
/// (detached: a process group of its own, no standard streams) when none answers; the folder
/// locked meanwhile, so two commands at once start one. An error here means nothing was said to
/// the client yet (it may be served another way); once attached, [`KeptRelay::run`] relays.
pub fn attach_to_kept(socket: &Path, nonce: &str, start: &mut Command) -> Result<KeptRelay, Error> {
    let dir = private_folder(socket)?;
    let lock = std::fs::File::open(&dir).map_err(|source| error("open", &dir, source))?;
    lock.lock().map_err(|source| error("lock", &dir, source))?;
    let stream = match answering(socket) {
        Some(stream) => stream,
        None => {
            let _ = std::fs::remove_file(socket);
            start_kept(socket, start)?
        }
    };
    drop(lock);
    let (input, output) =
        crate::remote::protocol::SocketInput::attach(stream, nonce).map_err(|e| error("attach to", socket, e))?;
    Ok(KeptRelay { input, output })
}

/// Starts the kept server and waits until it answers on `socket`.
fn start_kept(socket: &Path, start: &mut Command) -> Result<UnixStream, Error> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut child = start
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| error("start the kept server for", socket, source))?;
    let deadline = Instant::now() + START_WAIT;
    loop {
        if let Some(stream) = answering(socket) {
            // Not waited for: it outlives this process, which ends with its client.
            drop(child);
            return Ok(stream);
        }
        let ended = matches!(child.try_wait(), Ok(Some(_)));
        if ended || Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let why = std::io::Error::other(if ended { "it ended" } else { "it did not answer" });
            return Err(error("start the kept server on", socket, why));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A client attached to the kept server: its input and output there.
pub struct KeptRelay {
    input: Box<dyn Write + Send>,
    output: Box<dyn Read + Send>,
}

impl KeptRelay {
    /// Copies standard input to the kept server and its output to standard output until the
    /// server ends the client (its input's write side shut as standard input ends). An error
    /// here ends the command: the server's banner may already have gone to the client.
    pub fn run(self) -> Result<(), Error> {
        let KeptRelay { mut input, output } = self;
        let copying_in = std::thread::spawn(move || {
            let _ = copy_flushed(std::io::stdin().lock(), &mut input);
        });
        let copied = copy_flushed(output, std::io::stdout().lock());
        // The client's input may go on after the server ended (it ends the relay).
        drop(copying_in);
        copied.map_err(|e| Error::io("the kept server's output", e))
    }
}

/// Copies `from` to `to` until it ends, each read flushed at once (a frame is never held back
/// waiting for the next one: `io::copy` fills stdout's buffer).
fn copy_flushed(mut from: impl Read, mut to: impl Write) -> std::io::Result<()> {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => return to.flush(),
            Ok(read) => {
                to.write_all(&buffer[..read])?;
                to.flush()?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What the clients of a kept server share: how many are connected, since when none is, and
/// whether it is closing (a client coming then is dropped: it starts a server of its own).
struct Clients {
    connected: usize,
    idle_since: Instant,
    closing: bool,
}

/// `serve --listen SOCKET --keep-for IDLE`: serves every client that attaches on `socket` over
/// `studio`, until none has been connected for `idle` (or its socket was removed or replaced);
/// then removes its socket and ends the studio, its runs left going through the keeper.
pub fn serve_kept(studio: Arc<Studio>, socket: &Path, idle: Duration, options: &ServeOptions) -> Result<(), Error> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    private_folder(socket)?;
    if answering(socket).is_some() {
        // Another one started meanwhile: it serves.
        return Ok(());
    }
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket).map_err(|source| error("listen on", socket, source))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|source| error("make private", socket, source))?;
    let inode = std::fs::symlink_metadata(socket).map(|m| m.ino()).ok();
    let clients = Arc::new(Mutex::new(Clients {
        connected: 0,
        idle_since: Instant::now(),
        closing: false,
    }));
    let accepting = {
        let (clients, studio, options) = (clients.clone(), studio.clone(), options.clone());
        std::thread::Builder::new()
            .name("kept-accept".into())
            .spawn(move || accept(&listener, &clients, &studio, &options))
            .map_err(|e| Error::io_spawn("the kept server's listener", e))?
    };
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let mut state = lock(&clients);
        let ours = std::fs::symlink_metadata(socket).map(|m| m.ino()).ok() == inode;
        if !ours || (state.connected == 0 && state.idle_since.elapsed() >= idle) {
            state.closing = true;
            if ours {
                let _ = std::fs::remove_file(socket);
            }
            break;
        }
    }
    drop(accepting);
    studio.keep_runs_on_exit(true);
    studio.shut_down();
    Ok(())
}

fn lock(clients: &Mutex<Clients>) -> std::sync::MutexGuard<'_, Clients> {
    clients.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes each client that connects on a thread of its own (the login's only: the socket is 0600
/// in a 0700 folder of its own).
fn accept(listener: &UnixListener, clients: &Arc<Mutex<Clients>>, studio: &Arc<Studio>, options: &ServeOptions) {
    // The first client's runs were adopted as the studio opened, just before.
    let mut adopt = false;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        {
            let mut state = lock(clients);
            if state.closing {
                continue;
            }
            state.connected += 1;
        }
        let (shared, studio, options) = (clients.clone(), studio.clone(), options.clone());
        let spawned = std::thread::Builder::new().name("kept-client".into()).spawn(move || {
            if let Err(error) = serve_client(stream, studio, options, adopt) {
                tracing::warn!(%error, "a client of the kept server");
            }
            let mut state = lock(&shared);
            state.connected -= 1;
            state.idle_since = Instant::now();
        });
        if spawned.is_err() {
            lock(clients).connected -= 1;
        }
        adopt = true;
    }
}

/// Reads the client's [`ATTACH`] line, then serves it as `serve --stdio` serves its client
/// (having adopted, with `adopt`, the runs no studio follows, as a server started for it would).
fn serve_client(stream: UnixStream, studio: Arc<Studio>, mut options: ServeOptions, adopt: bool) -> Result<(), Error> {
    let output = stream.try_clone().map_err(|e| Error::io("a kept server's client", e))?;
    stream
        .set_read_timeout(Some(START_WAIT))
        .map_err(|e| Error::io("a kept server's client", e))?;
    let mut input = BufReader::new(stream);
    let mut first = String::new();
    (&mut input)
        .take(MAX_ATTACH_BYTES)
        .read_line(&mut first)
        .map_err(|e| Error::io("a kept server's client", e))?;
    let nonce = first
        .trim_end()
        .strip_prefix(ATTACH)
        .and_then(|rest| rest.strip_prefix(' '))
        .filter(|nonce| !nonce.is_empty() && nonce.bytes().all(|b| b.is_ascii_alphanumeric()))
        .ok_or_else(|| Error::InvalidRequest {
            reason: format!(
                "a kept server's client said `{}` first",
                crate::vocabulary::visible::shown(first.trim_end())
            ),
        })?;
    options.nonce = nonce.to_owned();
    // The runs no studio follows, left going since the last client (or since the studio opened).
    if adopt {
        if let Err(error) = studio.adopt_runs() {
            tracing::warn!(%error, "cannot adopt the runs no studio follows");
        }
    }
    input
        .get_ref()
        .set_read_timeout(None)
        .map_err(|e| Error::io("a kept server's client", e))?;
    serve_one(studio, None, input, output, &options)
}
