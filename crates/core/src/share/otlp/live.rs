//! Live export: the runs a studio follows sent as they happen, each node's span when the node
//! ends and the run's span when it ends, with the ids `otlp push` gives them (a run pushed
//! later adds no duplicate).
//!
//! A run never waits for it: a thread reads the supervisor's events from a lossy subscription
//! without output lines (`Supervisor::subscribe_to_nodes`: a subscriber that falls behind loses
//! events, the run does not slow), writes each ended node execution's span over the same one
//! (its strings and attribute list reused) and encodes it at once into the request being
//! gathered for its endpoint. A request goes on the queue when it holds a batch of spans, or
//! when the events pause. The queue holds requests ready to send and is bounded by their bytes,
//! not by a count: a flood of node ends (tens of thousands a second) is kept whole until that
//! bound, past which a request's spans are dropped and counted. Another thread sends what waits,
//! a failed request retried with backoff and then dropped and counted. Spans made elsewhere
//! (`zstudio watch`'s, of sessions the studio did not start) go on the same queue
//! ([`LiveExport::send`]). Each run goes to the endpoint its workspace names (a route given at
//! the start). Losses are said in one log line at most once a minute while they go on, and in
//! [`LiveExport::finish`]'s summary, which waits a bounded time for what is left and counts
//! everything not sent: dropped or still queued, owed by a reader (a run or node begun, its end
//! not heard), and the events a reader's subscription lost or it had not read.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use opentelemetry_proto::tonic::trace::v1::Span;
use prost::bytes::Bytes;

use super::map::{fill_node_span, fill_node_span_own, root_span, NodeExecution, NodeSpanCommon, RunTrace, SpanPlace};
use super::names::NameCounts;
use super::push::{post, Endpoint, RequestBody};
use crate::runs::runner::{QueueGauge, RunEvent, RunEvents};
use crate::sessions::cost::NodeUsage;
use crate::sessions::session::Timestamp;
use crate::status::Status;
use crate::vocabulary::said::SaidAtMostEvery;

/// How the live export queues and retries.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    /// The requests waiting to be sent, at most, in bytes (a node's span is a few hundred).
    pub queue_bytes: usize,
    /// Spans in one request, at most.
    pub batch: usize,
    /// A request is queued once its body holds this many bytes or more (protobuf).
    pub batch_bytes: usize,
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
            // 200,000 node executions' spans of a few hundred bytes each.
            queue_bytes: 64 << 20,
            // Fewer, larger requests: each costs the sending threads about as much as 500 spans'
            // bytes; bounded by bytes too, for spans that carry output.
            batch: 4096,
            batch_bytes: 1 << 20,
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
    /// were still queued when [`LiveExport::finish`] stopped waiting; or never made: their node
    /// or run had begun and not ended when the export stopped following it (its end not heard
    /// by then, or lost with the events below).
    pub lost: u64,
    /// Run events the export never followed: its subscription lost them while it was behind the
    /// runs, or they were still unread (or read and not yet followed) when
    /// [`LiveExport::finish`] stopped waiting. The spans
    /// of their nodes are missing (counted in `lost` when their beginning was read) or end
    /// late (an execution whose end was lost ends with its run).
    pub events_missed: u64,
    /// The last error an endpoint gave (it names the endpoint).
    pub last_error: Option<String>,
}

impl LiveSummary {
    /// The one line that says what was lost, when anything was.
    pub fn lost_line(&self) -> Option<String> {
        (self.lost > 0 || self.events_missed > 0).then(|| {
            let missed = match self.events_missed {
                0 => String::new(),
                n => format!("; {n} run events missed (the export fell behind the runs)"),
            };
            format!(
                "OTLP live export: {} spans lost ({} sent){missed}{}",
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
    /// The bytes the queue holds now (its requests' bodies).
    held: AtomicUsize,
    /// Spans owed: begun (a run followed, a node execution begun; a span made elsewhere, given)
    /// and not yet put on the queue.
    owed: AtomicI64,
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
            events_missed: 0,
            last_error: self.last_error.lock().expect("counts lock").clone(),
        }
    }

    /// Lost so far: dropped at the queue or refused (what is queued may still go).
    fn lost_so_far(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst) + self.refused.load(Ordering::SeqCst)
    }
}

/// A request ready to send: where, its body, and how many spans it holds.
struct Queued {
    endpoint: Arc<Endpoint>,
    body: Bytes,
    spans: u64,
}

/// The buffers of requests sent, for requests to be written into (a new buffer of a request's
/// size, over 128 KiB, is new pages each time: about a twentieth of the reader's time went to
/// their faults).
struct SpareBodies {
    kept: Mutex<Vec<Vec<u8>>>,
    /// The largest buffer kept, in bytes (one an oversized request grew is let go).
    largest: usize,
}

impl SpareBodies {
    /// How many are kept: the reader writes one while the sender sends another.
    const KEPT: usize = 2;

