//! Live export: the runs a studio follows sent as they happen, each node's span when the node
//! ends and the run's span when it ends, with the ids `otlp push` gives them (a run pushed
//! later adds no duplicate).
//!
//! Two threads, so a run never waits: one reads the supervisor's events from a lossy
//! subscription (a subscriber that falls behind loses events, the run does not slow) and turns
//! them into spans put on a bounded queue without waiting (a full queue drops the span and
//! counts it); the other sends what the queue holds in batches, a failed batch retried with
//! backoff and then dropped and counted. [`LiveExport::finish`] waits a bounded time for what
//! is left and says how many spans were lost, and why, in one line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use opentelemetry_proto::tonic::trace::v1::Span;

use super::map::{node_span, root_span, NodeExecution, RunTrace};
use super::push::{push, Endpoint};
use crate::runs::runner::RunEvent;
use crate::sessions::session::Timestamp;
use crate::status::Status;

/// How the live export queues and retries.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    /// Spans waiting to be sent, at most.
    pub capacity: usize,
    /// Spans in one request, at most.
    pub batch: usize,
    /// Tries per batch, the first included.
    pub attempts: u32,
    /// The wait before the second try, doubled for each one after.
    pub backoff: Duration,
    /// One request's limit.
    pub timeout: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            capacity: 4096,
            batch: 512,
            attempts: 4,
            backoff: Duration::from_millis(250),
            timeout: Duration::from_secs(5),
        }
    }
}

/// What a live export did, by its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveSummary {
    pub sent: u64,
    /// Dropped: the queue was full, or the endpoint did not take them after every try, or they
    /// were still queued when [`LiveExport::finish`] stopped waiting.
    pub lost: u64,
    /// The last error the endpoint gave.
    pub last_error: Option<String>,
}

impl LiveSummary {
    /// The one line that says what was lost, when anything was.
    pub fn lost_line(&self, endpoint: &Endpoint) -> Option<String> {
        (self.lost > 0).then(|| {
            format!(
                "OTLP live export to {}: {} spans lost ({} sent){}",
                endpoint.url,
                self.lost,
                self.sent,
                self.last_error
                    .as_deref()
                    .map(|e| format!("; last error: {e}"))
                    .unwrap_or_default()
            )
        })
    }
}

#[derive(Default)]
struct Counts {
    /// Put on the queue.
    queued: AtomicU64,
    /// Not put on the queue: it was full.
    dropped: AtomicU64,
    sent: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// A live export running beside a supervisor.
pub struct LiveExport {
    endpoint: Endpoint,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    reader: Option<JoinHandle<()>>,
    sender: Option<JoinHandle<()>>,
}

impl LiveExport {
    /// Starts reading `events` (a lossy subscription: `Supervisor::subscribe`) and sending to
    /// `endpoint`.
    pub fn start(endpoint: Endpoint, events: Receiver<RunEvent>, options: LiveOptions) -> LiveExport {
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (queue, queued) = mpsc::sync_channel::<Span>(options.capacity);
        let reader = {
            let (stop, counts) = (stop.clone(), counts.clone());
            std::thread::Builder::new()
                .name("otlp-live-reader".into())
                .spawn(move || read_events(&events, &queue, &stop, &counts))
                .expect("a thread for the live export")
        };
        let sender = {
            let (endpoint, counts) = (endpoint.clone(), counts.clone());
            std::thread::Builder::new()
                .name("otlp-live-sender".into())
                .spawn(move || send_spans(&endpoint, &queued, options, &counts))
                .expect("a thread for the live export")
        };
        LiveExport {
            endpoint,
            stop,
            counts,
            reader: Some(reader),
            sender: Some(sender),
        }
    }

    /// Stops reading once the events already there are read, waits at most `wait` for the
    /// queue to be sent, and says what was sent and lost (what is still queued then is lost).
    pub fn finish(mut self, wait: Duration) -> LiveSummary {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + wait;
        for handle in [self.reader.take(), self.sender.take()].into_iter().flatten() {
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
        let sent = self.counts.sent.load(Ordering::SeqCst);
        let queued = self.counts.queued.load(Ordering::SeqCst);
        let summary = LiveSummary {
            sent,
            // Dropped at the queue, and queued but never sent (refused, or still waiting).
            lost: self.counts.dropped.load(Ordering::SeqCst) + queued.saturating_sub(sent),
            last_error: self.counts.last_error.lock().expect("counts lock").clone(),
        };
        if let Some(line) = summary.lost_line(&self.endpoint) {
            tracing::warn!("{line}");
        }
        summary
    }
}

/// One run as the reader follows it.
struct Followed {
    trace: RunTrace,
    started: Instant,
    occurrences: HashMap<String, u32>,
    /// Open executions, outermost first: the node, its occurrence, its span id.
    open: Vec<(NodeExecution, u32, Vec<u8>)>,
}

fn now_ms() -> u64 {
    Timestamp::from_system_time(SystemTime::now()).0
}

fn read_events(events: &Receiver<RunEvent>, queue: &SyncSender<Span>, stop: &AtomicBool, counts: &Counts) {
    let mut runs: HashMap<String, Followed> = HashMap::new();
    let enqueue = |span: Span| match queue.try_send(span) {
        Ok(()) => {
            counts.queued.fetch_add(1, Ordering::SeqCst);
        }
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            counts.dropped.fetch_add(1, Ordering::SeqCst);
        }
    };
    loop {
        let event = match events.recv_timeout(Duration::from_millis(50)) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) if stop.load(Ordering::SeqCst) => return,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        follow_event(&mut runs, event, &enqueue);
    }
}

