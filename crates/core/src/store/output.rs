//! A run's output: append-only blocks of lines, written as they fill, read in pages of lines.
//!
//! A row per line cannot keep up with an agent printing 100 MB/s (a million lines a second), so
//! lines are stored in blocks of up to 64 KiB: the lines' text joined by `\n`, and their stream,
//! arrival time and node run-length encoded beside it. A block is never rewritten; the search
//! index covers blocks (indexed behind the output, by [`Store::index_pending`]), and a hit is narrowed
//! to its lines when read.

use std::borrow::Cow;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::connection::{write_transaction, QueryResult, Store};
use crate::protocol::{strip_ansi, Stream};
use crate::vocabulary::error::Error;

/// A block is written when it holds this many bytes or lines (or on flush).
const BLOCK_BYTES: usize = 64 * 1024;
const BLOCK_LINES: u32 = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

/// Consecutive lines that share stream, arrival time and node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Span {
    #[serde(rename = "n")]
    lines: u32,
    #[serde(rename = "e", default, skip_serializing_if = "is_false")]
    stderr: bool,
    #[serde(rename = "t")]
    at_ms: u64,
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    node: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !value
}

#[derive(Debug, Default)]
struct Block {
    first_seq: i64,
    lines: u32,
    text: String,
    spans: Vec<Span>,
}

impl Block {
    fn push(&mut self, stream: Stream, at_ms: u64, node: Option<&str>, text: &str) {
        if self.lines > 0 {
            self.text.push('\n');
        }
        self.text.push_str(text);
        self.lines += 1;
        let stderr = stream == Stream::Stderr;
        match self.spans.last_mut() {
            Some(last) if last.stderr == stderr && last.at_ms == at_ms && last.node.as_deref() == node => {
                last.lines += 1
            }
            _ => self.spans.push(Span {
                lines: 1,
                stderr,
                at_ms,
                node: node.map(str::to_owned),
            }),
        }
    }
}

/// Appends a run's output. Lines gather in a block that is written when full and on
/// [`OutputWriter::flush`] (the runner flushes every 50 ms, so output is visible at once to
/// other readers); drop flushes too.
///
/// **A block that cannot be written is kept and written again** on the next flush (a full disk
/// frees up; the insert is idempotent), in order, up to `MAX_UNSAVED_BYTES` (64 MiB): past that the
/// oldest unsaved lines are dropped and counted ([`OutputWriter::lines_lost`]), so memory stays
/// bounded and the loss is said, never silent. Inside a [`Store::batch`] a written block is only
/// as durable as the batch: the caller says how it ended ([`OutputWriter::batch_committed`],
/// [`OutputWriter::batch_failed`]).
pub struct OutputWriter<'s> {
    store: &'s Store,
    run_id: String,
    run_key: i64,
    next_seq: i64,
    block: Block,
    /// Full blocks not written yet, oldest first.
    unsaved: std::collections::VecDeque<Block>,
    unsaved_bytes: usize,
    /// Blocks written inside a batch that has not ended yet.
    in_batch: Vec<Block>,
    lines_lost: u64,
}

/// The most output held in memory while it cannot be written (a full disk).
pub const MAX_UNSAVED_BYTES: usize = 64 * 1024 * 1024;

impl<'s> OutputWriter<'s> {
    pub(super) fn new(store: &'s Store, run_id: &str) -> Result<Self, Error> {
        let (run_key, last) = store.with_conn(|conn| {
            let run_key = run_key(conn, run_id)?;
            Ok((run_key, stored_lines(conn, run_key)?))
        })?;
        Ok(OutputWriter {
            store,
            run_id: run_id.to_owned(),
            run_key,
            next_seq: last + 1,
            block: Block::default(),
            unsaved: std::collections::VecDeque::new(),
            unsaved_bytes: 0,
            in_batch: Vec::new(),
            lines_lost: 0,
        })
    }

    /// Lines dropped because they could not be written while `MAX_UNSAVED_BYTES` were waiting.
    pub fn lines_lost(&self) -> u64 {
        self.lines_lost
    }

    /// Lines gathered or waiting that are not written yet.
    pub fn lines_unsaved(&self) -> u64 {
        self.unsaved
            .iter()
            .chain(&self.in_batch)
            .map(|b| u64::from(b.lines))
            .sum::<u64>()
            + u64::from(self.block.lines)
    }

