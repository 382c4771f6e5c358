//! A run's `node.begin` / `node.end` log lines, read from its node spans.
//!
//! A node execution is recorded once, as a span (name, depth, status, start, end). Its two log
//! lines are a view of that span, made when the log is read, so the log and the trace cannot
//! disagree and a run with many nodes writes one row per node instead of three. Runs recorded
//! before this (their node lines are stored rows) are read as they were stored.

use std::collections::HashSet;

use rusqlite::Connection;

use super::connection::QueryResult;
use super::logs::{self, Level, LogLine};
use super::sessions;
use super::spans::{self, Span};
use crate::sessions::session::{Timestamp, Workspace};
use crate::status::Status;
use crate::vocabulary::id::SessionId;

/// A session's log: the lines stored, with its node spans' lines merged in.
pub(super) fn of_session(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Vec<LogLine>> {
    let Some(key) = sessions::existing_key(conn, workspace, id)? else {
        return Ok(Vec::new());
    };
    let stored = logs::stored(conn, key)?;
    let spans = spans::session_nodes(conn, key)?;
    Ok(with_node_lines(stored, &spans))
}

/// The events a run's end is logged as; a node's lines at the same millisecond come before them.
const RUN_ENDS: [&str; 4] = ["run.finished", "run.failed", "run.cancelled", "run.interrupted"];

/// The stored lines (in the order they were written) with the node lines of `spans` (node spans,
/// in the order they began) merged in by time. Runs whose node lines were stored are left alone.
pub(super) fn with_node_lines(stored: Vec<LogLine>, spans: &[Span]) -> Vec<LogLine> {
    let stored_node_lines: HashSet<&str> = stored
        .iter()
        .filter(|line| line.event.starts_with("node."))
        .filter_map(|line| line.run_id.as_deref())
        .collect();
    let spans: Vec<&Span> = spans
        .iter()
        .filter(|span| !stored_node_lines.contains(span.run_id.as_str()))
        .collect();
    let derived = node_lines(&spans);
    if derived.is_empty() {
        return stored;
    }
    let mut merged = Vec::with_capacity(stored.len() + derived.len());
    let mut derived = derived.into_iter().peekable();
    for line in stored {
        while let Some(next) = derived.next_if(|node| goes_before(node, &line)) {
            merged.push(next);
        }
        merged.push(line);
    }
    merged.extend(derived);
    merged
}

fn goes_before(node_line: &LogLine, stored: &LogLine) -> bool {
    node_line.at < stored.at || (node_line.at == stored.at && RUN_ENDS.contains(&stored.event.as_str()))
}

/// Each span's `node.begin`, and its `node.end` once it ended, in the order the run logged them:
/// a node's end comes before the next node that is not inside it begins.
fn node_lines(spans: &[&Span]) -> Vec<LogLine> {
    let mut lines = Vec::with_capacity(spans.len() * 2);
    let mut open: Vec<&Span> = Vec::new();
    for span in spans {
        while let Some(top) = open.last() {
            if top.run_id == span.run_id && Some(top.id) == span.parent_id {
                break;
            }
            lines.extend(end_line(top));
            open.pop();
        }
        lines.push(begin_line(span));
        open.push(span);
    }
    while let Some(top) = open.pop() {
        lines.extend(end_line(top));
    }
    lines
}

fn begin_line(span: &Span) -> LogLine {
    LogLine {
        at: span.started_at,
        level: Level::Info,
        event: "node.begin".into(),
        message: span.name.clone(),
        run_id: Some(span.run_id.clone()),
        fields: serde_json::json!({ "node": span.name, "depth": span.depth }),
    }
}

fn end_line(span: &Span) -> Option<LogLine> {
    let at: Timestamp = span.ended_at?;
    let level = if span.status == Status::Error {
        Level::Error
    } else {
        Level::Info
    };
    Some(LogLine {
        at,
        level,
        event: "node.end".into(),
        message: format!("{}: {}", span.name, span.status),
        run_id: Some(span.run_id.clone()),
        fields: serde_json::json!({ "node": span.name, "status": span.status }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: i64, parent: Option<i64>, name: &str, times: (u64, Option<u64>), status: Status) -> Span {
        Span {
            id,
            parent_id: parent,
            run_id: "r1".into(),
            name: name.into(),
            kind: crate::store::SpanKind::Node,
            depth: 0,
            started_at: Timestamp(times.0),
            ended_at: times.1.map(Timestamp),
            status,
        }
    }

    fn stored(at: u64, event: &str) -> LogLine {
        LogLine {
            at: Timestamp(at),
            level: Level::Info,
            event: event.into(),
            message: String::new(),
            run_id: Some("r1".into()),
            fields: serde_json::Value::Null,
        }
    }

    fn events(lines: &[LogLine]) -> Vec<String> {
        lines.iter().map(|l| format!("{} {}", l.event, l.message)).collect()
    }

    #[test]
    fn nodes_nest_and_end_before_their_next_sibling_begins_at_the_same_millisecond() {
        // The run span is 1; all times are equal, so only the order of the spans decides.
        let spans = [
            span(2, Some(1), "outer", (10, Some(10)), Status::Success),
            span(3, Some(2), "inner", (10, Some(10)), Status::Error),
            span(4, Some(1), "after", (10, None), Status::Running),
        ];
        let lines = with_node_lines(vec![stored(10, "run.started"), stored(10, "run.failed")], &spans);
        assert_eq!(
            events(&lines),
            [
                "run.started ",
                "node.begin outer",
                "node.begin inner",
                "node.end inner: error",
                "node.end outer: success",
                "node.begin after",
                "run.failed ",
            ]
        );
        assert_eq!(lines[3].level, Level::Error);
        assert_eq!(lines[1].fields, serde_json::json!({ "node": "outer", "depth": 0 }));
    }

    #[test]
    fn node_lines_fall_between_the_stored_lines_by_time() {
        let spans = [
            span(2, Some(1), "plan", (20, Some(30)), Status::Success),
            span(3, Some(1), "act", (40, Some(50)), Status::Cancelled),
        ];
        let lines = with_node_lines(
            vec![
                stored(10, "run.started"),
                stored(35, "run.stopping"),
                stored(60, "run.cancelled"),
            ],
            &spans,
        );
        assert_eq!(
            events(&lines),
            [
                "run.started ",
                "node.begin plan",
                "node.end plan: success",
                "run.stopping ",
                "node.begin act",
                "node.end act: cancelled",
                "run.cancelled ",
            ]
        );
    }

    #[test]
    fn runs_whose_node_lines_were_stored_are_read_as_stored() {
        let spans = [span(2, Some(1), "plan", (20, Some(30)), Status::Success)];
        let mut begin = stored(20, "node.begin");
        begin.message = "plan".into();
        let lines = with_node_lines(vec![stored(10, "run.started"), begin], &spans);
        assert_eq!(events(&lines), ["run.started ", "node.begin plan"]);
    }
}
