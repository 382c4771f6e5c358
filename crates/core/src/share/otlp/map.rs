//! One run as OTLP spans: a root span for the run, a child span per node execution nested as
//! the timeline nests them, the GenAI semantic conventions where they apply and the studio's own
//! attributes under `zibby.` (docs/cli.md, "Runs as OpenTelemetry traces").

use std::cell::RefCell;
use std::collections::HashMap;

use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status as SpanStatus, TracesData};

use super::ids;
use crate::sessions::cost::{CostSource, NodeUsage};
use crate::status::Status;

/// The OpenTelemetry service the spans come from.
pub const SERVICE_NAME: &str = "zibby-studio";

/// What a run's trace is made of, as read from the store and the session folder.
#[derive(Debug, Clone, Default)]
pub struct RunTrace {
    /// The run id; a session the studio did not run: its session id.
    pub key: String,
    pub session_id: String,
    pub run_id: Option<String>,
    pub agent: Option<String>,
    /// The first line of its prompt (redacted).
    pub title: Option<String>,
    pub status: Option<Status>,
    pub exit_code: Option<i64>,
    pub stopped_by: Option<String>,
    /// The failure's message (`Error: …` on stderr, or what is known instead).
    pub error: Option<String>,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    /// Its node executions in the order they began.
    pub nodes: Vec<NodeExecution>,
    /// The studio's log lines of the run: `run.started`, `run.cancelled`, `budget.*`, …
    pub logs: Vec<LogEvent>,
}

/// One node execution of a run.
#[derive(Debug, Clone)]
pub struct NodeExecution {
    pub name: String,
    /// The execution it ran inside (an index into [`RunTrace::nodes`]); `None`: the run's graph.
    pub parent: Option<usize>,
    pub depth: i64,
    pub status: Status,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    /// What the node's agent used (given to the last execution of each name: the folder holds
    /// that one's).
    pub usage: Option<NodeUsage>,
    /// Only with `--include-output`: bounded and redacted.
    pub prompt: Option<String>,
    pub output: Option<String>,
}

/// A log line of the run, as a span event of its root span.
#[derive(Debug, Clone)]
pub struct LogEvent {
    pub at_ms: u64,
    pub event: String,
    pub level: String,
    pub message: String,
    /// The line's fields, each as text.
    pub fields: Vec<(String, String)>,
}

/// A span's attributes written in order into a list whose entries are reused: a live export
/// fills the same spans batch after batch, and a key or text already there of the same kind is
/// overwritten, not allocated again. [`Attributes::end`] drops the entries left over.
struct Attributes<'a> {
    list: &'a mut Vec<KeyValue>,
    len: usize,
}

