//! Runs the studio starts (PROTOCOL.md §1, §3, §4 as behaviour).
//!
//! A [`Supervisor`] owns its live runs. Each run is a child in its own process group with the
//! protocol's environment; two threads read its stdout and stderr as bytes arrive, a third waits
//! for it, and the run's own thread feeds the bytes through the protocol reader, records lines,
//! nodes, logs and spans in the store, and publishes [`RunEvent`]s to subscribers as they happen.
//!
//! Stop writes both stop files at once and keeps them there until the process exits; past the
//! grace period (or on a forced stop) the whole process group gets SIGTERM, then SIGKILL 5 s
//! later; once a stopped run's process has exited, whatever is left of its group is killed.
//! Every signal also goes to the processes below the run's leader (and those seen below it
//! while it was stopping), so a child that left the group with `setsid` is not missed, and
//! none goes anywhere unless the leader is still the process the run started
//! ([`crate::vocabulary::process::ProcessIdentity`]). A kept run's keeper is told of a stop (SIGUSR1) and
//! ends what the agent leaves behind (see [`crate::runs::keeper`]).

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::Signal;
use serde::Serialize;

use crate::protocol::{EventKind, Stream, StreamReader};
use crate::runs::stop::{StopProgress, StopSignal, StopState, Stopping};
use crate::sessions::agents::{expand, Placeholders};
use crate::sessions::cost::OutputUsageReader;
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::store::{Level, NewRun, RunOutcome, SpanKind, Store};
use crate::timeline::{Applied, Exit, RunEnd, StoppedBy, TimelineFold};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::process::ProcessIdentity;

/// Both names every engine era knows between them (PROTOCOL.md §3).
pub const STOP_FILES: [&str; 2] = [".zibby-studio-stop", ".zibby-stop"];
/// CI variables that would replace the session id with a constant (PROTOCOL.md §1).
const CI_ID_VARIABLES: [&str; 4] = ["CI_JOB_ID", "GITHUB_RUN_ID", "CIRCLE_WORKFLOW_ID", "BUILD_ID"];
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);
/// How often a run's thread looks at its stop state, and the longest output waits for the store.
const TICK: Duration = Duration::from_millis(50);

/// How often a followed run looks in the store for a stop another process asked for.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// At a run's end, output that could not be written is tried this many times more, a tick apart;
/// what is still unsaved then is counted in a `run.output_incomplete` log line.
const OUTPUT_RETRIES: usize = 20;
/// After the agent exited, how long to wait for processes it left holding its pipes.
const PIPE_DRAIN: Duration = Duration::from_secs(2);
const EVENT_BUFFER: usize = 65_536;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub workspace: Workspace,
    /// The agent's name, when it is one of the workspace's agents.
    pub agent: Option<String>,
    /// The command, placeholders not yet filled.
    pub command: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    /// Continue (or replay in) this session; a new one otherwise.
    pub session: Option<SessionId>,
    pub prompt: Option<String>,
    /// Replay this node.
    pub node: Option<String>,
    /// How long a graceful stop waits before signals.
    pub grace: Duration,
}

/// What subscribers see of runs, as it happens. `t_ms` is milliseconds since the run started.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    RunStarted {
        run_id: String,
        session_id: String,
        pid: Option<u32>,
    },
    NodeBegin {
        run_id: String,
        node: String,
        depth: usize,
        t_ms: u64,
    },
    NodeEnd {
        run_id: String,
        node: String,
        status: Status,
        t_ms: u64,
    },
    /// A `┌ title` line before the stream's first marker began a node, and the marker showed it
    /// was none: the `node_begin` it was heard as is taken back.
    NodeDiscarded { run_id: String, node: String },
    /// Never sent to the window (it reads output from the store).
    #[cfg_attr(feature = "ts", ts(skip))]
    Output {
        run_id: String,
        stream: Stream,
        line: String,
        t_ms: u64,
    },
    /// A stop was asked for (what it is called is the window's and the CLI's to say).
    Stopping {
        run_id: String,
        forced: bool,
        /// Asked by another process (`zstudio stop`, another studio's window), which does the
        /// stopping.
        elsewhere: bool,
    },
    RunFinished {
        run_id: String,
        session_id: String,
        status: Status,
        exit_code: Option<i32>,
        elapsed_ms: u64,
        stopped_by: Option<StoppedBy>,
        error: Option<String>,
    },
}

impl RunEvent {
    pub fn run_id(&self) -> &str {
        match self {
            RunEvent::RunStarted { run_id, .. }
            | RunEvent::NodeBegin { run_id, .. }
            | RunEvent::NodeDiscarded { run_id, .. }
            | RunEvent::NodeEnd { run_id, .. }
            | RunEvent::Output { run_id, .. }
            | RunEvent::Stopping { run_id, .. }
            | RunEvent::RunFinished { run_id, .. } => run_id,
        }
    }
}

/// A run that was started (or that could not start: then it has already finished, as `error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StartedRun {
    pub run_id: String,
    pub session_id: String,
    pub session_path: PathBuf,
    pub pid: Option<u32>,
}

struct LiveRun {
    session_path: PathBuf,
    /// The leader of the run's process group (the agent, or its keeper) as it was started: no
    /// signal goes anywhere once the process holding its id is not this one.
    leader: Option<ProcessIdentity>,
    /// Processes seen below the leader when it was signalled, to be signalled again later even
    /// if they left the tree (their parent ended).
    seen: Mutex<Vec<ProcessIdentity>>,
    grace: Duration,
    stop: Mutex<StopState>,
    /// Left running: the run's thread stops following it and records nothing more.
    detached: std::sync::atomic::AtomicBool,
    /// The run keeper's folder, when the run goes through one.
    keeper_dir: Option<PathBuf>,
}

impl LiveRun {
    /// Writes both stop files where they are missing, never through a symbolic link (in their
    /// place or on the way to the session folder): the first refusal or failure is the answer.
    fn write_stop_files(&self) -> Result<(), Error> {
        let mut outcome = Ok(());
        for name in STOP_FILES {
            if let Err(error) =
                crate::sessions::private::create_new_in(&self.session_path, name, b"stop requested by Zibby Studio\n")
            {
                if outcome.is_ok() {
                    outcome = Err(error);
                }
            }
        }
        outcome
    }

    /// [`LiveRun::write_stop_files`] again while a stop is pending: a failure is logged.
    fn rewrite_stop_files(&self) {
        if let Err(error) = self.write_stop_files() {
            tracing::warn!(%error, "cannot write a stop file");
        }
    }

    /// Signals the run's processes (its group, and every process below its leader); `false`
    /// when the run's leader is gone and its id is free or someone else's: nothing is sent.
    fn signal(&self, signal: Signal) -> bool {
        let mut seen = self.seen.lock().expect("seen lock");
        self.leader
            .as_ref()
            .is_some_and(|leader| crate::vocabulary::process::signal_run(leader, signal, &mut seen))
    }

    /// Tells the run's keeper (its leader) that a stop was asked for, so that it ends whatever the
    /// agent leaves behind when it exits (SIGUSR1: the agent does not get it).
    fn tell_keeper(&self) {
        if self.keeper_dir.is_some() {
            if let Some(leader) = &self.leader {
                crate::vocabulary::process::signal_process(leader, Signal::SIGUSR1);
            }
        }
    }
}

