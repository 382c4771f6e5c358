//! A run followed from its first byte to its end: two threads read the child's stdout and stderr
//! as bytes arrive, a third waits for it, and the run's own thread feeds the bytes through the
//! protocol reader, folds the lines into node executions, records lines, nodes and spans in the
//! store, and publishes [`RunEvent`]s to subscribers as they happen. It looks after the run's stop
//! meanwhile (`stopping`) and records its end (`finish`).

use std::collections::HashMap;
use std::io::Read;
use std::process::Child;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::events::RunEvent;
use super::followed::FollowedRun;
use super::live_run::LiveRun;
use super::request::StartedRun;
use super::shared::Shared;
use super::spawn::PreparedRun;
use crate::protocol::{EventKind, Stream, StreamReader};
use crate::sessions::budget::BudgetWatch;
use crate::sessions::cost::OutputUsageReader;
use crate::status::Status;
use crate::store::{Level, OutputWriter, Store};
use crate::timeline::{Applied, TimelineFold};
use crate::vocabulary::error::Error;
use crate::vocabulary::launch::Budget;

/// How often a run's thread looks at its stop state, and the longest output waits for the store.
const TICK: Duration = Duration::from_millis(50);
/// How often a followed run looks in the store for a stop another process asked for.
const STOP_CHECK: Duration = Duration::from_millis(250);
/// At a run's end, output that could not be written is tried this many times more, a tick apart;
/// what is still unsaved then is counted in a `run.output_incomplete` log line.
const OUTPUT_RETRIES: usize = 20;
/// After the agent exited, how long to wait for processes it left holding its pipes.
const PIPE_DRAIN: Duration = Duration::from_secs(2);

/// What the run's thread hears from the threads around its child (or, for a run adopted, from
/// the thread that reads its keeper's files).
pub(super) enum Message {
    Chunk(Stream, Vec<u8>, u64),
    /// The process ended (not reaped yet: `wait` on it returns at once); `None`: a run adopted,
    /// whose keeper is not this process's child, ended.
    Exited(Option<Child>),
}

/// Where a run adopted from a studio process that is gone is followed on from
/// (`adopted`): its output read so far, and the spans its nodes have in the store.
pub(super) struct Resumed {
    pub(super) reader: StreamReader,
    pub(super) fold: TimelineFold,
    pub(super) usage: OutputUsageReader,
    pub(super) run_span: Option<i64>,
    pub(super) node_spans: HashMap<usize, i64>,
}

impl Resumed {
    /// A run followed from its first byte.
    fn first_byte() -> Resumed {
        Resumed {
            reader: StreamReader::new(),
            fold: TimelineFold::new(),
            usage: OutputUsageReader::new(),
            run_span: None,
            node_spans: HashMap::new(),
        }
    }
}

/// Starts following the spawned `child` of `run`: its pipe readers, the thread that waits for
/// it, and the run's own thread, which the supervisor joins at its shutdown.
pub(super) fn start_following(
    shared: &Arc<Shared>,
    run: PreparedRun,
    live: Arc<LiveRun>,
    mut child: Child,
    budget: Budget,
) -> Result<StartedRun, Error> {
    let pid = child.id();
    let (sender, receiver) = mpsc::sync_channel::<Message>(256);
    let started = Instant::now();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    spawn_reader(Stream::Stdout, stdout, sender.clone(), started);
    spawn_reader(Stream::Stderr, stderr, sender.clone(), started);
    spawn_waiter(child, sender)?;
    let answer = run.started(Some(pid));
    let followed = FollowedRun {
        shared: shared.clone(),
        live,
        session_id: run.session_id,
        run_id: run.run_id,
        started,
        started_at: run.started_at,
        messages_file: run.messages_file,
    };
    let thread = std::thread::Builder::new()
        .name(format!("run-{pid}"))
        .spawn(move || followed.follow(receiver, None, BudgetWatch::new(budget)))
        .map_err(|e| Error::io_spawn("thread", e))?;
    shared.threads.lock().expect("threads lock").push(thread);
    Ok(answer)
}

/// A thread that reads one of the child's pipes as bytes arrive, until its end.
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

/// A thread that waits for the child to end, without reaping it, and hands it to the run's thread.
fn spawn_waiter(child: Child, sender: SyncSender<Message>) -> Result<(), Error> {
    let pid = child.id();
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
            if let Err(mpsc::SendError(Message::Exited(Some(mut child)))) = sender.send(Message::Exited(Some(child))) {
                // Nobody follows the run any more (it was left running): reap it here.
                let _ = child.wait();
            }
        })
        .map_err(|e| Error::io_spawn("thread", e))?;
    Ok(())
}