    /// The batch the last writes were part of was committed: they are stored.
    pub fn batch_committed(&mut self) {
        self.in_batch.clear();
    }

    /// The batch the last writes were part of failed (rolled back): they are written again.
    pub fn batch_failed(&mut self) {
        for block in self.in_batch.drain(..).rev() {
            self.unsaved_bytes += block.text.len();
            self.unsaved.push_front(block);
        }
    }

    /// Adds one line and returns its line number; writes the block when it is full.
    pub fn append(&mut self, stream: Stream, at_ms: u64, node: Option<&str>, text: &str) -> Result<i64, Error> {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.block.lines == 0 {
            self.block.first_seq = seq;
        }
        // A line is stored as one line: a newline inside it (never from the reader) is escaped.
        if text.contains('\n') {
            self.block.push(stream, at_ms, node, &text.replace('\n', "\\n"));
        } else {
            self.block.push(stream, at_ms, node, text);
        }
        if self.block.text.len() >= BLOCK_BYTES || self.block.lines >= BLOCK_LINES {
            self.flush()?;
        }
        Ok(seq)
    }

    /// Writes the lines gathered so far as one block, after the blocks still waiting.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.block.lines > 0 {
            let block = std::mem::take(&mut self.block);
            self.unsaved_bytes += block.text.len();
            self.unsaved.push_back(block);
        }
        let batched = !self.store.conn().is_autocommit();
        while let Some(block) = self.unsaved.front() {
            if let Err(error) = self.insert(block) {
                self.drop_past_bound();
                return Err(error);
            }
            let block = self.unsaved.pop_front().expect("front was there");
            self.unsaved_bytes -= block.text.len();
            if batched {
                self.in_batch.push(block);
            }
        }
        Ok(())
    }

    fn drop_past_bound(&mut self) {
        while self.unsaved_bytes > MAX_UNSAVED_BYTES {
            let Some(oldest) = self.unsaved.pop_front() else { break };
            self.unsaved_bytes -= oldest.text.len();
            self.lines_lost += u64::from(oldest.lines);
        }
    }

    /// Writes one block; again is harmless (a block is known by its first line).
    fn insert(&self, block: &Block) -> Result<(), Error> {
        self.store.with_conn(|conn| {
            let tx = write_transaction(conn)?;
            tx.prepare_cached(
                "INSERT INTO output_blocks (run_key, first_seq, line_count, text, spans) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (run_key, first_seq) DO NOTHING",
            )?
            .execute(params![
                self.run_key,
                block.first_seq,
                block.lines,
                block.text,
                serde_json::to_string(&block.spans).expect("spans serialise")
            ])?;
            Ok(tx.commit()?)
        })
    }
}

impl Drop for OutputWriter<'_> {
    fn drop(&mut self) {
        if let Err(error) = self.flush() {
            tracing::error!(run_id = %self.run_id, %error, "run output could not be written");
        }
    }
}

/// The key of a run, by which its output blocks name it.
pub(super) fn run_key(conn: &Connection, run_id: &str) -> QueryResult<i64> {
    conn.query_row("SELECT key FROM runs WHERE id = ?1", [run_id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| Error::RunNotFound { id: run_id.to_owned() }.into())
}

/// One stored line as [`Store::output_each_line`] gives it, borrowed from its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredLine<'a> {
    /// 1-based line number within the run.
    pub seq: i64,
    pub stream: Stream,
    /// The innermost node running when the line arrived.
    pub node: Option<&'a str>,
    pub text: &'a str,
}