/// The run keeper (see [`crate::runs::keeper`]): a program that understands
/// `keep --run-dir DIR -- COMMAND...` (`zstudio keep`), and where its run folders go.
#[derive(Debug, Clone)]
pub struct Keeper {
    pub program: PathBuf,
    pub runs_dir: PathBuf,
}

struct Shared {
    store: Arc<Store>,
    keeper: Option<Keeper>,
    shutting_down: std::sync::atomic::AtomicBool,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    subscribers: Mutex<Vec<Subscriber>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    indexer: Mutex<Option<JoinHandle<()>>>,
    /// Wakes the search indexer: output was stored, or the supervisor shuts down.
    index_wanted: Nudge,
    /// Variables of the studio's own environment the agents do not get.
    hidden_variables: Mutex<Vec<String>>,
}

impl Shared {
    fn has_subscribers(&self) -> bool {
        !self.subscribers.lock().expect("subscribers lock").is_empty()
    }

    fn publish(&self, event: RunEvent) {
        self.publish_all(std::iter::once(event));
    }

    /// Sends each event to every subscriber, in order, under one lock: a burst of events wakes a
    /// waiting subscriber once rather than once per event.
    fn publish_all(&self, events: impl Iterator<Item = RunEvent>) {
        let mut subscribers = self.subscribers.lock().expect("subscribers lock");
        if subscribers.is_empty() {
            return;
        }
        let mut gone = vec![false; subscribers.len()];
        for event in events {
            let mut event = Some(event);
            let last = subscribers.len() - 1;
            for (i, subscriber) in subscribers.iter().enumerate() {
                if gone[i] {
                    continue;
                }
                let sent = if i == last { event.take() } else { event.clone() };
                let Some(sent) = sent else { continue };
                if subscriber.lossless {
                    // Waits for the subscriber: its run waits, and so does the agent's next write.
                    if subscriber.sender.send(sent).is_err() {
                        gone[i] = true;
                    }
                    continue;
                }
                match subscriber.sender.try_send(sent) {
                    Ok(()) => {}
                    Err(mpsc::TrySendError::Full(dropped)) => {
                        tracing::warn!(
                            run_id = dropped.run_id(),
                            "a subscriber is behind; an event was dropped"
                        );
                    }
                    Err(mpsc::TrySendError::Disconnected(_)) => gone[i] = true,
                }
            }
        }
        let mut index = 0;
        subscribers.retain(|_| {
            index += 1;
            !gone[index - 1]
        });
    }
}

struct Subscriber {
    sender: SyncSender<RunEvent>,
    /// Waits rather than drops when the subscriber is behind ([`Supervisor::subscribe_lossless`]).
    lossless: bool,
}

/// Owns the runs it starts; dropping it stops them (gracefully, then by force) and waits.
pub struct Supervisor {
    shared: Arc<Shared>,
}

fn millis_since_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A new engine-style session id: `<unix_ms>_<4 base-36 chars>`.
pub fn new_session_id() -> SessionId {
    let uuid = uuid::Uuid::now_v7();
    let mut random = u128::from_be_bytes(*uuid.as_bytes()) as u64;
    let suffix: String = (0..4)
        .map(|_| {
            let digit = (random % 36) as u32;
            random /= 36;
            char::from_digit(digit, 36).expect("below 36")
        })
        .collect();
    SessionId::parse(&format!("{}_{suffix}", millis_since_epoch())).expect("generated ids are valid")
}

impl Supervisor {
    /// Runs the agents directly: they end with the supervisor.
    pub fn new(store: Arc<Store>) -> Supervisor {
        Supervisor::start_with(store, None)
    }

    /// Runs the agents through a run keeper, so that [`Supervisor::detach`] can leave them
    /// running when the studio quits.
    pub fn with_keeper(store: Arc<Store>, keeper: Keeper) -> Supervisor {
        Supervisor::start_with(store, Some(keeper))
    }

    /// The agents started from now on do not get these variables of the studio's environment
    /// (the app sets some for its own window: they are not the agents' business).
    pub fn hide_variables(&self, names: &[&str]) {
        *self.shared.hidden_variables.lock().expect("hidden variables lock") =
            names.iter().map(|name| (*name).to_owned()).collect();
    }

    fn start_with(store: Arc<Store>, keeper: Option<Keeper>) -> Supervisor {
        let shared = Arc::new(Shared {
            store,
            keeper,
            shutting_down: std::sync::atomic::AtomicBool::new(false),
            live: Mutex::new(HashMap::new()),
            subscribers: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            indexer: Mutex::new(None),
            index_wanted: Nudge::default(),
            hidden_variables: Mutex::new(Vec::new()),
        });
        let indexer = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("search-indexer".into())
            .spawn(move || index_behind(&indexer));
        match spawned {
            Ok(thread) => *shared.indexer.lock().expect("indexer lock") = Some(thread),
            Err(error) => tracing::error!(%error, "cannot start the search indexer; search indexes when it is used"),
        }
        Supervisor { shared }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.shared.store
    }

    /// Every event of every run from now on. A subscriber that falls more than 65,536 events
    /// behind loses events (the store loses none): a window never slows a run.
    pub fn subscribe(&self) -> mpsc::Receiver<RunEvent> {
        self.subscribe_with(false)
    }

    /// Every event of every run from now on, none lost: when the subscriber falls behind, its
    /// runs wait for it (and their agents' writes with them), as a pipe to a slow reader does.
    /// For a terminal or a `--json` stream, whose reader must see every line.
    pub fn subscribe_lossless(&self) -> mpsc::Receiver<RunEvent> {
        self.subscribe_with(true)
    }

    fn subscribe_with(&self, lossless: bool) -> mpsc::Receiver<RunEvent> {
        let (sender, receiver) = mpsc::sync_channel(EVENT_BUFFER);
        self.shared
            .subscribers
            .lock()
            .expect("subscribers lock")
            .push(Subscriber { sender, lossless });
        receiver
    }

    /// The ids of the runs still live.
    pub fn live_runs(&self) -> Vec<String> {
        self.shared.live.lock().expect("live lock").keys().cloned().collect()
    }

    /// Starts a run. A command that cannot start is not an error here: it is a run that ended
    /// at once with status `error` and a message saying why.
    pub fn start(&self, request: RunRequest) -> Result<StartedRun, Error> {
        let shared = &self.shared;
        let store = &shared.store;
        let workspace = &request.workspace;
        let session_id = match &request.session {
            Some(id) => id.clone(),
            None => new_session_id(),
        };
        let session_path = workspace.create_session_folder(&session_id)?;
        // A leftover stop file would end this run before its first node.
        for name in STOP_FILES {
            let _ = std::fs::remove_file(session_path.join(name));
        }
        let path_text = session_path.to_string_lossy().into_owned();
        let command = expand(
            &request.command,
            &Placeholders {
                prompt: request.prompt.as_deref().unwrap_or(""),
                session_id: session_id.as_str(),
                session_path: &path_text,
                node: request.node.as_deref().unwrap_or(""),
            },
        );
        let started_at = SystemTime::now();
        let earlier_messages = store.messages(workspace, &session_id)?;
        let run_id = store.run_insert(
            workspace,
            &NewRun {
                session: &session_id,
                agent: request.agent.as_deref(),
                command: &command,
                replayed_node: request.node.as_deref(),
                prompt: request.prompt.as_deref(),
                started_at,
            },
        )?;
        if let Some(prompt) = request.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            store.message_append(workspace, &session_id, "user", prompt, started_at)?;
        }
        let keeper_dir = shared.keeper.as_ref().map(|k| k.runs_dir.join(&run_id));
        // Beside the keeper's files when there is a keeper (removed with them by whichever studio
        // process settles the run), else in the temp folder (removed when the run ends).
        let messages_file = match &keeper_dir {
            Some(dir) => {
                crate::sessions::private::create_dir_all(dir)?;
                dir.join(MESSAGES_FILE)
            }
            None => messages_file(&run_id),
        };
        crate::sessions::private::create_new_file(
            &messages_file,
            &serde_json::to_vec(&earlier_messages).expect("messages serialise"),
        )?;

