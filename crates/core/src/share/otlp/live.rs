//! Live export: the runs a studio follows sent as they happen, each node's span when the node
//! ends and the run's span when it ends, with the ids `otlp push` gives them (a run pushed
//! later adds no duplicate).
//!
//! A run never waits for it: a thread reads the supervisor's events from a lossy subscription
//! without output lines (`Supervisor::subscribe_to_nodes`: a subscriber that falls behind loses
//! events, the run does not slow) and turns them into spans put on a bounded queue without
//! waiting (a full queue drops the span and counts it); another sends what the queue holds in
//! batches, a failed batch retried with backoff and then dropped and counted. Spans made
//! elsewhere (`zstudio watch`'s, of sessions the studio did not start) go on the same queue
//! ([`LiveExport::send`]). Each run goes to the endpoint its workspace names (a route given at
//! the start). Losses are said in one log line at most once a minute while they go on, and in
//! [`LiveExport::finish`]'s summary, which waits a bounded time for what is left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use opentelemetry_proto::tonic::trace::v1::Span;

use super::map::{node_span, root_span, NodeExecution, RunTrace, SpanPlace};
use super::push::{push, Endpoint};
use crate::runs::runner::RunEvent;
use crate::sessions::cost::NodeUsage;
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
    /// The last error an endpoint gave (it names the endpoint).
    pub last_error: Option<String>,
}