fn follow_event(runs: &mut HashMap<String, Followed>, event: RunEvent, enqueue: &impl Fn(Span)) {
    match event {
        RunEvent::RunStarted { run_id, session_id, .. } => {
            let trace = RunTrace {
                key: run_id.clone(),
                session_id,
                run_id: Some(run_id.clone()),
                started_at_ms: now_ms(),
                ..RunTrace::default()
            };
            runs.insert(
                run_id,
                Followed {
                    trace,
                    started: Instant::now(),
                    occurrences: HashMap::new(),
                    open: Vec::new(),
                },
            );
        }
        RunEvent::NodeBegin {
            run_id,
            node,
            depth,
            t_ms,
        } => {
            let Some(run) = runs.get_mut(&run_id) else { return };
            let occurrence = run.occurrences.entry(node.clone()).or_insert(0);
            *occurrence += 1;
            let span_id = super::ids::node_span_id(&run_id, &node, *occurrence).to_vec();
            let execution = NodeExecution {
                name: node,
                parent: None,
                depth: depth as i64,
                status: Status::Running,
                started_at_ms: run.trace.started_at_ms + t_ms,
                ended_at_ms: None,
                usage: None,
                prompt: None,
                output: None,
            };
            let occurrence = *occurrence;
            run.open.push((execution, occurrence, span_id));
        }
        RunEvent::NodeDiscarded { run_id, node } => {
            let Some(run) = runs.get_mut(&run_id) else { return };
            if let Some(at) = run.open.iter().rposition(|(n, _, _)| n.name == node) {
                run.open.remove(at);
                if let Some(count) = run.occurrences.get_mut(&node) {
                    *count = count.saturating_sub(1);
                }
            }
        }
        RunEvent::NodeEnd {
            run_id,
            node,
            status,
            t_ms,
        } => {
            let Some(run) = runs.get_mut(&run_id) else { return };
            let Some(at) = run.open.iter().rposition(|(n, _, _)| n.name == node) else {
                return;
            };
            let end = run.trace.started_at_ms + t_ms;
            // Inner executions that never ended end with it.
            while run.open.len() > at {
                let (mut execution, occurrence, _) = run.open.pop().expect("open");
                execution.ended_at_ms = Some(end);
                if run.open.len() == at {
                    execution.status = status;
                }
                let parent = run.open.last().map(|(_, _, id)| id.clone());
                enqueue(node_span(&run.trace, &execution, occurrence, parent, end));
            }
        }
        RunEvent::RunFinished {
            run_id,
            status,
            exit_code,
            elapsed_ms,
            stopped_by,
            error,
            ..
        } => {
            let Some(mut run) = runs.remove(&run_id) else { return };
            let end = run.trace.started_at_ms + elapsed_ms.max(run.started.elapsed().as_millis() as u64);
            run.trace.status = Some(status);
            run.trace.exit_code = exit_code.map(i64::from);
            run.trace.stopped_by = stopped_by.map(|s| s.as_str().to_owned());
            run.trace.error = error.as_deref().map(crate::share::redact_secrets);
            run.trace.ended_at_ms = Some(end);
            while let Some((mut execution, occurrence, _)) = run.open.pop() {
                execution.ended_at_ms = Some(end);
                execution.status = status;
                let parent = run.open.last().map(|(_, _, id)| id.clone());
                enqueue(node_span(&run.trace, &execution, occurrence, parent, end));
            }
            enqueue(root_span(&run.trace, end));
        }
        // Live spans carry no log events (`otlp push` sends the run's logs, budget.* included).
        RunEvent::Output { .. }
        | RunEvent::Stopping { .. }
        | RunEvent::BudgetWarning { .. }
        | RunEvent::BudgetReached { .. }
        | RunEvent::BudgetUnpriced { .. } => {}
    }
}

/// How long a batch waits for more spans once it has one.
const LINGER: Duration = Duration::from_millis(100);

