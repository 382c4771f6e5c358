//! One side of a comparison: a run the store recorded, a session known only by its folder, or a
//! captured log; its node executions in the order they began, and its output lines, each given to
//! the execution it was printed in (the innermost one running), streamed, never held whole.
//!
//! - A log is read as `zstudio parse` reads it (the protocol's reader and fold): markers, else
//!   the human timeline; a line belongs to the fold's innermost open execution.
//! - A recorded run's nodes are its node spans (what the window and `zstudio show` show); its
//!   stored lines are folded again to tell which execution of a node printed each one (the store
//!   keeps the node's name, not which of its executions), matched to the spans by name and
//!   occurrence.
//! - A folder's nodes are those the session folder has (`sessions::session`), each with its
//!   `raw_stream_output.txt`; the session's own `raw_stream_output.txt` is its output outside any
//!   node.
//! - Like is compared with like: a recorded run compared with a folder (a bucket's, a terminal
//!   run's) is read as its own session folder, whose output is the agent's raw stream as the
//!   folder's is, rather than the stdout the store recorded; from the store still when its folder
//!   is gone or a later run of the session wrote it.
//!
//! Lines that only draw the timeline (markers, `┌ node`, `└ done 1.5s`) and the `◆ Session <id>`
//! line are not output: every run has its own durations and id, and the nodes already say them.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::protocol::{Event, EventKind, Stream, StreamReader};
use crate::sessions::cost::{NodeUsage, UsageTotal};
use crate::sessions::session::{NodeArtifacts, Workspace};
use crate::sessions::untrusted;
use crate::status::Status;
use crate::store::{RunRecord, Store};
use crate::timeline::TimelineFold;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

use super::text::line_hash;

mod folder;
mod log;
mod run;

/// A side's run: `session_id` and `run_id` are null for a log (and `run_id` for a folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunSummary {
    pub session_id: Option<String>,
    pub run_id: Option<String>,
    pub status: Status,
    pub elapsed_ms: Option<u64>,
    /// The total over its nodes, as `zstudio runs` gives it for a run
    /// (`Store::runs_nodes_usage`), as `show` for a folder; read from the output for a log.
    pub usage: Option<UsageTotal>,
}

/// The index of each node's last execution.
pub(super) fn last_occurrences(executions: &[Execution]) -> HashMap<&str, usize> {
    let mut last = HashMap::new();
    for (index, execution) in executions.iter().enumerate().filter(|(_, e)| !e.discarded) {
        last.insert(execution.name.as_str(), index);
    }
    last
}

/// What one side of a comparison is.
#[derive(Debug, Clone)]
pub enum Source {
    /// A run the store recorded.
    Run { run: Box<RunRecord> },
    /// A session the store has no run of: its folder alone.
    Folder { workspace: Workspace, id: SessionId },
    /// A captured log (a CI log): its stdout, with its stderr and exit status when known.
    Log(CapturedLog),
}

/// A captured run: its stdout, and what is known of its end (read as `zstudio parse` and
/// `zstudio import` read it: [`crate::timeline::TimelineFold::captured_timeline`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedLog {
    pub stdout: PathBuf,
    /// The run's stderr, for the error message of a failed run.
    pub stderr: Option<PathBuf>,
    /// The run's exit status (shell-style: 128+n is signal n).
    pub exit_code: Option<i32>,
}

impl CapturedLog {
    /// A stdout alone: how the run ended is what its output says, else `unknown`.
    pub fn stdout(path: impl Into<PathBuf>) -> CapturedLog {
        CapturedLog {
            stdout: path.into(),
            ..CapturedLog::default()
        }
    }
}

impl Source {
    /// What `id` names in `workspace`: a run id, else a session id (its last run, else its
    /// folder). Anything else is an error naming it.
    pub fn resolve(store: &Store, workspace: &Workspace, id: &str) -> Result<Source, Error> {
        if let Ok(run) = store.run(id) {
            return Ok(Source::Run { run: Box::new(run) });
        }
        let session = SessionId::parse(id)?;
        if let Some(last) = store.runs(workspace, Some(&session))?.into_iter().next() {
            return Ok(Source::Run { run: Box::new(last) });
        }
        if workspace.session_folder(&session).is_ok() {
            return Ok(Source::Folder {
                workspace: workspace.clone(),
                id: session,
            });
        }
        Err(Error::SessionNotFound {
            id: id.to_owned(),
            sessions_dir: workspace.sessions_dir(),
        })
    }
}

