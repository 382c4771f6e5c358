//! The studio server (`zstudio serve --stdio`): one client's requests read from `input`, answered
//! on `output` with the app service's results (see [`crate::remote::protocol`] for the frames).
//!
//! A reader (the caller's thread) reads frames; a few workers answer them, so a long call
//! (a compare, a listing) blocks neither the others nor the notifications; one writer thread
//! writes every frame whole. The server ends at the end of its input: the runs it started go on
//! through the keeper (the studio is told to keep them), and the bundles it exported and the
//! files uploaded to it are removed (those a killed server left are removed by the next one).
//! It adopts the runs of its workspace still going that no live studio process follows (those a
//! server before it left when its link dropped) when it starts and at each `runs_reconcile`
//! (the old server may let go of them only after the new one started): their events are then
//! its `run_event` notifications, as for the runs it started ([`crate::app::Studio::adopt_runs`]).

use std::io::{self, BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::app::Studio;
use crate::remote::export::Exports;
use crate::remote::import::Uploads;
use crate::remote::methods::{dispatch, read_params, write_result};
use crate::remote::protocol::{
    error_frame, line_of, notification_frame, read_line_bounded, start_reply, Banner, Hello, LineRead, Request,
    WireError, AGENT_TRUST, CHANGE, CHANGES_SUBSCRIBE, EXPORT_CLOSE, EXPORT_OPEN, EXPORT_READ, HELLO, IMPORT_CLOSE,
    IMPORT_COMMIT, IMPORT_OPEN, IMPORT_WRITE, MAX_REQUEST_BYTES, PROTOCOL_VERSION, REPLY_END, RUNS_RECONCILE,
    RUN_EVENT,
};
use crate::runs::runner::RunEvent;
use crate::sessions::change::{Change, ChangeSink};
use crate::sessions::session::Workspace;
use crate::vocabulary::error::{Error, ErrorCode};
use crate::vocabulary::id::SessionId;
use crate::vocabulary::visible::shown;

/// The methods of the protocol itself, besides the IPC commands ([`crate::remote::methods::IPC_METHODS`]).
pub const PROTOCOL_METHODS: &[&str] = &[
    HELLO,
    CHANGES_SUBSCRIBE,
    RUNS_RECONCILE,
    AGENT_TRUST,
    EXPORT_OPEN,
    EXPORT_READ,
    EXPORT_CLOSE,
    IMPORT_OPEN,
    IMPORT_WRITE,
    IMPORT_COMMIT,
    IMPORT_CLOSE,
];

/// What the server says of itself, and how many requests it answers at once.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The `zstudio` version the banner says.
    pub version: String,
    /// The client's nonce, said back in the banner.
    pub nonce: String,
    /// How many requests are answered at once.
    pub workers: usize,
}

/// What the writer thread is given: a frame to write, a reply to write as its pieces come (no
/// other frame between them), or the end.
enum Outgoing {
    Frame(Vec<u8>),
    Reply(Receiver<Piece>),
    End,
}

/// A piece of a reply written as it is serialised ([`ReplyOut`]).
enum Piece {
    More(Vec<u8>),
    /// The reply's last bytes, its newline included.
    Last(Vec<u8>),
}

/// How many bytes of a result are serialised before they are handed to the writer: a reply this
/// long or shorter is one frame; a longer one leaves by pieces of about this size while the rest
/// is serialised.
const PIECE_BYTES: usize = 256 * 1024;

/// How many pieces of a reply wait for the writer before its serialisation waits in turn (what
/// bounds a long reply's memory on the server).
const PIECES_AHEAD: usize = 2;

/// A reply being written: `{"id":N,"result":`, then the result's JSON text as it is
/// serialised, then `}` and the newline (the protocol's shape, [`start_reply`]). The first
/// [`PIECE_BYTES`] are kept: a result that ends before is one frame, and one that does not
/// serialise is answered with its error instead. Past them, the reply is handed to the writer by
/// pieces as they fill, so that its first bytes leave while the rest is serialised, and no whole
/// copy of a long result is ever held; one that fails then (or whose worker panics) ends on a
/// broken line, which the client refuses.
pub(crate) struct ReplyOut<'a> {
    frames: &'a Sender<Outgoing>,
    buffer: Vec<u8>,
    pieces: Option<SyncSender<Piece>>,
    written: bool,
}