fn send_spans(endpoint: &Endpoint, queued: &Receiver<Span>, options: LiveOptions, counts: &Counts) {
    while let Ok(first) = queued.recv() {
        // A batch fills for at most LINGER: fewer, larger requests when nodes end fast.
        let mut batch = vec![first];
        let deadline = Instant::now() + LINGER;
        while batch.len() < options.batch {
            match queued.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(span) => batch.push(span),
                Err(_) => break,
            }
        }
        let traces = super::map::traces_of_spans(batch);
        let count = super::map::counts(&traces).1 as u64;
        let mut wait = options.backoff;
        let mut attempt = 1;
        loop {
            match push(endpoint, &traces, options.timeout) {
                Ok(_) => {
                    counts.sent.fetch_add(count, Ordering::SeqCst);
                    break;
                }
                Err(error) => {
                    *counts.last_error.lock().expect("counts lock") = Some(error.to_string());
                    if attempt >= options.attempts {
                        break;
                    }
                    std::thread::sleep(wait);
                    wait *= 2;
                    attempt += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::otlp::push::Protocol;

    fn events(run_id: &str) -> Vec<RunEvent> {
        let begin = |node: &str, depth, t_ms| RunEvent::NodeBegin {
            run_id: run_id.into(),
            node: node.into(),
            depth,
            t_ms,
        };
        let end = |node: &str, status, t_ms| RunEvent::NodeEnd {
            run_id: run_id.into(),
            node: node.into(),
            status,
            t_ms,
        };
        vec![
            RunEvent::RunStarted {
                run_id: run_id.into(),
                session_id: "s".into(),
                pid: None,
            },
            begin("plan", 0, 1),
            begin("search", 1, 2),
            end("search", Status::Success, 3),
            begin("search", 1, 4),
            end("search", Status::Success, 5),
            end("plan", Status::Success, 6),
            begin("write", 0, 7),
            end("write", Status::Error, 8),
            RunEvent::RunFinished {
                run_id: run_id.into(),
                session_id: "s".into(),
                status: Status::Error,
                exit_code: Some(1),
                elapsed_ms: 9,
                stopped_by: None,
                error: Some("boom".into()),
            },
        ]
    }

    /// The spans sent live are those an export of the same run makes: the same ids, the same
    /// parents.
    #[test]
    fn live_spans_have_the_ids_and_parents_an_export_gives_them() {
        let sent = std::cell::RefCell::new(Vec::new());
        let mut runs = HashMap::new();
        for event in events("r1") {
            follow_event(&mut runs, event, &|span| sent.borrow_mut().push(span));
        }
        let live: Vec<(Vec<u8>, Vec<u8>, i32)> = sent
            .into_inner()
            .into_iter()
            .map(|s| (s.span_id, s.parent_span_id, s.status.map_or(0, |st| st.code)))
            .collect();
        let node = |name: &str, parent| NodeExecution {
            name: name.into(),
            parent,
            depth: 0,
            status: if name == "write" {
                Status::Error
            } else {
                Status::Success
            },
            started_at_ms: 0,
            ended_at_ms: Some(1),
            usage: None,
            prompt: None,
            output: None,
        };
        let exported = crate::share::otlp::map::run_spans(
            &RunTrace {
                key: "r1".into(),
                status: Some(Status::Error),
                nodes: vec![
                    node("plan", None),
                    node("search", Some(0)),
                    node("search", Some(0)),
                    node("write", None),
                ],
                ..RunTrace::default()
            },
            0,
        );
        let mut exported: Vec<(Vec<u8>, Vec<u8>, i32)> = exported
            .into_iter()
            .map(|s| (s.span_id, s.parent_span_id, s.status.map_or(0, |st| st.code)))
            .collect();
        let mut live = live;
        // Live, a span is sent when it ends (inner ones first, the run's last); sorted alike.
        live.sort();
        exported.sort();
        assert_eq!(live, exported);
    }

    /// An endpoint that takes the connection and never answers: feeding the events never waits,
    /// the queue holds at most its capacity, and what was not sent is counted lost.
    #[test]
    fn a_stalled_endpoint_never_holds_up_the_events_and_loses_what_it_did_not_take() {
        let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Endpoint {
            url: format!("http://{}/v1/traces", stalled.local_addr().unwrap()),
            protocol: Protocol::HttpProtobuf,
            headers: Vec::new(),
            from: "test".into(),
        };
        let options = LiveOptions {
            capacity: 3,
            batch: 1,
            attempts: 1,
            backoff: Duration::from_millis(1),
            timeout: Duration::from_millis(300),
        };
        let (events_in, events_out) = mpsc::sync_channel(1024);
        let export = LiveExport::start(endpoint, events_out, options);
        let fed = Instant::now();
        for run in 0..10 {
            for event in events(&format!("r{run}")) {
                events_in.send(event).unwrap();
            }
        }
        assert!(
            fed.elapsed() < Duration::from_millis(100),
            "feeding took {:?}",
            fed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
        let finished = Instant::now();
        let summary = export.finish(Duration::from_millis(500));
        assert!(
            finished.elapsed() < Duration::from_secs(2),
            "finish waited {:?}",
            finished.elapsed()
        );
        assert_eq!(summary.sent, 0);
        assert_eq!(
            summary.lost,
            10 * 5,
            "every span of the 10 runs is lost, and said: {summary:?}"
        );
    }
}
