//! A session's records, as a bundle carries them out of one store and into another
//! (`share`): the session's row, its runs, their output lines, spans and logs, and its
//! messages, each a plain serde row (the bundle format of docs/cli.md, "Bundles").
//!
//! Export reads them (`Store::export_records`); import writes them ([`SessionImport`]) inside
//! one write transaction ([`Store::atomically`]): all of a session, or nothing. Run ids are kept
//! unless the store has them already (a session imported again with a new id): then they get
//! new ones, and every row naming them follows; span ids are always the store's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::connection::{millis, timestamp, QueryError, QueryResult, Store};
use super::logs::{self, Level};
use super::output::{self, OutputWriter};
use super::{messages, output_usage, runs, search, sessions, spans, tags, workspaces};
use crate::protocol::Stream;
use crate::sessions::cost::OutputUsageReader;
pub use crate::sessions::session::Imported;
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::label::Tag;

/// The session's own row: `records/session.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub agent: Option<String>,
    /// The beginning of its first prompt.
    pub title: Option<String>,
    pub created_at_ms: Option<u64>,
    pub updated_at_ms: Option<u64>,
    /// Its tags, in the order added (format version 2; absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
    /// Its note (format version 2; absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One run: a line of `records/runs.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub id: String,
    pub agent: Option<String>,
    pub command: Vec<String>,
    pub status: Status,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    /// `graceful`, `forced` or none.
    pub stopped_by: Option<String>,
    pub replayed_node: Option<String>,
}

/// One output line of a run: a line of `records/output.jsonl`, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputRow {
    pub run_id: String,
    /// 1-based, within the run.
    pub seq: i64,
    pub stream: Stream,
    /// Milliseconds since the run started, when the line arrived.
    pub at_ms: u64,
    pub node: Option<String>,
    pub text: String,
}

/// One span (a run, or a node execution inside it): a line of `records/spans.jsonl`, a parent
/// before its children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRow {
    /// The span's id in the bundle (its `parent_id`s refer to it).
    pub id: i64,
    pub parent_id: Option<i64>,
    pub run_id: String,
    pub name: String,
    /// `run` or `node`.
    pub kind: String,
    pub depth: i64,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    pub status: Status,
}

/// One log line the studio wrote (its `node.begin` / `node.end` lines are read from the spans):
/// a line of `records/logs.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogRow {
    pub run_id: Option<String>,
    pub at_ms: u64,
    pub level: Level,
    pub event: String,
    pub message: String,
    pub fields: serde_json::Value,
}

/// One message of the session's conversation: a line of `records/messages.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRow {
    pub seq: i64,
    pub role: String,
    pub text: String,
    pub created_at_ms: u64,
}

/// Everything the store holds of one session, read for export.
#[derive(Debug, Default)]
pub struct SessionRecords {
    pub session: SessionRecord,
    pub runs: Vec<RunRow>,
    pub spans: Vec<SpanRow>,
    pub logs: Vec<LogRow>,
    pub messages: Vec<MessageRow>,
}

