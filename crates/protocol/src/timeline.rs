//! The fold of a run's [`Event`]s into its timeline and status (docs/protocol.md §2 and §4).
//!
//! Nodes come from the markers when the stream has any (they win), else from the human timeline
//! the engine always prints: `┌ name` opens a node, `└ done …` / `└ failed …` closes the
//! innermost open one, `│ ` prefixes nest. Either way a node begun again while it is the
//! innermost open one (no end between) is a legacy retry: one execution, one more attempt, its
//! status that of the last (so a nested node named like its parent reads as a retry: neither the
//! markers nor the timeline tell them apart). Without markers, a failing node's doubled
//! `└ failed` (at the same nesting) confirms the failure instead of closing its parent. Two cases
//! stay ambiguous without
//! markers (docs/protocol.md §2): a name long enough to wrap its `┌` line, and a process killed between
//! a node's marker and its `┌` line.

use serde::Serialize;

use crate::protocol::{strip_ansi, Event, EventKind, Stream};
use crate::status::Status;

/// One execution of a node, in the order executions began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeRun {
    pub name: String,
    pub status: Status,
    /// 0 for the run's own graph, 1 for a graph run inside a node, and so on.
    pub depth: usize,
    /// Legacy engines repeat `node_begin` on a retry; each repeat is one more attempt.
    pub attempts: u32,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    /// The engine's own duration text (`1.5s`) from its `└ done` / `└ failed` line.
    pub took: Option<String>,
    #[serde(skip)]
    bars: usize,
    /// Opened by a `┌` line before the stream's first marker: not a node (see
    /// [`TimelineFold::take_discarded`]).
    #[serde(skip)]
    discarded: bool,
}

impl NodeRun {
    /// Opened by a `┌` line before the stream's first marker, so not a node after all (the
    /// timeline leaves it out).
    pub fn is_discarded(&self) -> bool {
        self.discarded
    }
}

/// How a run's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// Reads a shell-style exit status, where 128 + n means "killed by signal n".
    pub fn from_shell_status(status: i32) -> Exit {
        if (129..=128 + 64).contains(&status) {
            Exit::Signal(status - 128)
        } else {
            Exit::Code(status)
        }
    }

    /// The shell-style status: the code, or 128 + the signal.
    pub fn shell_status(self) -> i32 {
        match self {
            Exit::Code(code) => code,
            Exit::Signal(signal) => 128 + signal,
        }
    }
}

/// What the studio knows about the end of a run, beyond its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunEnd {
    pub exit: Exit,
    /// The studio itself escalated to SIGTERM / SIGKILL.
    pub signalled_by_studio: bool,
}

/// How a cancelled run was stopped (the store keeps the same words: `graceful`, `forced`,
/// `budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum StoppedBy {
    /// The stop file: the engine finished its node and stopped.
    Graceful,
    /// The studio sent signals to the process group.
    Forced,
    /// The run reached its budget: the studio asked a graceful stop (escalated as any stop past
    /// the agent's grace). Only the studio knows it: never read from a run's output.
    Budget,
}

impl StoppedBy {
    /// The word the store and IPC carry.
    pub fn as_str(self) -> &'static str {
        match self {
            StoppedBy::Graceful => "graceful",
            StoppedBy::Forced => "forced",
            StoppedBy::Budget => "budget",
        }
    }

    /// The stored word back; `None` for any other text.
    pub fn parse(text: &str) -> Option<StoppedBy> {
        match text {
            "graceful" => Some(StoppedBy::Graceful),
            "forced" => Some(StoppedBy::Forced),
            "budget" => Some(StoppedBy::Budget),
            _ => None,
        }
    }
}

impl std::fmt::Display for StoppedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The run as far as it is known: its status and every node execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunTimeline {
    pub status: Status,
    pub session_id: Option<String>,
    pub exit_code: Option<i32>,
    /// For an `error` run, the `Error: …` line on stderr (or what is known instead).
    pub error: Option<String>,
    pub stopped_by: Option<StoppedBy>,
    pub nodes: Vec<NodeRun>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Done,
    Failed,
}

/// What an event changed in the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// A node execution began (its index in the timeline's nodes).
    NodeBegan(usize),
    /// A node execution ended.
    NodeEnded(usize),
    /// Nothing a subscriber needs to hear of (a retry, a doubled end, an output line).
    Nothing,
}