        let cwd = match &request.cwd {
            Some(dir) if dir.is_absolute() => dir.clone(),
            Some(dir) => workspace.root().join(dir),
            None => workspace.root().to_owned(),
        };
        let program = command.first().cloned().unwrap_or_default();
        let mut child_command = match (&shared.keeper, &keeper_dir) {
            (Some(keeper), Some(dir)) => {
                let mut keep = Command::new(&keeper.program);
                keep.arg("keep").arg("--run-dir").arg(dir).arg("--").args(&command);
                keep
            }
            _ => {
                let mut direct = Command::new(&program);
                direct.args(command.iter().skip(1));
                direct
            }
        };
        child_command
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for variable in CI_ID_VARIABLES {
            child_command.env_remove(variable);
        }
        for variable in shared.hidden_variables.lock().expect("hidden variables lock").iter() {
            child_command.env_remove(variable);
        }
        child_command
            .env("ZIBBY_RUN_SOURCE", "studio")
            .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
            .env("ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS", "1")
            .env("ZIBBY_PIN_SESSION_PATH", "1")
            .env("ZIBBY_SESSION_PATH", &session_path)
            .env("ZIBBY_SESSION_ID", session_id.as_str())
            .env("ZIBBY_NO_DEPRECATION_WARNINGS", "1")
            .env("DOTENV_CONFIG_QUIET", "true")
            .env("ZIBBY_STUDIO_PROMPT", request.prompt.as_deref().unwrap_or(""))
            .env("ZIBBY_STUDIO_MESSAGES", &messages_file)
            .env("ZIBBY_STUDIO_RUN_ID", &run_id);
        for (key, value) in &request.env {
            child_command.env(key, value);
        }

        let spawned = if program.is_empty() {
            Err("cannot start: the command is empty".to_owned())
        } else if !cwd.is_dir() {
            Err(format!(
                "cannot start `{program}`: working folder {} does not exist",
                cwd.display()
            ))
        } else {
            child_command.spawn().map_err(|e| spawn_error(&program, &e))
        };
        let mut child = match spawned {
            Ok(child) => child,
            Err(message) => {
                let _ = std::fs::remove_file(&messages_file);
                let ended_at = SystemTime::now();
                store.run_finish(
                    &run_id,
                    &RunOutcome {
                        status: Status::Error,
                        exit_code: None,
                        error: Some(&message),
                        stopped_by: None,
                        ended_at,
                    },
                )?;
                store.log(
                    workspace,
                    &session_id,
                    Some(&run_id),
                    Level::Error,
                    "run.failed",
                    &message,
                    serde_json::json!({ "command": command }),
                    ended_at,
                )?;
                shared.publish(RunEvent::RunStarted {
                    run_id: run_id.clone(),
                    session_id: session_id.to_string(),
                    pid: None,
                });
                shared.publish(RunEvent::RunFinished {
                    run_id: run_id.clone(),
                    session_id: session_id.to_string(),
                    status: Status::Error,
                    exit_code: None,
                    elapsed_ms: 0,
                    stopped_by: None,
                    error: Some(message),
                });
                return Ok(StartedRun {
                    run_id,
                    session_id: session_id.to_string(),
                    session_path,
                    pid: None,
                });
            }
        };
        let pid = child.id();
        // Not waited for yet: the process with this id is the child, whatever its start time.
        let leader = ProcessIdentity::of(pid);
        // The agent runs from here on: the studio's own trouble recording it (a full disk) is
        // logged, never a reason to drop its pipes (it would die of SIGPIPE) or leave it unfollowed.
        let recorded = store
            .run_set_process(&run_id, pid, pid)
            .and_then(|()| match &keeper_dir {
                Some(dir) => store.run_set_keeper_dir(&run_id, dir),
                None => Ok(()),
            })
            .and_then(|()| {
                store.log(
                    workspace,
                    &session_id,
                    Some(&run_id),
                    Level::Info,
                    "run.started",
                    &format!("started {}", command.join(" ")),
                    serde_json::json!({ "pid": pid, "process_group": pid, "command": command, "session_path": path_text }),
                    started_at,
                )
            });
        if let Err(error) = recorded {
            tracing::error!(%run_id, %error, "cannot record a run's start; following it anyway");
        }
        let live = Arc::new(LiveRun {
            session_path: session_path.clone(),
            leader,
            seen: Mutex::new(Vec::new()),
            grace: request.grace,
            stop: Mutex::new(StopState::default()),
            detached: std::sync::atomic::AtomicBool::new(false),
            keeper_dir: keeper_dir.clone(),
        });
        shared
            .live
            .lock()
            .expect("live lock")
            .insert(run_id.clone(), live.clone());
        shared.publish(RunEvent::RunStarted {
            run_id: run_id.clone(),
            session_id: session_id.to_string(),
            pid: Some(pid),
        });

        let (sender, receiver) = mpsc::sync_channel::<Message>(256);
        let started = Instant::now();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        spawn_reader(Stream::Stdout, stdout, sender.clone(), started);
        spawn_reader(Stream::Stderr, stderr, sender.clone(), started);
        std::thread::Builder::new()
            .name(format!("run-wait-{pid}"))
            .spawn(move || {
                // Seen ended but not reaped: while it is a zombie its id (and its group's) cannot
                // be given to another process, so signals to the group after its exit reach
                // only what is left of the run. The run's thread reaps it.
                let ended = nix::sys::wait::waitid(
                    nix::sys::wait::Id::Pid(nix::unistd::Pid::from_raw(pid as i32)),
                    nix::sys::wait::WaitPidFlag::WEXITED | nix::sys::wait::WaitPidFlag::WNOWAIT,
                );
                if let Err(error) = ended {
                    tracing::warn!(pid, %error, "cannot wait for a run's process without reaping it");
                }
                if let Err(mpsc::SendError(Message::Exited(mut child))) = sender.send(Message::Exited(child)) {
                    // Nobody follows the run any more (it was left running): reap it here.
                    let _ = child.wait();
                }
            })
            .map_err(|e| Error::io_spawn("thread", e))?;