    /// Spares of requests of about `batch_bytes` (a request is queued once it holds that many).
    fn new(batch_bytes: usize) -> SpareBodies {
        SpareBodies {
            kept: Mutex::default(),
            largest: batch_bytes.saturating_mul(2),
        }
    }

    /// A spare buffer (empty), or a new one (no room yet).
    fn take(&self) -> Vec<u8> {
        self.kept.lock().expect("spare bodies lock").pop().unwrap_or_default()
    }

    /// `body` was sent: its buffer is kept for another request, if nobody else holds it.
    fn give_back(&self, body: Bytes) {
        let Ok(mut buffer) = body.try_into_mut() else { return };
        if buffer.capacity() > self.largest {
            return;
        }
        buffer.clear();
        let mut spares = self.kept.lock().expect("spare bodies lock");
        if spares.len() < Self::KEPT {
            spares.push(buffer.into());
        }
    }
}

/// The queue's sending end: puts requests on it without waiting, their spans dropped and counted
/// past its bound.
#[derive(Clone)]
struct Queue {
    sender: Sender<Queued>,
    counts: Arc<Counts>,
    spare_bodies: Arc<SpareBodies>,
    limit: usize,
    /// Spans in one request, at most.
    batch: usize,
    /// Bytes in one request's body before it is queued.
    batch_bytes: usize,
}

impl Queue {
    fn put(&self, queued: Queued) {
        let (bytes, spans) = (queued.body.len(), queued.spans);
        let held = self.counts.held.fetch_add(bytes, Ordering::SeqCst) + bytes;
        if held <= self.limit && self.sender.send(queued).is_ok() {
            self.counts.queued.fetch_add(spans, Ordering::SeqCst);
        } else {
            self.counts.held.fetch_sub(bytes, Ordering::SeqCst);
            self.counts.dropped.fetch_add(spans, Ordering::SeqCst);
        }
    }
}

/// A span that ended: a node execution's, to be written, or one made already.
enum Ended<'a> {
    Node {
        run: &'a RunTrace,
        /// The attributes of the run's node spans alike, encoded.
        common: &'a NodeSpanCommon,
        execution: &'a NodeExecution,
        place: &'a SpanPlace,
    },
    Made(&'a Span),
}

/// The requests being gathered, one per endpoint (each kept, with its buffer, for the next),
/// each span written over the same one and encoded into its request as it ends.
struct Requests<'q> {
    queue: &'q Queue,
    /// Each endpoint's request, and since when it gathers (`None`: it holds no span).
    gathering: Vec<(Arc<Endpoint>, RequestBody, Option<Instant>)>,
    /// The span each node execution's is written over.
    slot: Span,
    /// Where each node span is encoded before it is added to its request.
    scratch: Vec<u8>,
}

