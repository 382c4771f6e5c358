//! The `logs` table: a session's log lines as the studio wrote them (indexed for search behind
//! the run). A node's own lines are not stored: `node_logs` reads them from its span.

use std::time::SystemTime;

use rusqlite::{params, Connection};
use serde::Serialize;

use super::connection::{millis, timestamp, write_transaction, QueryResult};
use super::sessions;
use crate::sessions::session::{Timestamp, Workspace};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    pub(super) fn parse(text: &str) -> Level {
        match text {
            "debug" => Level::Debug,
            "warn" => Level::Warn,
            "error" => Level::Error,
            _ => Level::Info,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Level, D::Error> {
        Ok(Level::parse(&String::deserialize(deserializer)?))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LogLine {
    pub at: Timestamp,
    pub level: Level,
    /// `run.started`, `node.begin`, `run.cancelled`, …
    pub event: String,
    pub message: String,
    pub run_id: Option<String>,
    /// An object, or `null` when the line has none.
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown> | null"))]
    pub fields: serde_json::Value,
}

/// What a log line says.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry<'a> {
    pub level: Level,
    pub event: &'a str,
    pub message: &'a str,
    pub fields: &'a serde_json::Value,
    pub at: SystemTime,
}

/// A line for a run the store knows: its session comes from the run (one statement; a run logs
/// a line or two per node).
pub(super) fn append_for_run(conn: &Connection, run_id: &str, entry: Entry<'_>) -> QueryResult<()> {
    let written = conn
        .prepare_cached(
            "INSERT INTO logs (session_key, run_id, at, level, event, message, fields, indexed)
                 SELECT session_key, id, ?2, ?3, ?4, ?5, ?6, 0 FROM runs WHERE id = ?1",
        )?
        .execute(params![
            run_id,
            millis(entry.at),
            entry.level.as_str(),
            entry.event,
            entry.message,
            entry.fields.to_string()
        ])?;
    if written == 0 {
        return Err(Error::RunNotFound { id: run_id.to_owned() }.into());
    }
    Ok(())
}

/// A line of a session (and of one of its runs, if given).
pub(super) fn append(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    run_id: Option<&str>,
    entry: Entry<'_>,
) -> QueryResult<()> {
    let key = sessions::key(conn, workspace, id, entry.at)?;
    let tx = write_transaction(conn)?;
    // Indexed for search behind the run (`Store::index_pending`).
    tx.prepare_cached(
        "INSERT INTO logs (session_key, run_id, at, level, event, message, fields, indexed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0)",
    )?
    .execute(params![
        key,
        run_id,
        millis(entry.at),
        entry.level.as_str(),
        entry.event,
        entry.message,
        entry.fields.to_string()
    ])?;
    Ok(tx.commit()?)
}

/// A session's log lines as stored, in the order written (without the node lines its spans
/// make: `node_logs` adds them).
pub(super) fn stored(conn: &Connection, session_key: i64) -> QueryResult<Vec<LogLine>> {
    let mut statement = conn.prepare_cached(
        "SELECT at, level, event, message, run_id, fields FROM logs WHERE session_key = ?1 ORDER BY id",
    )?;
    let lines = statement
        .query_map([session_key], |r| {
            let fields: Option<String> = r.get(5)?;
            Ok(LogLine {
                at: timestamp(r.get(0)?),
                level: Level::parse(&r.get::<_, String>(1)?),
                event: r.get(2)?,
                message: r.get(3)?,
                run_id: r.get(4)?,
                fields: fields.and_then(|f| serde_json::from_str(&f).ok()).unwrap_or_default(),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(lines)
}