/// Every line of a run's output in order, without a copy of any, until `line` says stop: what
/// reads a whole output once (a comparison) goes block by block, never building a page.
pub(super) fn each_line(
    conn: &Connection,
    run_id: &str,
    line: &mut dyn FnMut(StoredLine<'_>) -> bool,
) -> QueryResult<()> {
    let run_key = run_key(conn, run_id)?;
    let mut statement =
        conn.prepare_cached("SELECT first_seq, text, spans FROM output_blocks WHERE run_key = ?1 ORDER BY first_seq")?;
    let mut rows = statement.query([run_key])?;
    while let Some(row) = rows.next()? {
        let first_seq: i64 = row.get(0)?;
        let text = row.get_ref(1).and_then(|value| value.as_str().map_err(Into::into))?;
        let spans: Vec<Span> = row
            .get_ref(2)
            .and_then(|value| value.as_str().map_err(Into::into))
            .map(|spans| serde_json::from_str(spans).unwrap_or_default())?;
        let mut meta = spans.iter().flat_map(|s| std::iter::repeat_n(s, s.lines as usize));
        for (i, text) in text.split('\n').enumerate() {
            let span = meta.next();
            let stream = if span.is_some_and(|s| s.stderr) {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            let stored = StoredLine {
                seq: first_seq + i as i64,
                stream,
                node: span.and_then(|s| s.node.as_deref()),
                text,
            };
            if !line(stored) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The lines of one stored block.
pub(super) fn block_lines(first_seq: i64, text: &str, spans: &str) -> Vec<OutputLine> {
    let spans: Vec<Span> = serde_json::from_str(spans).unwrap_or_default();
    let mut meta = spans.iter().flat_map(|s| std::iter::repeat_n(s, s.lines as usize));
    text.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let span = meta.next();
            OutputLine {
                seq: first_seq + i as i64,
                stream: if span.is_some_and(|s| s.stderr) {
                    Stream::Stderr
                } else {
                    Stream::Stdout
                },
                at_ms: span.map_or(0, |s| s.at_ms),
                node: span.and_then(|s| s.node.clone()),
                text: line.to_owned(),
            }
        })
        .collect()
}

/// Which lines of an output a page holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputFilter {
    /// Only the lines printed while this node ran.
    pub node: Option<String>,
    pub stream: Option<Stream>,
}

impl OutputFilter {
    /// The filter of a node and a stream named as IPC names them (`stdout`, `stderr`).
    pub fn named(node: Option<String>, stream: Option<&str>) -> Result<OutputFilter, Error> {
        let stream = match stream {
            None => None,
            Some("stdout") => Some(Stream::Stdout),
            Some("stderr") => Some(Stream::Stderr),
            Some(other) => {
                return Err(Error::InvalidStream {
                    stream: other.to_owned(),
                })
            }
        };
        Ok(OutputFilter { node, stream })
    }

    fn passes(&self, line: &OutputLine) -> bool {
        self.stream.is_none_or(|stream| stream == line.stream)
            && self.node.as_ref().is_none_or(|node| line.node.as_ref() == Some(node))
    }
}

/// A page of output: the lines, where the next page starts (`None`: nothing more yet), and how
/// many lines the run has (unfiltered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OutputPage {
    pub lines: Vec<OutputLine>,
    pub next_seq: Option<i64>,
    pub total: i64,
}

/// The blocks of run `?1` from the one that holds line `?2` on, in order (after a SELECT list).
const BLOCKS_FROM_SEQ: &str = "FROM output_blocks WHERE run_key = ?1 AND first_seq >= COALESCE(
        (SELECT MAX(first_seq) FROM output_blocks WHERE run_key = ?1 AND first_seq <= ?2), 0)
     ORDER BY first_seq";

/// How many lines a filtered page passes over at most before it returns what it found.
const SKIP_BUDGET_LINES: usize = 200_000;

/// Lines `from_seq..` of a run's output (1-based) that pass `filter`, at most `limit`.
pub(super) fn page(
    conn: &Connection,
    run_id: &str,
    from_seq: i64,
    limit: usize,
    filter: &OutputFilter,
) -> QueryResult<OutputPage> {
    let run_key = run_key(conn, run_id)?;
    let total = stored_lines(conn, run_key)?;
    let mut statement = conn.prepare_cached(&format!("SELECT first_seq, text, spans {BLOCKS_FROM_SEQ}"))?;
    let mut rows = statement.query(params![run_key, from_seq])?;
    let mut lines = Vec::new();
    let mut skipped = 0usize;
    let mut next_seq = from_seq.max(1);
    while lines.len() < limit && skipped < SKIP_BUDGET_LINES {
        let Some(row) = rows.next()? else {
            break;
        };
        let (first_seq, text, spans): (i64, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        for line in block_lines(first_seq, &text, &spans) {
            if line.seq < from_seq {
                continue;
            }
            if lines.len() == limit {
                break;
            }
            next_seq = line.seq + 1;
            if filter.passes(&line) {
                lines.push(line);
            } else {
                skipped += 1;
            }
        }
    }
    Ok(OutputPage {
        lines,
        next_seq: (next_seq <= total).then_some(next_seq),
        total,
    })
}

/// Where a find in a run's output got to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OutputFind {
    /// The first line found, from where the find started, in its direction.
    pub seq: Option<i64>,
    /// No line found yet, and more to read: where to go on (a find reads at most
    /// [`FIND_BUDGET_LINES`] lines per call, so a caller can show progress and stop).
    pub next_seq: Option<i64>,
    /// How many lines this call read.
    pub scanned: u64,
}

