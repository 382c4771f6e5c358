//! `read_output`: a run's output a page at a time, each page at most [`PAGE_BYTES`] of text, so
//! that a client reads a 1 GB output without ever holding more than a page.
//!
//! A line is shown whole ([`shown_text`]: secrets redacted, hidden characters escaped) with its
//! newline, then cut into pages: the cursor is where the next page begins, in the run's shown
//! lines (`<run id>:<line>:<byte offset in the shown line>`), so pages joined are the shown
//! output exactly. A cursor names its run: given with another, it is refused.

use std::collections::HashMap;
use std::sync::Mutex;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use studio_core::app::Studio;
use studio_core::store::RunRecord;
use studio_core::Status;

use super::answer::{Answer, Failure, ToolError};
use super::lookup::{require_node, resolve_run, session_id};
use super::shown::shown_text;

/// The most text one page holds, in bytes of UTF-8.
pub const PAGE_BYTES: usize = 16 * 1024;

/// How many lines one read of the store asks for at most; the first asks for
/// [`FIRST_READ_LINES`], the next for as many as the room left takes at the lines' length so far
/// (a line may be 1 MiB: a page never holds many such in memory).
const LINES_PER_READ: usize = 512;
const FIRST_READ_LINES: usize = 8;

/// How many reads of the store one page makes at most (a filter that passes few lines of a large
/// output returns an emptier page and a cursor, instead of reading the whole output at once).
const READS_PER_PAGE: usize = 8;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputArgs {
    /// A run id, or a session id (its last run).
    id: String,
    /// Only the lines printed while this node ran.
    node: Option<String>,
    /// Only this stream.
    stream: Option<StreamArg>,
    /// The next_cursor of the page before (with the same id, node and stream).
    cursor: Option<String>,
}

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum StreamArg {
    Stdout,
    Stderr,
}

impl StreamArg {
    fn name(self) -> &'static str {
        match self {
            StreamArg::Stdout => "stdout",
            StreamArg::Stderr => "stderr",
        }
    }
}

/// Where a page begins.
#[derive(Debug, PartialEq, Eq)]
struct Cursor {
    seq: i64,
    offset: usize,
}

fn cursor_text(run_id: &str, cursor: &Cursor) -> String {
    format!("{run_id}:{}:{}", cursor.seq, cursor.offset)
}

/// The cursor `text` names, when it is one of run `run_id`.
fn cursor_of(text: &str, run_id: &str) -> Result<Cursor, ToolError> {
    let bad = || {
        ToolError::new(
            "invalid_request",
            "cursor is not a read_output cursor: pass next_cursor back as it came",
        )
    };
    let mut parts = text.rsplitn(3, ':');
    let (offset, seq, run) = (parts.next(), parts.next(), parts.next());
    let (Some(offset), Some(seq), Some(run)) = (offset, seq, run) else {
        return Err(bad());
    };
    if run != run_id {
        return Err(ToolError::new(
            "invalid_request",
            format!("cursor is of another run: this page is of run {run_id}"),
        ));
    }
    let (Ok(seq), Ok(offset)) = (seq.parse::<i64>(), offset.parse::<usize>()) else {
        return Err(bad());
    };
    if seq < 1 {
        return Err(bad());
    }
    Ok(Cursor { seq, offset })
}

/// The largest index at most `index` that is a character boundary of `text`.
fn floor_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The whole output's size of the ended runs read (lines, bytes), counted once: an ended run's
/// output no longer changes, and counting a 1 GB output's blocks at each page would cost more
/// than the page.
#[derive(Default)]
pub struct Totals(Mutex<HashMap<String, (i64, u64)>>);

/// How many runs' totals are kept at most.
const TOTALS_KEPT: usize = 1_000;

impl Totals {
    fn of(&self, studio: &Studio, run: &RunRecord) -> Result<(i64, u64), Failure> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&run.id).copied();
        if let Some(totals) = kept {
            return Ok(totals);
        }
        let store = studio.store()?;
        let totals = (store.output_line_count(&run.id)?, store.output_byte_count(&run.id)?);
        if run.status != Status::Running {
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() >= TOTALS_KEPT {
                kept.clear();
            }
            kept.insert(run.id.clone(), totals);
        }
        Ok(totals)
    }
}

