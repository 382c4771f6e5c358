//! A recorded run as a side: its node spans, and its stored lines folded again to tell which
//! execution printed each; or, against a folder, its own session folder.

use std::collections::HashMap;
use std::time::SystemTime;

use crate::protocol::StreamReader;
use crate::sessions::cost::NodeUsage;
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::store::{RunRecord, SpanKind, Store};
use crate::timeline::{Applied, TimelineFold};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

use super::{artifacts_by_name, is_output, with_usage, Execution, Hashes, Lines, RunSummary, Side, Target};

impl Side {
    /// A recorded run read as its session folder (its nodes and their raw streams), with what
    /// the store knows of its end; from the store as usual when its folder is gone or has been
    /// written by a later run of the session.
    pub(super) fn open_run_as_folder(store: &Store, run: &RunRecord) -> Result<Side, Error> {
        let workspace = Workspace::from_canonical_root(run.workspace.clone());
        let Ok(id) = SessionId::parse(&run.session_id) else {
            return Side::open_run(store, run);
        };
        let latest = store
            .runs(&workspace, Some(&id))?
            .first()
            .is_some_and(|last| last.id == run.id);
        if !latest || workspace.session_folder(&id).is_err() {
            return Side::open_run(store, run);
        }
        let mut side = Side::open_folder(&workspace, &id)?;
        side.summary.run_id = Some(run.id.clone());
        side.summary.status = run.status;
        side.summary.elapsed_ms = run.ended_at.map(|end| end.0.saturating_sub(run.started_at.0));
        Ok(side)
    }