/// How many lines a find reads at most per call.
pub const FIND_BUDGET_LINES: u64 = 500_000;

/// The first line of a run's output from `from_seq` on (or, `backward`, from it back to the first
/// line) whose text contains `query`, ignoring case and ANSI escapes: what the window's Find in
/// output looks for, read in the store rather than page by page through the window.
pub(super) fn find(
    conn: &Connection,
    run_id: &str,
    from_seq: i64,
    backward: bool,
    query: &str,
) -> QueryResult<OutputFind> {
    let run_key = run_key(conn, run_id)?;
    let query = query.to_lowercase();
    let finder = memchr::memmem::Finder::new(query.as_bytes());
    // The block that holds `from_seq`, then the ones after it (or before it).
    let sql = if backward {
        "SELECT first_seq, text FROM output_blocks WHERE run_key = ?1 AND first_seq <= ?2 ORDER BY first_seq DESC"
            .to_owned()
    } else {
        format!("SELECT first_seq, text {BLOCKS_FROM_SEQ}")
    };
    let mut statement = conn.prepare_cached(&sql)?;
    let mut rows = statement.query(params![run_key, from_seq])?;
    let mut scanned = 0u64;
    let mut last_read = None;
    while scanned < FIND_BUDGET_LINES {
        let Some(row) = rows.next()? else {
            return Ok(OutputFind {
                seq: None,
                next_seq: None,
                scanned,
            });
        };
        let first_seq: i64 = row.get(0)?;
        let text = row.get_ref(1).and_then(|value| value.as_str().map_err(Into::into))?;
        // Lowered whole (one allocation per block); escapes stay escapes when lowered. For a query
        // in ASCII (most are), lowering the ASCII letters is enough, and much faster on text with
        // other characters (box drawing, say), unless the text holds one of the two characters
        // whose lower case is an ASCII letter (the Kelvin sign, and İ: i and a combining dot).
        let ascii_is_enough =
            text.is_ascii() || (query.is_ascii() && !text.contains('\u{212A}') && !text.contains('\u{130}'));
        let lowered = if ascii_is_enough {
            text.to_ascii_lowercase()
        } else {
            text.to_lowercase()
        };
        // Escapes removed line by line: one cut short at a line's end must not swallow the next.
        let plain: Cow<'_, [u8]> = if memchr::memchr(0x1b, lowered.as_bytes()).is_none() {
            Cow::Borrowed(lowered.as_bytes())
        } else {
            let mut plain = Vec::with_capacity(lowered.len());
            for (i, line) in lowered.as_bytes().split(|&byte| byte == b'\n').enumerate() {
                if i > 0 {
                    plain.push(b'\n');
                }
                plain.extend_from_slice(&strip_ansi(line));
            }
            Cow::Owned(plain)
        };
        let block = find_in_block(&plain, first_seq, from_seq, backward, &finder);
        scanned += block.read;
        last_read = block.last_read.or(last_read);
        if let Some(seq) = block.found {
            return Ok(OutputFind {
                seq: Some(seq),
                next_seq: None,
                scanned,
            });
        }
    }
    let next_seq = last_read.map(|seq| if backward { seq - 1 } else { seq + 1 });
    let total = stored_lines(conn, run_key)?;
    Ok(OutputFind {
        seq: None,
        next_seq: next_seq.filter(|&seq| seq >= 1 && seq <= total),
        scanned,
    })
}

/// What [`find`] read of one block.
struct BlockFind {
    found: Option<i64>,
    /// How many of its lines were read, and the last (`None`: none of its lines is in range).
    read: u64,
    last_read: Option<i64>,
}