/// One execution of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    pub name: String,
    pub status: Status,
    /// When it began, from the start of its run (unknown for logs and folders).
    pub started_ms: Option<u64>,
    pub elapsed_ms: Option<u64>,
    /// An execution the fold found not to be a node after all (a `┌ title` before the first
    /// marker): left out of the comparison.
    pub discarded: bool,
    /// What it used: a node's last execution only has it (see `with_usage`).
    pub usage: Option<NodeUsage>,
}

/// The executions with their usage: each node's, by name, on its last execution (a node's raw
/// stream, and the store's word, are its last execution's); and the total over the nodes, one
/// per name, as the listing and `zstudio runs` count them.
fn with_usage(executions: &mut [Execution], mut usage_of: impl FnMut(&str) -> Option<NodeUsage>) -> Option<UsageTotal> {
    let mut order: Vec<(usize, String)> = last_occurrences(executions)
        .into_iter()
        .map(|(name, i)| (i, name.to_owned()))
        .collect();
    order.sort_unstable();
    let mut usages = Vec::with_capacity(order.len());
    for (index, name) in order {
        let usage = usage_of(&name);
        executions[index].usage = usage.clone();
        usages.push(usage);
    }
    UsageTotal::of(usages.iter().map(Option::as_ref))
}

/// Where a line belongs: an execution (its index in [`Side::executions`]), or no node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    Outside,
    Execution(usize),
}

/// The lines of one target, as hashed: each one's hash, and where it is (its byte offset in its
/// file, or its line number in the store) to read it again alone.
#[derive(Debug, Clone, Default)]
pub struct Column {
    pub hashes: Vec<u64>,
    pub at: Vec<u64>,
}

/// The hashes of a side's lines, per execution and outside any.
#[derive(Debug, Clone, Default)]
pub struct Hashes {
    pub executions: Vec<Column>,
    pub outside: Column,
}

impl Hashes {
    pub fn of(&self, target: Target) -> &[u64] {
        self.column(target).map_or(&[][..], |c| c.hashes.as_slice())
    }

    fn column(&self, target: Target) -> Option<&Column> {
        match target {
            Target::Outside => Some(&self.outside),
            Target::Execution(i) => self.executions.get(i),
        }
    }

    fn push(&mut self, target: Target, at: u64, text: &str) {
        let column = match target {
            Target::Outside => &mut self.outside,
            Target::Execution(i) => {
                if self.executions.len() <= i {
                    self.executions.resize_with(i + 1, Column::default);
                }
                &mut self.executions[i]
            }
        };
        column.hashes.push(line_hash(text));
        column.at.push(at);
    }
}

/// Where a side's lines are read from.
#[derive(Debug, Clone)]
enum Lines {
    Log(PathBuf),
    Stored {
        run_id: String,
    },
    Files {
        nodes: Vec<Option<PathBuf>>,
        whole: Option<PathBuf>,
    },
}

/// A side, opened: its summary, executions, the folder's files of its nodes by name (when they
/// are this run's), and its lines' hashes.
#[derive(Debug, Clone)]
pub struct Side {
    pub summary: RunSummary,
    pub executions: Vec<Execution>,
    pub artifacts: HashMap<String, NodeArtifacts>,
    /// The side's session folder holds this run's node files (a folder, a session's last run):
    /// prompts and results are compared only between two such sides.
    pub has_files: bool,
    pub hashes: Hashes,
    lines: Lines,
}

/// Reading a file goes this many bytes at a time.
const CHUNK_BYTES: usize = 256 * 1024;
/// Up to this many lines are read again one by one where they are; more, by reading on.
const READ_ALONE_LINES: usize = 2_000;

