//! The streaming reader of a run's stdout and stderr (docs/protocol.md §2).
//!
//! Bytes go in, in chunks of any size; typed [`Event`]s come out, one per line, each stamped with
//! the arrival time the caller gives. The reader never panics and never stalls: invalid UTF-8 is
//! replaced, ANSI colours are ignored when classifying, a missing final newline is flushed by
//! [`StreamReader::finish`], and a line of many megabytes is simply a long line.

use std::borrow::Cow;

use memchr::memchr;
use serde::{Deserialize, Serialize};

/// The marker prefix the engine prints before each node marker's JSON.
pub const MARKER_PREFIX: &str = "__WORKFLOW_GRAPH_LOG__";

/// The box-drawing bar the engine puts before lines printed inside a node or an inner graph.
const BAR: &str = "│";

/// A wrapped marker is only joined when the first half is this short: real markers are small.
const MAX_WRAPPED_MARKER_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// What one line of a run's output means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// `__WORKFLOW_GRAPH_LOG__{"phase":"node_begin","node":…}`; `bars` counts its `│ ` prefixes.
    NodeBegin { node: String, bars: usize },
    /// `__WORKFLOW_GRAPH_LOG__{"phase":"node_end","node":…}`.
    NodeEnd { node: String, bars: usize },
    /// `┌ name` of the human timeline: a node begins. Markers win where a stream has them; a
    /// stream without (most CI logs) tells its nodes by these lines alone.
    TimelineBegin { node: String, bars: usize },
    /// `└ done 1.5s`: the node that ends next succeeded (without markers: the innermost open one
    /// ends here).
    NodeDone { took: Option<String>, bars: usize },
    /// `└ failed 2ms`: the node that ends next failed.
    NodeFailed { took: Option<String>, bars: usize },
    /// `◆ Workflow stopped externally` / `◆ Workflow stopped by Studio`.
    WorkflowStopped,
    /// `│  ◆ Session <id>`.
    Session { id: String },
    /// Anything else: output to show as text.
    Output,
}

/// One line of a run's output, classified. Its text borrows the reader's buffer where it can:
/// call [`Event::into_owned`] to keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event<'a> {
    pub stream: Stream,
    /// Arrival time of the line's last byte, in milliseconds, on the caller's clock.
    pub at_ms: u64,
    /// The line as text (invalid UTF-8 replaced), without its line ending.
    pub text: Cow<'a, str>,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event<'_> {
    pub fn into_owned(self) -> Event<'static> {
        Event {
            stream: self.stream,
            at_ms: self.at_ms,
            text: Cow::Owned(self.text.into_owned()),
            kind: self.kind,
        }
    }
}

/// The longest line kept whole; the rest of a longer line is cut, and the line ends with
/// [`cut_marker`] saying how much (a 300 MB line must not take 300 MB, let alone several copies).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// What ends a line that was cut: ` … [N bytes cut]`.
pub fn cut_marker(cut: u64) -> String {
    format!(" … [{cut} bytes cut]")
}

/// Splits one byte stream into lines, across chunk boundaries, each at most [`MAX_LINE_BYTES`]
/// (plus the cut marker): memory stays bounded however long a line is.
#[derive(Debug, Default)]
struct LineBuffer {
    partial: Vec<u8>,
    /// How many bytes of the current line were dropped past the bound.
    cut: u64,
}

impl LineBuffer {
    /// Calls `line` for every complete line in `partial + bytes`, keeping the incomplete rest.
    /// Lines that lie within the valid UTF-8 part of `bytes` come with their text, checked once
    /// for the whole chunk rather than line by line.
    fn push(&mut self, bytes: &[u8], mut line: impl FnMut(&[u8], Option<&str>)) {
        let valid = match simdutf8::compat::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => simdutf8::compat::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
        };
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', bytes) {
            let piece = &bytes[start..newline];
            if self.partial.is_empty() && piece.len() <= MAX_LINE_BYTES {
                line(piece, valid.get(start..newline));
            } else {
                self.append(piece);
                let whole = self.take_line();
                line(&whole, None);
            }
            start = newline + 1;
        }
        self.append(&bytes[start..]);
    }

    /// Adds to the current line up to the bound; counts what is past it.
    fn append(&mut self, piece: &[u8]) {
        let room = MAX_LINE_BYTES - self.partial.len();
        let kept = piece.len().min(room);
        self.partial.extend_from_slice(&piece[..kept]);
        self.cut += (piece.len() - kept) as u64;
    }

    /// The current line, with the cut marker when it was cut (at a character boundary).
    fn take_line(&mut self) -> Vec<u8> {
        let mut whole = std::mem::take(&mut self.partial);
        let cut = std::mem::take(&mut self.cut);
        if cut > 0 {
            let boundary = utf8_boundary(&whole);
            let cut = cut + (whole.len() - boundary) as u64;
            whole.truncate(boundary);
            whole.extend_from_slice(cut_marker(cut).as_bytes());
        }
        whole
    }

    fn take_rest(&mut self) -> Option<Vec<u8>> {
        if self.partial.is_empty() && self.cut == 0 {
            None
        } else {
            Some(self.take_line())
        }
    }
}

