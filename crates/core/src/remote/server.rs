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

use std::io::{BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;

use serde::Deserialize;
use serde_json::Value;

use crate::app::Studio;
use crate::remote::export::Exports;
use crate::remote::import::Uploads;
use crate::remote::methods::{dispatch, read_params, write_result};
use crate::remote::protocol::{
    error_frame, line_of, notification_frame, read_line_bounded, Banner, Hello, LineRead, Request, WireError,
    AGENT_TRUST, CHANGE, CHANGES_SUBSCRIBE, EXPORT_CLOSE, EXPORT_OPEN, EXPORT_READ, HELLO, IMPORT_CLOSE, IMPORT_COMMIT,
    IMPORT_OPEN, IMPORT_WRITE, MAX_REQUEST_BYTES, OTLP_TRACES, PROTOCOL_VERSION, RUNS_RECONCILE, RUN_EVENT,
};
use crate::remote::reply::{write_frames, Outgoing, ReplyOut, Written};
use crate::remote::transfer::{read_data, skip_data, MAX_CHUNK};
use crate::runs::runner::RunEvents;
use crate::sessions::change::{Change, ChangeSink};
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
    OTLP_TRACES,
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

/// What the workers share.
struct Shared {
    studio: Arc<Studio>,
    frames: Sender<Outgoing>,
    exports: Exports,
    uploads: Uploads,
    /// The thread starting the watcher of the last `changes_subscribe`, until it is joined.
    watch_start: Mutex<Option<JoinHandle<()>>>,
}

/// Serves one client until its input ends: prints the banner, then answers every request; then
/// ends the studio (its runs left going through the keeper). Returns an error when the client's
/// protocol version is not the server's (after answering it so).
pub fn serve(
    studio: Arc<Studio>,
    run_events: Option<RunEvents>,
    input: impl BufRead,
    output: impl Write + Send + 'static,
    options: &ServeOptions,
) -> Result<(), Error> {
    let served = serve_one(studio.clone(), run_events, input, output, options);
    // A dropped link never stops a run: the runs go on through the keeper.
    studio.keep_runs_on_exit(true);
    studio.shut_down();
    served
}

/// [`serve`] without ending the studio: one of the clients of a kept server
/// (`remote::kept_server`), whose studio serves the next.
pub fn serve_one(
    studio: Arc<Studio>,
    run_events: Option<RunEvents>,
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
            for event in events.iter() {
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
    let (jobs, queue) = mpsc::channel::<Job>();
    let queue = Arc::new(Mutex::new(queue));
    let workers = (0..options.workers.max(1))
        .map(|_| {
            let (shared, queue) = (shared.clone(), queue.clone());
            spawn("serve-worker", move || loop {
                let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                match job {
                    Ok((request, data)) => shared.answer(request, data),
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
    let watch_start = lock(&shared.watch_start).take();
    if let Some(started) = watch_start {
        let _ = started.join();
    }
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

/// A request for a worker, and the raw bytes that followed its line (a file's chunk).
type Job = (Request, Vec<u8>);

/// Reads requests until the input ends: `hello` first (answered here, in order), then every
/// other request handed to the workers, each with the data that followed its line. A frame that
/// does not read is answered with `invalid_request` (its id when it has one).
fn read_requests(input: &mut impl BufRead, shared: &Shared, jobs: &Sender<Job>, banner: &Banner) -> Result<(), Error> {
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
        let data = match request.data {
            None => Vec::new(),
            Some(len) if len <= MAX_CHUNK as u64 => {
                read_data(input, len as usize).map_err(|e| Error::io("the server's standard input", e))?
            }
            Some(len) => {
                skip_data(input, len).map_err(|e| Error::io("the server's standard input", e))?;
                let reason = format!("a request with {len} bytes of data: at most {MAX_CHUNK}");
                shared.reply_error(Some(request.id), &Error::InvalidRequest { reason });
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
        } else if jobs.send((request, data)).is_err() {
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
            store.trust_launch(&workspace, &launch, std::time::SystemTime::now())?;
            Ok(true)
        }
        Err(error) => Err(error),
    }
}

/// No parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

/// [`OTLP_TRACES`]'s parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OtlpTraces {
    session_id: String,
    #[serde(default)]
    include_output: bool,
}

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
    fn answer(self: &Arc<Shared>, request: Request, data: Vec<u8>) {
        let Request { id, method, params, .. } = request;
        let mut out = ReplyOut::new(id, &self.frames);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| self.call(&method, params, &data, &mut out)));
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

    fn call(
        self: &Arc<Shared>,
        method: &str,
        params: Value,
        data: &[u8],
        out: &mut ReplyOut<'_>,
    ) -> Result<Written, Error> {
        if !data.is_empty() && method != IMPORT_WRITE {
            return Err(Error::InvalidRequest {
                reason: format!("`{}` takes no data after its line", shown(method)),
            });
        }
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
            EXPORT_READ => {
                let chunk = self.exports.read(&read_params(method, params)?)?;
                out.write_data(&chunk).map_err(|e| Error::InvalidRequest {
                    reason: format!("the result of `{method}` cannot be written: {e}"),
                })
            }
            EXPORT_CLOSE => write_result(method, self.exports.close(&read_params(method, params)?), out),
            IMPORT_OPEN => write_result(method, self.uploads.open(read_params(method, params)?), out),
            IMPORT_WRITE => write_result(method, self.uploads.write(&read_params(method, params)?, data), out),
            IMPORT_COMMIT => write_result(
                method,
                self.uploads.commit(&self.studio, &read_params(method, params)?),
                out,
            ),
            IMPORT_CLOSE => write_result(method, self.uploads.close(&read_params(method, params)?), out),
            OTLP_TRACES => {
                let OtlpTraces {
                    session_id,
                    include_output,
                } = read_params(method, params)?;
                write_result(method, self.studio.otlp_traces(&session_id, include_output), out)
            }
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
            if let Some(studio) = studio.upgrade() {
                if let Ok(store) = studio.store() {
                    if let Err(error) = store.as_recorded_change(&mut change) {
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