/// What a method answers when its result was written to its [`ReplyOut`].
pub(crate) struct Written(());

impl<'a> ReplyOut<'a> {
    fn new(id: u64, frames: &'a Sender<Outgoing>) -> ReplyOut<'a> {
        let mut buffer = Vec::with_capacity(4096);
        start_reply(id, &mut buffer);
        ReplyOut {
            frames,
            buffer,
            pieces: None,
            written: false,
        }
    }

    /// Writes `result` as the reply's, and ends the reply.
    pub(crate) fn write_result(&mut self, result: &impl Serialize) -> Result<Written, serde_json::Error> {
        assert!(!self.written, "a reply has one result");
        self.written = true;
        serde_json::to_writer(&mut *self, result)?;
        self.buffer.extend_from_slice(REPLY_END);
        let last = std::mem::take(&mut self.buffer);
        let sent = match self.pieces.take() {
            None => self.frames.send(Outgoing::Frame(last)).is_ok(),
            Some(pieces) => pieces.send(Piece::Last(last)).is_ok(),
        };
        match sent {
            true => Ok(Written(())),
            false => Err(serde_json::Error::io(output_closed())),
        }
    }

    /// Whether part of the reply left already (an error cannot be answered in its place).
    fn started(&self) -> bool {
        self.pieces.is_some()
    }

    /// Hands what was serialised so far to the writer: the first time, the reply's place among
    /// the frames.
    fn hand_on(&mut self) -> io::Result<()> {
        let pieces = match &self.pieces {
            Some(pieces) => pieces,
            None => {
                let (pieces, reply) = mpsc::sync_channel(PIECES_AHEAD);
                self.frames.send(Outgoing::Reply(reply)).map_err(|_| output_closed())?;
                self.pieces.insert(pieces)
            }
        };
        let piece = std::mem::replace(&mut self.buffer, Vec::with_capacity(PIECE_BYTES + PIECE_BYTES / 8));
        pieces.send(Piece::More(piece)).map_err(|_| output_closed())
    }
}

impl Write for ReplyOut<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= PIECE_BYTES {
            self.hand_on()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn output_closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the server's output closed")
}

/// What the workers share.
struct Shared {
    studio: Arc<Studio>,
    frames: Sender<Outgoing>,
    exports: Exports,
    uploads: Uploads,
    /// The thread starting the watcher of the last `changes_subscribe`, until it is joined.
    watch_start: Mutex<Option<JoinHandle<()>>>,
}

/// Serves one client until its input ends: prints the banner, then answers every request. Returns
/// an error when the client's protocol version is not the server's (after answering it so).
pub fn serve(
    studio: Arc<Studio>,
    run_events: Option<Receiver<RunEvent>>,
    mut input: impl BufRead,
    output: impl Write + Send + 'static,
    options: &ServeOptions,
) -> Result<(), Error> {
    crate::remote::scratch::sweep_stale();
    let (frames, outgoing) = mpsc::channel();
    let writer = spawn("serve-writer", move || write_frames(output, &outgoing))?;
    let banner = Banner {
        zstudio: options.version.clone(),
        protocol_version: PROTOCOL_VERSION,
        nonce: options.nonce.clone(),
    };
    let _ = frames.send(Outgoing::Frame(line_of(&banner)));
    if let Some(events) = run_events {
        let frames = frames.clone();
        spawn("serve-run-events", move || {
            for event in events {
                let _ = frames.send(Outgoing::Frame(notification_frame(RUN_EVENT, &event)));
            }
        })?;
    }
    let shared = Arc::new(Shared {
        studio,
        frames: frames.clone(),
        exports: Exports::default(),
        uploads: Uploads::default(),
        watch_start: Mutex::new(None),
    });
    let (jobs, queue) = mpsc::channel::<Request>();
    let queue = Arc::new(Mutex::new(queue));
    let workers = (0..options.workers.max(1))
        .map(|_| {
            let (shared, queue) = (shared.clone(), queue.clone());
            spawn("serve-worker", move || loop {
                let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                match job {
                    Ok(request) => shared.answer(request),
                    Err(_) => break,
                }
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let served = read_requests(&mut input, &shared, &jobs, &banner);
    drop(jobs);
    for worker in workers {
        let _ = worker.join();
    }
    if let Some(started) = lock(&shared.watch_start).take() {
        let _ = started.join();
    }
    // A dropped link never stops a run: the runs go on through the keeper.
    shared.studio.keep_runs_on_exit(true);
    shared.studio.shut_down();
    shared.exports.remove_all();
    shared.uploads.remove_all();
    let _ = frames.send(Outgoing::End);
    let _ = writer.join();
    served
}

fn spawn(name: &str, work: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, Error> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(work)
        .map_err(|e| Error::io_spawn(name, e))
}

/// Writes each frame whole, and each reply by pieces as they come (nothing between them),
/// flushing when none waits; stops at the end or when the output closes.
fn write_frames(mut output: impl Write, outgoing: &Receiver<Outgoing>) {
    let mut next = outgoing.recv();
    loop {
        let written = match next {
            Ok(Outgoing::Frame(frame)) => output.write_all(&frame),
            Ok(Outgoing::Reply(pieces)) => write_pieces(&mut output, &pieces),
            Ok(Outgoing::End) | Err(_) => break,
        };
        if written.is_err() {
            return;
        }
        next = match outgoing.try_recv() {
            Ok(more) => Ok(more),
            Err(_) => {
                if output.flush().is_err() {
                    return;
                }
                outgoing.recv()
            }
        };
    }
    let _ = output.flush();
}

/// Writes a reply's pieces as they come, each flushed (the client reads it as it is written); a
/// reply given up before its last piece ends its line there: a broken frame, not one run into
/// the next.
fn write_pieces(output: &mut impl Write, pieces: &Receiver<Piece>) -> io::Result<()> {
    loop {
        match pieces.recv() {
            Ok(Piece::More(piece)) => {
                output.write_all(&piece)?;
                output.flush()?;
            }
            Ok(Piece::Last(piece)) => return output.write_all(&piece),
            Err(_) => {
                tracing::warn!("a reply given up as it was written: its line ends unfinished");
                return output.write_all(b"\n");
            }
        }
    }
}

/// Reads requests until the input ends: `hello` first (answered here, in order), then every
/// other request handed to the workers. A frame that does not read is answered with
/// `invalid_request` (its id when it has one).
fn read_requests(
    input: &mut impl BufRead,
    shared: &Shared,
    jobs: &Sender<Request>,
    banner: &Banner,
) -> Result<(), Error> {
    let mut greeted = false;
    let mut line = Vec::new();
    loop {
        let read = read_line_bounded(input, MAX_REQUEST_BYTES, &mut line)
            .map_err(|e| Error::io("the server's standard input", e))?;
        let request = match read {
            LineRead::End => return Ok(()),
            LineRead::TooLong => Err((
                None,
                format!("a request of more than {MAX_REQUEST_BYTES} bytes (a frame is one line)"),
            )),
            LineRead::Line if line.iter().all(u8::is_ascii_whitespace) => continue,
            LineRead::Line => parse_request(&line),
        };
        let request = match request {
            Ok(request) => request,
            Err((id, reason)) => {
                shared.reply_error(id, &Error::InvalidRequest { reason });
                continue;
            }
        };
        if request.method == HELLO {
            match hello(request.params) {
                Ok(()) => {
                    shared.reply(request.id, |out| write_result(HELLO, Ok(banner), out));
                    greeted = true;
                }
                Err(error) => {
                    shared.reply_error(Some(request.id), &error);
                    if error.code() == ErrorCode::ProtocolMismatch {
                        return Err(error);
                    }
                }
            }
        } else if !greeted {
            let reason = format!("`{}` before `hello`: say hello first", shown(&request.method));
            shared.reply_error(Some(request.id), &Error::InvalidRequest { reason });
        } else if jobs.send(request).is_err() {
            return Ok(());
        }
    }
}

/// A request frame, or why not (with its id, when it has one).
fn parse_request(line: &[u8]) -> Result<Request, (Option<u64>, String)> {
    let value: Value = serde_json::from_slice(line).map_err(|e| (None, format!("not JSON ({e})")))?;
    let id = value.get("id").and_then(Value::as_u64);
    serde_json::from_value(value).map_err(|e| (id, format!("not a request {{id, method, params}} ({e})")))
}

/// `hello`: the client's version checked against the server's (then answered with the banner).
fn hello(params: Value) -> Result<(), Error> {
    let hello: Hello = read_params(HELLO, params)?;
    if hello.protocol_version != PROTOCOL_VERSION {
        return Err(Error::ProtocolMismatch {
            host: "this studio server".to_owned(),
            client: hello.protocol_version,
            server: PROTOCOL_VERSION,
        });
    }
    Ok(())
}

/// `agent_trust`'s parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentTrust {
    agent: String,
    #[serde(default)]
    node: Option<String>,
    digest: String,
    /// The run's prompt and session, so that the launch shown is the command as it will run.
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
}

/// Trusts the launch of `agent` (its replay of `node`) when it is the one the user was shown.
fn agent_trust(studio: &Studio, trust: AgentTrust) -> Result<bool, Error> {
    let (store, workspace) = (studio.store()?, studio.workspace()?);
    let session = trust.session_id.as_deref().map(SessionId::parse).transpose()?;
    match crate::app::agent_run_request(store, &workspace, &trust.agent, trust.prompt, session, trust.node) {
        Ok(_) => Ok(true),
        Err(Error::AgentsUntrusted { launch }) if launch.digest == trust.digest => {
            store.trust_launch(&workspace, &trust.digest, std::time::SystemTime::now())?;
            Ok(true)
        }
        Err(error) => Err(error),
    }
}

/// No parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

impl Shared {
    /// Answers request `id` with what `write` writes, or with its error.
    fn reply(&self, id: u64, write: impl FnOnce(&mut ReplyOut<'_>) -> Result<Written, Error>) {
        let mut out = ReplyOut::new(id, &self.frames);
        if let Err(error) = write(&mut out) {
            self.reply_error(Some(id), &error);
        }
    }

    fn reply_error(&self, id: Option<u64>, error: &Error) {
        let _ = self
            .frames
            .send(Outgoing::Frame(error_frame(id, &WireError::from(error))));
    }

    /// Answers one request; a method that panics is answered as an internal error.
    fn answer(self: &Arc<Shared>, request: Request) {
        let Request { id, method, params } = request;
        let mut out = ReplyOut::new(id, &self.frames);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| self.call(&method, params, &mut out)));
        let outcome = outcome.unwrap_or_else(|_| {
            Err(Error::Unavailable {
                code: ErrorCode::Internal,
                message: format!(
                    "`{}` failed inside the studio server (a bug: see its log)",
                    shown(&method)
                ),
            })
        });
        if let Err(error) = outcome {
            if out.started() {
                // Part of the reply left: its line ends broken (the client refuses it).
                tracing::warn!(%error, method = %shown(&method), "a reply failed as it was written");
            }
            drop(out);
            self.reply_error(Some(id), &error);
        }
    }

    fn call(self: &Arc<Shared>, method: &str, params: Value, out: &mut ReplyOut<'_>) -> Result<Written, Error> {
        match method {
            CHANGES_SUBSCRIBE => {
                let NoParams {} = read_params(method, params)?;
                self.subscribe_changes()?;
                write_result(method, Ok(()), out)
            }
            RUNS_RECONCILE => {
                let NoParams {} = read_params(method, params)?;
                // A run the server before this one left (a dropped link) is followed here, once
                // that server let it go: its lines reach the client live again.
                if let Err(error) = self.studio.adopt_runs() {
                    tracing::warn!(%error, "cannot adopt the runs no studio follows");
                }
                crate::runs::runner::reconcile(self.studio.store()?, std::time::SystemTime::now())?;
                write_result(method, Ok(()), out)
            }
            AGENT_TRUST => write_result(method, agent_trust(&self.studio, read_params(method, params)?), out),
            EXPORT_OPEN => write_result(
                method,
                self.exports.open(&self.studio, read_params(method, params)?),
                out,
            ),
            EXPORT_READ => write_result(method, self.exports.read(&read_params(method, params)?), out),
            EXPORT_CLOSE => write_result(method, self.exports.close(&read_params(method, params)?), out),
            IMPORT_OPEN => write_result(method, self.uploads.open(read_params(method, params)?), out),
            IMPORT_WRITE => write_result(method, self.uploads.write(&read_params(method, params)?), out),
            IMPORT_COMMIT => write_result(
                method,
                self.uploads.commit(&self.studio, &read_params(method, params)?),
                out,
            ),
            IMPORT_CLOSE => write_result(method, self.uploads.close(&read_params(method, params)?), out),
            _ => dispatch(&self.studio, method, params, out).unwrap_or_else(|| {
                Err(Error::InvalidRequest {
                    reason: format!("no method `{}`", shown(method)),
                })
            }),
        }
    }

    /// Watches the workspace's sessions: each change is a [`CHANGE`] notification, its session
    /// read as `sessions` reads it (what the store recorded laid over the folder).
    fn subscribe_changes(self: &Arc<Shared>) -> Result<(), Error> {
        let studio: Weak<Studio> = Arc::downgrade(&self.studio);
        let frames = Mutex::new(self.frames.clone());
        let sink: ChangeSink = Arc::new(move |mut change: Change| {
            if let (
                Some(studio),
                Change::SessionAdded { workspace, summary, .. } | Change::SessionUpdated { workspace, summary, .. },
            ) = (studio.upgrade(), &mut change)
            {
                if let Ok(store) = studio.store() {
                    if let Err(error) = store.as_recorded(&Workspace::from_canonical_root(workspace.clone()), summary) {
                        tracing::warn!(%error, "a changed session read without the store's records");
                    }
                }
            }
            let frame = notification_frame(CHANGE, &change);
            let _ = frames
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .send(Outgoing::Frame(frame));
        });
        // What fails at once is answered so; the watcher itself starts behind the answer: on a
        // workspace of 10,000 sessions it takes seconds, which a reconnecting client would wait
        // for before it lists again. Nothing is missed meanwhile: its first look reports what
        // differs from the folder index as the last listing left it.
        self.studio.workspace()?;
        self.studio.store()?;
        let studio = self.studio.clone();
        let started = spawn("serve-watch-start", move || {
            if let Err(error) = studio.watch(sink) {
                tracing::warn!(%error, "the workspace's sessions cannot be watched");
            }
        })?;
        let earlier = lock(&self.watch_start).replace(started);
        if let Some(earlier) = earlier {
            let _ = earlier.join();
        }
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::protocol::{parse_server_frame, ServerFrame};

    /// A result longer than a few pieces: rows of text with characters JSON escapes.
    fn long_result() -> Vec<String> {
        (0..40_000)
            .map(|i| format!("row {i}: \"quoted\"\tand tabbed"))
            .collect()
    }

    /// A reply as one frame: `{"id":N,"result":…}` and its newline.
    fn reply_line(id: u64, result: &impl Serialize) -> Vec<u8> {
        let mut line = format!(r#"{{"id":{id},"result":"#).into_bytes();
        line.extend_from_slice(&serde_json::to_vec(result).unwrap());
        line.extend_from_slice(b"}\n");
        line
    }

    #[test]
    fn a_short_reply_is_one_frame_of_the_protocols_shape() {
        let (frames, outgoing) = mpsc::channel();
        let mut out = ReplyOut::new(3, &frames);
        out.write_result(&serde_json::json!({"a": [1, "b\nc"]})).unwrap();
        assert!(!out.started());
        let Ok(Outgoing::Frame(frame)) = outgoing.try_recv() else {
            panic!("not one frame")
        };
        assert_eq!(
            frame,
            br#"{"id":3,"result":{"a":[1,"b\nc"]}}"#.iter().chain(b"\n").copied().collect::<Vec<u8>>()
        );
        assert!(outgoing.try_recv().is_err(), "nothing more");
    }

    #[test]
    fn a_long_reply_leaves_by_pieces_whole_with_no_frame_between_them() {
        let result = long_result();
        let expected = reply_line(9, &result);
        assert!(expected.len() > 4 * PIECE_BYTES, "{} bytes", expected.len());
        let (frames, outgoing) = mpsc::channel();
        frames
            .send(Outgoing::Frame(b"{\"method\":\"a\",\"params\":1}\n".to_vec()))
            .unwrap();
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let mut out = ReplyOut::new(9, &frames);
                out.write_result(&result).map(|_| ()).unwrap();
            });
            // The notification before, then the reply's place: a frame queued now, while the
            // reply's pieces are still being serialised (its worker waits for the writer), is
            // written after its last piece.
            let before = outgoing.recv().unwrap();
            let reply = outgoing.recv().unwrap();
            assert!(matches!(reply, Outgoing::Reply(_)), "the reply leaves by pieces");
            assert!(!worker.is_finished(), "its worker waits for the writer");
            let (queue, queued) = mpsc::channel();
            for frame in [
                before,
                reply,
                Outgoing::Frame(b"{\"method\":\"b\",\"params\":2}\n".to_vec()),
                Outgoing::End,
            ] {
                queue.send(frame).unwrap();
            }
            let mut output = Vec::new();
            write_frames(&mut output, &queued);
            worker.join().unwrap();
            let mut lines = output.split_inclusive(|b| *b == b'\n');
            assert_eq!(lines.next().unwrap(), b"{\"method\":\"a\",\"params\":1}\n");
            let line = lines.next().unwrap();
            assert!(line == expected.as_slice(), "the reply is not its frame, whole");
            let ServerFrame::Reply {
                id: 9,
                outcome: Ok(text),
            } = parse_server_frame(&line[..line.len() - 1]).unwrap()
            else {
                panic!("not read as reply 9")
            };
            assert_eq!(serde_json::from_slice::<Vec<String>>(text).unwrap(), result);
            assert_eq!(lines.next().unwrap(), b"{\"method\":\"b\",\"params\":2}\n");
            assert_eq!(lines.next(), None);
        });
    }

    /// A result that fails to serialise once `after` bytes of it are written.
    struct FailsAfter(usize);

    impl Serialize for FailsAfter {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{Error as _, SerializeSeq};
            let mut seq = serializer.serialize_seq(None)?;
            seq.serialize_element(&"x".repeat(self.0))?;
            drop(seq);
            Err(S::Error::custom("a result that does not serialise"))
        }
    }