impl<'q> Requests<'q> {
    fn new(queue: &'q Queue) -> Requests<'q> {
        Requests {
            queue,
            gathering: Vec::new(),
            slot: Span::default(),
            scratch: Vec::new(),
        }
    }

    /// Adds `ended` to `endpoint`'s request, queued once it holds a batch.
    fn add(&mut self, endpoint: &Arc<Endpoint>, ended: Ended) {
        let at = match self
            .gathering
            .iter()
            .position(|(e, _, _)| Arc::ptr_eq(e, endpoint) || **e == **endpoint)
        {
            Some(at) => at,
            None => {
                let body = RequestBody::new(endpoint.protocol);
                self.gathering.push((endpoint.clone(), body, None));
                self.gathering.len() - 1
            }
        };
        let (_, body, since) = &mut self.gathering[at];
        since.get_or_insert_with(Instant::now);
        match ended {
            Ended::Node {
                run,
                common,
                execution,
                place,
            } => {
                let end = execution.ended_at_ms.unwrap_or(execution.started_at_ms);
                if body.encodes_as_added() {
                    fill_node_span_own(&mut self.slot, run, execution, place, end);
                    let (slot, scratch) = (&mut self.slot, &mut self.scratch);
                    let plain = NodeSpanCommon::plain_end(execution, place);
                    body.add_encoded(|out| common.encode_span(slot, plain, scratch, out));
                } else {
                    fill_node_span(&mut self.slot, run, execution, place, end);
                    body.add(&self.slot);
                }
            }
            Ended::Made(span) => body.add(span),
        }
        if body.spans() >= self.queue.batch || body.encoded_len() >= self.queue.batch_bytes {
            self.queue_one(at);
        }
    }

    /// Queues the requests gathering for `linger` or more (all of them with zero).
    fn queue_older_than(&mut self, linger: Duration) {
        for at in 0..self.gathering.len() {
            if self.gathering[at].2.is_some_and(|since| since.elapsed() >= linger) {
                self.queue_one(at);
            }
        }
    }

    fn queue_one(&mut self, at: usize) {
        let (endpoint, body, since) = &mut self.gathering[at];
        *since = None;
        let spans = body.spans() as u64;
        self.queue.put(Queued {
            endpoint: endpoint.clone(),
            body: body.take_with(self.queue.spare_bodies.take()),
            spans,
        });
        // After the queue counted them: read in between, they are counted twice, never missed.
        self.queue.counts.owed.fetch_sub(spans as i64, Ordering::SeqCst);
    }
}

/// Which endpoint a run's spans go to (`None`: the run is not exported), by its run id.
pub type Route = Box<dyn Fn(&str) -> Option<Arc<Endpoint>> + Send>;

/// A thread that follows runs, and what `finish` reads of it if it stops waiting for it.
struct Reader {
    thread: JoinHandle<()>,
    /// Its subscription: the events lost, and those not read yet.
    gauge: QueueGauge,
    /// The events it took off its subscription and has not followed yet.
    in_hand: Arc<AtomicUsize>,
}

/// A live export: its queue, the thread that sends it, and the threads that follow runs.
pub struct LiveExport {
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    queue: Option<Queue>,
    readers: Vec<Reader>,
    sender: Option<JoinHandle<()>>,
}

impl LiveExport {
    /// A queue of spans and the thread that sends them; nothing is followed yet.
    pub fn start(options: LiveOptions) -> LiveExport {
        let counts = Arc::new(Counts::default());
        let (sender, queued) = mpsc::channel::<Queued>();
        let spare_bodies = Arc::new(SpareBodies::new(options.batch_bytes));
        let queue = Queue {
            sender,
            counts: counts.clone(),
            spare_bodies: spare_bodies.clone(),
            limit: options.queue_bytes,
            batch: options.batch,
            batch_bytes: options.batch_bytes,
        };
        let sender = {
            let counts = counts.clone();
            std::thread::Builder::new()
                .name("otlp-live-sender".into())
                .spawn(move || send_spans(&queued, options, &counts, &spare_bodies))
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
    pub fn follow_runs(&mut self, events: RunEvents, route: Route) {
        let Some(queue) = self.queue.clone() else { return };
        let stop = self.stop.clone();
        let gauge = events.gauge();
        let in_hand = Arc::new(AtomicUsize::new(0));
        let held = in_hand.clone();
        let thread = std::thread::Builder::new()
            .name("otlp-live-reader".into())
            .spawn(move || read_events(&events, &route, &queue, &stop, &held))
            .expect("a thread for the live export");
        self.readers.push(Reader { thread, gauge, in_hand });
    }

    /// Puts `spans` on the queue for `endpoint`, without waiting (a full queue loses them,
    /// counted).
    pub fn send(&self, endpoint: &Arc<Endpoint>, spans: &[Span]) {
        if let Some(queue) = &self.queue {
            queue.counts.owed.fetch_add(spans.len() as i64, Ordering::SeqCst);
            let mut requests = Requests::new(queue);
            for span in spans {
                requests.add(endpoint, Ended::Made(span));
            }
            requests.queue_older_than(Duration::ZERO);
        }
    }

    /// Stops reading once the events already there are read, waits for the queue to be sent
    /// (at most `wait` past the last request the endpoint took, 3 times `wait` in all), and says
    /// what was sent and lost: what is still queued then, the spans of the runs and nodes begun
    /// and not ended, and the events a reader lost or had not read by then.
    pub fn finish(mut self, wait: Duration) -> LiveSummary {
        self.stop.store(true, Ordering::SeqCst);
        self.queue = None;
        let began = Instant::now();
        let (mut deadline, mut sent) = (began + wait, self.counts.sent.load(Ordering::SeqCst));
        let readers = std::mem::take(&mut self.readers).into_iter().map(|reader| {
            let Reader { thread, gauge, in_hand } = reader;
            (thread, Some((gauge, in_hand)))
        });
        let mut events_missed = 0;
        for (handle, reader) in readers.chain(self.sender.take().map(|sender| (sender, None))) {
            // Looked at often: a studio's shutdown (a `--remote` command's server) waits here.
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
                // An endpoint that takes requests is waited for, `wait` past the last one it
                // took (3 times `wait` at most); a dead or stalled one for `wait`.
                let now_sent = self.counts.sent.load(Ordering::SeqCst);
                if now_sent > sent {
                    sent = now_sent;
                    deadline = (Instant::now() + wait).min(began + 3 * wait);
                }
            }
            let finished = handle.is_finished();
            if finished {
                let _ = handle.join();
            }
            if let Some((gauge, in_hand)) = reader {
                events_missed += gauge.lost();
                if !finished {
                    events_missed += (gauge.unread() + in_hand.load(Ordering::SeqCst)) as u64;
                }
            }
        }
        let mut summary = self.counts.summary();
        // A reader still reading is read as it stands: what it owes now is said lost.
        summary.lost += self.counts.owed.load(Ordering::SeqCst).max(0) as u64;
        summary.events_missed = events_missed;
        if let Some(line) = summary.lost_line() {
            tracing::warn!("{line}");
        }
        summary
    }
}

/// One run as the reader follows it.
struct Followed {
    trace: RunTrace,
    common: NodeSpanCommon,
    endpoint: Arc<Endpoint>,
    ids: super::ids::RunIds,
    started: Instant,
    /// How many executions of each node name began.
    occurrences: NameCounts,
    /// Open executions, outermost first: each by its index in the run's timeline (the events'
    /// `execution`), and where its span sits.
    open: Vec<(usize, NodeExecution, SpanPlace)>,
    /// Executions ended and sent, kept to be written over by those that begin (their names'
    /// room reused: no allocation a node execution).
    spare: Vec<NodeExecution>,
}

impl Followed {
    /// Execution `index`, of `node`, began `t_ms` into the run: its span's place is decided now.
    fn node_began(&mut self, index: usize, node: &str, depth: usize, t_ms: u64) {
        let attempt = self.occurrences.began(node);
        let parent = match self.open.last() {
            Some((_, _, place)) => place.span_id,
            None => self.ids.root_span,
        };
        let place = SpanPlace::of_node(&self.ids, node, attempt, parent);
        let mut name = self.spare.pop().map(|spare| spare.name).unwrap_or_default();
        name.clear();
        name.push_str(node);
        let execution = NodeExecution {
            name,
            parent: None,
            depth: depth as i64,
            status: Status::Running,
            started_at_ms: self.trace.started_at_ms + t_ms,
            ended_at_ms: None,
            usage: None,
            prompt: None,
            output: None,
        };
        self.open.push((index, execution, place));
    }