        let context = RunContext {
            shared: shared.clone(),
            live,
            session_id: session_id.clone(),
            run_id: run_id.clone(),
            started,
            started_at,
            messages_file,
        };
        let thread = std::thread::Builder::new()
            .name(format!("run-{pid}"))
            .spawn(move || context.follow(receiver))
            .map_err(|e| Error::io_spawn("thread", e))?;
        shared.threads.lock().expect("threads lock").push(thread);
        Ok(StartedRun {
            run_id,
            session_id: session_id.to_string(),
            session_path,
            pid: Some(pid),
        })
    }

    /// Stops a live run: the stop files now (the current node finishes first); with `force`, or
    /// when a graceful stop was already asked for, SIGTERM to its process group now.
    pub fn stop(&self, run_id: &str, force: bool) -> Result<Stopping, Error> {
        let live = self
            .shared
            .live
            .lock()
            .expect("live lock")
            .get(run_id)
            .cloned()
            .ok_or_else(|| Error::RunNotLive { id: run_id.to_owned() })?;
        let written = live.write_stop_files();
        let mut stop = live.stop.lock().expect("stop lock");
        let mut next = stop.clone();
        let (how, signal) = next.request(force, Instant::now());
        // A graceful stop is the stop files: one that cannot be written is no stop (a forced
        // one goes on to signals).
        if let (Err(error), Stopping::Graceful) = (written, how) {
            return Err(error);
        }
        if !stop.is_requested() {
            live.tell_keeper();
        }
        *stop = next;
        if signal.is_some() {
            live.signal(Signal::SIGTERM);
        }
        drop(stop);
        self.shared.publish(RunEvent::Stopping {
            run_id: run_id.to_owned(),
            forced: how == Stopping::Forced,
            elsewhere: false,
        });
        Ok(how)
    }

    /// Leaves every live run running without this studio: they must go through a keeper (runs
    /// started directly end with their pipes and are stopped instead). The store marks them
    /// detached; a later studio shows their true state ([`reconcile`]) and can stop them.
    pub fn detach(&self) -> Vec<String> {
        let live: Vec<(String, Arc<LiveRun>)> = self.shared.live.lock().expect("live lock").drain().collect();
        let mut detached = Vec::new();
        for (run_id, run) in live {
            if run.keeper_dir.is_none() {
                self.shared.live.lock().expect("live lock").insert(run_id, run);
                continue;
            }
            run.detached.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Err(error) = self.shared.store.run_detach(&run_id) {
                tracing::error!(%run_id, %error, "cannot record a detached run");
            }
            detached.push(run_id);
        }
        detached
    }

    /// Stops every live run (gracefully; past their grace, by force) and waits for them all.
    pub fn shutdown(&self) {
        for run_id in self.live_runs() {
            let _ = self.stop(&run_id, false);
        }
        let threads: Vec<_> = self.shared.threads.lock().expect("threads lock").drain(..).collect();
        for thread in threads {
            let _ = thread.join();
        }
        self.shared
            .shutting_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.shared.index_wanted.nudge();
        if let Some(indexer) = self.shared.indexer.lock().expect("indexer lock").take() {
            let _ = indexer.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A wake-up call that is kept until it is heard (a nudge while nobody waits is not lost).
#[derive(Default)]
struct Nudge {
    given: Mutex<bool>,
    heard: std::sync::Condvar,
}

impl Nudge {
    fn nudge(&self) {
        *self.given.lock().expect("nudge lock") = true;
        self.heard.notify_one();
    }

    /// Blocks until nudged (at once if nudged since the last wait).
    fn wait(&self) {
        let mut given = self.given.lock().expect("nudge lock");
        while !*given {
            given = self.heard.wait(given).expect("nudge lock");
        }
        *given = false;
    }
}

/// Indexes stored output behind the runs, a few blocks at a time with a pause between, so that
/// a run's writes never wait long for it and a flood keeps the CPU for itself (the index
/// catches up afterwards; a search catches it up at once). With nothing left to index it sleeps
/// until a run stores output (an idle studio wakes for nothing).
fn index_behind(shared: &Shared) {
    while !shared.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
        match shared.store.index_pending(4) {
            Ok(0) => shared.index_wanted.wait(),
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => {
                tracing::error!(%error, "search indexing failed; it is retried");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

fn exit_of(kept: crate::runs::keeper::KeptExit) -> Exit {
    match kept {
        crate::runs::keeper::KeptExit::Code(code) => Exit::Code(code),
        crate::runs::keeper::KeptExit::Signal(signal) => Exit::Signal(signal),
    }
}

/// Reconciles runs no studio follows: a kept run whose agent has ended is finished from the
/// keeper's files (its output completed in the store, its status from its exit and output), then
/// [`Store::recover`] settles the rest (interrupted, cancelled, or running detached).
pub fn reconcile(store: &Store, now: SystemTime) -> Result<Vec<crate::store::Recovered>, Error> {
    let mut recovered = Vec::new();
    for run in store.detached_kept_runs()? {
        let Some(dir) = run.keeper_dir.clone() else { continue };
        let Some(kept) = crate::runs::keeper::read_exit(&dir) else {
            continue;
        };
        // Every studio process settles what it finds: only the one that claims the run does.
        if !store.claim_run(&run.id, run.owner_pid)? {
            continue;
        }
        let status = finish_from_keeper_files(store, &run, &dir, exit_of(kept), now)?;
        recovered.push(crate::store::Recovered {
            run_id: run.id.clone(),
            session_id: run.session_id.clone(),
            status,
        });
    }
    let dead = store.recover_dead_studios(now)?;
    for run in &dead {
        let _ = std::fs::remove_file(messages_file(&run.run_id));
    }
    recovered.extend(dead);
    Ok(recovered)
}

/// The conversation so far, for the agent (`$ZIBBY_STUDIO_MESSAGES`), 0600: in the keeper's run
/// folder, else (a run without a keeper) this file of the system's temp folder; removed when the
/// run is settled however it ended.
const MESSAGES_FILE: &str = "messages.json";

fn messages_file(run_id: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zibby-studio-{run_id}-messages.json"))
}

fn finish_from_keeper_files(
    store: &Store,
    run: &crate::store::RunRecord,
    dir: &Path,
    exit: Exit,
    now: SystemTime,
) -> Result<Status, Error> {
    let _ = std::fs::remove_file(messages_file(&run.id));
    let files = [
        (Stream::Stdout, dir.join(crate::runs::keeper::STDOUT_FILE)),
        (Stream::Stderr, dir.join(crate::runs::keeper::STDERR_FILE)),
    ];
    let end = RunEnd {
        exit,
        signalled_by_studio: run.stop_requested == Some(Stopping::Forced),
    };
    // When the agent ended (its keeper wrote `exit` then), not when it was settled.
    let ended_at = std::fs::metadata(dir.join(crate::runs::keeper::EXIT_FILE))
        .and_then(|m| m.modified())
        .unwrap_or(now);
    let timeline = record_captured_output(store, &run.id, &files, Some(end), ended_at)?;
    let stopped_by = timeline.stopped_by.map(StoppedBy::as_str);
    let workspace = Workspace::from_canonical_root(run.workspace.clone());
    let session = SessionId::parse(&run.session_id)?;
    store.log(
        &workspace,
        &session,
        Some(&run.id),
        Level::Info,
        "run.finished",
        &format!(
            "{} while no studio followed it (it had been left running)",
            timeline.status
        ),
        serde_json::json!({ "status": timeline.status, "exit_code": timeline.exit_code, "stopped_by": stopped_by }),
        now,
    )?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(timeline.status)
}

/// Reads a run's captured output files (a missing one is empty) through the reader and the fold,
/// as the studio reads a live run, and records what they hold: each line (after those of its
/// stream the store has already: a run the studio followed for a while), with the node it came
/// in; the node executions as spans; and the run's end by `end` (`None`: it is not known, the
/// output alone tells, else it is `unknown`), at `ended_at`. Used for a run that went on while no
/// studio followed it, and for a captured log imported (`app::share`). Returns the run's timeline.
pub fn record_captured_output(
    store: &Store,
    run_id: &str,
    files: &[(Stream, PathBuf)],
    end: Option<RunEnd>,
    ended_at: SystemTime,
) -> Result<crate::timeline::RunTimeline, Error> {
    let (stored_out, stored_err) = store.output_line_counts(run_id)?;
    let mut fold = TimelineFold::new();
    let mut reader = StreamReader::new();
    let mut seen = (0i64, 0i64);
    let mut usage = OutputUsageReader::new();
    {
        let mut writer = store.output_writer(run_id)?;
        let mut on_event = |event: crate::protocol::Event<'_>, fold: &mut TimelineFold| {
            fold.apply(&event);
            if matches!(event.kind, EventKind::NodeBegin { .. } | EventKind::NodeEnd { .. }) {
                return;
            }
            if event.stream == Stream::Stdout {
                usage.line(fold.current_node(), &event.text);
            }
            // Lines the studio recorded before it let the run go are not recorded twice.
            let (count, stored) = match event.stream {
                Stream::Stdout => (&mut seen.0, stored_out),
                Stream::Stderr => (&mut seen.1, stored_err),
            };
            *count += 1;
            if *count > stored {
                let node = fold.current_node().map(str::to_owned);
                if let Err(error) = writer.append(event.stream, event.at_ms, node.as_deref(), &event.text) {
                    tracing::error!(run_id, %error, "cannot record output");
                }
                // Inside a caller's transaction (an import: all or nothing), written blocks are
                // not kept to be written again: memory stays bounded however long the log.
                writer.batch_committed();
            }
        };
        for (stream, path) in files {
            // A captured log is the user's file: never read through a link, regular files only.
            let mut file = match crate::sessions::untrusted::open_regular(path) {
                Ok((file, _)) => file,
                Err(e) if crate::sessions::untrusted::is_not_found(&e) => continue,
                Err(e) => return Err(e),
            };
            let mut buffer = vec![0u8; 256 * 1024];
            loop {
                let n = file.read(&mut buffer).map_err(|e| Error::io(path, e))?;
                if n == 0 {
                    break;
                }
                reader.push(*stream, &buffer[..n], 0, &mut |e| on_event(e, &mut fold));
            }
        }
        reader.finish(0, &mut |e| on_event(e, &mut fold));
        writer.flush()?;
    }
    store.record_output_usage(run_id, &usage.finish())?;
    let mut timeline = fold.timeline(end);
    if end.is_none() && timeline.status == Status::Running {
        // No exit status, and the output does not say it ended: nothing follows it any more, so
        // it is not running, and how it ended is unknown.
        timeline.status = Status::Unknown;
    }
    record_unfollowed_nodes(store, run_id, &fold, &timeline, ended_at)?;
    let stopped_by = timeline.stopped_by.map(StoppedBy::as_str);
    store.run_finish(
        run_id,
        &RunOutcome {
            status: timeline.status,
            exit_code: timeline.exit_code,
            error: timeline.error.as_deref(),
            stopped_by,
            ended_at,
        },
    )?;
    Ok(timeline)
}

/// The fold's index of each node of its timeline, in order: the fold counts the `┌ title` lines
/// it discarded, the timeline does not.
fn kept_indices(fold: &TimelineFold) -> Vec<usize> {
    (0..)
        .map_while(|i| fold.node(i).map(|n| (i, n)))
        .filter(|(_, n)| !n.is_discarded())
        .map(|(i, _)| i)
        .collect()
}

/// The node executions of a run no studio followed to its end, as spans (its log's `node.begin`
/// / `node.end` lines and the listing read them): the spans recorded while a studio followed it
/// are the timeline's first nodes, in order; those still open are ended with their status, and
/// the nodes after are added. The keeper's files hold no times: a node the studio did not see
/// begin or end is given `at`, the agent's end.
fn record_unfollowed_nodes(
    store: &Store,
    run_id: &str,
    fold: &TimelineFold,
    timeline: &crate::timeline::RunTimeline,
    at: SystemTime,
) -> Result<(), Error> {
    let spans = store.spans(run_id)?;
    let run_span = spans.iter().find(|s| s.kind == SpanKind::Run).map(|s| s.id);
    let mut node_spans: Vec<(i64, bool)> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Node)
        .map(|s| (s.id, s.ended_at.is_some()))
        .collect();
    let kept = kept_indices(fold);
    let position: HashMap<usize, usize> = kept.iter().enumerate().map(|(at, &index)| (index, at)).collect();
    store.batch(|| -> Result<(), Error> {
        for (at_position, node) in timeline.nodes.iter().enumerate() {
            let ended = node.ended_at_ms.is_some() || node.status != Status::Running;
            match node_spans.get(at_position) {
                Some(&(span, false)) if ended => store.span_end(span, node.status, at)?,
                Some(_) => {}
                None => {
                    let parent = fold
                        .parent_of(kept[at_position])
                        .and_then(|p| position.get(&p))
                        .and_then(|&p| node_spans.get(p))
                        .map(|&(span, _)| span)
                        .or(run_span);
                    let span = store.span_start(run_id, parent, &node.name, "node", node.depth, at)?;
                    if ended {
                        store.span_end(span, node.status, at)?;
                    }
                    node_spans.push((span, ended));
                }
            }
        }
        Ok(())
    })?
}

fn spawn_error(program: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!("cannot start `{program}`: command not found"),
        std::io::ErrorKind::PermissionDenied => format!("cannot start `{program}`: not executable (permission denied)"),
        _ => format!("cannot start `{program}`: {error}"),
    }
}

enum Message {
    Chunk(Stream, Vec<u8>, u64),
    /// The process ended (not reaped yet: `wait` on it returns at once).
    Exited(std::process::Child),
}

fn spawn_reader(stream: Stream, mut pipe: impl Read + Send + 'static, sender: SyncSender<Message>, started: Instant) {
    let spawned = std::thread::Builder::new()
        .name(format!("run-{}", stream.as_str()))
        .spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        let at = started.elapsed().as_millis() as u64;
                        if sender.send(Message::Chunk(stream, buffer[..n].to_vec(), at)).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!(%error, "cannot start a pipe reader");
    }
}

/// One thing a run's output changes in the store, in the order the lines came.
enum Step {
    /// A `┌ title` line before the first marker was not a node after all.
    Forget(usize),
    /// A node execution began (its index in the timeline, and its parent's).
    NodeBegan {
        index: usize,
        parent: Option<usize>,
        node: String,
        depth: usize,
    },
    NodeEnded {
        index: usize,
        status: Status,
    },
    /// An output line, and the node it belongs to.
    Line {
        stream: Stream,
        at_ms: u64,
        node: Option<String>,
        text: String,
    },
}

/// Records a run's steps: its node spans (a node's log lines are read from its span) and its
/// output blocks.
struct Recorder<'s> {
    store: &'s Store,
    run_id: String,
    writer: crate::store::OutputWriter<'s>,
    run_span: Option<i64>,
    /// The span of each node execution, by its index in the timeline.
    node_spans: HashMap<usize, i64>,
    /// What the nodes print that they used, kept at the run's end.
    usage: OutputUsageReader,
}