/// [`find`] in one block (`text`: its lines lowered, without escapes, joined by `\n`): the lines in
/// range (from `from_seq` on, or up to it backward) searched as one text, a match counting only
/// within one line.
fn find_in_block(
    text: &[u8],
    first_seq: i64,
    from_seq: i64,
    backward: bool,
    finder: &memchr::memmem::Finder<'_>,
) -> BlockFind {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text).map(|newline| newline + 1))
        .collect();
    let last_seq = first_seq + starts.len() as i64 - 1;
    let (first, last) = if backward {
        (first_seq, from_seq.min(last_seq))
    } else {
        (from_seq.max(first_seq), last_seq)
    };
    if first > last {
        return BlockFind {
            found: None,
            read: 0,
            last_read: None,
        };
    }
    let line_at = |seq: i64| (seq - first_seq) as usize;
    let start = starts[line_at(first)];
    let end = starts.get(line_at(last) + 1).map_or(text.len(), |next| next - 1);
    let in_range = &text[start..end];
    let line_of = |offset: usize| first_seq + starts.partition_point(|&s| s <= start + offset) as i64 - 1;
    let within_one_line =
        |offset: usize| memchr::memchr(b'\n', &in_range[offset..offset + finder.needle().len()]).is_none();
    let mut hits = finder.find_iter(in_range).filter(|&hit| within_one_line(hit));
    let found = if backward { hits.last() } else { hits.next() }.map(line_of);
    // Read up to the line found, else every line in range.
    let read_to = found.unwrap_or(if backward { first } else { last });
    BlockFind {
        found,
        read: (if backward { last - read_to } else { read_to - first }) as u64 + 1,
        last_read: Some(read_to),
    }
}

/// How many lines of output a run has stored.
pub(super) fn line_count(conn: &Connection, run_id: &str) -> QueryResult<i64> {
    let run_key = run_key(conn, run_id)?;
    stored_lines(conn, run_key)
}

/// How many bytes of UTF-8 a run's stored output is, each line with its newline (a block's
/// lines are joined by one): what its lines joined make, without reading them (`octet_length`
/// reads a text's size from its record's header, never its pages).
pub(super) fn byte_count(conn: &Connection, run_id: &str) -> QueryResult<u64> {
    let run_key = run_key(conn, run_id)?;
    let bytes: i64 = conn.query_row(
        "SELECT COALESCE(SUM(octet_length(text) + 1), 0) FROM output_blocks WHERE run_key = ?1",
        [run_key],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(bytes).unwrap_or_default())
}

fn stored_lines(conn: &Connection, run_key: i64) -> QueryResult<i64> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(first_seq + line_count - 1), 0) FROM output_blocks WHERE run_key = ?1",
        [run_key],
        |r| r.get(0),
    )?)
}