/// Folds events into a [`RunTimeline`]; feed it every event in arrival order.
#[derive(Debug, Default)]
pub struct TimelineFold {
    nodes: Vec<NodeRun>,
    /// Indexes into `nodes` of the executions that began and have not ended, outermost first.
    open: Vec<usize>,
    /// For each execution, the one it began inside (the innermost open one then).
    parents: Vec<Option<usize>>,
    /// The last `└ done` / `└ failed` line, applied to the node whose `node_end` comes next.
    pending: Option<(Outcome, Option<String>)>,
    last_closed: Option<usize>,
    /// A marker was seen: the human timeline's `┌` / `└` lines only annotate from then on.
    markers: bool,
    /// See [`TimelineFold::take_discarded`].
    discarded: Vec<usize>,
    /// Without markers: the `│ ` nesting of the `└` line that closed `last_closed`, while no node
    /// began since (a second `└ failed` there is the same node failing twice).
    closed_by_line_at: Option<usize>,
    session_id: Option<String>,
    stopped_line: bool,
    error_line: Option<String>,
    /// The first error line of stdout outside any node (a log with stderr merged in, `2>&1`).
    stdout_error_line: Option<String>,
    last_stderr_line: Option<String>,
}

impl TimelineFold {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn apply(&mut self, event: &Event<'_>) -> Applied {
        match &event.kind {
            EventKind::NodeBegin { node, bars } => {
                if !self.markers {
                    self.markers = true;
                    // Nodes the human timeline opened before the first marker give way to it.
                    self.discard_line_nodes();
                }
                return self.begin(node, *bars, event.at_ms);
            }
            EventKind::NodeEnd { node, .. } => {
                self.markers = true;
                return self.end(node, event.at_ms);
            }
            EventKind::TimelineBegin { node, bars } if !self.markers => {
                self.closed_by_line_at = None;
                return self.begin(node, *bars, event.at_ms);
            }
            EventKind::TimelineBegin { .. } => {}
            EventKind::NodeDone { took, bars } if !self.markers => {
                return self.end_by_line(Outcome::Done, took.clone(), *bars, event.at_ms)
            }
            EventKind::NodeFailed { took, bars } if !self.markers => {
                return self.end_by_line(Outcome::Failed, took.clone(), *bars, event.at_ms)
            }
            EventKind::NodeDone { took, .. } => self.pending = Some((Outcome::Done, took.clone())),
            EventKind::NodeFailed { took, .. } => self.pending = Some((Outcome::Failed, took.clone())),
            EventKind::Session { id } => {
                self.session_id.get_or_insert_with(|| id.clone());
            }
            // An inner graph that consumed the stop file prints this line inside its outer node,
            // and the outer run carries on: only a stop at the top level ends the run.
            EventKind::WorkflowStopped if self.open.is_empty() => self.stopped_line = true,
            EventKind::WorkflowStopped => {}
            EventKind::Output if event.stream == Stream::Stderr => self.stderr_line(&event.text),
            EventKind::Output => self.stdout_line(&event.text),
        }
        Applied::Nothing
    }

    /// Without markers, a `└` line ends the innermost open node (or, right after a `└ failed` at
    /// the same nesting, confirms that node's failure).
    fn end_by_line(&mut self, outcome: Outcome, took: Option<String>, bars: usize, at_ms: u64) -> Applied {
        if let (Some(last), Some(at)) = (self.last_closed, self.closed_by_line_at) {
            if at == bars && outcome == Outcome::Failed {
                let node = &mut self.nodes[last];
                node.status = Status::Error;
                node.took = took.or(node.took.take());
                return Applied::Nothing;
            }
        }
        let Some(&innermost) = self.open.last() else {
            return Applied::Nothing;
        };
        self.pending = Some((outcome, took));
        let name = self.nodes[innermost].name.clone();
        let applied = self.end(&name, at_ms);
        self.closed_by_line_at = Some(bars);
        applied
    }

    /// The first marker of a stream: what the `┌` lines before it opened is dropped (the markers
    /// tell the same nodes; none has been seen before the first marker in a real run).
    fn discard_line_nodes(&mut self) {
        for (index, node) in self.nodes.iter_mut().enumerate().filter(|(_, node)| !node.discarded) {
            node.discarded = true;
            self.discarded.push(index);
        }
        self.open.clear();
        self.last_closed = None;
        self.closed_by_line_at = None;
    }