pub fn read(studio: &Studio, totals: &Totals, args: OutputArgs) -> Result<Answer, Failure> {
    match resolve_run(studio, &args.id)? {
        Some(run) => read_run(studio, totals, run, args),
        None => read_folder(studio, args),
    }
}

/// A page of a run's output as the store recorded it.
fn read_run(studio: &Studio, totals: &Totals, run: RunRecord, args: OutputArgs) -> Result<Answer, Failure> {
    if let Some(node) = &args.node {
        require_node(studio, &run.id, node)?;
    }
    let mut at = match args.cursor.as_deref() {
        Some(text) => cursor_of(text, &run.id)?,
        None => Cursor { seq: 1, offset: 0 },
    };
    let stream = args.stream.map(StreamArg::name);
    let mut text = String::new();
    let mut more = false;
    let mut first_line = true;
    let mut want = FIRST_READ_LINES;
    'reads: for _ in 0..READS_PER_PAGE {
        let page = studio.run_output(&run.id, at.seq, want, args.node.clone(), stream)?;
        let read_bytes: usize = page.lines.iter().map(|line| line.text.len() + 1).sum();
        for line in &page.lines {
            let mut shown = shown_text(&line.text);
            shown.push('\n');
            let from = if line.seq == at.seq { at.offset } else { 0 };
            if first_line && from > shown.len() {
                return Err(ToolError::invalid(
                    "cursor points past the end of its line: pass next_cursor back as it came",
                )
                .into());
            }
            first_line = false;
            let rest = &shown[from..];
            let room = PAGE_BYTES - text.len();
            if rest.len() <= room {
                text.push_str(rest);
                at = Cursor {
                    seq: line.seq + 1,
                    offset: 0,
                };
            } else {
                let cut = floor_boundary(rest, room);
                text.push_str(&rest[..cut]);
                at = Cursor {
                    seq: line.seq,
                    offset: from + cut,
                };
                more = true;
                break 'reads;
            }
        }
        want = match read_bytes.checked_div(page.lines.len()) {
            Some(average) => ((PAGE_BYTES - text.len().min(PAGE_BYTES)) / average.max(1) + 1).min(LINES_PER_READ),
            None => LINES_PER_READ,
        };
        match page.next_seq {
            Some(next) => {
                // Past the lines the filter passed over too.
                if at.offset == 0 {
                    at.seq = at.seq.max(next);
                }
                more = true;
                if text.len() == PAGE_BYTES {
                    break;
                }
            }
            None => {
                more = false;
                break;
            }
        }
    }
    let live = run.status == Status::Running;
    let (total_lines, total_bytes) = totals.of(studio, &run)?;
    // A live run's output grows: its end is where its next lines will be.
    let next_cursor = (more || live).then(|| cursor_text(&run.id, &at));
    let summary = format!(
        "run {} ({}): {} bytes of {} in all, {}",
        run.id,
        run.status,
        text.len(),
        total_bytes,
        if more { "more to read" } else { "the end" }
    );
    Ok(Answer {
        structured: json!({
            "run_id": run.id,
            "session_id": run.session_id,
            "status": run.status,
            "text": text,
            "next_cursor": next_cursor,
            "total_lines": total_lines,
            "total_bytes": total_bytes,
        }),
        text: format!("{summary}\n{text}"),
    })
}