/// The session's records (not its output, which [`export_output`] streams), or `None` when the
/// store knows nothing of it.
pub(super) fn export(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Option<SessionRecords>> {
    let Some(key) = sessions::existing_key(conn, workspace, id)? else {
        return Ok(None);
    };
    let session = conn.query_row(
        "SELECT agent, title, created_at, updated_at FROM sessions WHERE key = ?1",
        [key],
        |r| {
            Ok(SessionRecord {
                agent: r.get(0)?,
                title: r.get(1)?,
                created_at_ms: r.get::<_, Option<i64>>(2)?.map(|ms| ms.max(0) as u64),
                updated_at_ms: r.get::<_, Option<i64>>(3)?.map(|ms| ms.max(0) as u64),
                tags: Vec::new(),
                note: None,
            })
        },
    )?;
    // Tags the store holds were checked as they were kept; one that no longer reads is left out.
    let session = SessionRecord {
        tags: tags::of_session(conn, workspace, id)?
            .iter()
            .filter_map(|tag| Tag::parse(tag).ok())
            .collect(),
        note: tags::note(conn, workspace, id)?,
        ..session
    };
    // Oldest first, as they ran.
    let mut runs: Vec<RunRow> = runs::of_workspace(conn, workspace, Some(id))?
        .into_iter()
        .map(|run| RunRow {
            id: run.id,
            agent: run.agent,
            command: run.command,
            status: run.status,
            started_at_ms: run.started_at.0,
            ended_at_ms: run.ended_at.map(|t| t.0),
            exit_code: run.exit_code,
            error: run.error,
            stopped_by: run.stopped_by.map(|s| s.as_str().to_owned()),
            replayed_node: run.replayed_node,
        })
        .collect();
    runs.reverse();
    let mut span_rows = Vec::new();
    for run in &runs {
        span_rows.extend(spans::of_run(conn, &run.id)?.into_iter().map(|span| SpanRow {
            id: span.id,
            parent_id: span.parent_id,
            run_id: span.run_id,
            name: span.name,
            kind: span.kind.as_str().to_owned(),
            depth: span.depth,
            started_at_ms: span.started_at.0,
            ended_at_ms: span.ended_at.map(|t| t.0),
            status: span.status,
        }));
    }
    let logs = logs::stored(conn, key)?
        .into_iter()
        .map(|line| LogRow {
            run_id: line.run_id,
            at_ms: line.at.0,
            level: line.level,
            event: line.event,
            message: line.message,
            fields: line.fields,
        })
        .collect();
    let messages = messages::of_session(conn, workspace, id)?
        .into_iter()
        .map(|m| MessageRow {
            seq: m.seq,
            role: m.role,
            text: m.text,
            created_at_ms: m.created_at.0,
        })
        .collect();
    Ok(Some(SessionRecords {
        session,
        runs,
        spans: span_rows,
        logs,
        messages,
    }))
}

/// Every output line of a run, in order, to `each` (read a page at a time: a run of a million
/// lines is never held whole, and the store is not held while `each` works).
pub(super) fn export_output(
    store: &Store,
    run_id: &str,
    mut each: impl FnMut(OutputRow) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut from = 1;
    loop {
        let page = store.with_conn(|conn| output::page(conn, run_id, from, 4096, &output::OutputFilter::default()))?;
        let Some(last) = page.lines.last() else { return Ok(()) };
        from = last.seq + 1;
        for line in page.lines {
            each(OutputRow {
                run_id: run_id.to_owned(),
                seq: line.seq,
                stream: line.stream,
                at_ms: line.at_ms,
                node: line.node,
                text: line.text,
            })?;
        }
    }
}

/// What the session was imported from, if it was.
pub(super) fn imported(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Option<Imported>> {
    let Some(key) = sessions::existing_key(conn, workspace, id)? else {
        return Ok(None);
    };
    Ok(conn
        .query_row(
            "SELECT imported_from, imported_at FROM sessions WHERE key = ?1 AND imported_from IS NOT NULL",
            [key],
            |r| {
                Ok(Imported {
                    from: r.get(0)?,
                    at: timestamp(r.get::<_, Option<i64>>(1)?.unwrap_or(0)),
                })
            },
        )
        .optional()?)
}

/// Gives a session being imported the id it turned out to have.
pub(super) fn rename_imported(
    conn: &Connection,
    workspace: &Workspace,
    from: &SessionId,
    to: &SessionId,
) -> QueryResult<()> {
    let workspace_key = workspaces::key(conn, workspace)?;
    conn.execute(
        "UPDATE sessions SET session_id = ?3 WHERE workspace_id = ?1 AND session_id = ?2",
        params![workspace_key, from.as_str(), to.as_str()],
    )?;
    Ok(())
}

/// Begins importing session `id`: its row, marked as imported from `source`. Refused when the
/// store knows the session already ([`Error::SessionExists`]).
pub(super) fn import_begin<'s>(
    store: &'s Store,
    workspace: &Workspace,
    id: &SessionId,
    record: &SessionRecord,
    source: &Path,
    now: SystemTime,
) -> Result<SessionImport<'s>, Error> {
    let session_key = store.with_conn(|conn| {
        if sessions::existing_key(conn, workspace, id)?.is_some() {
            return Err(Error::SessionExists {
                id: id.to_string(),
                sessions_dir: workspace.sessions_dir(),
            }
            .into());
        }
        let workspace_key = workspaces::key(conn, workspace)?;
        let now_ms = millis(now);
        conn.execute(
            "INSERT INTO sessions (workspace_id, session_id, agent, title, created_at, updated_at, imported_from, imported_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                workspace_key,
                id.as_str(),
                record.agent,
                record.title,
                record.created_at_ms.map_or(now_ms, |ms| ms as i64),
                record.updated_at_ms.map_or(now_ms, |ms| ms as i64),
                source.to_string_lossy(),
                now_ms
            ],
        )?;
        let session_key = conn.last_insert_rowid();
        for (at, tag) in record.tags.iter().enumerate() {
            conn.execute(
                "INSERT INTO session_tags (session_key, tag, tagged_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (session_key, tag) DO NOTHING",
                params![session_key, tag.as_str(), now_ms + at as i64],
            )?;
        }
        if let Some(note) = record.note.as_deref().filter(|note| !note.is_empty()) {
            crate::vocabulary::label::check_note(id.as_str(), note)?;
            conn.execute(
                "UPDATE sessions SET note = ?2, noted_at = ?3 WHERE key = ?1",
                params![session_key, note, now_ms],
            )?;
            search::index(conn, search::Kind::Note, session_key, note)?;
        }
        Ok(session_key)
    })?;
    Ok(SessionImport {
        store,
        session_key,
        source: source.to_owned(),
        run_ids: HashMap::new(),
        span_ids: HashMap::new(),
        writer: None,
    })
}