impl Side {
    /// Opens a side and hashes its lines: one pass over its output. `against_a_folder`: the other
    /// side is a session folder, whose output is the agent's raw stream; a recorded run is then
    /// read from its own folder too (like with like), when the folder is still its run's.
    pub fn open(store: Option<&Store>, source: &Source, against_a_folder: bool) -> Result<Side, Error> {
        match source {
            Source::Log(log) => Side::open_log(log),
            Source::Run { run } => {
                let store = store.ok_or_else(|| Error::RunNotFound { id: run.id.clone() })?;
                match against_a_folder {
                    true => Side::open_run_as_folder(store, run),
                    false => Side::open_run(store, run),
                }
            }
            Source::Folder { workspace, id } => Side::open_folder(workspace, id),
        }
    }

    /// The text of the `wanted` lines (0-based, sorted, per target). A few lines are read alone,
    /// where the first read found them; many (past `READ_ALONE_LINES`) by reading the output
    /// again, which stops once it has them all.
    pub fn read_lines(
        &self,
        store: Option<&Store>,
        wanted: &HashMap<Target, Vec<usize>>,
        line_chars: usize,
    ) -> Result<HashMap<Target, HashMap<usize, String>>, Error> {
        let mut remaining: usize = wanted.values().map(Vec::len).sum();
        let mut found: HashMap<Target, HashMap<usize, String>> = HashMap::new();
        if remaining == 0 {
            return Ok(found);
        }
        if remaining <= READ_ALONE_LINES {
            for (&target, lines) in wanted {
                let Some(column) = self.hashes.column(target) else {
                    continue;
                };
                for &index in lines {
                    if let Some(&at) = column.at.get(index) {
                        let text = self.line_at(store, target, at)?;
                        found
                            .entry(target)
                            .or_default()
                            .insert(index, super::text::shown_line(&text, line_chars));
                    }
                }
            }
            return Ok(found);
        }
        let mut seen: HashMap<Target, usize> = HashMap::new();
        self.each_line(store, &mut |target, _, text| {
            let index = seen.entry(target).or_insert(0);
            let here = *index;
            *index += 1;
            if wanted
                .get(&target)
                .is_some_and(|lines| lines.binary_search(&here).is_ok())
            {
                found
                    .entry(target)
                    .or_default()
                    .insert(here, super::text::shown_line(text, line_chars));
                remaining -= 1;
            }
            remaining > 0
        })?;
        Ok(found)
    }

    /// One line of the side, where the first read found it.
    fn line_at(&self, store: Option<&Store>, target: Target, at: u64) -> Result<String, Error> {
        match &self.lines {
            Lines::Log(path) => line_in_file(path, at, false),
            Lines::Stored { run_id } => {
                let store = store.ok_or_else(|| Error::RunNotFound { id: run_id.clone() })?;
                let page = store.output_page(run_id, at as i64, 1)?;
                Ok(page.into_iter().next().map(|line| line.text).unwrap_or_default())
            }
            Lines::Files { nodes, whole } => {
                let file = match target {
                    Target::Execution(index) => nodes.get(index).and_then(Option::as_ref),
                    Target::Outside => whole.as_ref(),
                };
                file.map_or(Ok(String::new()), |file| line_in_file(file, at, true))
            }
        }
    }

    /// Every output line of the side, in order, with where it belongs, until `line` says stop.
    fn each_line(&self, store: Option<&Store>, line: &mut dyn FnMut(Target, u64, &str) -> bool) -> Result<(), Error> {
        match &self.lines {
            Lines::Log(path) => stream_log(path, line).map(drop),
            Lines::Stored { run_id } => {
                let store = store.ok_or_else(|| Error::RunNotFound { id: run_id.clone() })?;
                self.stream_stored(store, run_id, line)
            }
            Lines::Files { nodes, whole } => {
                for (index, file) in nodes.iter().enumerate() {
                    if let Some(file) = file {
                        if !stream_file(file, &mut |at, text| line(Target::Execution(index), at, text))? {
                            return Ok(());
                        }
                    }
                }
                if let Some(file) = whole {
                    stream_file(file, &mut |at, text| line(Target::Outside, at, text))?;
                }
                Ok(())
            }
        }
    }
}

/// A line that is output (not the timeline's drawing, not the session line).
fn is_output(event: &Event<'_>) -> bool {
    matches!(event.kind, EventKind::Output | EventKind::WorkflowStopped)
}