/// A page of the output files of a session the studio did not run (a terminal's, CI's, a
/// bucket's): its `raw_stream_output.txt`, else its nodes' (or `node`'s) in order, read from its
/// folder. The cursor is `<session id>:<file>:<byte offset>`; a page ends at a line's end where
/// it can, so that a secret is redacted whole.
fn read_folder(studio: &Studio, args: OutputArgs) -> Result<Answer, Failure> {
    let id = session_id(&args.id)?;
    if args.stream.is_some() {
        return Err(ToolError::invalid(format!(
            "session {id} was not run by the studio: its folder's output files keep no streams apart (leave stream out)"
        ))
        .into());
    }
    let session = studio.session_get(id.as_str())?;
    // Relative to the session folder: a bucket's workspace fetches the file by that name.
    let path = |file: &studio_core::session::FileRef| {
        let relative = file.path.strip_prefix(&session.path).unwrap_or(&file.path);
        (relative.display().to_string(), file.bytes)
    };
    let files: Vec<(String, u64)> = match (&args.node, &session.raw_stream_output) {
        (Some(node), _) => {
            let Some(found) = session.nodes.iter().find(|n| &n.name == node) else {
                return Err(ToolError::new(
                    "invalid_node_name",
                    format!("session {id} has no node `{}`", studio_core::visible::shown(node)),
                )
                .into());
            };
            found.artifacts.raw_stream.iter().map(path).collect()
        }
        (None, Some(file)) => vec![path(file)],
        (None, None) => session
            .nodes
            .iter()
            .filter_map(|n| n.artifacts.raw_stream.as_ref())
            .map(path)
            .collect(),
    };
    let mut at = match args.cursor.as_deref() {
        Some(text) => cursor_of(text, id.as_str())?,
        None => Cursor { seq: 1, offset: 0 },
    };
    if at.seq as usize > files.len() + 1 {
        return Err(
            ToolError::invalid("cursor points past the session's files: pass next_cursor back as it came").into(),
        );
    }
    let total_bytes: u64 = files.iter().map(|(_, bytes)| bytes).sum();
    let mut text = String::new();
    let mut limit = PAGE_BYTES / 2;
    while let Some((file, _)) = files.get(at.seq as usize - 1) {
        let room = PAGE_BYTES - text.len();
        let chunk = studio.session_file_read(id.as_str(), file, at.offset as u64, limit.min(room / 2).max(4))?;
        let read = chunk.next_offset.unwrap_or(chunk.bytes_total) - chunk.offset;
        // Bytes that are not UTF-8 read as U+FFFD: such a chunk is taken whole or not at all.
        let exact = !chunk.binary && chunk.text.len() as u64 == read;
        let mut raw = chunk.text.as_str();
        if exact && chunk.next_offset.is_some() {
            // A line's end where there is one: a secret is redacted whole.
            if let Some(end) = raw.rfind('\n') {
                raw = &raw[..=end];
            }
        }
        let mut shown = shown_text(raw);
        while shown.len() > room && exact && !raw.is_empty() {
            raw = &raw[..floor_boundary(raw, raw.len() / 2)];
            shown = shown_text(raw);
        }
        if shown.len() > room {
            if text.is_empty() && limit > 4 {
                limit /= 4;
                continue;
            }
            break;
        }
        text.push_str(&shown);
        let whole = !exact || raw.len() == chunk.text.len();
        match (whole, chunk.next_offset) {
            (true, None) => {
                at = Cursor {
                    seq: at.seq + 1,
                    offset: 0,
                }
            }
            (true, Some(next)) => at.offset = next as usize,
            (false, _) => at.offset += raw.len(),
        }
        if text.len() == PAGE_BYTES {
            break;
        }
    }
    let more = (at.seq as usize) <= files.len();
    let live = session.status == Status::Running;
    let next_cursor = (more || live).then(|| cursor_text(id.as_str(), &at));
    let summary = format!(
        "session {id} ({}), its folder's output files: {} bytes, {}",
        session.status,
        text.len(),
        if more { "more to read" } else { "the end" }
    );
    Ok(Answer {
        structured: json!({
            "run_id": null,
            "session_id": id,
            "status": session.status,
            "files": files.len(),
            "text": text,
            "next_cursor": next_cursor,
            "total_bytes": total_bytes,
        }),
        text: format!("{summary}\n{text}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_its_run_and_says_where_it_is() {
        let cursor = Cursor { seq: 42, offset: 7 };
        let text = cursor_text("0193-run", &cursor);
        assert_eq!(cursor_of(&text, "0193-run").ok(), Some(cursor));
        let other = cursor_of(&text, "another").err().unwrap();
        assert!(other.message.contains("another run"), "{}", other.message);
        for bad in ["", "x", "0193-run:a:0", "0193-run:0:0", "0193-run:1:-1"] {
            assert!(cursor_of(bad, "0193-run").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cut_falls_on_a_character_boundary() {
        assert_eq!(floor_boundary("aé", 2), 1);
        assert_eq!(floor_boundary("aé", 3), 3);
        assert_eq!(floor_boundary("ab", 9), 2);
    }
}