impl Recorder<'_> {
    /// Records the steps of one chunk of output in one transaction.
    fn record(&mut self, steps: impl Iterator<Item = Step>) {
        let recorded = self.store.batch(|| {
            for step in steps {
                self.record_step(step);
            }
        });
        match recorded {
            Ok(()) => self.writer.batch_committed(),
            Err(error) => {
                // Its output blocks are written again (a full disk frees up).
                self.writer.batch_failed();
                tracing::error!(run_id = %self.run_id, %error, "cannot record output");
            }
        }
    }

    fn record_step(&mut self, step: Step) {
        let store = self.store;
        match step {
            Step::Forget(index) => {
                if let Some(span) = self.node_spans.remove(&index) {
                    let _ = store.span_forget(span);
                }
            }
            Step::NodeBegan {
                index,
                parent,
                node,
                depth,
            } => {
                let parent = parent.and_then(|p| self.node_spans.get(&p).copied()).or(self.run_span);
                if let Ok(span) = store.span_start(&self.run_id, parent, &node, "node", depth, SystemTime::now()) {
                    self.node_spans.insert(index, span);
                }
            }
            Step::NodeEnded { index, status } => {
                if let Some(span) = self.node_spans.get(&index) {
                    let _ = store.span_end(*span, status, SystemTime::now());
                }
            }
            Step::Line {
                stream,
                at_ms,
                node,
                text,
            } => {
                if stream == Stream::Stdout {
                    self.usage.line(node.as_deref(), &text);
                }
                if let Err(error) = self.writer.append(stream, at_ms, node.as_deref(), &text) {
                    tracing::error!(run_id = %self.run_id, %error, "cannot record output");
                }
            }
        }
    }
}