/// How many stdout and stderr lines of a run are stored.
pub(super) fn line_counts(conn: &Connection, run_id: &str) -> QueryResult<(i64, i64)> {
    let run_key = run_key(conn, run_id)?;
    let mut statement = conn.prepare_cached("SELECT spans FROM output_blocks WHERE run_key = ?1")?;
    let rows = statement.query_map([run_key], |r| r.get::<_, String>(0))?;
    let (mut stdout, mut stderr) = (0i64, 0i64);
    for spans in rows {
        let spans: Vec<Span> = serde_json::from_str(&spans?).unwrap_or_default();
        for span in spans {
            if span.stderr {
                stderr += i64::from(span.lines);
            } else {
                stdout += i64::from(span.lines);
            }
        }
    }
    Ok((stdout, stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real store file whose database may grow by `pages` pages at most (SQLite's own "database
    /// or disk is full", as a full disk gives it), and a run to write output for.
    fn store_with_a_run() -> (tempfile::TempDir, Store, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::store::StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap();
        let workspace = crate::sessions::session::Workspace::open(dir.path()).unwrap();
        let session = crate::vocabulary::id::SessionId::parse("1777678254943_full").unwrap();
        let run_id = store
            .run_insert(
                &workspace,
                &crate::store::NewRun {
                    session: &session,
                    agent: None,
                    command: &["agent".to_owned()],
                    replayed_node: None,
                    prompt: None,
                    started_at: std::time::SystemTime::now(),
                },
            )
            .unwrap();
        (dir, store, run_id)
    }

    fn limit_growth(store: &Store, pages: i64) {
        let conn = store.conn();
        let used: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
        let _: i64 = conn
            .query_row(&format!("PRAGMA max_page_count = {}", used + pages), [], |r| r.get(0))
            .unwrap();
    }

    #[test]
    fn output_that_cannot_be_written_is_kept_and_written_once_there_is_room() {
        let (_dir, store, run_id) = store_with_a_run();
        let mut writer = store.output_writer(&run_id).unwrap();
        for i in 0..1_000 {
            writer.append(Stream::Stdout, i, None, &format!("before {i}")).unwrap();
        }
        writer.flush().unwrap();
        limit_growth(&store, 0);
        let mut failed = 0;
        for i in 0..20_000 {
            let line = format!("while full {i} {}", "x".repeat(100));
            failed += usize::from(writer.append(Stream::Stdout, i, None, &line).is_err());
        }
        assert!(writer.flush().is_err(), "the store is full");
        assert!(failed > 0, "blocks filled while full");
        assert_eq!(writer.lines_unsaved(), 20_000);
        assert_eq!(writer.lines_lost(), 0);
        limit_growth(&store, 1_000_000);
        writer.append(Stream::Stdout, 0, None, "after").unwrap();
        writer.flush().unwrap();
        assert_eq!(writer.lines_unsaved(), 0);
        let lines = store.output_page(&run_id, 1, 100_000).unwrap();
        assert_eq!(lines.len(), 21_001, "no line lost");
        assert!(
            lines.iter().enumerate().all(|(i, l)| l.seq == i as i64 + 1),
            "in order, no gap"
        );
        assert_eq!(lines[1_000].text, format!("while full 0 {}", "x".repeat(100)));
        assert_eq!(lines.last().unwrap().text, "after");
    }

    #[test]
    fn a_failed_batch_writes_its_blocks_again() {
        let (_dir, store, run_id) = store_with_a_run();
        let mut writer = store.output_writer(&run_id).unwrap();
        {
            let conn = store.conn();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            writer.append(Stream::Stdout, 0, None, "in the batch").unwrap();
            writer.flush().unwrap();
            conn.execute_batch("ROLLBACK").unwrap();
        }
        writer.batch_failed();
        assert_eq!(writer.lines_unsaved(), 1);
        writer.flush().unwrap();
        writer.flush().unwrap();
        let lines = store.output_page(&run_id, 1, 10).unwrap();
        assert_eq!(
            lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["in the batch"]
        );
    }

    #[test]
    fn memory_stays_bounded_while_nothing_can_be_written_and_the_loss_is_counted() {
        let (_dir, store, run_id) = store_with_a_run();
        let mut writer = store.output_writer(&run_id).unwrap();
        limit_growth(&store, 0);
        let line = "y".repeat(1024);
        let total = (MAX_UNSAVED_BYTES / 1025) as u64 + 20_000;
        for _ in 0..total {
            let _ = writer.append(Stream::Stdout, 0, None, &line);
        }
        let _ = writer.flush();
        assert!(
            writer.unsaved_bytes <= MAX_UNSAVED_BYTES + BLOCK_BYTES,
            "{}",
            writer.unsaved_bytes
        );
        assert!(writer.lines_lost() > 0);
        assert_eq!(
            writer.lines_lost() + writer.lines_unsaved(),
            total,
            "every line stored, waiting or counted"
        );
    }

    #[test]
    fn a_block_keeps_each_line_with_its_stream_time_and_node() {
        let mut block = Block {
            first_seq: 7,
            ..Block::default()
        };
        block.push(Stream::Stdout, 5, Some("plan"), "one");
        block.push(Stream::Stdout, 5, Some("plan"), "two");
        block.push(Stream::Stderr, 9, None, "");
        block.push(Stream::Stdout, 9, Some("act"), "four");
        assert_eq!(block.spans.len(), 3, "runs of equal metadata share a span");
        let spans = serde_json::to_string(&block.spans).unwrap();
        let lines = block_lines(block.first_seq, &block.text, &spans);
        let summary: Vec<_> = lines
            .iter()
            .map(|l| (l.seq, l.stream, l.at_ms, l.node.as_deref(), l.text.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (7, Stream::Stdout, 5, Some("plan"), "one"),
                (8, Stream::Stdout, 5, Some("plan"), "two"),
                (9, Stream::Stderr, 9, None, ""),
                (10, Stream::Stdout, 9, Some("act"), "four"),
            ]
        );
    }
}