/// The length of `bytes` less a character cut short at its end.
fn utf8_boundary(bytes: &[u8]) -> usize {
    match simdutf8::compat::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

/// A marker line whose JSON did not parse: it may continue on the next stdout line.
#[derive(Debug)]
struct WrappedMarker {
    raw: Vec<u8>,
    at_ms: u64,
    bars: usize,
}

/// Reads a run's stdout and stderr into [`Event`]s.
#[derive(Debug, Default)]
pub struct StreamReader {
    stdout: LineBuffer,
    stderr: LineBuffer,
    wrapped: Option<WrappedMarker>,
}

impl StreamReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk of `stream` that arrived at `at_ms`; every line it completes goes to `sink`.
    pub fn push(&mut self, stream: Stream, bytes: &[u8], at_ms: u64, sink: &mut impl FnMut(Event<'_>)) {
        let Self {
            stdout,
            stderr,
            wrapped,
        } = self;
        match stream {
            Stream::Stdout => stdout.push(bytes, |line, text| stdout_line(wrapped, line, text, at_ms, sink)),
            Stream::Stderr => stderr.push(bytes, |line, text| {
                sink(make_event(
                    Stream::Stderr,
                    line,
                    text,
                    at_ms,
                    Classified::Event(EventKind::Output),
                ))
            }),
        }
    }

    /// The streams have ended: flushes lines that had no final newline and a pending half marker.
    pub fn finish(&mut self, at_ms: u64, sink: &mut impl FnMut(Event<'_>)) {
        if let Some(rest) = self.stdout.take_rest() {
            stdout_line(&mut self.wrapped, &rest, None, at_ms, sink);
        }
        if let Some(pending) = self.wrapped.take() {
            sink(output_event(Stream::Stdout, &pending.raw, pending.at_ms));
        }
        if let Some(rest) = self.stderr.take_rest() {
            sink(output_event(Stream::Stderr, &rest, at_ms));
        }
    }

    /// Convenience for whole captures: all events of `bytes` on one stream, flushed at the end.
    pub fn read_all(stream: Stream, bytes: &[u8]) -> Vec<Event<'static>> {
        let mut reader = StreamReader::new();
        let mut events = Vec::new();
        reader.push(stream, bytes, 0, &mut |e| events.push(e.into_owned()));
        reader.finish(0, &mut |e| events.push(e.into_owned()));
        events
    }
}

fn stdout_line(
    wrapped: &mut Option<WrappedMarker>,
    line: &[u8],
    text: Option<&str>,
    at_ms: u64,
    sink: &mut impl FnMut(Event<'_>),
) {
    if let Some(first) = wrapped.take() {
        if let Some(joined) = join_wrapped(&first, line) {
            sink(joined);
            return;
        }
        sink(output_event(Stream::Stdout, &first.raw, first.at_ms));
    }
    match classify(line) {
        Classified::BrokenMarker { bars } if line.len() <= MAX_WRAPPED_MARKER_BYTES => {
            *wrapped = Some(WrappedMarker {
                raw: line.to_vec(),
                at_ms,
                bars,
            });
        }
        classified => sink(make_event(Stream::Stdout, line, text, at_ms, classified)),
    }
}

/// Joins a marker that was wrapped onto two lines (`\n│ ` inserted near column 120).
fn join_wrapped(first: &WrappedMarker, next: &[u8]) -> Option<Event<'static>> {
    let next = trim_line_end(next);
    let mut rest = next;
    for _ in 0..first.bars.max(1) {
        rest = rest.strip_prefix(BAR.as_bytes())?;
        rest = rest.strip_prefix(b" ").unwrap_or(rest);
    }
    let mut joined = trim_line_end(&first.raw).to_vec();
    joined.extend_from_slice(rest);
    match classify(&joined) {
        kind @ Classified::Event(EventKind::NodeBegin { .. } | EventKind::NodeEnd { .. }) => {
            Some(make_event(Stream::Stdout, &joined, None, first.at_ms, kind).into_owned())
        }
        _ => None,
    }
}

/// A line shown as it is: stderr, or a half marker that no next line completed.
fn output_event(stream: Stream, line: &[u8], at_ms: u64) -> Event<'_> {
    make_event(stream, line, None, at_ms, Classified::Event(EventKind::Output))
}