    pub(super) fn open_run(store: &Store, run: &RunRecord) -> Result<Side, Error> {
        let ended_as = (run.status != Status::Running).then_some(run.status);
        let executions: Vec<Execution> = store
            .spans(&run.id)?
            .into_iter()
            .filter(|span| span.kind == SpanKind::Node)
            .map(|span| Execution {
                name: span.name,
                status: match (span.status, ended_as) {
                    (Status::Running, Some(run_status)) => run_status,
                    (status, _) => status,
                },
                started_ms: Some(span.started_at.0.saturating_sub(run.started_at.0)),
                elapsed_ms: span.ended_at.map(|end| end.0.saturating_sub(span.started_at.0)),
                discarded: false,
                usage: None,
            })
            .collect();
        let workspace = Workspace::from_canonical_root(run.workspace.clone());
        // The session's runs, newest first: this one and those after it say what its nodes used
        // (a later run overwrote what it ran again), and whether its folder is this run's.
        let session_runs = SessionId::parse(&run.session_id)
            .and_then(|id| store.runs(&workspace, Some(&id)))
            .unwrap_or_default();
        let position = session_runs.iter().position(|other| other.id == run.id);
        let latest = position == Some(0);
        let mut nodes_usage: HashMap<String, NodeUsage> = match position {
            Some(at) => store
                .runs_nodes_usage(&workspace, &session_runs[..=at], SystemTime::now())?
                .pop()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(name, usage)| Some((name, usage?)))
                .collect(),
            None => HashMap::new(),
        };
        let mut executions = executions;
        let usage = with_usage(&mut executions, |name| nodes_usage.remove(name));
        let folder = latest
            .then(|| SessionId::parse(&run.session_id).and_then(|id| workspace.read_session(&id, SystemTime::now())));
        // A run whose folder is gone still has its output.
        let (artifacts, has_files) = match folder {
            Some(Ok(session)) => (artifacts_by_name(session.nodes), true),
            _ => (HashMap::new(), false),
        };
        let mut side = Side {
            summary: RunSummary {
                session_id: Some(run.session_id.clone()),
                run_id: Some(run.id.clone()),
                status: run.status,
                elapsed_ms: run.ended_at.map(|end| end.0.saturating_sub(run.started_at.0)),
                usage,
            },
            executions,
            artifacts,
            has_files,
            hashes: Hashes::default(),
            lines: Lines::Stored { run_id: run.id.clone() },
        };
        let mut hashes = Hashes::default();
        side.each_line(Some(store), &mut |target, at, text| {
            hashes.push(target, at, text);
            true
        })?;
        side.hashes = hashes;
        Ok(side)
    }

    /// A run's stored lines, folded again to tell which execution printed each (see the module
    /// doc); a run whose lines draw no timeline falls back on the node name the store kept, its
    /// occurrence counted by the times the output entered that node.
    pub(super) fn stream_stored(
        &self,
        store: &Store,
        run_id: &str,
        line: &mut dyn FnMut(Target, u64, &str) -> bool,
    ) -> Result<(), Error> {
        let mut by_occurrence: HashMap<(&str, usize), usize> = HashMap::new();
        let mut counted: HashMap<&str, usize> = HashMap::new();
        for (index, execution) in self.executions.iter().enumerate() {
            let count = counted.entry(&execution.name).or_insert(0);
            by_occurrence.insert((&execution.name, *count), index);
            *count += 1;
        }
        let mut fold = TimelineFold::new();
        let mut reader = StreamReader::new();
        // The refold's executions, as indexes into `self.executions`.
        let mut refolded: Vec<Option<usize>> = Vec::new();
        let mut refold_occurrences: HashMap<String, usize> = HashMap::new();
        // Without a timeline: the node the last line was in, and how often each was entered.
        let mut by_name: (Option<String>, HashMap<String, usize>) = (None, HashMap::new());
        let mut go_on = true;
        let mut bytes = Vec::new();
        store.output_each_line(run_id, &mut |stored| {
            let (seq, node) = (stored.seq, stored.node);
            bytes.clear();
            bytes.extend_from_slice(stored.text.as_bytes());
            bytes.push(b'\n');
            // The line's number goes in as its time: an event the reader held back a line (a
            // marker broken across lines) keeps its own line's.
            reader.push(stored.stream, &bytes, seq as u64, &mut |event| {
                if !go_on {
                    return;
                }
                if let Applied::NodeBegan(index) = fold.apply(&event) {
                    let name = fold.node(index).map(|n| n.name.clone()).unwrap_or_default();
                    let occurrence = refold_occurrences.entry(name.clone()).or_insert(0);
                    if refolded.len() <= index {
                        refolded.resize(index + 1, None);
                    }
                    refolded[index] = by_occurrence.get(&(name.as_str(), *occurrence)).copied();
                    *occurrence += 1;
                }
                if !is_output(&event) {
                    return;
                }
                let target = if refolded.is_empty() {
                    by_stored_name(&mut by_name, node, &by_occurrence, &counted)
                } else {
                    fold.current_execution()
                        .and_then(|i| refolded.get(i).copied().flatten())
                        .map_or(Target::Outside, Target::Execution)
                };
                go_on = line(target, event.at_ms, &event.text);
            });
            go_on
        })?;
        Ok(())
    }
}

/// The execution a stored line belongs to by the node name the store kept: the output entering
/// a node again is its next execution (a run whose lines draw no timeline).
fn by_stored_name(
    state: &mut (Option<String>, HashMap<String, usize>),
    node: Option<&str>,
    by_occurrence: &HashMap<(&str, usize), usize>,
    counted: &HashMap<&str, usize>,
) -> Target {
    let Some(node) = node else {
        state.0 = None;
        return Target::Outside;
    };
    if state.0.as_deref() != Some(node) {
        *state.1.entry(node.to_owned()).or_insert(0) += 1;
        state.0 = Some(node.to_owned());
    }
    let entered = state.1.get(node).copied().unwrap_or(1);
    let last = counted.get(node).copied().unwrap_or(0);
    if last == 0 {
        return Target::Outside;
    }
    by_occurrence
        .get(&(node, entered.min(last) - 1))
        .map_or(Target::Outside, |&i| Target::Execution(i))
}
