//! One run as OTLP spans: a root span for the run, a child span per node execution nested as
//! the timeline nests them, the GenAI semantic conventions where they apply and the studio's own
//! attributes under `zibby.` (docs/cli.md, "Runs as OpenTelemetry traces").

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

fn value(value: any_value::Value) -> Option<AnyValue> {
    Some(AnyValue { value: Some(value) })
}

fn text(key: &str, v: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value(any_value::Value::StringValue(v.into())),
        ..KeyValue::default()
    }
}

fn int(key: &str, v: i64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value(any_value::Value::IntValue(v)),
        ..KeyValue::default()
    }
}

fn boolean(key: &str, v: bool) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value(any_value::Value::BoolValue(v)),
        ..KeyValue::default()
    }
}

fn double(key: &str, v: f64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value(any_value::Value::DoubleValue(v)),
        ..KeyValue::default()
    }
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
#[derive(Debug, Clone)]
pub struct SpanPlace {
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    pub parent_span_id: Vec<u8>,
    pub attempt: u32,
}

impl SpanPlace {
    /// The `attempt`-th execution of node `name` in the run keyed `key`, in `trace_id`, inside
    /// `parent_span_id` (the run's span, or another execution's).
    pub fn of_node(key: &str, name: &str, attempt: u32, trace_id: Vec<u8>, parent_span_id: Vec<u8>) -> SpanPlace {
        SpanPlace {
            trace_id,
            span_id: ids::node_span_id(key, name, attempt).to_vec(),
            parent_span_id,
            attempt,
        }
    }
}

/// The run's spans: its root span first, then its node executions in the order they began.
/// A span still open ends at `now_ms`.
pub fn run_spans(run: &RunTrace, now_ms: u64) -> Vec<Span> {
    let root = root_span(run, now_ms);
    let run_end = root.end_time_unix_nano / 1_000_000;
    let mut occurrences: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut spans = Vec::with_capacity(run.nodes.len() + 1);
    for node in &run.nodes {
        let occurrence = occurrences.entry(node.name.as_str()).or_insert(0);
        *occurrence += 1;
        let parent = match node.parent {
            Some(p) => spans.get(p).map(|s: &Span| s.span_id.clone()),
            None => None,
        };
        let place = SpanPlace::of_node(
            &run.key,
            &node.name,
            *occurrence,
            root.trace_id.clone(),
            parent.unwrap_or_else(|| root.span_id.clone()),
        );
        spans.push(node_span(run, node, place, run_end));
    }
    spans.insert(0, root);
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
pub fn node_span(run: &RunTrace, node: &NodeExecution, place: SpanPlace, run_end_ms: u64) -> Span {
    let end = node.ended_at_ms.unwrap_or(run_end_ms).max(node.started_at_ms);
    // Only a failed node's span says a message.
    let message = match (&run.error, node.status) {
        (Some(error), Status::Error) => Some(format!("node {} failed: {error}", node.name)),
        (None, Status::Error) => Some(format!("node {} failed", node.name)),
        _ => None,
    };
    Span {
        trace_id: place.trace_id,
        span_id: place.span_id,
        parent_span_id: place.parent_span_id,
        name: format!("invoke_agent {}", node.name),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: nanos(node.started_at_ms),
        end_time_unix_nano: nanos(end),
        attributes: node_attributes(run, node, place.attempt),
        status: span_status(Some(node.status), message.as_deref()),
        ..Span::default()
    }
}

fn run_attributes(run: &RunTrace) -> Vec<KeyValue> {
    let mut attributes = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("zibby.session.id", &run.session_id),
        text("zibby.span.kind", "run"),
    ];
    if let Some(agent) = &run.agent {
        attributes.push(text("gen_ai.agent.name", agent));
    }
    if let Some(run_id) = &run.run_id {
        attributes.push(text("zibby.run.id", run_id));
    }
    if let Some(title) = &run.title {
        attributes.push(text("zibby.prompt.first_line", title));
    }
    if let Some(status) = run.status {
        attributes.push(text("zibby.status", status.as_str()));
    }
    if let Some(code) = run.exit_code {
        attributes.push(int("zibby.exit_code", code));
    }
    if let Some(stopped_by) = &run.stopped_by {
        attributes.push(text("zibby.stopped_by", stopped_by));
    }
    attributes.push(int("zibby.node_executions", run.nodes.len() as i64));
    attributes
}

fn node_attributes(run: &RunTrace, node: &NodeExecution, attempt: u32) -> Vec<KeyValue> {
    let mut attributes = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("gen_ai.agent.name", &node.name),
        text("zibby.span.kind", "node"),
        text("zibby.session.id", &run.session_id),
        text("zibby.node.status", node.status.as_str()),
        int("zibby.node.attempt", i64::from(attempt)),
        int("zibby.node.depth", node.depth),
    ];
    if let Some(usage) = &node.usage {
        usage_attributes(usage, &mut attributes);
    }
    if let Some(prompt) = &node.prompt {
        attributes.push(text("zibby.node.prompt", prompt));
    }
    if let Some(output) = &node.output {
        attributes.push(text("zibby.node.output", output));
    }
    attributes
}

/// `gen_ai.usage.input_tokens` counts every input token, cached ones included (as the GenAI
/// conventions ask); the cache's part is `zibby.usage.cache_read_tokens` and
/// `zibby.usage.cache_write_tokens`.
fn usage_attributes(usage: &NodeUsage, attributes: &mut Vec<KeyValue>) {
    if let Some(model) = usage.models.first() {
        attributes.push(text("gen_ai.request.model", model));
    }
    if let Some(tokens) = &usage.tokens {
        let input = tokens.input + tokens.cache_read + tokens.cache_write;
        attributes.push(int("gen_ai.usage.input_tokens", input as i64));
        attributes.push(int("gen_ai.usage.output_tokens", tokens.output as i64));
        attributes.push(int("zibby.usage.cache_read_tokens", tokens.cache_read as i64));
        attributes.push(int("zibby.usage.cache_write_tokens", tokens.cache_write as i64));
    }
    if let Some(cost) = usage.cost_usd {
        attributes.push(double("zibby.cost_usd", cost));
    }
    attributes.push(boolean("zibby.cost.priced", usage.cost_usd.is_some()));
    let source = match usage.cost_source {
        CostSource::Reported => "reported",
        CostSource::Estimated => "estimated",
        CostSource::Unknown => "unknown",
    };
    attributes.push(text("zibby.cost.source", source));
}

fn log_event(log: &LogEvent) -> Event {
    let mut attributes = vec![
        text("zibby.log.level", &log.level),
        text("zibby.log.message", &log.message),
    ];
    attributes.extend(
        log.fields
            .iter()
            .map(|(key, value)| text(&format!("zibby.log.{key}"), value)),
    );
    Event {
        time_unix_nano: nanos(log.at_ms),
        name: log.event.clone(),
        attributes,
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
                attributes: vec![text("service.name", SERVICE_NAME)],
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