/// A session being imported, row by row (see `Store::import_begin`): runs before what names
/// them, a span's parent before it, a run's output lines in order.
pub struct SessionImport<'s> {
    store: &'s Store,
    session_key: i64,
    /// Named in errors.
    source: PathBuf,
    /// The bundle's run ids, to the store's.
    run_ids: HashMap<String, String>,
    /// The bundle's span ids, to the store's.
    span_ids: HashMap<i64, i64>,
    /// The run whose output is being written, its writer, and what its nodes print they used.
    writer: Option<(String, OutputWriter<'s>, OutputUsageReader)>,
}

impl SessionImport<'_> {
    fn invalid(&self, entry: &str, reason: String) -> Error {
        Error::BundleInvalid {
            source_path: self.source.clone(),
            entry: entry.to_owned(),
            reason,
        }
    }

    /// The store's id of a run of the bundle.
    fn run_id(&self, entry: &str, bundle_id: &str) -> Result<String, Error> {
        self.run_ids
            .get(bundle_id)
            .cloned()
            .ok_or_else(|| self.invalid(entry, format!("run `{bundle_id}` is not in records/runs.jsonl")))
    }

    pub fn run(&mut self, run: &RunRow) -> Result<(), Error> {
        let id = self.store.with_conn(|conn| {
            let taken = conn
                .query_row("SELECT 1 FROM runs WHERE id = ?1", [&run.id], |_| Ok(()))
                .optional()?
                .is_some();
            if self.run_ids.contains_key(&run.id) {
                return Err(self
                    .invalid("records/runs.jsonl", format!("run `{}` is there twice", run.id))
                    .into());
            }
            let id = if taken {
                uuid::Uuid::now_v7().to_string()
            } else {
                run.id.clone()
            };
            // A run that was live when exported is not live here: nothing follows it.
            let (status, ended_at) = match run.status {
                Status::Running => (Status::Interrupted, Some(run.ended_at_ms.unwrap_or(run.started_at_ms))),
                status => (status, run.ended_at_ms),
            };
            conn.execute(
                "INSERT INTO runs (id, session_key, agent, command, status, started_at, ended_at, exit_code, error,
                               stopped_by, replayed_node)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    id,
                    self.session_key,
                    run.agent,
                    serde_json::to_string(&run.command).expect("strings serialise"),
                    status.as_str(),
                    run.started_at_ms as i64,
                    ended_at.map(|ms| ms as i64),
                    run.exit_code,
                    run.error,
                    run.stopped_by,
                    run.replayed_node
                ],
            )?;
            Ok(id)
        })?;
        self.run_ids.insert(run.id.clone(), id);
        Ok(())
    }

    pub fn span(&mut self, span: &SpanRow) -> Result<(), Error> {
        const ENTRY: &str = "records/spans.jsonl";
        let run_id = self.run_id(ENTRY, &span.run_id)?;
        let parent = match span.parent_id {
            None => None,
            Some(parent) => Some(*self.span_ids.get(&parent).ok_or_else(|| {
                self.invalid(ENTRY, format!("span {} names parent {parent}, not before it", span.id))
            })?),
        };
        if !matches!(span.kind.as_str(), "run" | "node") {
            return Err(self.invalid(
                ENTRY,
                format!("span {} is of kind `{}`: run or node", span.id, span.kind),
            ));
        }
        let id = self.store.with_conn(|conn| {
            // A node's name is indexed for search behind the import, as behind a run.
            conn.execute(
                "INSERT INTO spans (run_id, parent_id, name, kind, depth, started_at, ended_at, status, indexed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?4 <> 'node')",
                params![
                    run_id,
                    parent,
                    span.name,
                    span.kind,
                    span.depth,
                    span.started_at_ms as i64,
                    span.ended_at_ms.map(|ms| ms as i64),
                    span.status.as_str()
                ],
            )?;
            Ok(conn.last_insert_rowid())
        })?;
        self.span_ids.insert(span.id, id);
        Ok(())
    }

    pub fn output(&mut self, line: &OutputRow) -> Result<(), Error> {
        const ENTRY: &str = "records/output.jsonl";
        let run_id = self.run_id(ENTRY, &line.run_id)?;
        if self.writer.as_ref().is_none_or(|(current, ..)| *current != run_id) {
            self.flush()?;
            self.writer = Some((
                run_id.clone(),
                OutputWriter::new(self.store, &run_id)?,
                OutputUsageReader::new(),
            ));
        }
        let (_, writer, usage) = self.writer.as_mut().expect("set above");
        if line.stream == Stream::Stdout {
            usage.line(line.node.as_deref(), &line.text);
        }
        let seq = writer.append(line.stream, line.at_ms, line.node.as_deref(), &line.text)?;
        // The import's transaction is all or nothing: the writer need not keep written blocks to
        // write again (it would hold the whole output in memory).
        writer.batch_committed();
        if seq != line.seq {
            return Err(self.invalid(
                ENTRY,
                format!(
                    "line {} of run `{}` comes where line {seq} was due",
                    line.seq, line.run_id
                ),
            ));
        }
        Ok(())
    }

    pub fn log(&mut self, log: &LogRow) -> Result<(), Error> {
        let run_id = match &log.run_id {
            Some(run) => Some(self.run_id("records/logs.jsonl", run)?),
            None => None,
        };
        self.store.with_conn(|conn| {
            conn.execute(
                "INSERT INTO logs (session_key, run_id, at, level, event, message, fields, indexed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0)",
                params![
                    self.session_key,
                    run_id,
                    log.at_ms as i64,
                    log.level.as_str(),
                    log.event,
                    log.message,
                    log.fields.to_string()
                ],
            )?;
            Ok(())
        })
    }

    pub fn message(&mut self, message: &MessageRow) -> Result<(), Error> {
        self.store.with_conn(|conn| {
            conn.execute(
                "INSERT INTO messages (session_key, seq, role, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    self.session_key,
                    message.seq,
                    message.role,
                    message.text,
                    message.created_at_ms as i64
                ],
            )
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ConstraintViolation) => QueryError::Studio(self.invalid(
                    "records/messages.jsonl",
                    format!("message {} is there twice", message.seq),
                )),
                _ => QueryError::Sql(e),
            })?;
            Ok(search::index(
                conn,
                search::Kind::Message,
                conn.last_insert_rowid(),
                &message.text,
            )?)
        })
    }

    /// Writes the output lines still gathered.
    pub fn flush(&mut self) -> Result<(), Error> {
        if let Some((run_id, mut writer, usage)) = self.writer.take() {
            writer.flush()?;
            writer.batch_committed();
            output_usage::record_for_run(self.store, &run_id, &usage.finish())?;
        }
        Ok(())
    }

    /// Ends the import: every row is written (into the transaction of [`Store::atomically`]).
    pub fn finish(mut self) -> Result<(), Error> {
        self.flush()
    }
}