    /// The executions found not to be nodes since the last call (a `┌ title` line an agent printed
    /// before the stream's first marker): whoever recorded them as begun forgets them. Indexes
    /// stay those [`Applied::NodeBegan`] gave; the timeline leaves them out.
    pub fn take_discarded(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.discarded)
    }

    /// A node execution, by its index.
    pub fn node(&self, index: usize) -> Option<&NodeRun> {
        self.nodes.get(index)
    }

    /// The execution a node ran inside (its index): O(1), recorded when it began.
    pub fn parent_of(&self, index: usize) -> Option<usize> {
        self.parents.get(index).copied().flatten()
    }

    /// The innermost node running now.
    pub fn current_node(&self) -> Option<&str> {
        self.open.last().map(|&i| self.nodes[i].name.as_str())
    }

    /// The index of the innermost execution running now (as [`Applied::NodeBegan`] gave it).
    pub fn current_execution(&self) -> Option<usize> {
        self.open.last().copied()
    }

    fn begin(&mut self, name: &str, bars: usize, at_ms: u64) -> Applied {
        self.pending = None;
        if let Some(&top) = self.open.last() {
            let node = &mut self.nodes[top];
            // A legacy retry: begun again with no end between; each attempt may add a `│ `.
            if node.name == name && bars >= node.bars {
                node.attempts += 1;
                node.status = Status::Running;
                return Applied::Nothing;
            }
        }
        self.parents.push(self.open.last().copied());
        self.open.push(self.nodes.len());
        self.nodes.push(NodeRun {
            name: name.to_owned(),
            status: Status::Running,
            depth: self.open.len() - 1,
            attempts: 1,
            started_at_ms: at_ms,
            ended_at_ms: None,
            took: None,
            bars,
            discarded: false,
        });
        Applied::NodeBegan(self.nodes.len() - 1)
    }

    fn end(&mut self, name: &str, at_ms: u64) -> Applied {
        let pending = self.pending.take();
        let Some(position) = self.open.iter().rposition(|&i| self.nodes[i].name == name) else {
            // A failing node ends twice; the second end confirms the failure of the node just closed.
            if let Some(last) = self.last_closed.filter(|&i| self.nodes[i].name == name) {
                if let Some((Outcome::Failed, took)) = pending {
                    let node = &mut self.nodes[last];
                    node.status = Status::Error;
                    node.took = took.or(node.took.take());
                }
            }
            return Applied::Nothing;
        };
        // Inner executions that never ended end with their parent.
        for inner in self.open.drain(position + 1..) {
            let node = &mut self.nodes[inner];
            node.status = Status::Unknown;
            node.ended_at_ms = Some(at_ms);
        }
        let index = self.open.pop().expect("position is within open");
        let node = &mut self.nodes[index];
        node.ended_at_ms = Some(at_ms);
        match pending {
            Some((Outcome::Failed, took)) => {
                node.status = Status::Error;
                node.took = took;
            }
            Some((Outcome::Done, took)) => {
                node.status = Status::Success;
                node.took = took;
            }
            None => node.status = Status::Success,
        }
        self.last_closed = Some(index);
        Applied::NodeEnded(index)
    }

    fn stderr_line(&mut self, text: &str) {
        let plain = strip_ansi(text.as_bytes());
        let plain = String::from_utf8_lossy(&plain);
        let trimmed = plain.trim();
        if trimmed.is_empty() {
            return;
        }
        if self.error_line.is_none() && is_error_line(trimmed) {
            self.error_line = Some(truncate(trimmed, 500));
        }
        self.last_stderr_line = Some(truncate(trimmed, 500));
    }

    /// A log of both streams merged (`2>&1`) has the crash on stdout, outside any node.
    /// Only lines that start like one (`<Name>Error…:` in its first 120 bytes) are looked at: this
    /// runs for every line of output.
    fn stdout_line(&mut self, text: &str) {
        let bytes = text.trim_start_matches(' ').as_bytes();
        if self.stdout_error_line.is_some() || !bytes.first().is_some_and(u8::is_ascii_uppercase) {
            return;
        }
        let head = &bytes[..bytes.len().min(120)];
        let Some(colon) = memchr::memchr(b':', head) else {
            return;
        };
        // `<Name>Error:` or `<Name>Error [CODE]:`.
        let name = match head[..colon].strip_suffix(b"]") {
            Some(coded) => memchr::memrchr(b'[', coded).map_or(coded, |open| coded[..open].trim_ascii_end()),
            None => &head[..colon],
        };
        if !name.ends_with(b"Error") {
            return;
        }
        let trimmed = text.trim();
        if is_error_line(trimmed) {
            self.stdout_error_line = Some(truncate(trimmed, 500));
        }
    }

    /// The timeline of a captured log read to its end (a file, standard input, the files of a
    /// run nothing follows any more), with `end` when its exit was recorded. The one rule for a
    /// log whose end was not recorded: nothing writes to it any more, so the run is not
    /// `running`; unless its output says it stopped, how it ended is `unknown`, and so are the
    /// nodes it left open.
    pub fn captured_timeline(&self, end: Option<RunEnd>) -> RunTimeline {
        let mut timeline = self.timeline(end);
        if end.is_none() && timeline.status == Status::Running {
            timeline.status = Status::Unknown;
            for node in &mut timeline.nodes {
                if node.status == Status::Running {
                    node.status = Status::Unknown;
                }
            }
        }
        timeline
    }

    /// The timeline so far; with `end`, the timeline of a finished run.
    pub fn timeline(&self, end: Option<RunEnd>) -> RunTimeline {
        let (status, stopped_by) = run_status(self.stopped_line, end);
        let mut nodes = self.nodes.clone();
        for &open in &self.open {
            nodes[open].status = match status {
                Status::Success => Status::Unknown,
                other => other,
            };
        }
        nodes.retain(|node| !node.discarded);
        let error = (status == Status::Error).then(|| {
            self.error_line
                .clone()
                .or_else(|| self.stdout_error_line.clone())
                .or_else(|| self.last_stderr_line.clone())
                .unwrap_or_else(|| match end.map(|e| e.exit) {
                    Some(Exit::Code(code)) => format!("exited with code {code}"),
                    Some(Exit::Signal(signal)) => format!("killed by signal {signal}"),
                    None => "failed".to_owned(),
                })
        });
        RunTimeline {
            status,
            session_id: self.session_id.clone(),
            exit_code: end.map(|e| e.exit.shell_status()),
            error,
            stopped_by,
            nodes,
        }
    }
}