    #[test]
    fn a_reply_given_up_as_it_is_written_ends_its_line_and_the_next_frame_reads() {
        // Before any piece left: nothing is sent, the error can be answered in its place.
        let (frames, outgoing) = mpsc::channel();
        let mut out = ReplyOut::new(4, &frames);
        assert!(out.write_result(&FailsAfter(100)).is_err());
        assert!(!out.started());
        drop(out);
        assert!(outgoing.try_recv().is_err(), "nothing sent");
        // After: the pieces that left end on a line of their own, which does not read.
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || {
                let mut output = Vec::new();
                write_frames(&mut output, &outgoing);
                output
            });
            let mut out = ReplyOut::new(5, &frames);
            assert!(out.write_result(&FailsAfter(3 * PIECE_BYTES)).is_err());
            assert!(out.started());
            drop(out);
            let error = WireError::from(&Error::RunNotLive { id: "r".into() });
            frames.send(Outgoing::Frame(error_frame(Some(5), &error))).unwrap();
            frames.send(Outgoing::End).unwrap();
            let output = writer.join().unwrap();
            let lines: Vec<&[u8]> = output.split(|b| *b == b'\n').collect();
            assert_eq!(
                lines.len(),
                3,
                "the broken reply, the error, nothing after the last newline"
            );
            let broken = match parse_server_frame(lines[0]) {
                Ok(ServerFrame::Reply { outcome: Ok(text), .. }) => serde_json::from_slice::<Value>(text).is_err(),
                other => other.is_err(),
            };
            assert!(broken, "the given-up reply reads as a reply");
            assert!(matches!(
                parse_server_frame(lines[1]),
                Ok(ServerFrame::Reply { id: 5, outcome: Err(ref e) }) if e.code == "run_not_live"
            ));
            assert_eq!(lines[2], b"");
        });
    }
}