impl<'a> Attributes<'a> {
    fn over(list: &'a mut Vec<KeyValue>) -> Attributes<'a> {
        Attributes { list, len: 0 }
    }

    /// The next entry, keyed `key`: its value to set.
    fn next(&mut self, key: &str) -> &mut Option<AnyValue> {
        if self.len == self.list.len() {
            self.list.push(KeyValue::default());
        }
        let entry = &mut self.list[self.len];
        self.len += 1;
        if entry.key != key {
            entry.key.clear();
            entry.key.push_str(key);
        }
        &mut entry.value
    }

    fn set(&mut self, key: &str, v: any_value::Value) {
        *self.next(key) = Some(AnyValue { value: Some(v) });
    }

    fn text(&mut self, key: &str, v: &str) {
        match self.next(key) {
            Some(AnyValue {
                value: Some(any_value::Value::StringValue(kept)),
            }) => {
                kept.clear();
                kept.push_str(v);
            }
            other => {
                *other = Some(AnyValue {
                    value: Some(any_value::Value::StringValue(v.to_owned())),
                })
            }
        }
    }

    fn int(&mut self, key: &str, v: i64) {
        self.set(key, any_value::Value::IntValue(v));
    }

    fn boolean(&mut self, key: &str, v: bool) {
        self.set(key, any_value::Value::BoolValue(v));
    }

    fn double(&mut self, key: &str, v: f64) {
        self.set(key, any_value::Value::DoubleValue(v));
    }

    fn end(self) {
        self.list.truncate(self.len);
    }
}

/// A new list of attributes, as `write` writes them.
fn attributes_of(write: impl FnOnce(&mut Attributes)) -> Vec<KeyValue> {
    let mut list = Vec::new();
    let mut attributes = Attributes::over(&mut list);
    write(&mut attributes);
    attributes.end();
    list
}

/// `to` made `from`, its allocation kept.
fn overwrite(to: &mut Vec<u8>, from: &[u8]) {
    to.clear();
    to.extend_from_slice(from);
}

fn nanos(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

/// Error for `error`, unset otherwise (OTLP: only instrumentation that knows success sets ok;
/// the studio does, so `success` is ok).
fn span_status(status: Option<Status>, message: Option<&str>) -> Option<SpanStatus> {
    let code = match status? {
        Status::Error => StatusCode::Error,
        Status::Success => StatusCode::Ok,
        _ => StatusCode::Unset,
    };
    Some(SpanStatus {
        message: if code == StatusCode::Error {
            message.unwrap_or("failed").to_owned()
        } else {
            String::new()
        },
        code: code as i32,
    })
}

/// Where a node execution's span sits: its trace, its own id, its parent's, and which execution
/// of its name it is (1-based).
#[derive(Debug, Clone, Copy)]
pub struct SpanPlace {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: [u8; 8],
    pub attempt: u32,
}

impl SpanPlace {
    /// The `attempt`-th execution of node `name` in the run of `ids`, inside `parent_span_id`
    /// (the run's span, or another execution's).
    pub fn of_node(ids: &ids::RunIds, name: &str, attempt: u32, parent_span_id: [u8; 8]) -> SpanPlace {
        SpanPlace {
            trace_id: ids.trace,
            span_id: ids.nodes.span_id(name, attempt),
            parent_span_id,
            attempt,
        }
    }
}

/// The attributes every node span of a run has alike (`gen_ai.operation.name`,
/// `zibby.span.kind`, `zibby.session.id`), encoded once for the run by prost as the span's
/// attribute fields (number 9) they are: a live export copies these bytes into each node span's
/// encoding ([`NodeSpanCommon::encode_span`]) rather than writing and encoding them again. So
/// are the ends of plain node spans (see [`NodeSpanCommon::plain_end`]), encoded by prost the
/// first time they are met.
#[derive(Debug, Default)]
pub(super) struct NodeSpanCommon {
    encoded: Vec<u8>,
    /// By its values, the end of a plain node span's encoding: its status, attempt and depth
    /// attributes and the fields after its attributes. (Looked up once a span: foldhash, not
    /// SipHash; the keys are a few small numbers, not the agent's text.)
    plain_ends: RefCell<HashMap<PlainEnd, Vec<u8>, foldhash::fast::FixedState>>,
}

/// What the end of a plain node span's encoding is made of: the node's status, which execution
/// of its name it is, and its depth.
pub(super) type PlainEnd = (Status, u32, i64);

impl NodeSpanCommon {
    pub(super) fn of_run(run: &RunTrace) -> NodeSpanCommon {
        let mut encoded = Vec::new();
        for attribute in attributes_of(|attributes| node_common_attributes(run, attributes)) {
            prost::encoding::message::encode(ATTRIBUTES_FIELD, &attribute, &mut encoded);
        }
        NodeSpanCommon {
            encoded,
            plain_ends: RefCell::default(),
        }
    }

    /// The end `node`'s span shares with others when it is plain: no usage, prompt, output nor
    /// failure message (its own attributes are then its name, status, attempt and depth), and an
    /// attempt and depth among the few kept (so that the ends kept stay a few).
    pub(super) fn plain_end(node: &NodeExecution, place: &SpanPlace) -> Option<PlainEnd> {
        let plain = node.usage.is_none() && node.prompt.is_none() && node.output.is_none();
        let few = place.attempt <= 8 && (0..=8).contains(&node.depth);
        (plain && few && node.status != Status::Error).then_some((node.status, place.attempt, node.depth))
    }

    /// Appends to `out` the encoding of `span` (as [`fill_node_span_own`] filled it) with the
    /// common attributes first in its list, as a length-delimited message: byte for byte
    /// prost's encoding of the whole span (a test compares them). The span is as it was after.
    /// With `plain` (the span's [`NodeSpanCommon::plain_end`]), what follows its name attribute
    /// is copied as prost encoded it for the first span that ended so, and the span is encoded
    /// straight into `out` (its length is the sum of its parts'); otherwise it is encoded into
    /// `scratch` first and its length taken from there (computing it apart would compute each
    /// attribute's length once more).
    pub(super) fn encode_span(
        &self,
        span: &mut Span,
        plain: Option<PlainEnd>,
        scratch: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) {
        use prost::Message;
        // A span's fields are encoded in the order of their numbers: those before its
        // attributes (1 to 8), its attributes (9), those after (10 to 16).
        let mut after = Span::default();
        swap_from_attributes(span, &mut after);
        match plain.filter(|_| after.attributes.len() == 4) {
            Some(plain) => {
                let mut ends = self.plain_ends.borrow_mut();
                let end = ends.entry(plain).or_insert_with(|| {
                    let mut end = Vec::new();
                    for attribute in &after.attributes[1..] {
                        prost::encoding::message::encode(ATTRIBUTES_FIELD, attribute, &mut end);
                    }
                    let attributes = std::mem::take(&mut after.attributes);
                    after.encode(&mut end).expect("a Vec takes any length");
                    after.attributes = attributes;
                    end
                });
                let name = &after.attributes[0];
                let len = span.encoded_len()
                    + self.encoded.len()
                    + prost::encoding::message::encoded_len(ATTRIBUTES_FIELD, name)
                    + end.len();
                prost::encode_length_delimiter(len, out).expect("a Vec takes any length");
                span.encode(out).expect("a Vec takes any length");
                out.extend_from_slice(&self.encoded);
                prost::encoding::message::encode(ATTRIBUTES_FIELD, name, out);
                out.extend_from_slice(end);
            }
            None => {
                scratch.clear();
                span.encode(scratch).expect("a Vec takes any length");
                scratch.extend_from_slice(&self.encoded);
                after.encode(scratch).expect("a Vec takes any length");
                prost::encode_length_delimiter(scratch.len(), out).expect("a Vec takes any length");
                out.extend_from_slice(scratch);
            }
        }
        swap_from_attributes(span, &mut after);
    }
}

/// Swaps the fields numbered 9 (the attributes) and after between `a` and `b`.
fn swap_from_attributes(a: &mut Span, b: &mut Span) {
    use std::mem::swap;
    swap(&mut a.attributes, &mut b.attributes);
    swap(&mut a.dropped_attributes_count, &mut b.dropped_attributes_count);
    swap(&mut a.events, &mut b.events);
    swap(&mut a.dropped_events_count, &mut b.dropped_events_count);
    swap(&mut a.links, &mut b.links);
    swap(&mut a.dropped_links_count, &mut b.dropped_links_count);
    swap(&mut a.status, &mut b.status);
    swap(&mut a.flags, &mut b.flags);
}

/// The number of a span's `attributes` field.
const ATTRIBUTES_FIELD: u32 = 9;

/// The run's spans: its root span first, then its node executions in the order they began.
/// A span still open ends at `now_ms`.
pub fn run_spans(run: &RunTrace, now_ms: u64) -> Vec<Span> {
    let root = root_span(run, now_ms);
    let run_end = root.end_time_unix_nano / 1_000_000;
    let ids = ids::RunIds::of_run(&run.key);
    // Which execution of its name each node is, counted as the live export counts it.
    let mut occurrences = super::names::NameCounts::default();
    let mut places: Vec<SpanPlace> = Vec::with_capacity(run.nodes.len());
    let mut spans = Vec::with_capacity(run.nodes.len() + 1);
    spans.push(root);
    for node in &run.nodes {
        let occurrence = occurrences.began(&node.name);
        let parent = node.parent.and_then(|p| places.get(p)).map(|p| p.span_id);
        let place = SpanPlace::of_node(&ids, &node.name, occurrence, parent.unwrap_or(ids.root_span));
        places.push(place);
        spans.push(node_span(run, node, &place, run_end));
    }
    spans
}

/// The run's own span: the root of its trace.
pub fn root_span(run: &RunTrace, now_ms: u64) -> Span {
    let run_end = run.ended_at_ms.unwrap_or(now_ms).max(run.started_at_ms);
    Span {
        trace_id: ids::trace_id(&run.key).to_vec(),
        span_id: ids::run_span_id(&run.key).to_vec(),
        name: match &run.agent {
            Some(agent) => format!("invoke_agent {agent}"),
            None => "invoke_agent".to_owned(),
        },
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: nanos(run.started_at_ms),
        end_time_unix_nano: nanos(run_end),
        attributes: run_attributes(run),
        events: run.logs.iter().map(log_event).collect(),
        status: span_status(run.status, run.error.as_deref()),
        ..Span::default()
    }
}

/// The span of an execution of `node` in `run`, at `place`; still open, it ends at `run_end_ms`.
pub fn node_span(run: &RunTrace, node: &NodeExecution, place: &SpanPlace, run_end_ms: u64) -> Span {
    let mut span = Span::default();
    fill_node_span(&mut span, run, node, place, run_end_ms);
    span
}

/// [`node_span`] written over `span`, whatever it held, its allocations reused (a live export
/// fills the same spans batch after batch).
pub fn fill_node_span(span: &mut Span, run: &RunTrace, node: &NodeExecution, place: &SpanPlace, run_end_ms: u64) {
    fill_node_span_with(span, run, node, place, run_end_ms, true);
}

/// [`fill_node_span`] without the attributes every node span of the run has alike (they come
/// first in each span's list): those are encoded once a run ([`NodeSpanCommon`]).
pub(super) fn fill_node_span_own(
    span: &mut Span,
    run: &RunTrace,
    node: &NodeExecution,
    place: &SpanPlace,
    run_end_ms: u64,
) {
    fill_node_span_with(span, run, node, place, run_end_ms, false);
}

fn fill_node_span_with(
    span: &mut Span,
    run: &RunTrace,
    node: &NodeExecution,
    place: &SpanPlace,
    run_end_ms: u64,
    common: bool,
) {
    // Every field named: a field the proto crate adds is not left holding a former span's value.
    let Span {
        trace_id,
        span_id,
        trace_state,
        parent_span_id,
        flags,
        name,
        kind,
        start_time_unix_nano,
        end_time_unix_nano,
        attributes,
        dropped_attributes_count,
        events,
        dropped_events_count,
        links,
        dropped_links_count,
        status,
    } = span;
    let end = node.ended_at_ms.unwrap_or(run_end_ms).max(node.started_at_ms);
    // Only a failed node's span says a message.
    let message = match (&run.error, node.status) {
        (Some(error), Status::Error) => Some(format!("node {} failed: {error}", node.name)),
        (None, Status::Error) => Some(format!("node {} failed", node.name)),
        _ => None,
    };
    overwrite(trace_id, &place.trace_id);
    overwrite(span_id, &place.span_id);
    overwrite(parent_span_id, &place.parent_span_id);
    trace_state.clear();
    *flags = 0;
    name.clear();
    name.push_str("invoke_agent ");
    name.push_str(&node.name);
    *kind = SpanKind::Internal as i32;
    *start_time_unix_nano = nanos(node.started_at_ms);
    *end_time_unix_nano = nanos(end);
    let mut list = Attributes::over(attributes);
    if common {
        node_common_attributes(run, &mut list);
    }
    node_own_attributes(node, place.attempt, list);
    *dropped_attributes_count = 0;
    events.clear();
    *dropped_events_count = 0;
    links.clear();
    *dropped_links_count = 0;
    *status = span_status(Some(node.status), message.as_deref());
}

fn run_attributes(run: &RunTrace) -> Vec<KeyValue> {
    attributes_of(|attributes| {
        attributes.text("gen_ai.operation.name", "invoke_agent");
        attributes.text("zibby.session.id", &run.session_id);
        attributes.text("zibby.span.kind", "run");
        if let Some(agent) = &run.agent {
            attributes.text("gen_ai.agent.name", agent);
        }
        if let Some(run_id) = &run.run_id {
            attributes.text("zibby.run.id", run_id);
        }
        if let Some(title) = &run.title {
            attributes.text("zibby.prompt.first_line", title);
        }
        if let Some(status) = run.status {
            attributes.text("zibby.status", status.as_str());
        }
        if let Some(code) = run.exit_code {
            attributes.int("zibby.exit_code", code);
        }
        if let Some(stopped_by) = &run.stopped_by {
            attributes.text("zibby.stopped_by", stopped_by);
        }
        attributes.int("zibby.node_executions", run.nodes.len() as i64);
    })
}

/// The attributes every node span of `run` has alike, first in each one's list.
fn node_common_attributes(run: &RunTrace, attributes: &mut Attributes) {
    attributes.text("gen_ai.operation.name", "invoke_agent");
    attributes.text("zibby.span.kind", "node");
    attributes.text("zibby.session.id", &run.session_id);
}

/// The attributes of a node span after the common ones: the node execution's own.
fn node_own_attributes(node: &NodeExecution, attempt: u32, mut attributes: Attributes) {
    attributes.text("gen_ai.agent.name", &node.name);
    attributes.text("zibby.node.status", node.status.as_str());
    attributes.int("zibby.node.attempt", i64::from(attempt));
    attributes.int("zibby.node.depth", node.depth);
    if let Some(usage) = &node.usage {
        usage_attributes(usage, &mut attributes);
    }
    if let Some(prompt) = &node.prompt {
        attributes.text("zibby.node.prompt", prompt);
    }
    if let Some(output) = &node.output {
        attributes.text("zibby.node.output", output);
    }
    attributes.end();
}

/// `gen_ai.usage.input_tokens` counts every input token, cached ones included (as the GenAI
/// conventions ask); the cache's part is `zibby.usage.cache_read_tokens` and
/// `zibby.usage.cache_write_tokens`.
fn usage_attributes(usage: &NodeUsage, attributes: &mut Attributes) {
    if let Some(model) = usage.models.first() {
        attributes.text("gen_ai.request.model", model);
    }
    if let Some(tokens) = &usage.tokens {
        let input = tokens.input + tokens.cache_read + tokens.cache_write;
        attributes.int("gen_ai.usage.input_tokens", input as i64);
        attributes.int("gen_ai.usage.output_tokens", tokens.output as i64);
        attributes.int("zibby.usage.cache_read_tokens", tokens.cache_read as i64);
        attributes.int("zibby.usage.cache_write_tokens", tokens.cache_write as i64);
    }
    if let Some(cost) = usage.cost_usd {
        attributes.double("zibby.cost_usd", cost);
    }
    attributes.boolean("zibby.cost.priced", usage.cost_usd.is_some());
    let source = match usage.cost_source {
        CostSource::Reported => "reported",
        CostSource::Estimated => "estimated",
        CostSource::Unknown => "unknown",
    };
    attributes.text("zibby.cost.source", source);
}

fn log_event(log: &LogEvent) -> Event {
    Event {
        time_unix_nano: nanos(log.at_ms),
        name: log.event.clone(),
        attributes: attributes_of(|attributes| {
            attributes.text("zibby.log.level", &log.level);
            attributes.text("zibby.log.message", &log.message);
            for (key, value) in &log.fields {
                attributes.text(&format!("zibby.log.{key}"), value);
            }
        }),
        ..Event::default()
    }
}

/// How many traces and spans a message holds.
pub fn counts(traces: &TracesData) -> (usize, usize) {
    let spans: Vec<_> = traces
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .collect();
    let traces: std::collections::HashSet<&Vec<u8>> = spans.iter().map(|s| &s.trace_id).collect();
    (traces.len(), spans.len())
}

/// Spans as one OTLP message: the studio as the resource (`service.name`), its spans in one
/// scope.
pub fn traces_of_spans(spans: Vec<Span>) -> TracesData {
    TracesData {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: attributes_of(|attributes| attributes.text("service.name", SERVICE_NAME)),
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SERVICE_NAME.to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..InstrumentationScope::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}