/// `text` is the line's text when the caller already checked it is valid UTF-8.
fn make_event<'a>(
    stream: Stream,
    line: &'a [u8],
    text: Option<&'a str>,
    at_ms: u64,
    classified: Classified,
) -> Event<'a> {
    let kind = match classified {
        Classified::Event(kind) => kind,
        Classified::BrokenMarker { .. } => EventKind::Output,
    };
    let text = match text {
        Some(text) => Cow::Borrowed(text.strip_suffix('\r').unwrap_or(text)),
        None => lossy_text(trim_line_end(line)),
    };
    Event {
        stream,
        at_ms,
        text,
        kind,
    }
}

/// The line as text, borrowed when it is valid UTF-8 (the common case takes the fast check).
fn lossy_text(line: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(line),
    }
}

enum Classified {
    Event(EventKind),
    /// Starts like a marker but its JSON does not parse (maybe wrapped).
    BrokenMarker {
        bars: usize,
    },
}

#[derive(Deserialize)]
struct MarkerJson {
    phase: String,
    node: String,
}

fn classify(line: &[u8]) -> Classified {
    let line = trim_line_end(line);
    // Most lines are plain output: decide that from their first bytes, without copying them.
    if !matches!(first_significant_byte(line), Some(b'_' | 0xE2 | 0x1b)) {
        return Classified::Event(EventKind::Output);
    }
    let plain = strip_ansi(line);
    let (bars, rest) = strip_bars(&plain);
    let output = Classified::Event(EventKind::Output);
    if let Some(json) = rest.strip_prefix(MARKER_PREFIX.as_bytes()) {
        if !json.starts_with(b"{") {
            return output;
        }
        return match serde_json::from_slice::<MarkerJson>(json.trim_ascii_end()) {
            Ok(marker) if marker.node.is_empty() => output,
            Ok(marker) => match marker.phase.as_str() {
                "node_begin" => Classified::Event(EventKind::NodeBegin {
                    node: marker.node,
                    bars,
                }),
                "node_end" => Classified::Event(EventKind::NodeEnd {
                    node: marker.node,
                    bars,
                }),
                _ => output,
            },
            Err(_) => Classified::BrokenMarker { bars },
        };
    }
    // Only lines that start like a timeline line are worth a UTF-8 check.
    if !(rest.starts_with("└ ".as_bytes()) || rest.starts_with("◆ ".as_bytes()) || rest.starts_with("┌ ".as_bytes()))
    {
        return output;
    }
    let Ok(rest) = std::str::from_utf8(rest) else {
        return output;
    };
    let rest = rest.trim_end();
    if let Some(node) = rest.strip_prefix("┌ ") {
        let node = node.trim();
        return if node.is_empty() {
            output
        } else {
            Classified::Event(EventKind::TimelineBegin {
                node: node.to_owned(),
                bars,
            })
        };
    }
    if let Some(outcome) = rest.strip_prefix("└ ") {
        let (word, took) = match outcome.split_once(' ') {
            Some((word, took)) => (word, Some(took.trim().to_owned()).filter(|t| !t.is_empty())),
            None => (outcome, None),
        };
        return match word {
            "done" => Classified::Event(EventKind::NodeDone { took, bars }),
            "failed" => Classified::Event(EventKind::NodeFailed { took, bars }),
            _ => output,
        };
    }
    if let Some(detail) = rest.strip_prefix("◆ ") {
        let detail = detail.trim_start();
        if let Some(id) = detail.strip_prefix("Session ") {
            let id = id.trim();
            if !id.is_empty() && !id.contains(char::is_whitespace) {
                return Classified::Event(EventKind::Session { id: id.to_owned() });
            }
        }
        if detail == "Workflow stopped externally" || detail == "Workflow stopped by Studio" {
            return Classified::Event(EventKind::WorkflowStopped);
        }
    }
    output
}