struct RunContext {
    shared: Arc<Shared>,
    live: Arc<LiveRun>,
    session_id: SessionId,
    run_id: String,
    started: Instant,
    started_at: SystemTime,
    messages_file: PathBuf,
}

impl RunContext {
    fn log(&self, level: Level, event: &str, message: &str, fields: serde_json::Value) {
        let logged = self
            .shared
            .store
            .run_log(&self.run_id, level, event, message, fields, SystemTime::now());
        if let Err(error) = logged {
            tracing::error!(run_id = %self.run_id, %error, "cannot record a log line");
        }
    }

    /// What one line changes, decided before anything of it is recorded: the events its
    /// subscribers hear (node events always; output lines when `publishing`), and the steps that
    /// record it. A node begins or ends on a marker, or (in a stream without markers) on its
    /// `┌` / `└` line.
    fn fold_line(
        &self,
        event: crate::protocol::Event<'_>,
        fold: &mut TimelineFold,
        publishing: bool,
        steps: &mut Vec<Step>,
        heard: &mut Vec<RunEvent>,
    ) {
        let applied = fold.apply(&event);
        // `┌ title` lines an agent printed before the first marker were not nodes after all.
        for index in fold.take_discarded() {
            if let Some(node) = fold.node(index) {
                heard.push(RunEvent::NodeDiscarded {
                    run_id: self.run_id.clone(),
                    node: node.name.clone(),
                });
            }
            steps.push(Step::Forget(index));
        }
        match applied {
            Applied::NodeBegan(index) => {
                let (node, depth) = fold
                    .node(index)
                    .map_or((String::new(), 0), |n| (n.name.clone(), n.depth));
                heard.push(RunEvent::NodeBegin {
                    run_id: self.run_id.clone(),
                    node: node.clone(),
                    depth,
                    t_ms: event.at_ms,
                });
                let parent = fold.parent_of(index);
                steps.push(Step::NodeBegan {
                    index,
                    parent,
                    node,
                    depth,
                });
            }
            Applied::NodeEnded(index) => {
                let (node, status) = fold
                    .node(index)
                    .map_or((String::new(), Status::Unknown), |n| (n.name.clone(), n.status));
                heard.push(RunEvent::NodeEnd {
                    run_id: self.run_id.clone(),
                    node,
                    status,
                    t_ms: event.at_ms,
                });
                steps.push(Step::NodeEnded { index, status });
            }
            Applied::Nothing => {}
        }
        if matches!(event.kind, EventKind::NodeBegin { .. } | EventKind::NodeEnd { .. }) {
            return;
        }
        // A line belongs to the node open when it came; a `└` line that ended one, to that one.
        let node = match applied {
            Applied::NodeEnded(index) => fold.node(index).map(|n| n.name.clone()),
            _ => fold.current_node().map(str::to_owned),
        };
        let text = event.text.into_owned();
        if publishing {
            heard.push(RunEvent::Output {
                run_id: self.run_id.clone(),
                stream: event.stream,
                line: text.clone(),
                t_ms: event.at_ms,
            });
        }
        steps.push(Step::Line {
            stream: event.stream,
            at_ms: event.at_ms,
            node,
            text,
        });
    }

