//! A run's output: append-only lines, written in batches, read in pages.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{search, Store};
use crate::error::Error;
use crate::protocol::Stream;

/// Pending lines are written when there are this many, or this many bytes of them.
const FLUSH_LINES: usize = 2048;
const FLUSH_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputLine {
    /// 1-based line number within the run.
    pub seq: i64,
    pub stream: Stream,
    /// Arrival time, milliseconds since the run started.
    pub at_ms: u64,
    /// The innermost node running when the line arrived.
    pub node: Option<String>,
    pub text: String,
}

/// Appends a run's output. Lines are buffered and written in one transaction per batch (never
/// rewriting earlier rows); [`OutputWriter::flush`] writes what is pending, and so does drop.
pub struct OutputWriter<'s> {
    store: &'s Store,
    run_id: String,
    run_key: i64,
    next_seq: i64,
    pending: Vec<OutputLine>,
    pending_bytes: usize,
}

impl<'s> OutputWriter<'s> {
    pub(super) fn new(store: &'s Store, run_id: &str) -> Result<Self, Error> {
        let run_key: i64 = store
            .conn()
            .query_row("SELECT key FROM runs WHERE id = ?1", [run_id], |r| r.get(0))
            .optional()
            .map_err(|e| store.sql_error(e))?
            .ok_or_else(|| Error::RunNotFound { id: run_id.to_owned() })?;
        let last: i64 = store
            .conn()
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM run_output WHERE run_key = ?1",
                [run_key],
                |r| r.get(0),
            )
            .map_err(|e| store.sql_error(e))?;
        Ok(OutputWriter {
            store,
            run_id: run_id.to_owned(),
            run_key,
            next_seq: last + 1,
            pending: Vec::new(),
            pending_bytes: 0,
        })
    }

    /// Queues one line and returns its line number; writes the batch when it is full.
    pub fn append(&mut self, stream: Stream, at_ms: u64, node: Option<&str>, text: &str) -> Result<i64, Error> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending_bytes += text.len();
        self.pending.push(OutputLine {
            seq,
            stream,
            at_ms,
            node: node.map(str::to_owned),
            text: text.to_owned(),
        });
        if self.pending.len() >= FLUSH_LINES || self.pending_bytes >= FLUSH_BYTES {
            self.flush()?;
        }
        Ok(seq)
    }

    /// Writes every pending line in one transaction.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let store = self.store;
        let conn = store.conn();
        let tx = store.write_transaction(&conn)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO run_output (run_key, seq, stream, at_ms, node, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(|e| store.sql_error(e))?;
            for line in &self.pending {
                insert
                    .execute(params![
                        self.run_key,
                        line.seq,
                        line.stream.as_str(),
                        line.at_ms as i64,
                        line.node,
                        line.text
                    ])
                    .map_err(|e| store.sql_error(e))?;
                let id = tx.last_insert_rowid();
                search::index(&tx, search::Kind::Output, id, &line.text).map_err(|e| store.sql_error(e))?;
            }
        }
        tx.commit().map_err(|e| store.sql_error(e))?;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }
}

impl Drop for OutputWriter<'_> {
    fn drop(&mut self) {
        if let Err(error) = self.flush() {
            tracing::error!(run_id = %self.run_id, %error, "run output could not be written");
        }
    }
}

pub(super) fn page(store: &Store, run_id: &str, from_seq: i64, limit: usize) -> Result<Vec<OutputLine>, Error> {
    let conn = store.conn();
    let mut statement = conn
        .prepare_cached(
            "SELECT seq, stream, at_ms, node, text FROM run_output
             WHERE run_key = (SELECT key FROM runs WHERE id = ?1) AND seq >= ?2 ORDER BY seq LIMIT ?3",
        )
        .map_err(|e| store.sql_error(e))?;
    let rows = statement
        .query_map(params![run_id, from_seq, limit as i64], |r| {
            let stream: String = r.get(1)?;
            Ok(OutputLine {
                seq: r.get(0)?,
                stream: if stream == "stderr" {
                    Stream::Stderr
                } else {
                    Stream::Stdout
                },
                at_ms: r.get::<_, i64>(2)?.max(0) as u64,
                node: r.get(3)?,
                text: r.get(4)?,
            })
        })
        .map_err(|e| store.sql_error(e))?;
    rows.collect::<Result<_, _>>().map_err(|e| store.sql_error(e))
}
