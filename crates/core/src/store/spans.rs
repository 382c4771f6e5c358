//! The `spans` table: a run's trace, the run and each node execution inside it (a node's name
//! is indexed for search behind the run).

use std::collections::HashMap;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::connection::{millis, parse_status, timestamp, write_transaction, QueryResult};
use super::search;
use crate::sessions::session::{Timestamp, Workspace};
use crate::status::Status;

/// What a span is; the store keeps the same words (`run`, `node`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum SpanKind {
    Run,
    Node,
}

impl SpanKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Run => "run",
            SpanKind::Node => "node",
        }
    }
}

/// A kind compares equal to its word (`span.kind == "node"`), as the wire carries it.
impl PartialEq<&str> for SpanKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for SpanKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl rusqlite::types::FromSql for SpanKind {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<SpanKind> {
        match value.as_str()? {
            "run" => Ok(SpanKind::Run),
            "node" => Ok(SpanKind::Node),
            other => Err(rusqlite::types::FromSqlError::Other(
                format!("unknown span kind `{other}`").into(),
            )),
        }
    }
}

/// One span of a trace: a run, or one node execution inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Span {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub run_id: String,
    pub name: String,
    pub kind: SpanKind,
    pub depth: i64,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub status: Status,
}

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Span> {
    Ok(Span {
        id: r.get(0)?,
        parent_id: r.get(1)?,
        run_id: r.get(2)?,
        name: r.get(3)?,
        kind: r.get(4)?,
        depth: r.get(5)?,
        started_at: timestamp(r.get(6)?),
        ended_at: r.get::<_, Option<i64>>(7)?.map(timestamp),
        status: parse_status(&r.get::<_, String>(8)?),
    })
}

/// What a span starts as.
#[derive(Debug, Clone, Copy)]
pub(super) struct NewSpan<'a> {
    pub parent: Option<i64>,
    pub name: &'a str,
    pub kind: &'a str,
    pub depth: usize,
    pub at: SystemTime,
}

/// Opens a span (a run, or a node inside it) and returns its id.
pub(super) fn start(conn: &Connection, run_id: &str, span: NewSpan<'_>) -> QueryResult<i64> {
    // A node's name is indexed for search behind the run (`Store::index_pending`).
    conn.prepare_cached(
        "INSERT INTO spans (run_id, parent_id, name, kind, depth, started_at, status, indexed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?4 <> 'node')",
    )?
    .execute(params![
        run_id,
        span.parent,
        span.name,
        span.kind,
        span.depth as i64,
        millis(span.at)
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Forgets a span recorded for what turned out not to be a node (and its search entry).
pub(super) fn forget(conn: &Connection, span_id: i64) -> QueryResult<()> {
    let tx = write_transaction(conn)?;
    let indexed: Option<bool> = tx
        .query_row("SELECT indexed FROM spans WHERE id = ?1", [span_id], |r| r.get(0))
        .optional()?;
    if indexed == Some(true) {
        tx.execute(
            "DELETE FROM search_text WHERE rowid = ?1",
            [search::rowid(search::Kind::Node, span_id)],
        )?;
    }
    tx.execute("DELETE FROM spans WHERE id = ?1", [span_id])?;
    Ok(tx.commit()?)
}

pub(super) fn end(conn: &Connection, span_id: i64, status: Status, at: SystemTime) -> QueryResult<()> {
    conn.prepare_cached("UPDATE spans SET status = ?2, ended_at = ?3 WHERE id = ?1")?
        .execute(params![span_id, status.as_str(), millis(at)])?;
    Ok(())
}

/// A run's spans, in the order they began.
pub(super) fn of_run(conn: &Connection, run_id: &str) -> QueryResult<Vec<Span>> {
    let mut statement = conn.prepare_cached(
        "SELECT id, parent_id, run_id, name, kind, depth, started_at, ended_at, status FROM spans
                 WHERE run_id = ?1 ORDER BY id",
    )?;
    let rows = statement.query_map([run_id], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The node spans of every run of a session, in the order they began.
pub(super) fn session_nodes(conn: &Connection, session_key: i64) -> QueryResult<Vec<Span>> {
    Ok(conn
        .prepare_cached(
            "SELECT s.id, s.parent_id, s.run_id, s.name, s.kind, s.depth, s.started_at, s.ended_at, s.status
                 FROM spans s JOIN runs r ON r.id = s.run_id
                 WHERE r.session_key = ?1 AND s.kind = 'node' ORDER BY s.id",
        )?
        .query_map([session_key], from_row)?
        .collect::<Result<Vec<_>, _>>()?)
}

/// The node spans of each session's last run in a workspace, by run id: one query for a whole
/// listing (it lays them over every session the studio ran).
pub(super) fn last_runs_nodes(conn: &Connection, workspace: &Workspace) -> QueryResult<HashMap<String, Vec<Span>>> {
    let mut statement = conn.prepare_cached(
        "SELECT sp.id, sp.parent_id, sp.run_id, sp.name, sp.kind, sp.depth, sp.started_at, sp.ended_at, sp.status
                 FROM spans sp JOIN runs r ON r.id = sp.run_id JOIN sessions s ON s.key = r.session_key
                 JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND sp.kind = 'node'
                   AND r.started_at = (SELECT MAX(started_at) FROM runs WHERE session_key = r.session_key)
                 ORDER BY sp.id",
    )?;
    let rows = statement.query_map([workspace.root().to_string_lossy()], from_row)?;
    let mut by_run: HashMap<String, Vec<Span>> = HashMap::new();
    for span in rows {
        let span = span?;
        by_run.entry(span.run_id.clone()).or_default().push(span);
    }
    Ok(by_run)
}