/// The artifacts of a folder's nodes, by name (a node folder holds its last execution's).
fn artifacts_by_name(nodes: Vec<crate::sessions::session::SessionNode>) -> HashMap<String, NodeArtifacts> {
    nodes.into_iter().map(|node| (node.name, node.artifacts)).collect()
}

/// A captured log through the reader and the fold, each output line given with the execution
/// it was printed in and its byte offset; returns the fold (its executions, indexes as given).
fn stream_log(path: &Path, line: &mut dyn FnMut(Target, u64, &str) -> bool) -> Result<TimelineFold, Error> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut fold = TimelineFold::new();
    read_lines_of(path, &mut file, &mut |event, at| {
        fold.apply(&event);
        if !is_output(&event) {
            return true;
        }
        let target = fold.current_execution().map_or(Target::Outside, Target::Execution);
        line(target, at, &event.text)
    })?;
    Ok(fold)
}

/// The lines of a session file (untrusted: never through a link, regular files only), split as
/// the reader splits output (lines bounded at 1 MiB), with their byte offsets. False when `line`
/// said stop.
fn stream_file(path: &Path, line: &mut dyn FnMut(u64, &str) -> bool) -> Result<bool, Error> {
    let (mut file, _) = untrusted::open_regular(path)?;
    read_lines_of(path, &mut file, &mut |event, at| line(at, &event.text))
}

/// A file's lines through the protocol's reader, one line at a time (so that each event comes
/// with the byte offset its line starts at), until `event` says stop (false then).
fn read_lines_of(
    path: &Path,
    file: &mut std::fs::File,
    event: &mut dyn FnMut(Event<'_>, u64) -> bool,
) -> Result<bool, Error> {
    let mut reader = StreamReader::new();
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let go_on = std::cell::Cell::new(true);
    // Each line goes in with its byte offset as its time: an event carries its own line's place,
    // even one the reader held back a line (a marker broken across lines).
    let mut sink = |e: Event<'_>| {
        let at = e.at_ms;
        if go_on.get() && !event(e, at) {
            go_on.set(false);
        }
    };
    let (mut offset, mut line_start) = (0u64, 0u64);
    while go_on.get() {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        let chunk = &buffer[..n];
        let mut from = 0;
        for newline in memchr::memchr_iter(b'\n', chunk) {
            reader.push(Stream::Stdout, &chunk[from..=newline], line_start, &mut sink);
            from = newline + 1;
            line_start = offset + from as u64;
            if !go_on.get() {
                break;
            }
        }
        if from < n && go_on.get() {
            reader.push(Stream::Stdout, &chunk[from..], line_start, &mut sink);
        }
        offset += n as u64;
    }
    reader.finish(line_start, &mut sink);
    Ok(go_on.get())
}

/// The line that starts at byte `at` of a file, as the reader reads it (at most 1 MiB, then cut).
fn line_in_file(path: &Path, at: u64, untrusted_file: bool) -> Result<String, Error> {
    use std::io::{Seek, SeekFrom};
    let mut file = if untrusted_file {
        untrusted::open_regular(path)?.0
    } else {
        std::fs::File::open(path).map_err(|e| Error::io(path, e))?
    };
    file.seek(SeekFrom::Start(at)).map_err(|e| Error::io(path, e))?;
    let mut reader = StreamReader::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut text = None;
    let mut read = 0usize;
    // The line is cut past MAX_LINE_BYTES: a little more than that is enough to see it cut.
    while text.is_none() && read <= crate::protocol::MAX_LINE_BYTES + buffer.len() {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        read += n;
        let chunk = &buffer[..n];
        let end = memchr::memchr(b'\n', chunk).map_or(n, |newline| newline + 1);
        reader.push(Stream::Stdout, &chunk[..end], 0, &mut |e| {
            text.get_or_insert_with(|| e.text.into_owned());
        });
        if end < n {
            break;
        }
    }
    reader.finish(0, &mut |e| {
        text.get_or_insert_with(|| e.text.into_owned());
    });
    Ok(text.unwrap_or_default())
}
