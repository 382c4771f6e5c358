//! What a session's traces are read from: the store's runs, spans and log lines of the session,
//! and the folder's nodes and their usage, each run as a [`RunTrace`]. A session the studio did
//! not run is one trace keyed by its session id: its folder's nodes, in order, each spanning the
//! session's time (the folder does not say when a node began). Prompts and output are left out
//! unless [`TraceOptions::include_output`]: then the first [`OUTPUT_BYTES`] of each node's prompt
//! and output, secrets redacted as export redacts them.

use std::collections::HashMap;
use std::time::SystemTime;

use super::map::{LogEvent, NodeExecution, RunTrace};
use crate::sessions::cost::NodeUsage;
use crate::sessions::session::{Session, SessionNode, Workspace};
use crate::share::redact::Redactor;
use crate::store::{LogRow, RunRow, SpanKind, SpanRow, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// At most this much of a node's prompt and of its output goes into a span, with
/// `--include-output`.
pub const OUTPUT_BYTES: u64 = 4096;

#[derive(Debug, Clone, Copy, Default)]
pub struct TraceOptions {
    /// Put each node's prompt and output (bounded, redacted) in its span.
    pub include_output: bool,
}

/// The runs of session `id` as traces, oldest first: one per run the studio recorded, or one
/// from the folder when it recorded none.
pub fn session_runs(
    store: &Store,
    workspace: &Workspace,
    id: &SessionId,
    options: TraceOptions,
    now: SystemTime,
) -> Result<Vec<RunTrace>, Error> {
    let session = store.read_session(workspace, id, now)?;
    let records = store.export_records(workspace, id)?.unwrap_or_default();
    let mut redactor = Redactor::of_this_user();
    let title = records
        .session
        .title
        .clone()
        .or_else(|| session.title.clone())
        .and_then(|t| t.lines().next().map(|line| redactor.text("title", line)));
    if records.runs.is_empty() {
        return Ok(vec![folder_trace(&session, title, options, &mut redactor)]);
    }
    let recorded = store.runs(workspace, Some(id))?;
    let usage: HashMap<String, Vec<(String, Option<NodeUsage>)>> = recorded
        .iter()
        .map(|run| run.id.clone())
        .zip(store.runs_nodes_usage(workspace, &recorded, now)?)
        .collect();
    let traces = records
        .runs
        .iter()
        .map(|run| {
            let mut trace = run_trace(&session, run, title.clone(), &mut redactor);
            trace.nodes = node_executions(&records.spans, run, &session, options, &mut redactor);
            give_usage(&mut trace.nodes, usage.get(&run.id));
            trace.logs = records
                .logs
                .iter()
                .filter(|log| log.run_id.as_deref() == Some(&run.id))
                .map(|log| log_event(log, options, &mut redactor))
                .collect();
            trace
        })
        .collect();
    Ok(traces)
}

fn run_trace(session: &Session, run: &RunRow, title: Option<String>, redactor: &mut Redactor) -> RunTrace {
    RunTrace {
        key: run.id.clone(),
        session_id: session.id.to_string(),
        run_id: Some(run.id.clone()),
        agent: run.agent.clone().or_else(|| session.agent.clone()),
        title,
        status: Some(run.status),
        exit_code: run.exit_code,
        stopped_by: run.stopped_by.clone(),
        error: run.error.as_deref().map(|e| redactor.text("error", e)),
        started_at_ms: run.started_at_ms,
        ended_at_ms: run.ended_at_ms,
        nodes: Vec::new(),
        logs: Vec::new(),
    }
}

/// The run's node spans as executions, their parents as indexes among them.
fn node_executions(
    spans: &[SpanRow],
    run: &RunRow,
    session: &Session,
    options: TraceOptions,
    redactor: &mut Redactor,
) -> Vec<NodeExecution> {
    let nodes: Vec<&SpanRow> = spans
        .iter()
        .filter(|s| s.run_id == run.id && s.kind == SpanKind::Node.as_str())
        .collect();
    let index_of: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, s)| (s.id, i)).collect();
    nodes
        .iter()
        .map(|span| {
            let mut execution = NodeExecution {
                name: span.name.clone(),
                parent: span.parent_id.and_then(|p| index_of.get(&p).copied()),
                depth: span.depth,
                status: span.status,
                started_at_ms: span.started_at_ms,
                ended_at_ms: span.ended_at_ms,
                usage: None,
                prompt: None,
                output: None,
            };
            if options.include_output {
                if let Some(node) = session.nodes.iter().find(|n| n.name == span.name) {
                    with_output(&mut execution, node, redactor);
                }
            }
            execution
        })
        .collect()
}

/// Each node's usage on its last execution (the folder and the run's output hold that one's).
fn give_usage(nodes: &mut [NodeExecution], usage: Option<&Vec<(String, Option<NodeUsage>)>>) {
    for (name, usage) in usage.into_iter().flatten() {
        if let Some(last) = nodes.iter_mut().rev().find(|n| &n.name == name) {
            last.usage = usage.clone();
        }
    }
}

fn with_output(execution: &mut NodeExecution, node: &SessionNode, redactor: &mut Redactor) {
    let bounded = |text: &str| -> String {
        let end = text.floor_char_boundary(OUTPUT_BYTES as usize);
        text[..end].to_owned()
    };
    execution.prompt = node
        .artifacts
        .prompt_preview
        .as_deref()
        .map(|p| redactor.text("prompt", &bounded(p)));
    execution.output = node
        .artifacts
        .raw_output
        .as_ref()
        .and_then(|file| crate::sessions::untrusted::read_prefix(&file.path, OUTPUT_BYTES).ok())
        .map(|bytes| redactor.text("output", &String::from_utf8_lossy(&bytes)));
}

/// A log line as an event; without `include_output` its `command` is left out (an agent's
/// command line can hold its prompt), and so is `run.started`'s message, which repeats it.
fn log_event(log: &LogRow, options: TraceOptions, redactor: &mut Redactor) -> LogEvent {
    let fields = match &log.fields {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(key, value)| !value.is_null() && (options.include_output || key.as_str() != "command"))
            .map(|(key, value)| {
                let value = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (key.clone(), redactor.text("log", &value))
            })
            .collect(),
        _ => Vec::new(),
    };
    LogEvent {
        at_ms: log.at_ms,
        event: log.event.clone(),
        level: format!("{:?}", log.level).to_lowercase(),
        message: if options.include_output || log.event != "run.started" {
            redactor.text("log", &log.message)
        } else {
            "started".to_owned()
        },
        fields,
    }
}

/// A session the studio did not run: one trace from what its folder says.
fn folder_trace(session: &Session, title: Option<String>, options: TraceOptions, redactor: &mut Redactor) -> RunTrace {
    let started = session.created_at.unwrap_or(session.updated_at).0;
    let ended = session.updated_at.0.max(started);
    let nodes = session
        .nodes
        .iter()
        .map(|node| {
            let mut execution = NodeExecution {
                name: node.name.clone(),
                parent: None,
                depth: 0,
                status: node.status,
                started_at_ms: started,
                ended_at_ms: Some(ended),
                usage: node.usage.clone(),
                prompt: None,
                output: None,
            };
            if options.include_output {
                with_output(&mut execution, node, redactor);
            }
            execution
        })
        .collect();
    RunTrace {
        key: session.id.to_string(),
        session_id: session.id.to_string(),
        run_id: None,
        agent: session.agent.clone(),
        title,
        status: Some(session.status),
        exit_code: None,
        stopped_by: None,
        error: None,
        started_at_ms: started,
        ended_at_ms: Some(ended),
        nodes,
        logs: Vec::new(),
    }
}
