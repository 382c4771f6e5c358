//! A session's records, as a bundle carries them out of one store and into another
//! (`app::share`): the session's row, its runs, their output lines, spans and logs, and its
//! messages, each a plain serde row (the bundle format of docs/cli.md, "Bundles").
//!
//! Export reads them ([`Store::export_records`]); import writes them ([`SessionImport`]) inside
//! one write transaction ([`Store::atomically`]): all of a session, or nothing. Run ids are kept
//! unless the store has them already (a session imported again with a new id): then they get
//! new ones, and every row naming them follows; span ids are always the store's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::{millis, search, timestamp, Level, OutputWriter, Store};
use crate::protocol::Stream;
use crate::sessions::cost::OutputUsageReader;
pub use crate::sessions::session::Imported;
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// The session's own row: `records/session.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub agent: Option<String>,
    /// The beginning of its first prompt.
    pub title: Option<String>,
    pub created_at_ms: Option<u64>,
    pub updated_at_ms: Option<u64>,
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

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Level, D::Error> {
        Ok(Level::parse(&String::deserialize(deserializer)?))
    }
}

impl Store {
    /// Runs `work` (store calls from this thread) in one write transaction: committed when it
    /// returns `Ok`, rolled back when it returns an error, so that nothing of it is stored.
    pub fn atomically<T>(&self, work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        let conn = self.conn();
        let tx = rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let value = work()?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(value)
    }

    /// The session's records (not its output, which [`Store::export_output`] streams), or `None`
    /// when the store knows nothing of it.
    pub fn export_records(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<SessionRecords>, Error> {
        let Some(key) = self.existing_session_key(workspace, id)? else {
            return Ok(None);
        };
        let conn = self.conn();
        let sql = |e| self.err(e);
        let session = conn
            .query_row(
                "SELECT agent, title, created_at, updated_at FROM sessions WHERE key = ?1",
                [key],
                |r| {
                    Ok(SessionRecord {
                        agent: r.get(0)?,
                        title: r.get(1)?,
                        created_at_ms: r.get::<_, Option<i64>>(2)?.map(|ms| ms.max(0) as u64),
                        updated_at_ms: r.get::<_, Option<i64>>(3)?.map(|ms| ms.max(0) as u64),
                    })
                },
            )
            .map_err(sql)?;
        // Oldest first, as they ran.
        let mut runs: Vec<RunRow> = self
            .runs(workspace, Some(id))?
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
        let mut spans = Vec::new();
        for run in &runs {
            spans.extend(self.spans(&run.id)?.into_iter().map(|span| SpanRow {
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
        let logs = self
            .stored_logs(key)?
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
        let messages = self
            .messages(workspace, id)?
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
            spans,
            logs,
            messages,
        }))
    }

    /// Every output line of a run, in order, to `each` (read a page at a time: a run of a
    /// million lines is never held whole).
    pub fn export_output(
        &self,
        run_id: &str,
        mut each: impl FnMut(OutputRow) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut from = 1;
        loop {
            let page = self.output_page(run_id, from, 4096)?;
            let Some(last) = page.last() else { return Ok(()) };
            from = last.seq + 1;
            for line in page {
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
    pub fn imported(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<Imported>, Error> {
        let Some(key) = self.existing_session_key(workspace, id)? else {
            return Ok(None);
        };
        self.conn()
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
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Gives a session being imported (inside [`Store::atomically`]) the id it turned out to have.
    pub fn imported_session_rename(
        &self,
        workspace: &Workspace,
        from: &SessionId,
        to: &SessionId,
    ) -> Result<(), Error> {
        let workspace_key = self.workspace_key(workspace)?;
        self.conn()
            .execute(
                "UPDATE sessions SET session_id = ?3 WHERE workspace_id = ?1 AND session_id = ?2",
                params![workspace_key, from.as_str(), to.as_str()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Begins importing session `id`: its row, marked as imported from `source`. Refused when the
    /// store knows the session already ([`Error::SessionExists`]). Call it, and everything of
    /// the import after it, inside [`Store::atomically`].
    pub fn import_begin<'s>(
        &'s self,
        workspace: &Workspace,
        id: &SessionId,
        record: &SessionRecord,
        source: &Path,
        now: SystemTime,
    ) -> Result<SessionImport<'s>, Error> {
        if self.existing_session_key(workspace, id)?.is_some() {
            return Err(Error::SessionExists {
                id: id.to_string(),
                sessions_dir: workspace.sessions_dir(),
            });
        }
        let workspace_key = self.workspace_key(workspace)?;
        let now_ms = millis(now);
        let conn = self.conn();
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
        )
        .map_err(|e| self.err(e))?;
        Ok(SessionImport {
            store: self,
            session_key: conn.last_insert_rowid(),
            source: source.to_owned(),
            run_ids: HashMap::new(),
            span_ids: HashMap::new(),
            writer: None,
        })
    }
}

/// A session being imported, row by row (see [`Store::import_begin`]): runs before what names
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
    /// The output writer of the run whose lines are coming.
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
        let store = self.store;
        let conn = store.conn();
        let taken: bool = conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [&run.id], |_| Ok(()))
            .optional()
            .map_err(|e| store.err(e))?
            .is_some();
        if self.run_ids.contains_key(&run.id) {
            return Err(self.invalid("records/runs.jsonl", format!("run `{}` is there twice", run.id)));
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
        )
        .map_err(|e| store.err(e))?;
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
        let store = self.store;
        let conn = store.conn();
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
        )
        .map_err(|e| store.err(e))?;
        self.span_ids.insert(span.id, conn.last_insert_rowid());
        Ok(())
    }

    pub fn output(&mut self, line: &OutputRow) -> Result<(), Error> {
        const ENTRY: &str = "records/output.jsonl";
        let run_id = self.run_id(ENTRY, &line.run_id)?;
        if self.writer.as_ref().is_none_or(|(current, ..)| *current != run_id) {
            self.flush()?;
            self.writer = Some((
                run_id.clone(),
                self.store.output_writer(&run_id)?,
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
        let store = self.store;
        store
            .conn()
            .execute(
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
            )
            .map_err(|e| store.err(e))?;
        Ok(())
    }

    pub fn message(&mut self, message: &MessageRow) -> Result<(), Error> {
        let store = self.store;
        let conn = store.conn();
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
            Some(rusqlite::ErrorCode::ConstraintViolation) => self.invalid(
                "records/messages.jsonl",
                format!("message {} is there twice", message.seq),
            ),
            _ => store.err(e),
        })?;
        search::index(&conn, search::Kind::Message, conn.last_insert_rowid(), &message.text).map_err(|e| store.err(e))
    }

    /// Writes the output lines still gathered.
    pub fn flush(&mut self) -> Result<(), Error> {
        if let Some((run_id, mut writer, usage)) = self.writer.take() {
            writer.flush()?;
            writer.batch_committed();
            self.store.record_output_usage(&run_id, &usage.finish())?;
        }
        Ok(())
    }

    /// Ends the import: every row is written (into the transaction of [`Store::atomically`]).
    pub fn finish(mut self) -> Result<(), Error> {
        self.flush()
    }
}