    /// The run's thread: from its first byte to its end.
    fn follow(self, receiver: mpsc::Receiver<Message>) {
        let store = self.shared.store.clone();
        let writer = match store.output_writer(&self.run_id) {
            Ok(writer) => writer,
            Err(error) => {
                tracing::error!(run_id = %self.run_id, %error, "cannot record output");
                return;
            }
        };
        let run_span = store
            .span_start(&self.run_id, None, "run", "run", 0, self.started_at)
            .ok();
        let mut recorder = Recorder {
            store: &store,
            run_id: self.run_id.clone(),
            writer,
            run_span,
            node_spans: HashMap::new(),
            usage: OutputUsageReader::new(),
        };
        let mut reader = StreamReader::new();
        let mut fold = TimelineFold::new();
        let mut exit: Option<(std::process::Child, Instant)> = None;
        let mut last_flush = Instant::now();
        let mut last_stop_check = Instant::now();
        let mut stop_heard: Option<bool> = None;
        let mut steps: Vec<Step> = Vec::new();
        let mut heard: Vec<RunEvent> = Vec::new();

        loop {
            match receiver.recv_timeout(TICK) {
                Ok(Message::Chunk(stream, bytes, at)) => {
                    let publishing = self.shared.has_subscribers();
                    reader.push(stream, &bytes, at, &mut |event| {
                        self.fold_line(event, &mut fold, publishing, &mut steps, &mut heard)
                    });
                    // Subscribers first: recording can wait a moment, the window should not.
                    self.shared.publish_all(heard.drain(..));
                    recorder.record(steps.drain(..));
                }
                Ok(Message::Exited(child)) => {
                    self.after_keeper_died();
                    exit = Some((child, Instant::now()));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if last_flush.elapsed() >= TICK {
                if let Err(error) = recorder.writer.flush() {
                    tracing::error!(run_id = %self.run_id, %error, "cannot record output");
                }
                self.shared.index_wanted.nudge();
                last_flush = Instant::now();
            }
            if self.live.detached.load(std::sync::atomic::Ordering::SeqCst) {
                // Left running: what was read is recorded; the rest is the keeper's to keep.
                let _ = recorder.writer.flush();
                return;
            }
            self.enforce_stop(exit.is_some());
            if last_stop_check.elapsed() >= STOP_CHECK {
                last_stop_check = Instant::now();
                self.hear_stop_from_elsewhere(&mut stop_heard);
            }
            // The agent is gone but something it started still holds its pipes.
            if let Some((_, exited)) = &exit {
                if exited.elapsed() >= PIPE_DRAIN {
                    break;
                }
            }
        }
        // A stop from elsewhere that ended the run between two looks is still heard before its end.
        self.hear_stop_from_elsewhere(&mut stop_heard);
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        reader.finish(elapsed_ms, &mut |event| {
            self.fold_line(event, &mut fold, true, &mut steps, &mut heard)
        });
        self.shared.publish_all(heard.drain(..));
        recorder.record(steps.drain(..));
        let Recorder {
            mut writer,
            run_span,
            node_spans,
            usage,
            ..
        } = recorder;
        if let Err(error) = store.record_output_usage(&self.run_id, &usage.finish()) {
            tracing::error!(run_id = %self.run_id, %error, "cannot record what the nodes used");
        }
        // What could not be written yet gets a few more tries (a full disk may free up).
        for attempt in 0..OUTPUT_RETRIES {
            match writer.flush() {
                Ok(()) => break,
                Err(error) if attempt + 1 == OUTPUT_RETRIES => {
                    tracing::error!(run_id = %self.run_id, %error, "cannot record output")
                }
                Err(_) => std::thread::sleep(TICK),
            }
        }
        let lost = writer.lines_lost() + writer.lines_unsaved();
        drop(writer);
        self.shared.index_wanted.nudge();
        if lost > 0 {
            let message = format!("output incomplete: {lost} lines could not be stored (is the disk full?)");
            self.log(
                Level::Error,
                "run.output_incomplete",
                &message,
                serde_json::json!({ "lines": lost }),
            );
        }
        // Reaped only now, after any signal to what was left of its group.
        let status = exit.and_then(|(mut child, _)| child.wait().ok());
        self.finish(fold, status, elapsed_ms, run_span, &node_spans);
    }

    /// A keeper that ended without recording its agent's exit was killed: its agent dies with it
    /// (see [`crate::runs::keeper`]), and what else is left of the run (its group, still pinned by the
    /// unreaped keeper, and what was seen below it) is ended too rather than left out of reach.
    fn after_keeper_died(&self) {
        let Some(dir) = &self.live.keeper_dir else { return };
        if crate::runs::keeper::read_exit(dir).is_some() {
            return;
        }
        if self.live.signal(Signal::SIGKILL) {
            self.log(
                Level::Warn,
                "run.signalled",
                "the run keeper ended without recording the agent's exit: SIGKILL sent to what is left of the run",
                serde_json::json!({ "signal": "SIGKILL" }),
            );
        }
    }

    /// A stop another process asked for (`zstudio stop`, another studio's window) is in the store:
    /// the run's subscribers hear of it as of a stop asked here (that process does the stopping).
    /// `heard`: whether one was announced already, and whether it was forced.
    fn hear_stop_from_elsewhere(&self, heard: &mut Option<bool>) {
        if heard == &Some(true) || self.live.stop.lock().expect("stop lock").is_requested() {
            return;
        }
        let Ok(run) = self.shared.store.run(&self.run_id) else {
            return;
        };
        let Some(how) = run.stop_requested else { return };
        let forced = how == Stopping::Forced;
        if *heard == Some(forced) {
            return;
        }
        *heard = Some(forced);
        self.shared.publish(RunEvent::Stopping {
            run_id: self.run_id.clone(),
            forced,
            elsewhere: true,
        });
    }

    /// Keeps the stop files present while a stop is pending and escalates past the grace period.
    fn enforce_stop(&self, exited: bool) {
        let mut stop = self.live.stop.lock().expect("stop lock");
        if !stop.is_requested() {
            return;
        }
        if !exited {
            // A nested graph may consume a stop file while the outer run goes on (PROTOCOL.md §3).
            self.live.rewrite_stop_files();
            // What the run has started, for the signal at its exit (they may have left its tree).
            if let Some(leader) = &self.live.leader {
                crate::vocabulary::process::note_run(leader, &mut self.live.seen.lock().expect("seen lock"));
            }
        }
        let Some(signal) = stop.next(Instant::now(), self.live.grace, exited) else {
            return;
        };
        drop(stop);
        self.live.signal(unix_signal(signal));
        // Ending what a run that exited left behind is not worth a line of its own.
        if let Some((message, fields)) = signalled_log(signal, self.live.grace) {
            self.log(Level::Warn, "run.signalled", message, fields);
        }
    }

    fn finish(
        self,
        fold: TimelineFold,
        status: Option<std::process::ExitStatus>,
        elapsed_ms: u64,
        run_span: Option<i64>,
        node_spans: &HashMap<usize, i64>,
    ) {
        use std::os::unix::process::ExitStatusExt;
        let store = &self.shared.store;
        for name in STOP_FILES {
            let _ = std::fs::remove_file(self.live.session_path.join(name));
        }
        let _ = std::fs::remove_file(&self.messages_file);
        let stop = std::mem::take(&mut *self.live.stop.lock().expect("stop lock"));
        // A forced stop asked for by another studio process (`zstudio stop --force`) is recorded.
        let forced_elsewhere = store
            .run(&self.run_id)
            .is_ok_and(|r| r.stop_requested == Some(Stopping::Forced));
        let kept = self.live.keeper_dir.as_deref().and_then(crate::runs::keeper::read_exit);
        let exit = match kept {
            // The keeper knows how the agent itself ended.
            Some(kept) => Some(exit_of(kept)),
            None => status.map(|s| match (s.code(), s.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(signal)) => Exit::Signal(signal),
                (None, None) => Exit::Code(-1),
            }),
        };
        if let Some(dir) = &self.live.keeper_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let timeline = fold.timeline(exit.map(|exit| RunEnd {
            exit,
            signalled_by_studio: stop.signalled() || forced_elsewhere,
        }));
        // The studio lost the process (no exit status): interrupted.
        let run_status = if exit.is_none() {
            Status::Interrupted
        } else {
            timeline.status
        };
        // The nodes the run's end left open end with it, in the trace and in the live stream.
        // (The timeline leaves out discarded `┌ title` lines; the spans are by the fold's index.)
        for (index, node) in kept_indices(&fold).into_iter().zip(&timeline.nodes) {
            if node.ended_at_ms.is_some() {
                continue;
            }
            if let Some(span) = node_spans.get(&index) {
                let _ = store.span_end(*span, node.status, SystemTime::now());
            }
            self.shared.publish(RunEvent::NodeEnd {
                run_id: self.run_id.clone(),
                node: node.name.clone(),
                status: node.status,
                t_ms: elapsed_ms,
            });
        }
        if let Some(span) = run_span {
            let _ = store.span_end(span, run_status, SystemTime::now());
        }
        let stopped_by = timeline.stopped_by.map(|s| match s {
            StoppedBy::Graceful => "graceful",
            StoppedBy::Forced => "forced",
        });
        let recorded = store.run_finish(
            &self.run_id,
            &RunOutcome {
                status: run_status,
                exit_code: timeline.exit_code,
                error: timeline.error.as_deref(),
                stopped_by,
                ended_at: SystemTime::now(),
            },
        );
        if let Err(error) = recorded {
            tracing::error!(run_id = %self.run_id, %error, "cannot record the end of a run");
        }
        let (event, level, message) = match run_status {
            Status::Cancelled => (
                "run.cancelled",
                Level::Warn,
                format!("cancelled ({}) after {elapsed_ms} ms", stopped_by.unwrap_or("graceful")),
            ),
            Status::Error => ("run.failed", Level::Error, timeline.error.clone().unwrap_or_default()),
            Status::Interrupted => (
                "run.interrupted",
                Level::Warn,
                "the run ended by a signal the studio did not send".into(),
            ),
            _ => (
                "run.finished",
                Level::Info,
                format!("{run_status} after {elapsed_ms} ms"),
            ),
        };
        self.log(
            level,
            event,
            &message,
            serde_json::json!({
                "status": run_status,
                "exit_code": timeline.exit_code,
                "elapsed_ms": elapsed_ms,
                "stopped_by": stopped_by,
            }),
        );
        self.shared.live.lock().expect("live lock").remove(&self.run_id);
        self.shared.publish(RunEvent::RunFinished {
            run_id: self.run_id.clone(),
            session_id: self.session_id.to_string(),
            status: run_status,
            exit_code: timeline.exit_code,
            elapsed_ms,
            stopped_by: timeline.stopped_by,
            error: timeline.error,
        });
    }
}

fn unix_signal(signal: StopSignal) -> Signal {
    match signal {
        StopSignal::Sigterm(_) => Signal::SIGTERM,
        StopSignal::Sigkill(_) => Signal::SIGKILL,
    }
}

/// The `run.signalled` log line of an escalation (none for ending what an exited run left).
fn signalled_log(signal: StopSignal, grace: Duration) -> Option<(&'static str, serde_json::Value)> {
    use crate::runs::stop::{KillBecause, TermBecause};
    match signal {
        StopSignal::Sigterm(TermBecause::GraceOver) => Some((
            "grace period over: SIGTERM sent to the run's process group",
            serde_json::json!({ "signal": "SIGTERM", "grace_ms": grace.as_millis() as u64 }),
        )),
        StopSignal::Sigkill(KillBecause::StillRunning) => Some((
            "still running 5 s after SIGTERM: SIGKILL sent to the run's process group",
            serde_json::json!({ "signal": "SIGKILL" }),
        )),
        StopSignal::Sigterm(TermBecause::Forced) | StopSignal::Sigkill(KillBecause::LeaderExited) => None,
    }
}

/// The run's leader as the store recorded it, if the process holding its id is still that one.
/// When it is not (the run's processes are gone; the id may be someone else's now), the run is
/// reconciled (recorded as ended when no live studio owns it) and the answer is an error saying
/// it is not running any more: never a signal.
fn live_leader(store: &Store, run: &crate::store::RunRecord) -> Result<ProcessIdentity, Error> {
    match &run.process_identity {
        Some(leader) if leader.is_current() => Ok(leader.clone()),
        _ => {
            reconcile(store, SystemTime::now())?;
            Err(Error::RunGone {
                id: run.id.clone(),
                pid: run.process_group.unwrap_or(0),
            })
        }
    }
}

fn elsewhere(
    session_path: &Path,
    run: &crate::store::RunRecord,
    leader: ProcessIdentity,
    seen: Vec<ProcessIdentity>,
    grace: Duration,
) -> LiveRun {
    LiveRun {
        session_path: session_path.to_owned(),
        leader: Some(leader),
        seen: Mutex::new(seen),
        grace,
        stop: Mutex::new(StopState::default()),
        detached: std::sync::atomic::AtomicBool::new(false),
        keeper_dir: run.keeper_dir.clone(),
    }
}

/// Stops a run that another studio process supervises, through what the store knows of it:
/// the stop files in its session folder, and with `force` its processes. The owner records how
/// it ended. A run whose recorded leader is not the process holding its id now is not running
/// any more ([`Error::RunGone`]): nothing is written and nothing is signalled.
pub fn stop_elsewhere(store: &Store, run_id: &str, session_path: &Path, force: bool) -> Result<Stopping, Error> {
    let run = store.run(run_id)?;
    if run.status != Status::Running {
        return Err(Error::RunNotLive { id: run_id.to_owned() });
    }
    let live = elsewhere(session_path, &run, live_leader(store, &run)?, Vec::new(), DEFAULT_GRACE);
    let written = live.write_stop_files();
    if let (Err(error), false) = (written, force) {
        return Err(error);
    }
    let how = if force { Stopping::Forced } else { Stopping::Graceful };
    store.run_request_stop(run_id, how)?;
    live.tell_keeper();
    if force && !live.signal(Signal::SIGTERM) {
        return Err(Error::RunGone {
            id: run_id.to_owned(),
            pid: run.process_group.unwrap_or(0),
        });
    }
    Ok(how)
}

/// [`stop_elsewhere`], then waits until the run's processes are gone: the stop files are kept
/// present, SIGTERM goes to them past `grace` (at once with `force`), SIGKILL 5 s after; each
/// signal only while the run's leader is still the process it started.
/// Returns the run as the store has it at the end (its owner, or recovery, records the outcome).
pub fn stop_elsewhere_and_wait(
    store: &Store,
    run_id: &str,
    session_path: &Path,
    force: bool,
    grace: Duration,
    mut progress: impl FnMut(StopProgress),
) -> Result<crate::store::RunRecord, Error> {
    let how = stop_elsewhere(store, run_id, session_path, force)?;
    progress(StopProgress::Asked(how));
    let mut stop = StopState::default();
    // `stop_elsewhere` sent a forced stop's SIGTERM.
    stop.request(force, Instant::now());
    let mut seen = Vec::new();
    loop {
        let run = store.run(run_id)?;
        let leader = run.process_identity.clone().filter(ProcessIdentity::is_current);
        let (Some(leader), Status::Running) = (leader, run.status) else {
            break;
        };
        let live = elsewhere(session_path, &run, leader, std::mem::take(&mut seen), grace);
        live.rewrite_stop_files();
        if let Some(leader) = &live.leader {
            crate::vocabulary::process::note_run(leader, &mut live.seen.lock().expect("seen lock"));
        }
        if let Some(signal) = stop.next(Instant::now(), grace, false) {
            if matches!(signal, StopSignal::Sigterm(_)) {
                store.run_request_stop(run_id, Stopping::Forced)?;
            }
            live.signal(unix_signal(signal));
            progress(StopProgress::Sent(signal));
        }
        seen = std::mem::take(&mut *live.seen.lock().expect("seen lock"));
        std::thread::sleep(Duration::from_millis(100));
    }
    // The owner records the end; a detached run has none, and recovery records it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let run = store.run(run_id)?;
        if run.status != Status::Running {
            for name in STOP_FILES {
                let _ = std::fs::remove_file(session_path.join(name));
            }
            return Ok(run);
        }
        reconcile(store, SystemTime::now())?;
        if Instant::now() >= deadline {
            return store.run(run_id);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