    /// Execution `index` ended, `t_ms` into the run: its span is sent, and before it those of
    /// the executions inside it that never ended (they end with it). Found by its index, not its
    /// name: the event's strings are not read.
    fn node_ended(
        &mut self,
        index: usize,
        status: Status,
        t_ms: u64,
        usage: Option<&NodeUsage>,
        send: &mut impl FnMut(&Arc<Endpoint>, Ended),
    ) {
        let Some(at) = self.open.iter().rposition(|(open, ..)| *open == index) else {
            return;
        };
        let end = self.trace.started_at_ms + t_ms;
        while self.open.len() > at {
            let (_, mut execution, place) = self.open.pop().expect("open");
            execution.ended_at_ms = Some(end);
            if self.open.len() == at {
                execution.status = status;
                execution.usage = usage.cloned();
            }
            send(
                &self.endpoint,
                Ended::Node {
                    run: &self.trace,
                    common: &self.common,
                    execution: &execution,
                    place: &place,
                },
            );
            self.spare.push(execution);
        }
    }
}

fn now_ms() -> u64 {
    Timestamp::from_system_time(SystemTime::now()).0
}

fn read_events(events: &RunEvents, route: &Route, queue: &Queue, stop: &AtomicBool, in_hand: &AtomicUsize) {
    let mut runs = Runs::default();
    let mut requests = Requests::new(queue);
    // Paused once when nothing waits, before waiting: a flood's events gather meanwhile, and the
    // thread is not woken for each one (a wake-up costs more than the event). The requests
    // gathering for LINGER go on the queue then; all of them once nothing came in the pause.
    let mut paused = false;
    loop {
        // Read as shared: the events' strings are not copied for the export (a run's node names
        // are copied once, as its open executions), and the events of a burst come in one read.
        let heard = match events.try_recv_heard() {
            Ok(heard) => heard,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) if !paused => {
                paused = true;
                requests.queue_older_than(LINGER);
                std::thread::sleep(GATHER);
                continue;
            }
            Err(TryRecvError::Empty) => {
                requests.queue_older_than(Duration::ZERO);
                match events.recv_timeout_heard(Duration::from_millis(50)) {
                    Ok(heard) => heard,
                    Err(RecvTimeoutError::Timeout) if stop.load(Ordering::SeqCst) => break,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        paused = false;
        // Taken off the queue, not yet followed: said missed if `finish` stops waiting meanwhile.
        in_hand.store(heard.len(), Ordering::SeqCst);
        let owed = &queue.counts.owed;
        let mut send = |endpoint: &Arc<Endpoint>, ended: Ended| requests.add(endpoint, ended);
        for event in heard.iter() {
            let began = follow_event(&mut runs, event, route, &mut send);
            if began != 0 {
                owed.fetch_add(began, Ordering::SeqCst);
            }
        }
        in_hand.store(0, Ordering::SeqCst);
    }
    // What is gathered goes; the runs still followed (their ends never heard) stay owed.
    requests.queue_older_than(Duration::ZERO);
}

/// The runs followed (a few at a time: looked through, not hashed, for each event).
#[derive(Default)]
struct Runs(Vec<Followed>);

impl Runs {
    fn get_mut(&mut self, run_id: &str) -> Option<&mut Followed> {
        self.0.iter_mut().find(|run| run.trace.key == run_id)
    }

    fn remove(&mut self, run_id: &str) -> Option<Followed> {
        let at = self.0.iter().position(|run| run.trace.key == run_id)?;
        Some(self.0.swap_remove(at))
    }
}

/// One event of the runs followed: a run that starts is followed (to the endpoint `route`
/// gives it, if any), a node that ends and a run that ends are sent. The spans it began (a run
/// followed, a node execution begun: 1) or took back (a node discarded: -1), to be owed until
/// they are queued.
fn follow_event(
    runs: &mut Runs,
    event: &RunEvent,
    route: &dyn Fn(&str) -> Option<Arc<Endpoint>>,
    send: &mut impl FnMut(&Arc<Endpoint>, Ended),
) -> i64 {
    match event {
        RunEvent::RunStarted { run_id, session_id, .. } => {
            let Some(endpoint) = route(run_id) else { return 0 };
            let trace = RunTrace {
                key: run_id.clone(),
                session_id: session_id.clone(),
                run_id: Some(run_id.clone()),
                started_at_ms: now_ms(),
                ..RunTrace::default()
            };
            let followed = Followed {
                common: NodeSpanCommon::of_run(&trace),
                endpoint,
                ids: super::ids::RunIds::of_run(run_id),
                trace,
                started: Instant::now(),
                occurrences: NameCounts::default(),
                open: Vec::new(),
                spare: Vec::new(),
            };
            // A run started again under the same id (never, but then the new one is followed,
            // and the spans the former owed stay owed: lost).
            runs.remove(run_id);
            runs.0.push(followed);
            1
        }
        RunEvent::NodeBegin {
            run_id,
            node,
            execution,
            depth,
            t_ms,
        } => match runs.get_mut(run_id) {
            Some(run) => {
                run.node_began(*execution, node, *depth, *t_ms);
                1
            }
            None => 0,
        },
        RunEvent::NodeDiscarded { run_id, execution, .. } => {
            let Some(run) = runs.get_mut(run_id) else {
                return 0;
            };
            let Some(open) = run.open.iter().rposition(|(index, ..)| index == execution) else {
                return 0;
            };
            let (_, discarded, _) = run.open.remove(open);
            run.occurrences.discarded(&discarded.name);
            run.spare.push(discarded);
            -1
        }
        RunEvent::NodeEnd {
            run_id,
            execution,
            status,
            t_ms,
            usage,
            ..
        } => {
            if let Some(run) = runs.get_mut(run_id) {
                run.node_ended(*execution, *status, *t_ms, usage.as_deref(), send);
            }
            0
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
            let Some(mut run) = runs.remove(run_id) else {
                return 0;
            };
            let end = run.trace.started_at_ms + (*elapsed_ms).max(run.started.elapsed().as_millis() as u64);
            let trace = &mut run.trace;
            trace.status = Some(*status);
            trace.exit_code = exit_code.map(i64::from);
            trace.stopped_by = stopped_by.map(|s| s.as_str().to_owned());
            trace.error = error.as_deref().map(crate::share::redact_secrets);
            trace.ended_at_ms = Some(end);
            while let Some((_, mut execution, place)) = run.open.pop() {
                execution.ended_at_ms = Some(end);
                execution.status = *status;
                let node = Ended::Node {
                    run: &run.trace,
                    common: &run.common,
                    execution: &execution,
                    place: &place,
                };
                send(&run.endpoint, node);
            }
            send(&run.endpoint, Ended::Made(&root_span(&run.trace, end)));
            0
        }
        // Live spans carry no log events (`otlp push` sends the run's logs, budget.* included).
        RunEvent::Output { .. }
        | RunEvent::Stopping { .. }
        | RunEvent::BudgetWarning { .. }
        | RunEvent::BudgetReached { .. }
        | RunEvent::BudgetUnpriced { .. } => 0,
    }
}

/// How long a request not full gathers spans, at most, while they keep coming.
const LINGER: Duration = Duration::from_millis(50);

/// How long the reader pauses when no event waits, before it waits for one.
const GATHER: Duration = Duration::from_millis(10);

fn send_spans(queued: &Receiver<Queued>, options: LiveOptions, counts: &Counts, spare_bodies: &SpareBodies) {
    // A loss that goes on is said at most once a minute.
    let mut loss = SaidAtMostEvery::new(Duration::from_secs(60));
    while let Ok(Queued { endpoint, body, spans }) = queued.recv() {
        counts.held.fetch_sub(body.len(), Ordering::SeqCst);
        send_batch(&endpoint, &body, spans, options, counts);
        spare_bodies.give_back(body);
        if loss.due(Instant::now(), counts.lost_so_far()).is_some() {
            if let Some(line) = counts.summary().lost_line() {
                tracing::warn!("{line} so far");
            }
        }
    }
}

/// Sends one batch of `count` spans, encoded as `body`, retried with backoff; counted sent, or
/// refused after the last try.
fn send_batch(endpoint: &Endpoint, body: &Bytes, count: u64, options: LiveOptions, counts: &Counts) {
    let mut wait = options.backoff;
    for attempt in 1..=options.attempts {
        match post(endpoint, body.clone(), options.timeout) {
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
    use crate::share::otlp::TracesData;
    use prost::Message;

    fn endpoint(url: &str) -> Endpoint {
        Endpoint {
            url: url.to_owned(),
            protocol: Protocol::HttpProtobuf,
            headers: Vec::new(),
            from: "test".into(),
        }
    }

    fn events(run_id: &str) -> Vec<RunEvent> {
        // Each execution by its index in the run's timeline, as the run's thread gives it.
        let begin = |node: &str, execution, depth, t_ms| RunEvent::NodeBegin {
            run_id: run_id.into(),
            node: node.into(),
            execution,
            depth,
            t_ms,
        };
        let end = |node: &str, execution, status, t_ms| RunEvent::NodeEnd {
            run_id: run_id.into(),
            node: node.into(),
            execution,
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
            begin("plan", 0, 0, 1),
            begin("search", 1, 1, 2),
            end("search", 1, Status::Success, 3),
            begin("search", 2, 1, 4),
            end("search", 2, Status::Success, 5),
            end("plan", 0, Status::Success, 6),
            begin("write", 3, 0, 7),
            end("write", 3, Status::Error, 8),
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

    /// A node's end is matched to its execution by the index the run's timeline gave it, not by
    /// its name: when the beginning of an inner execution of the same name was never heard (a
    /// lossy subscription), its end does not end the outer one.
    #[test]
    fn an_end_ends_its_own_execution_not_another_of_its_name() {
        let mut ended = Vec::new();
        let mut runs = Runs::default();
        let endpoint = Arc::new(endpoint("http://127.0.0.1:9/v1/traces"));
        let route = |_: &str| Some(endpoint.clone());
        let node = |begin: bool, execution, t_ms| {
            let (run_id, node) = ("r".to_owned(), "search".to_owned());
            match begin {
                true => RunEvent::NodeBegin {
                    run_id,
                    node,
                    execution,
                    depth: 0,
                    t_ms,
                },
                false => RunEvent::NodeEnd {
                    run_id,
                    node,
                    execution,
                    status: Status::Success,
                    t_ms,
                    usage: None,
                },
            }
        };
        let started = RunEvent::RunStarted {
            run_id: "r".into(),
            session_id: "s".into(),
            pid: None,
        };
        // Execution 1 (inside 0) began unheard; its end is heard, then 0's.
        for event in [started, node(true, 0, 1), node(false, 1, 5), node(false, 0, 9)] {
            follow_event(&mut runs, &event, &route, &mut |_, sent| {
                if let Ended::Node { execution, place, .. } = sent {
                    ended.push((place.attempt, execution.ended_at_ms));
                }
            });
        }
        let start = runs.0[0].trace.started_at_ms;
        assert_eq!(
            ended,
            vec![(1, Some(start + 9))],
            "execution 0 ends at its own end, once"
        );
    }

    /// The spans sent live are those an export of the same run makes: the same ids, the same
    /// parents.
    #[test]
    fn live_spans_have_the_ids_and_parents_an_export_gives_them() {
        let sent = std::cell::RefCell::new(Vec::new());
        let mut runs = Runs::default();
        let endpoint = Arc::new(endpoint("http://127.0.0.1:9/v1/traces"));
        let route = |_: &str| Some(endpoint.clone());
        let mut send = |_: &Arc<Endpoint>, ended: Ended| {
            sent.borrow_mut().push(match ended {
                Ended::Node {
                    run, execution, place, ..
                } => super::super::map::node_span(run, execution, place, 0),
                Ended::Made(span) => span.clone(),
            })
        };
        for event in events("r1") {
            follow_event(&mut runs, &event, &route, &mut send);
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

    /// Node spans written over the same one, after a run's span with its events and a failed
    /// node with usage, prompt and output, are the spans made anew: nothing of a former stays;
    /// and the request they are gathered in is the message of those spans.
    #[test]
    fn spans_written_over_each_other_are_sent_as_the_spans_made_anew() {
        let run = RunTrace {
            key: "r".into(),
            session_id: "s".into(),
            error: Some("boom".into()),
            logs: vec![crate::share::otlp::LogEvent {
                at_ms: 1,
                event: "run.started".into(),
                level: "info".into(),
                message: "started".into(),
                fields: vec![("pid".into(), "7".into())],
            }],
            ..RunTrace::default()
        };
        let node = |name: &str, status| NodeExecution {
            name: name.into(),
            parent: None,
            depth: 1,
            status,
            started_at_ms: 2,
            ended_at_ms: Some(3),
            usage: None,
            prompt: None,
            output: None,
        };
        let rich = NodeExecution {
            usage: Some(NodeUsage {
                format: studio_protocol::usage::UsageFormat::ClaudeCode,
                tokens: Some(studio_protocol::usage::Tokens {
                    input: 10,
                    output: 20,
                    ..Default::default()
                }),
                models: vec!["claude-x".into()],
                turns: None,
                duration_ms: None,
                cost_usd: Some(0.5),
                cost_source: crate::sessions::cost::CostSource::Reported,
                api_equivalent: false,
                last_attempt_only: false,
                cost_label: String::new(),
                tokens_label: String::new(),
            }),
            prompt: Some("a prompt".into()),
            output: Some("an output".into()),
            ..node("a-long-node-name", Status::Error)
        };
        let plain = node("b", Status::Success);
        let place = SpanPlace::of_node(&super::super::ids::RunIds::of_run("r"), "x", 2, [2; 8]);
        let (sender, queued) = mpsc::channel();
        // The second request is written into a buffer a request sent before left behind.
        let spare_bodies = Arc::new(SpareBodies::new(usize::MAX));
        spare_bodies.give_back(Bytes::from(vec![0xee; 5_000]));
        let queue = Queue {
            sender,
            counts: Arc::new(Counts::default()),
            spare_bodies: spare_bodies.clone(),
            limit: usize::MAX,
            batch: 7,
            batch_bytes: usize::MAX,
        };
        let endpoint = Arc::new(endpoint("http://127.0.0.1:9/v1/traces"));
        let mut requests = Requests::new(&queue);
        let common = NodeSpanCommon::of_run(&run);
        let order = [&rich, &plain, &rich, &plain, &plain, &rich, &plain];
        for (i, execution) in order.into_iter().enumerate() {
            let node = Ended::Node {
                run: &run,
                common: &common,
                execution,
                place: &place,
            };
            requests.add(&endpoint, node);
            if i == 0 {
                requests.add(&endpoint, Ended::Made(&root_span(&run, 9)));
            }
        }
        requests.queue_older_than(Duration::ZERO);
        let made = |execution: &NodeExecution| super::super::map::node_span(&run, execution, &place, 0);
        let mut anew: Vec<Span> = order.into_iter().map(made).collect();
        anew.insert(1, root_span(&run, 9));
        let bodies: Vec<Queued> = queued.try_iter().collect();
        assert_eq!(bodies.iter().map(|q| q.spans).collect::<Vec<_>>(), vec![7, 1]);
        // Byte for byte prost's encoding of the message of those spans, the common attributes
        // of the node spans copied in included.
        let whole = |spans: &[Span]| super::super::map::traces_of_spans(spans.to_vec()).encode_to_vec();
        assert_eq!(bodies[0].body, whole(&anew[..7]));
        assert_eq!(bodies[1].body, whole(&anew[7..]));
        let mut sent = Vec::new();
        for body in bodies {
            let traces = TracesData::decode(body.body).unwrap();
            sent.extend(traces.resource_spans[0].scope_spans[0].spans.clone());
        }
        assert_eq!(sent, anew);
        assert_eq!(anew[0].attributes.len(), 17);
        assert!(
            spare_bodies.kept.lock().unwrap().is_empty(),
            "the spare buffer was used"
        );
    }

    /// A request's buffer is kept for another once nobody else holds its body, at most
    /// [`SpareBodies::KEPT`] of them, empty, none larger than twice a batch.
    #[test]
    fn a_body_sent_leaves_its_buffer_for_the_next_request() {
        let spares = SpareBodies::new(200_000);
        let body = Bytes::from(vec![1u8; 300_000]).slice(10..);
        let held = body.clone();
        spares.give_back(body);
        assert!(spares.kept.lock().unwrap().is_empty(), "still held: not kept");
        drop(spares.take());
        spares.give_back(held);
        spares.give_back(Bytes::from(vec![3u8; 400_001]));
        for _ in 0..SpareBodies::KEPT + 1 {
            spares.give_back(Bytes::from(vec![2u8; 1_000]));
        }
        let kept = std::mem::take(&mut *spares.kept.lock().unwrap());
        assert_eq!(kept.len(), SpareBodies::KEPT);
        assert!(kept.iter().all(Vec::is_empty));
        assert!(kept[0].capacity() >= 300_000, "the body's own buffer, not a copy");
        assert!(kept[1].capacity() < 400_001, "the oversized one let go");
        assert!(spares.take().capacity() == 0, "none left: a new one");
    }

    /// Events a reader's subscription lost while it was behind are said, and the spans of the
    /// runs and nodes begun and never ended with them are counted lost, not left out.
    #[test]
    fn events_lost_by_a_reader_behind_the_runs_are_said_with_the_spans_never_made() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Arc::new(endpoint(&format!("http://{}/v1/traces", dead.local_addr().unwrap())));
        drop(dead);
        let options = LiveOptions {
            attempts: 1,
            backoff: Duration::from_millis(1),
            ..LiveOptions::default()
        };
        // Room for 8 events: r0's first 8 are queued (its run and 3 nodes begun, 2 ended), the
        // rest of r0 and all of r1 lost before the reader reads any.
        let (events_in, events_out) = crate::runs::runner::event_queue(8);
        for event in events("r0").into_iter().chain(events("r1")) {
            let _ = events_in.try_send(event.into());
        }
        drop(events_in);
        let mut export = LiveExport::start(options);
        export.follow_runs(events_out, Box::new(move |_| Some(endpoint.clone())));
        let summary = export.finish(Duration::from_secs(5));
        assert_eq!(summary.events_missed, 12, "{summary:?}");
        // The 3 spans made were refused by the dead endpoint; r0's run span and its open
        // "write" were never made.
        assert_eq!((summary.sent, summary.lost), (0, 3 + 2), "{summary:?}");
        let line = summary.lost_line().unwrap();
        assert!(line.contains("5 spans lost (0 sent); 12 run events missed"), "{line}");
    }

    /// A reader that has not read every event when `finish` stops waiting: the events it had
    /// not read are said missed, and the spans it owed then lost.
    #[test]
    fn a_reader_still_reading_when_finish_stops_waiting_is_counted_as_it_stands() {
        let endpoint = Arc::new(endpoint("http://127.0.0.1:9/v1/traces"));
        let (entered, entered_rx) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let route: Route = Box::new(move |run_id| {
            if run_id == "held" {
                // The reader is held here, in the middle of its events.
                entered.send(()).unwrap();
                let _ = released.recv();
            }
            Some(endpoint.clone())
        });
        let (events_in, events_out) = crate::runs::runner::event_queue(1024);
        let mut export = LiveExport::start(LiveOptions::default());
        export.follow_runs(events_out, route);
        let r0 = events("r0");
        // r0 started and its "plan" begun: 2 spans owed, then the held run and 4 events more.
        for event in r0[..2].iter().cloned().chain(events("held").into_iter().take(5)) {
            assert!(events_in.send(event.into()));
        }
        entered_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let summary = export.finish(Duration::from_millis(100));
        release.send(()).unwrap();
        // The 4 events it had not read and the one in its hands (the held run's start).
        assert_eq!(summary.events_missed, 5, "{summary:?}");
        assert_eq!((summary.sent, summary.lost), (0, 2), "{summary:?}");
    }

    /// An endpoint that takes the connection and never answers: feeding the events never waits,
    /// the queue holds at most its capacity, and what was not sent is counted lost.
    #[test]
    fn a_stalled_endpoint_never_holds_up_the_events_and_loses_what_it_did_not_take() {
        let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Arc::new(endpoint(&format!("http://{}/v1/traces", stalled.local_addr().unwrap())));
        let options = LiveOptions {
            queue_bytes: 3_000,
            batch: 1,
            batch_bytes: usize::MAX,
            attempts: 1,
            backoff: Duration::from_millis(1),
            timeout: Duration::from_millis(300),
        };
        let (events_in, events_out) = crate::runs::runner::event_queue(1024);
        let mut export = LiveExport::start(options);
        export.follow_runs(events_out, Box::new(move |_| Some(endpoint.clone())));
        let fed = Instant::now();
        for run in 0..10 {
            for event in events(&format!("r{run}")) {
                assert!(events_in.send(event.into()));
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