/// docs/protocol.md §4: the run status from what the studio saw.
fn run_status(stopped_line: bool, end: Option<RunEnd>) -> (Status, Option<StoppedBy>) {
    match end {
        // A captured stream with no exit: it ended only if it says it stopped.
        None if stopped_line => (Status::Cancelled, Some(StoppedBy::Graceful)),
        None => (Status::Running, None),
        Some(RunEnd {
            signalled_by_studio: true,
            ..
        }) => (Status::Cancelled, Some(StoppedBy::Forced)),
        Some(RunEnd {
            exit: Exit::Signal(_), ..
        }) => (Status::Interrupted, None),
        Some(RunEnd {
            exit: Exit::Code(0), ..
        }) if stopped_line => (Status::Cancelled, Some(StoppedBy::Graceful)),
        Some(RunEnd {
            exit: Exit::Code(0), ..
        }) => (Status::Success, None),
        Some(_) => (Status::Error, None),
    }
}

/// `Error: …`, `TypeError: …`, `Error [ERR_MODULE_NOT_FOUND]: …`: the line Node.js prints for
/// an uncaught error.
fn is_error_line(line: &str) -> bool {
    let Some((name, message)) = line.split_once(": ") else {
        return false;
    };
    let name = match name.split_once(" [") {
        Some((name, code)) => match code.strip_suffix(']') {
            Some(code) if !code.is_empty() && code.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => name,
            _ => return false,
        },
        None => name,
    };
    name.ends_with("Error") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !message.is_empty()
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Reads a whole captured run (stdout, then stderr) into its timeline.
pub fn read_capture(stdout: &[u8], stderr: &[u8], end: Option<RunEnd>) -> RunTimeline {
    let mut fold = TimelineFold::new();
    for event in crate::protocol::StreamReader::read_all(Stream::Stdout, stdout) {
        fold.apply(&event);
    }
    for event in crate::protocol::StreamReader::read_all(Stream::Stderr, stderr) {
        fold.apply(&event);
    }
    fold.timeline(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(phase: &str, node: &str) -> String {
        format!("__WORKFLOW_GRAPH_LOG__{{\"phase\":\"{phase}\",\"node\":\"{node}\"}}\n")
    }

    fn summary(timeline: &RunTimeline) -> Vec<(String, Status, usize)> {
        timeline
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.status, n.depth))
            .collect()
    }

    #[test]
    fn nested_graphs_nest_and_keep_their_bars_after_they_end() {
        let stdout = [
            marker("node_begin", "outer"),
            format!("│ {}", marker("node_begin", "inner")),
            "│ └ done 1ms\n".into(),
            format!("│ {}", marker("node_end", "inner")),
            // From here on the engine prefixes every line, the outer markers too.
            "│ └ done 3ms\n".into(),
            format!("│ {}", marker("node_end", "outer")),
            format!("│ {}", marker("node_begin", "after")),
            "│ └ done 1ms\n".into(),
            format!("│ {}", marker("node_end", "after")),
        ]
        .concat();
        let timeline = read_capture(
            stdout.as_bytes(),
            b"",
            Some(RunEnd {
                exit: Exit::Code(0),
                signalled_by_studio: false,
            }),
        );
        assert_eq!(
            summary(&timeline),
            vec![
                ("outer".into(), Status::Success, 0),
                ("inner".into(), Status::Success, 1),
                ("after".into(), Status::Success, 0)
            ]
        );
        assert_eq!(timeline.status, Status::Success);
    }

    #[test]
    fn the_second_end_of_a_failing_inner_node_does_not_fail_its_parent() {
        let stdout = [
            marker("node_begin", "outer"),
            format!("│ {}", marker("node_begin", "inner")),
            "│ └ failed 2ms\n".into(),
            format!("│ {}", marker("node_end", "inner")),
            "│ ◆ Node 'inner' failed after 1 attempt(s): boom\n".into(),
            "│ └ failed 2ms\n".into(),
            format!("│ {}", marker("node_end", "inner")),
        ]
        .concat();
        let timeline = read_capture(stdout.as_bytes(), b"", None);
        assert_eq!(
            summary(&timeline),
            vec![("outer".into(), Status::Running, 0), ("inner".into(), Status::Error, 1)]
        );
    }

    #[test]
    fn legacy_retries_are_attempts_of_one_execution() {
        let stdout = [
            marker("node_begin", "plan"),
            marker("node_begin", "plan"),
            marker("node_begin", "plan"),
            "└ done 5ms\n".into(),
            marker("node_end", "plan"),
        ]
        .concat();
        let timeline = read_capture(stdout.as_bytes(), b"", None);
        assert_eq!(timeline.nodes.len(), 1);
        assert_eq!(timeline.nodes[0].attempts, 3);
        assert_eq!(timeline.nodes[0].status, Status::Success);
    }

    #[test]
    fn a_stop_inside_an_outer_node_does_not_cancel_the_run() {
        let stdout = [
            marker("node_begin", "outer"),
            "│ ◆ Workflow stopped externally\n".into(),
            "└ done 1ms\n".into(),
            marker("node_end", "outer"),
        ]
        .concat();
        let timeline = read_capture(
            stdout.as_bytes(),
            b"",
            Some(RunEnd {
                exit: Exit::Code(0),
                signalled_by_studio: false,
            }),
        );
        assert_eq!(timeline.status, Status::Success);
    }

    #[test]
    fn outcomes_follow_the_protocol_table() {
        let code = |c| {
            Some(RunEnd {
                exit: Exit::Code(c),
                signalled_by_studio: false,
            })
        };
        assert_eq!(
            run_status(true, code(0)),
            (Status::Cancelled, Some(StoppedBy::Graceful))
        );
        assert_eq!(run_status(false, code(0)), (Status::Success, None));
        assert_eq!(run_status(true, code(1)), (Status::Error, None));
        assert_eq!(
            run_status(
                false,
                Some(RunEnd {
                    exit: Exit::Signal(15),
                    signalled_by_studio: true
                })
            ),
            (Status::Cancelled, Some(StoppedBy::Forced))
        );
        assert_eq!(
            run_status(
                false,
                Some(RunEnd {
                    exit: Exit::Signal(9),
                    signalled_by_studio: false
                })
            ),
            (Status::Interrupted, None)
        );
        assert_eq!(run_status(false, None), (Status::Running, None));
        assert_eq!(Exit::from_shell_status(143), Exit::Signal(15));
        assert_eq!(Exit::from_shell_status(1), Exit::Code(1));
    }

    #[test]
    fn the_error_message_is_the_error_line_not_a_crash_dump_line() {
        let stderr = "file:///x/index.js:42\nthrow new Error(\"External stop requested\")\n\n\
                      Error: Node 'explode' failed: boom\n    at ee.run (file:///x.js:1:2)\n\nNode.js v20\n";
        let timeline = read_capture(
            b"",
            stderr.as_bytes(),
            Some(RunEnd {
                exit: Exit::Code(1),
                signalled_by_studio: false,
            }),
        );
        assert_eq!(timeline.error.as_deref(), Some("Error: Node 'explode' failed: boom"));
    }

    fn failed(stdout: &str, stderr: &str) -> Option<String> {
        let end = RunEnd {
            exit: Exit::Code(1),
            signalled_by_studio: false,
        };
        read_capture(stdout.as_bytes(), stderr.as_bytes(), Some(end)).error
    }

    #[test]
    fn the_error_named_with_its_code_is_the_message_not_the_node_version_after_it() {
        let crash = concat!(
            "node:internal/modules/esm/resolve:873\n",
            "  throw new ERR_MODULE_NOT_FOUND(packageName);\n",
            "        ^\n",
            "\n",
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@zibby/workflow' imported from /p/agent.js\n",
            "    at packageResolve (node:internal/modules/esm/resolve:873:9) {\n",
            "  code: 'ERR_MODULE_NOT_FOUND'\n",
            "}\n",
            "\n",
            "Node.js v20.20.2\n",
        );
        let expected = "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@zibby/workflow' imported from /p/agent.js";
        assert_eq!(failed("", crash).as_deref(), Some(expected));
        // The first line that names an error, not a later one; and in a log with stderr merged
        // into stdout (2>&1), the same line there.
        let two = "TypeError: x is not a function\nError: later\n";
        assert_eq!(failed("", two).as_deref(), Some("TypeError: x is not a function"));
        assert_eq!(failed(crash, "").as_deref(), Some(expected));
        // A node's own output naming an error (inside a node: `│ `) is not the run's error.
        assert_eq!(
            failed("│ Error: handled inside a node\nRangeError: out of range\n", "").as_deref(),
            Some("RangeError: out of range")
        );
        // Not error lines: a code that is not one, a word that only ends in Error.
        assert_eq!(
            failed("", "Error [not a code]: x\nNode.js v20\n").as_deref(),
            Some("Node.js v20")
        );
    }

    #[test]
    fn a_title_line_before_the_first_marker_is_not_a_node() {
        let stdout = format!(
            "┌  my agent\n│  ◆ Session 1777678254943_x\n{}┌ plan\n└ done 1ms\n{}",
            marker("node_begin", "plan"),
            marker("node_end", "plan")
        );
        let mut fold = TimelineFold::new();
        let mut began = Vec::new();
        for event in crate::protocol::StreamReader::read_all(Stream::Stdout, stdout.as_bytes()) {
            if let Applied::NodeBegan(index) = fold.apply(&event) {
                began.push(index);
            }
        }
        assert_eq!(began, [0, 1], "the title looked like a node until the first marker");
        assert_eq!(fold.take_discarded(), [0], "then it was said not to be one");
        assert!(fold.take_discarded().is_empty());
        let timeline = fold.timeline(None);
        assert_eq!(summary(&timeline), [("plan".to_owned(), Status::Success, 0)]);
    }

    #[test]
    fn without_markers_the_human_timeline_tells_the_nodes_nesting_and_a_double_failure() {
        let stdout =
            "┌ outer\n│ ┌ inner\n│ │ working\n│ └ failed 2ms\n│ └ failed 2ms\n└ failed 5ms\n\n┌ after\n└ done 1ms\n";
        let timeline = read_capture(stdout.as_bytes(), b"", None);
        assert_eq!(
            summary(&timeline),
            [
                ("outer".to_owned(), Status::Error, 0),
                ("inner".to_owned(), Status::Error, 1),
                ("after".to_owned(), Status::Success, 0)
            ]
        );
        // A table an agent prints is not a node (no space after the corner).
        let table = "┌──────┐\n│ cell │\n└──────┘\n";
        assert!(read_capture(table.as_bytes(), b"", None).nodes.is_empty());
    }
}