/// The first byte after leading spaces, `│` bars and colour codes: `_` starts a marker, 0xE2 the
/// `└`/`◆` of a timeline line; anything else is plain output.
fn first_significant_byte(line: &[u8]) -> Option<u8> {
    let mut i = 0;
    while let Some(&byte) = line.get(i) {
        match byte {
            b' ' => i += 1,
            0x1b if line.get(i + 1) == Some(&b'[') => {
                i += 2;
                while line.get(i).is_some_and(|b| !(0x40..=0x7e).contains(b)) {
                    i += 1;
                }
                i += 1;
            }
            0xE2 if line[i..].starts_with(BAR.as_bytes()) => i += BAR.len(),
            other => return Some(other),
        }
    }
    None
}

/// Removes `│ ` prefixes (each a bar and its spaces) and returns how many there were.
fn strip_bars(mut line: &[u8]) -> (usize, &[u8]) {
    let mut bars = 0;
    while let Some(rest) = line.strip_prefix(BAR.as_bytes()) {
        bars += 1;
        line = rest;
        while let Some(rest) = line.strip_prefix(b" ") {
            line = rest;
        }
    }
    (bars, line)
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Text with ANSI escape sequences (CSI, OSC and two-byte escapes) removed.
pub fn strip_ansi(line: &[u8]) -> Cow<'_, [u8]> {
    if memchr(0x1b, line).is_none() {
        return Cow::Borrowed(line);
    }
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] != 0x1b {
            out.push(line[i]);
            i += 1;
            continue;
        }
        i += 1;
        match line.get(i) {
            Some(b'[') => {
                i += 1;
                while i < line.len() && !(0x40..=0x7e).contains(&line[i]) {
                    i += 1;
                }
                i += 1;
            }
            Some(b']') => {
                i += 1;
                while i < line.len() {
                    if line[i] == 0x07 {
                        i += 1;
                        break;
                    }
                    if line[i] == 0x1b && line.get(i + 1) == Some(&b'\\') {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
            Some(_) => i += 1,
            None => {}
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(stdout: &str) -> Vec<EventKind> {
        StreamReader::read_all(Stream::Stdout, stdout.as_bytes())
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    fn begin(node: &str, bars: usize) -> EventKind {
        EventKind::NodeBegin {
            node: node.into(),
            bars,
        }
    }

    #[test]
    fn a_line_past_the_bound_is_cut_with_a_marker_and_memory_stays_bounded() {
        let chunk = vec![b'x'; 64 * 1024];
        let total = 20 * 1024 * 1024 + 3;
        let mut reader = StreamReader::new();
        let mut texts: Vec<String> = Vec::new();
        for stream in [Stream::Stdout, Stream::Stderr] {
            let mut sent = 0;
            while sent + chunk.len() <= total {
                reader.push(stream, &chunk, 0, &mut |e| texts.push(e.text.into_owned()));
                sent += chunk.len();
                let held = match stream {
                    Stream::Stdout => reader.stdout.partial.capacity(),
                    Stream::Stderr => reader.stderr.partial.capacity(),
                };
                assert!(held <= 2 * MAX_LINE_BYTES, "{held} bytes held for one line");
            }
            let rest = "x".repeat(total - sent) + "\nnext\n";
            reader.push(stream, rest.as_bytes(), 0, &mut |e| texts.push(e.text.into_owned()));
        }
        let cut = format!(
            "{}{}",
            "x".repeat(MAX_LINE_BYTES),
            cut_marker((total - MAX_LINE_BYTES) as u64)
        );
        assert_eq!(texts.len(), 4);
        for pair in texts.chunks(2) {
            assert!(pair[0] == cut, "cut to {} bytes", pair[0].len());
            assert_eq!(pair[1], "next");
        }
        // In one chunk, and at the end of the stream, and never inside a character.
        let long = "é".repeat(MAX_LINE_BYTES);
        let events = StreamReader::read_all(Stream::Stdout, format!("{long}\n{long}").as_bytes());
        assert_eq!(events.len(), 2);
        for event in events {
            let kept = "é".repeat(MAX_LINE_BYTES / 2);
            assert_eq!(event.text, format!("{kept}{}", cut_marker((MAX_LINE_BYTES) as u64)));
        }
    }

    #[test]
    fn a_marker_is_a_whole_line_with_optional_bars() {
        assert_eq!(
            kinds("__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"plan\"}\n"),
            vec![begin("plan", 0)]
        );
        assert_eq!(
            kinds("│ │ __WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"inner\"}\n"),
            vec![begin("inner", 2)]
        );
    }

    #[test]
    fn marker_text_glued_after_other_output_is_output() {
        let spoof = "hello __WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"evil\"}\n\
                     __WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"x\"} trailing\n";
        assert_eq!(kinds(spoof), vec![EventKind::Output, EventKind::Output]);
    }

    #[test]
    fn unknown_phases_and_empty_names_are_output() {
        let text = "__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_retry\",\"node\":\"a\"}\n\
                    __WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"\"}\n";
        assert_eq!(kinds(text), vec![EventKind::Output, EventKind::Output]);
    }

    #[test]
    fn a_wrapped_marker_is_joined_with_its_continuation() {
        let name = "n".repeat(130);
        let marker = format!("│ __WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"{name}\"}}");
        let (head, tail) = marker.split_at(120);
        let events = StreamReader::read_all(Stream::Stdout, format!("{head}\n│ {tail}\nafter\n").as_bytes());
        assert_eq!(events.len(), 2, "the two halves are one marker: {events:?}");
        assert_eq!(events[0].kind, begin(&name, 1));
        assert_eq!(events[1].text, "after");
    }

    #[test]
    fn a_broken_marker_that_no_line_repairs_stays_output() {
        let events = StreamReader::read_all(Stream::Stdout, b"__WORKFLOW_GRAPH_LOG__{\"phase\":\nplain\n");
        let texts: Vec<_> = events.iter().map(|e| (e.text.as_ref(), &e.kind)).collect();
        assert_eq!(
            texts,
            vec![
                ("__WORKFLOW_GRAPH_LOG__{\"phase\":", &EventKind::Output),
                ("plain", &EventKind::Output)
            ]
        );
    }

    #[test]
    fn colours_do_not_hide_the_timeline() {
        let text = "\x1b[90m│\x1b[39m  \x1b[32m◆\x1b[39m Session 1795952463773_jp1q\n\
                    \x1b[90m└\x1b[39m \x1b[32mdone\x1b[39m\x1b[2m 4ms\x1b[22m\n";
        assert_eq!(
            kinds(text),
            vec![
                EventKind::Session {
                    id: "1795952463773_jp1q".into()
                },
                EventKind::NodeDone {
                    took: Some("4ms".into()),
                    bars: 0
                }
            ]
        );
    }

    #[test]
    fn chunks_split_anywhere_give_the_same_lines() {
        let text = "a\n__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"é\"}\r\n└ failed 2ms\nno newline";
        let whole = StreamReader::read_all(Stream::Stdout, text.as_bytes());
        for size in 1..text.len() {
            let mut reader = StreamReader::new();
            let mut events = Vec::new();
            for chunk in text.as_bytes().chunks(size) {
                reader.push(Stream::Stdout, chunk, 0, &mut |e| events.push(e.into_owned()));
            }
            reader.finish(0, &mut |e| events.push(e.into_owned()));
            assert_eq!(events, whole, "chunk size {size}");
        }
        assert_eq!(whole.last().unwrap().text, "no newline");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let events = StreamReader::read_all(Stream::Stdout, b"ok \xff\xfe bytes\n\xe2\x94");
        assert_eq!(events[0].text, "ok \u{fffd}\u{fffd} bytes");
        assert_eq!(events[1].text, "\u{fffd}");
    }

    #[test]
    fn stderr_lines_are_never_markers() {
        let events = StreamReader::read_all(
            Stream::Stderr,
            b"__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"a\"}\n",
        );
        assert_eq!(events[0].kind, EventKind::Output);
        assert_eq!(events[0].stream, Stream::Stderr);
    }

    #[test]
    fn arrival_times_are_those_of_the_chunk_that_completed_the_line() {
        let mut reader = StreamReader::new();
        let mut events = Vec::new();
        reader.push(Stream::Stdout, b"par", 5, &mut |e| events.push(e.into_owned()));
        reader.push(Stream::Stdout, b"tial\nnext\n", 9, &mut |e| events.push(e.into_owned()));
        assert_eq!(events.iter().map(|e| e.at_ms).collect::<Vec<_>>(), vec![9, 9]);
    }
}