/// A run left running: what its threads still send is let go (its pipes are read to their end,
/// so its keeper's live copy never blocks), and its process reaped when it ends.
fn reap_when_it_ends(receiver: mpsc::Receiver<Message>) {
    let spawned = std::thread::Builder::new()
        .name("run-left-running".into())
        .spawn(move || {
            for message in receiver {
                if let Message::Exited(Some(mut child)) = message {
                    let _ = child.wait();
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!(%error, "cannot start the thread that reaps a run left running");
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
    /// A line just folded told a node's usage (the budget's nodes begun after it count from
    /// here: [`NodesBegan::after_usage`]).
    UsageRead,
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
    writer: OutputWriter<'s>,
    run_span: Option<i64>,
    /// The span of each node execution, by its index in the timeline.
    node_spans: HashMap<usize, i64>,
    /// What the nodes print that they used, kept at the run's end.
    usage: OutputUsageReader,
    /// The nodes the last chunk began, for the budget ([`FollowedRun::stop_late_nodes`]).
    began: NodesBegan,
}

/// The nodes one chunk of output began: all of them, and those after its last line of usage.
#[derive(Default)]
pub(super) struct NodesBegan {
    pub(super) all: Vec<String>,
    pub(super) after_usage: Vec<String>,
}

impl Recorder<'_> {
    /// Records the steps of one chunk of output in one transaction.
    fn record(&mut self, steps: impl Iterator<Item = Step>) {
        self.began = NodesBegan::default();
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
                self.began.all.push(node.clone());
                self.began.after_usage.push(node);
            }
            Step::UsageRead => self.began.after_usage.clear(),
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
                if let Err(error) = self.writer.append(stream, at_ms, node.as_deref(), &text) {
                    tracing::error!(run_id = %self.run_id, %error, "cannot record output");
                }
            }
        }
    }
}

/// Reads a line of `node`'s into the run's usage, and marks in `steps` that it told usage.
fn read_usage(usage: &mut OutputUsageReader, node: Option<&str>, text: &str, steps: &mut Vec<Step>) {
    let revision = usage.revision();
    usage.line(node, text);
    if usage.revision() != revision {
        steps.push(Step::UsageRead);
    }
}