impl LiveSummary {
    /// The one line that says what was lost, when anything was.
    pub fn lost_line(&self) -> Option<String> {
        (self.lost > 0).then(|| {
            format!(
                "OTLP live export: {} spans lost ({} sent){}",
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
    /// Taken off the queue and given up on: every try failed.
    refused: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Counts {
    fn summary(&self) -> LiveSummary {
        let sent = self.sent.load(Ordering::SeqCst);
        let queued = self.queued.load(Ordering::SeqCst);
        LiveSummary {
            sent,
            // Dropped at the queue, and queued but never sent (refused, or still waiting).
            lost: self.dropped.load(Ordering::SeqCst) + queued.saturating_sub(sent),
            last_error: self.last_error.lock().expect("counts lock").clone(),
        }
    }

    /// Lost so far: dropped at the queue or refused (what is queued may still go).
    fn lost_so_far(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst) + self.refused.load(Ordering::SeqCst)
    }
}

/// A span and where it goes.
type Queued = (Arc<Endpoint>, Span);

/// Which endpoint a run's spans go to (`None`: the run is not exported), by its run id.
pub type Route = Box<dyn Fn(&str) -> Option<Arc<Endpoint>> + Send>;

/// A live export: its queue, the thread that sends it, and the threads that follow runs.
pub struct LiveExport {
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    queue: Option<SyncSender<Queued>>,
    readers: Vec<JoinHandle<()>>,
    sender: Option<JoinHandle<()>>,
}

impl LiveExport {
    /// A queue of spans and the thread that sends them; nothing is followed yet.
    pub fn start(options: LiveOptions) -> LiveExport {
        let counts = Arc::new(Counts::default());
        let (queue, queued) = mpsc::sync_channel::<Queued>(options.capacity);
        let sender = {
            let counts = counts.clone();
            std::thread::Builder::new()
                .name("otlp-live-sender".into())
                .spawn(move || send_spans(&queued, options, &counts))
                .expect("a thread for the live export")
        };
        LiveExport {
            stop: Arc::new(AtomicBool::new(false)),
            counts,
            queue: Some(queue),
            readers: Vec::new(),
            sender: Some(sender),
        }
    }

    /// Follows the runs `events` tells of (`Supervisor::subscribe_to_nodes`), each sent where
    /// `route` says.
    pub fn follow_runs(&mut self, events: Receiver<RunEvent>, route: Route) {
        let Some(queue) = self.queue.clone() else { return };
        let (stop, counts) = (self.stop.clone(), self.counts.clone());
        let reader = std::thread::Builder::new()
            .name("otlp-live-reader".into())
            .spawn(move || read_events(&events, &route, &queue, &stop, &counts))
            .expect("a thread for the live export");
        self.readers.push(reader);
    }

    /// Puts `span` on the queue for `endpoint`, without waiting (a full queue loses it, counted).
    pub fn send(&self, endpoint: &Arc<Endpoint>, span: Span) {
        if let Some(queue) = &self.queue {
            enqueue(queue, &self.counts, (endpoint.clone(), span));
        }
    }

    /// Stops reading once the events already there are read, waits at most `wait` for the
    /// queue to be sent, and says what was sent and lost (what is still queued then is lost).
    pub fn finish(mut self, wait: Duration) -> LiveSummary {
        self.stop.store(true, Ordering::SeqCst);
        self.queue = None;
        let deadline = Instant::now() + wait;
        let threads = std::mem::take(&mut self.readers).into_iter().chain(self.sender.take());
        for handle in threads {
            // Looked at often: a studio's shutdown (a `--remote` command's server) waits here.
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
        let summary = self.counts.summary();
        if let Some(line) = summary.lost_line() {
            tracing::warn!("{line}");
        }
        summary
    }
}

fn enqueue(queue: &SyncSender<Queued>, counts: &Counts, queued: Queued) {
    match queue.try_send(queued) {
        Ok(()) => {
            counts.queued.fetch_add(1, Ordering::SeqCst);
        }
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            counts.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// One run as the reader follows it.
struct Followed {
    trace: RunTrace,
    endpoint: Arc<Endpoint>,
    trace_id: Vec<u8>,
    root_span_id: Vec<u8>,
    started: Instant,
    occurrences: HashMap<String, u32>,
    /// Open executions, outermost first, each where its span sits.
    open: Vec<(NodeExecution, SpanPlace)>,
}

impl Followed {
    /// An execution of `node` began, `t_ms` into the run: its span's place is decided now.
    fn node_began(&mut self, run_id: &str, node: String, depth: usize, t_ms: u64) {
        let attempt = match self.occurrences.get_mut(&node) {
            Some(count) => {
                *count += 1;
                *count
            }
            None => {
                self.occurrences.insert(node.clone(), 1);
                1
            }
        };
        let parent = match self.open.last() {
            Some((_, place)) => place.span_id.clone(),
            None => self.root_span_id.clone(),
        };
        let place = SpanPlace::of_node(run_id, &node, attempt, self.trace_id.clone(), parent);
        let execution = NodeExecution {
            name: node,
            parent: None,
            depth: depth as i64,
            status: Status::Running,
            started_at_ms: self.trace.started_at_ms + t_ms,
            ended_at_ms: None,
            usage: None,
            prompt: None,
            output: None,
        };
        self.open.push((execution, place));
    }

    /// The last execution of `node` begun ended, `t_ms` into the run: its span is sent, and
    /// before it those of the executions inside it that never ended (they end with it).
    fn node_ended(
        &mut self,
        node: &str,
        status: Status,
        t_ms: u64,
        mut usage: Option<NodeUsage>,
        send: &impl Fn(Queued),
    ) {
        let Some(at) = self.open.iter().rposition(|(n, _)| n.name == node) else {
            return;
        };
        let end = self.trace.started_at_ms + t_ms;
        while self.open.len() > at {
            let (mut execution, place) = self.open.pop().expect("open");
            execution.ended_at_ms = Some(end);
            if self.open.len() == at {
                execution.status = status;
                execution.usage = usage.take();
            }
            send((self.endpoint.clone(), node_span(&self.trace, &execution, place, end)));
        }
    }
}

fn now_ms() -> u64 {
    Timestamp::from_system_time(SystemTime::now()).0
}

fn read_events(
    events: &Receiver<RunEvent>,
    route: &Route,
    queue: &SyncSender<Queued>,
    stop: &AtomicBool,
    counts: &Counts,
) {
    let mut runs: HashMap<String, Followed> = HashMap::new();
    let send = |queued: Queued| enqueue(queue, counts, queued);
    // Paused once when nothing waits, before waiting: a flood's events gather meanwhile, and the
    // thread is not woken for each one (a wake-up costs more than the event).
    let mut paused = false;
    loop {
        let event = match events.try_recv() {
            Ok(event) => event,
            Err(TryRecvError::Disconnected) => return,
            Err(TryRecvError::Empty) if !paused => {
                paused = true;
                std::thread::sleep(GATHER);
                continue;
            }
            Err(TryRecvError::Empty) => match events.recv_timeout(Duration::from_millis(50)) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) if stop.load(Ordering::SeqCst) => return,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            },
        };
        paused = false;
        if let RunEvent::RunStarted { run_id, .. } = &event {
            let Some(endpoint) = route(run_id) else { continue };
            follow_event(&mut runs, event, Some(endpoint), &send);
        } else {
            follow_event(&mut runs, event, None, &send);
        }
    }
}

/// One event of the runs followed: a run that starts is followed (to `endpoint`), a node that
/// ends and a run that ends are sent.
fn follow_event(
    runs: &mut HashMap<String, Followed>,
    event: RunEvent,
    endpoint: Option<Arc<Endpoint>>,
    send: &impl Fn(Queued),
) {
    match event {
        RunEvent::RunStarted { run_id, session_id, .. } => {
            let Some(endpoint) = endpoint else { return };
            let trace = RunTrace {
                key: run_id.clone(),
                session_id,
                run_id: Some(run_id.clone()),
                started_at_ms: now_ms(),
                ..RunTrace::default()
            };
            let followed = Followed {
                endpoint,
                trace_id: super::ids::trace_id(&run_id).to_vec(),
                root_span_id: super::ids::run_span_id(&run_id).to_vec(),
                trace,
                started: Instant::now(),
                occurrences: HashMap::new(),
                open: Vec::new(),
            };
            runs.insert(run_id, followed);
        }
        RunEvent::NodeBegin {
            run_id,
            node,
            depth,
            t_ms,
        } => {
            if let Some(run) = runs.get_mut(&run_id) {
                run.node_began(&run_id, node, depth, t_ms);
            }
        }
        RunEvent::NodeDiscarded { run_id, node } => {
            let Some(run) = runs.get_mut(&run_id) else { return };
            if let Some(at) = run.open.iter().rposition(|(n, _)| n.name == node) {
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
            usage,
        } => {
            if let Some(run) = runs.get_mut(&run_id) {
                run.node_ended(&node, status, t_ms, usage.map(|u| *u), send);
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
            while let Some((mut execution, place)) = run.open.pop() {
                execution.ended_at_ms = Some(end);
                execution.status = status;
                send((run.endpoint.clone(), node_span(&run.trace, &execution, place, end)));
            }
            send((run.endpoint.clone(), root_span(&run.trace, end)));
        }
        // Live spans carry no log events (`otlp push` sends the run's logs, budget.* included).
        RunEvent::Output { .. }
        | RunEvent::Stopping { .. }
        | RunEvent::BudgetWarning { .. }
        | RunEvent::BudgetReached { .. }
        | RunEvent::BudgetUnpriced { .. } => {}
    }
}

/// How long a batch not full waits for more spans once it has one.
const LINGER: Duration = Duration::from_millis(50);

/// How long the reader pauses when no event waits, before it waits for one.
const GATHER: Duration = Duration::from_millis(10);

/// How often at most a loss that goes on is said in the log.
const LOSS_LINE_EVERY: Duration = Duration::from_secs(60);

fn send_spans(queued: &Receiver<Queued>, options: LiveOptions, counts: &Counts) {
    let mut loss_said: Option<(Instant, u64)> = None;
    while let Ok(first) = queued.recv() {
        // What waits goes at once; a batch not full gathers for LINGER more (fewer, larger
        // requests when nodes end fast), asleep: a span put on the queue meanwhile wakes nobody.
        let mut batch = vec![first];
        batch.extend(queued.try_iter().take(options.batch - 1));
        if batch.len() < options.batch {
            std::thread::sleep(LINGER);
            let room = options.batch - batch.len();
            batch.extend(queued.try_iter().take(room));
        }
        for (endpoint, spans) in by_endpoint(batch) {
            send_batch(&endpoint, spans, options, counts);
        }
        let lost = counts.lost_so_far();
        let said = loss_said.map_or(0, |(_, lost)| lost);
        if lost > said && loss_said.is_none_or(|(at, _)| at.elapsed() >= LOSS_LINE_EVERY) {
            if let Some(line) = counts.summary().lost_line() {
                tracing::warn!("{line} so far");
            }
            loss_said = Some((Instant::now(), lost));
        }
    }
}

/// A batch's spans grouped by where they go (one group, nearly always), in order.
fn by_endpoint(batch: Vec<Queued>) -> Vec<(Arc<Endpoint>, Vec<Span>)> {
    let mut groups: Vec<(Arc<Endpoint>, Vec<Span>)> = Vec::new();
    for (endpoint, span) in batch {
        match groups
            .iter_mut()
            .find(|(e, _)| Arc::ptr_eq(e, &endpoint) || **e == *endpoint)
        {
            Some((_, spans)) => spans.push(span),
            None => groups.push((endpoint, vec![span])),
        }
    }
    groups
}

/// Sends one batch, retried with backoff; counted sent, or refused after the last try.
fn send_batch(endpoint: &Endpoint, spans: Vec<Span>, options: LiveOptions, counts: &Counts) {
    let count = spans.len() as u64;
    let traces = super::map::traces_of_spans(spans);
    let mut wait = options.backoff;
    for attempt in 1..=options.attempts {
        match push(endpoint, &traces, options.timeout) {
            Ok(_) => {
                counts.sent.fetch_add(count, Ordering::SeqCst);
                return;
            }
            Err(error) => {
                *counts.last_error.lock().expect("counts lock") = Some(error.to_string());
                if attempt < options.attempts {
                    std::thread::sleep(wait);
                    wait *= 2;
                }
            }
        }
    }
    counts.refused.fetch_add(count, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::otlp::push::Protocol;

    fn endpoint(url: &str) -> Endpoint {
        Endpoint {
            url: url.to_owned(),
            protocol: Protocol::HttpProtobuf,
            headers: Vec::new(),
            from: "test".into(),
        }
    }

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
            usage: None,
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
        let endpoint = Arc::new(endpoint("http://127.0.0.1:9/v1/traces"));
        for event in events("r1") {
            follow_event(&mut runs, event, Some(endpoint.clone()), &|(_, span)| {
                sent.borrow_mut().push(span)
            });
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
        let endpoint = Arc::new(endpoint(&format!("http://{}/v1/traces", stalled.local_addr().unwrap())));
        let options = LiveOptions {
            capacity: 3,
            batch: 1,
            attempts: 1,
            backoff: Duration::from_millis(1),
            timeout: Duration::from_millis(300),
        };
        let (events_in, events_out) = mpsc::sync_channel(1024);
        let mut export = LiveExport::start(options);
        export.follow_runs(events_out, Box::new(move |_| Some(endpoint.clone())));
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