impl FollowedRun {
    /// What one line changes, decided before anything of it is recorded: the events its
    /// subscribers hear (node events always; output lines when `publishing`), and the steps that
    /// record it. A node begins or ends on a marker, or (in a stream without markers) on its
    /// `┌` / `└` line.
    fn fold_line(
        &self,
        event: crate::protocol::Event<'_>,
        (fold, usage): (&mut TimelineFold, &mut OutputUsageReader),
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
                    execution: index,
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
                    execution: index,
                    depth,
                    t_ms: event.at_ms,
                });
                usage.begin_node(node.as_str());
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
                // Its `└` line (when it ended on one) is its last: read before its usage.
                if !matches!(event.kind, EventKind::NodeEnd { .. }) && event.stream == Stream::Stdout {
                    read_usage(usage, Some(node.as_str()), &event.text, steps);
                }
                let said = usage.end_node(node.as_str()).map(Box::new);
                heard.push(RunEvent::NodeEnd {
                    run_id: self.run_id.clone(),
                    node,
                    execution: index,
                    status,
                    t_ms: event.at_ms,
                    usage: said,
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
            _ => {
                let node = fold.current_node().map(str::to_owned);
                if event.stream == Stream::Stdout {
                    read_usage(usage, node.as_deref(), &event.text, steps);
                }
                node
            }
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

    /// The run's thread: from its first byte (or where `resumed` says) to its end.
    pub(super) fn follow(self, receiver: mpsc::Receiver<Message>, resumed: Option<Resumed>, mut budget: BudgetWatch) {
        let store = self.shared.store.clone();
        let Resumed {
            mut reader,
            mut fold,
            usage,
            run_span,
            node_spans,
        } = resumed.unwrap_or_else(Resumed::first_byte);
        let Some(mut recorder) = self.recorder(&store, run_span, node_spans, usage) else {
            return;
        };
        let mut exit: Option<(Option<Child>, Instant)> = None;
        let mut last_flush = Instant::now();
        let mut last_stop_check = Instant::now();
        let mut stop_heard: Option<bool> = None;
        let mut steps: Vec<Step> = Vec::new();
        let mut heard: Vec<RunEvent> = Vec::new();
        let mut usage_seen = recorder.usage.revision();
        let mut late_stopped = false;

        loop {
            match receiver.recv_timeout(TICK) {
                Ok(Message::Chunk(stream, bytes, at)) => {
                    let publishing = self.shared.wants_output();
                    reader.push(stream, &bytes, at, &mut |event| {
                        self.fold_line(
                            event,
                            (&mut fold, &mut recorder.usage),
                            publishing,
                            &mut steps,
                            &mut heard,
                        )
                    });
                    // Subscribers first: recording can wait a moment, the window should not.
                    self.shared.publish_all(&mut heard);
                    recorder.record(steps.drain(..));
                    let reached_before = self.live.stopped_by_budget.load(Ordering::SeqCst);
                    self.watch_budget(&mut budget, &recorder.usage, &mut usage_seen);
                    self.stop_late_nodes(reached_before, &recorder.began, &mut late_stopped);
                }
                Ok(Message::Exited(child)) => {
                    self.after_keeper_died();
                    exit = Some((child, Instant::now()));
                }
                Err(RecvTimeoutError::Timeout) => {}
                // An adopted run's file reader stops when the run is left running: that is not
                // its end (the check below lets it go).
                Err(RecvTimeoutError::Disconnected) if !self.live.detached.load(Ordering::SeqCst) => break,
                Err(RecvTimeoutError::Disconnected) => {}
            }
            if last_flush.elapsed() >= TICK {
                if let Err(error) = recorder.writer.flush() {
                    tracing::error!(run_id = %self.run_id, %error, "cannot record output");
                }
                self.shared.index_wanted.nudge();
                last_flush = Instant::now();
            }
            if self.live.detached.load(Ordering::SeqCst) {
                // Left running: what was read is recorded; the rest is the keeper's to keep.
                let _ = recorder.writer.flush();
                // Only now does nobody own it: a studio that adopts it counts the lines stored
                // (none is recorded by both).
                if let Err(error) = store.run_detach(&self.run_id) {
                    tracing::error!(run_id = %self.run_id, %error, "cannot record a detached run");
                }
                // The keeper is still this process's child: reaped when it ends, never left a
                // zombie that holds its identity (a stop would take it for the live run).
                if let Some((Some(mut child), _)) = exit {
                    let _ = child.wait();
                }
                reap_when_it_ends(receiver);
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
            self.fold_line(event, (&mut fold, &mut recorder.usage), true, &mut steps, &mut heard)
        });
        self.shared.publish_all(&mut heard);
        recorder.record(steps.drain(..));
        let Recorder {
            writer,
            run_span,
            node_spans,
            usage,
            ..
        } = recorder;
        self.record_the_rest(&store, writer, usage);
        // Reaped only now, after any signal to what was left of its group.
        let status = exit.and_then(|(child, _)| child?.wait().ok());
        self.finish(fold, status, elapsed_ms, run_span, &node_spans);
    }

    /// The recorder of the run's output, and the run's span opened unless it has one (a run
    /// adopted, with its nodes' spans and what they used so far); `None` (traced) when its output
    /// cannot be recorded at all.
    fn recorder<'s>(
        &self,
        store: &'s Store,
        run_span: Option<i64>,
        node_spans: HashMap<usize, i64>,
        usage: OutputUsageReader,
    ) -> Option<Recorder<'s>> {
        let writer = match store.output_writer(&self.run_id) {
            Ok(writer) => writer,
            Err(error) => {
                tracing::error!(run_id = %self.run_id, %error, "cannot record output");
                return None;
            }
        };
        let run_span = run_span.or_else(|| {
            store
                .span_start(&self.run_id, None, "run", "run", 0, self.started_at)
                .ok()
        });
        Some(Recorder {
            store,
            run_id: self.run_id.clone(),
            writer,
            run_span,
            node_spans,
            usage,
            began: NodesBegan::default(),
        })
    }

    /// At the run's end: what the nodes used, and the output not written yet, with a few more
    /// tries (a full disk may free up); what is lost after all is said in the run's log.
    fn record_the_rest(&self, store: &Store, mut writer: OutputWriter<'_>, usage: OutputUsageReader) {
        if let Err(error) = store.record_output_usage(&self.run_id, &usage.finish()) {
            tracing::error!(run_id = %self.run_id, %error, "cannot record what the nodes used");
        }
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
    }
}
