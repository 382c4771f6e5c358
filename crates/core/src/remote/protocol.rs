//! The studio server's wire protocol (`zstudio serve --stdio`, docs/cli.md): JSON lines.
//!
//! The server prints one banner line ([`Banner`]) before any frame; then each line is a frame.
//! The client sends requests `{id, method, params}`; the server answers each with
//! `{id, result}` or `{id, error: {code, message, details?}}` (the code is the core's
//! [`ErrorCode`] word), in any order, and sends notifications `{method, params}` (no id) for what
//! happens: [`CHANGE`] (a `watch --json` line) and [`RUN_EVENT`] (a `run --json` line). A frame
//! is at most [`MAX_REQUEST_BYTES`] one way and [`MAX_REPLY_BYTES`] the other.
//!
//! A chunk of a file moves as raw bytes after its frame's line, which says how many follow
//! (`"data": N`, at most `remote::transfer`'s `MAX_CHUNK`, 1 MiB): a request
//! `{id, method, params, data}` (`import_write`), a reply `{"id":N,"data":N}` in place of a
//! result (`export_read`); `remote::transfer` reads and bounds them.

use std::io::{self, BufRead, Read, Write};
use std::os::unix::net::UnixStream;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::runs::runner::RunEvent;
use crate::sessions::change::Change;
use crate::vocabulary::error::{Error, ErrorCode};

/// The protocol's version: both ends must speak the same (the client's `hello` says its own).
/// 2: `sessions_list` answers its listing as a table (`remote::table`).
/// (`sessions_page` and `sessions_usage` came after it: methods added, nothing changed; and a
/// file's chunks as raw bytes after their frame's line, where they were base64 inside it: a
/// remote workspace's server is the window's own build, checked by its SHA-256, so both ends
/// always speak the same.)
pub const PROTOCOL_VERSION: u32 = 2;

/// The window's `sessions_list`, whose result is carried as a table (`remote::table`), not as
/// the listing's objects.
pub const SESSIONS_LIST: &str = "sessions_list";

/// The most bytes a request line may hold (a request names a method and a few arguments).
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// The most bytes a reply or notification line may hold (a listing of 10,000 sessions is
/// about 10 MB; an output page is at most 5,000 lines).
pub const MAX_REPLY_BYTES: usize = 64 << 20;

/// The first request of a connection: `{protocol_version}`, answered with the server's
/// [`Banner`] (a mismatch is answered `protocol_mismatch` and the server exits).
pub const HELLO: &str = "hello";

/// Starts sending [`CHANGE`] notifications for the workspace's sessions (no parameters). It is
/// answered before the server's watcher is up (seconds on a large workspace); a change made
/// meanwhile is sent once it is, as what differs from the last listing.
pub const CHANGES_SUBSCRIBE: &str = "changes_subscribe";

/// Settles the runs no studio process follows any more (a run that went on through its keeper
/// after the server that started it exited, and ended since): their end and the rest of their
/// output recorded from the keeper's files. No parameters.
pub const RUNS_RECONCILE: &str = "runs_reconcile";

/// Trusts the launch of an agent of the server's workspace that the user was shown (the
/// `agents_untrusted` error's details) and accepted: `{agent, node?, digest, prompt?,
/// session_id?}`, `digest` the launch's as shown (the prompt and session only fill the launch
/// shown in). A digest that is no launch's (`""`) asks for the launch to show. Answers `true` once it is trusted (it may have been already); when the
/// launch is not the one shown any more (the agents file changed), `agents_untrusted` again with
/// the launch as it is now, to show.
pub const AGENT_TRUST: &str = "agent_trust";

/// Writes a session's bundle on the server (`remote::export::ExportOpen`), to read by chunks.
pub const EXPORT_OPEN: &str = "export_open";

/// A chunk of an open export (`remote::export::ExportRead`): answered with the chunk's bytes
/// after the reply's line (`{"id":N,"data":N}`).
pub const EXPORT_READ: &str = "export_read";

/// Lets an open export go: the server removes its bundle.
pub const EXPORT_CLOSE: &str = "export_close";

/// Makes an upload on the server for a file to import (`remote::import::ImportOpen`).
pub const IMPORT_OPEN: &str = "import_open";

/// A chunk of an upload (`remote::import::ImportWrite`) at the offset it has reached: its bytes
/// after the request's line (`"data": N`).
pub const IMPORT_WRITE: &str = "import_write";

/// Imports a whole upload into the server's workspace and store (`remote::import::ImportCommit`).
pub const IMPORT_COMMIT: &str = "import_commit";

/// Lets an upload go: the server removes it.
pub const IMPORT_CLOSE: &str = "import_close";

/// A session's runs as OpenTelemetry traces, read by the server from its store and folders
/// (`{session_id, include_output}`): the client writes them (`export --otlp`) or sends them to
/// its own collector (`otlp push`).
pub const OTLP_TRACES: &str = "otlp_traces";

/// The notification of a change of the workspace's sessions: its params are a `Change`, as one
/// line of `zstudio watch --json`.
pub const CHANGE: &str = "change";

/// The notification of an event of a run the server started: its params are a `RunEvent`, as
/// one line of `zstudio run --json` (output lines included). A client that reads too slowly
/// loses events (the store loses none: `run_output` pages them by `seq`).
pub const RUN_EVENT: &str = "run_event";

/// The one line the server prints before any frame. `nonce` is the client's own (`--nonce`), so
/// the client knows its banner among whatever a remote shell printed first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Banner {
    /// The server's `zstudio` version.
    pub zstudio: String,
    pub protocol_version: u32,
    pub nonce: String,
}

/// `hello`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
}

/// A request frame.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub method: String,
    #[serde(default)]
    pub params: Value,
    /// How many raw bytes follow the request's line (a file's chunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<u64>,
}

/// How much of a host's error message is kept.
pub const MAX_REMOTE_MESSAGE_CHARS: usize = 2_000;

/// An error as a frame carries it: as IPC and `--json` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireError {
    /// An [`ErrorCode`] word.
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl From<&Error> for WireError {
    fn from(error: &Error) -> WireError {
        WireError {
            code: error.code().as_str().to_owned(),
            message: error.to_string(),
            details: error.details(),
        }
    }
}

impl WireError {
    /// The error a client reports for this answer of the server on `host`: its code kept (an
    /// unknown word, from a newer server, becomes `internal`), its message on one line with every
    /// hidden character escaped and cut at [`MAX_REMOTE_MESSAGE_CHARS`] (a host's words cannot
    /// draw lines of their own where the error is printed).
    pub fn into_error(self, host: &str) -> Error {
        let code = ErrorCode::from_word(&self.code).unwrap_or(ErrorCode::Internal);
        let message =
            crate::vocabulary::visible::shown_within(&self.message, MAX_REMOTE_MESSAGE_CHARS, MAX_REMOTE_MESSAGE_CHARS);
        Error::Remote {
            host: host.to_owned(),
            code,
            message,
            details: self.details,
        }
    }
}

/// A notification frame, as the client hands it on: [`CHANGE`] or [`RUN_EVENT`] and its params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub method: String,
    pub params: Value,
}

impl Notification {
    /// The run event of a [`RUN_EVENT`] notification.
    pub fn run_event(&self) -> Option<RunEvent> {
        (self.method == RUN_EVENT)
            .then(|| serde_json::from_value(self.params.clone()).ok())
            .flatten()
    }

    /// The change of a [`CHANGE`] notification.
    pub fn change(&self) -> Option<Change> {
        (self.method == CHANGE)
            .then(|| serde_json::from_value(self.params.clone()).ok())
            .flatten()
    }
}

/// An error reply as it is written.
#[derive(Serialize)]
struct ErrorOut<'a> {
    id: Option<u64>,
    error: &'a WireError,
}

/// The reply to request `id` (`None`: a frame without one) that is an error.
pub fn error_frame(id: Option<u64>, error: &WireError) -> Vec<u8> {
    line_of(&ErrorOut { id, error })
}

/// Starts the reply to request `id` in `frame`: `{"id":N,"result":`, for the result's JSON text
/// to follow, then [`REPLY_END`]. A reply with a result is written in exactly this shape (what
/// [`parse_server_frame`] reads without a first pass over the result).
pub fn start_reply(id: u64, frame: &mut Vec<u8>) {
    frame.extend_from_slice(REPLY_START);
    frame.extend_from_slice(id.to_string().as_bytes());
    frame.extend_from_slice(REPLY_RESULT);
}

/// The line of a reply whose answer is the `len` raw bytes that follow it: `{"id":N,"data":N}`.
pub fn data_reply_line(id: u64, len: usize) -> Vec<u8> {
    format!("{{\"id\":{id},\"data\":{len}}}\n").into_bytes()
}

/// What ends a reply whose result was written after [`start_reply`].
pub const REPLY_END: &[u8] = b"}\n";

/// How a reply with a result starts: then its id, [`REPLY_RESULT`], the result and `}`.
const REPLY_START: &[u8] = br#"{"id":"#;
const REPLY_RESULT: &[u8] = br#","result":"#;

/// A notification frame as it is written.
#[derive(Serialize)]
struct NotificationOut<'a, P> {
    method: &'a str,
    params: &'a P,
}

/// A notification frame.
pub fn notification_frame(method: &str, params: &impl Serialize) -> Vec<u8> {
    line_of(&NotificationOut { method, params })
}

/// `value` as one line of JSON, newline-terminated (serde_json escapes every newline within).
pub fn line_of(value: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    line.push(b'\n');
    line
}

/// A frame from the server, as the client reads it (a reply's result borrowed from its line).
#[derive(Debug)]
pub enum ServerFrame<'a> {
    Reply {
        id: u64,
        /// The result's JSON text, for the caller to read as the type it expects (reading it
        /// checks it: it is not read before).
        outcome: Result<&'a [u8], WireError>,
    },
    /// A reply whose answer is the `len` raw bytes that follow its line.
    Data {
        id: u64,
        len: u64,
    },
    Notification(Notification),
    /// An error answered to a frame the server could not read (no id to match).
    Unmatched(WireError),
}

/// A server's frame as it is read: its result left as text, not parsed into a tree.
#[derive(Deserialize)]
struct FrameIn<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    data: Option<u64>,
}

/// A field that is there, `null` included (`Option`'s own reading takes `null` for absent).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(field: D) -> Result<Option<T>, D::Error> {
    T::deserialize(field).map(Some)
}

/// A reply with a result as the server writes it ([`start_reply`]): its id and its result's text, found
/// without reading the text (a line of any other shape is read field by field).
fn written_reply(line: &[u8]) -> Option<(u64, &[u8])> {
    let rest = line.strip_prefix(REPLY_START)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let id = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let result = rest[digits..].strip_prefix(REPLY_RESULT)?.strip_suffix(b"}")?;
    Some((id, result))
}

/// Reads a server's line: a reply (an `id` and a `result` or an `error`) or a notification. A
/// reply's result is left as text for its caller to read as its type: reading it checks it whole
/// (a result followed by more fields, say, does not read).
pub fn parse_server_frame(line: &[u8]) -> Result<ServerFrame<'_>, String> {
    if let Some((id, result)) = written_reply(line) {
        return Ok(ServerFrame::Reply {
            id,
            outcome: Ok(result),
        });
    }
    let frame: FrameIn<'_> =
        serde_json::from_slice(line).map_err(|e| format!("a line that is not a JSON object ({e})"))?;
    let id = frame.id.as_ref().and_then(Value::as_u64);
    if let Some(error) = frame.error {
        let error: WireError =
            serde_json::from_value(error).map_err(|e| format!("an error frame that does not read ({e})"))?;
        return Ok(match id {
            Some(id) => ServerFrame::Reply {
                id,
                outcome: Err(error),
            },
            None => ServerFrame::Unmatched(error),
        });
    }
    if let (Some(id), None, Some(len)) = (id, &frame.result, frame.data) {
        return Ok(ServerFrame::Data { id, len });
    }
    if let (Some(id), Some(result)) = (id, frame.result) {
        return Ok(ServerFrame::Reply {
            id,
            outcome: Ok(result.get().as_bytes()),
        });
    }
    match (frame.method, frame.params) {
        (Some(Value::String(method)), params) => Ok(ServerFrame::Notification(Notification {
            method,
            params: params.unwrap_or(Value::Null),
        })),
        _ => Err("a frame that is neither a reply nor a notification".to_owned()),
    }
}

/// What one bounded line read found.
#[derive(Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A whole line (without its newline) is in the buffer.
    Line,
    /// The line was longer than the bound: it was read to its end and dropped; the buffer holds
    /// its first bytes.
    TooLong,
    /// The input ended (a last line without a newline counts as a line first).
    End,
}

/// Reads one line of `input` into `line` (cleared first), at most `max` bytes kept: a longer
/// line is consumed to its end, so the next read starts at the next line.
pub fn read_line_bounded(input: &mut impl BufRead, max: usize, line: &mut Vec<u8>) -> io::Result<LineRead> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => LineRead::TooLong,
                (false, true) => LineRead::End,
                (false, false) => LineRead::Line,
            });
        }
        let (chunk, found_end) = match memchr::memchr(b'\n', available) {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        let room = max.saturating_sub(line.len());
        if chunk.len() > room {
            too_long = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = found_end.unwrap_or(available.len());
        input.consume(used);
        if found_end.is_some() {
            return Ok(if too_long { LineRead::TooLong } else { LineRead::Line });
        }
    }
}

// A workspace's server kept on the host between commands (`remote::kept_server`): where it
// listens, and what its client says first.

/// The first line a client of a kept server says: `zstudio-attach NONCE`.
pub const ATTACH: &str = "zstudio-attach";

/// Where the kept servers' sockets are, under the login's `$HOME`.
pub const KEPT_RUN_DIR: &str = ".zibby-studio/run";

/// The socket of the kept server of build `build` (its 16 hex digits) on `workspace` (absolute),
/// under `home`: `HOME/.zibby-studio/run/BUILD-<16 hex digits of the workspace's SHA-256>.sock`.
pub fn kept_socket_path(home: &str, build: &str, workspace: &str) -> String {
    let hex = crate::vocabulary::digest::sha256_hex(workspace.as_bytes(), 8);
    format!("{}/{KEPT_RUN_DIR}/{build}-{hex}.sock", home.trim_end_matches('/'))
}

/// Whether `build` can name a socket: 16 lowercase hex digits, as `ssh::build_id` says them.
pub fn is_build_id(build: &str) -> bool {
    build.len() == 16 && build.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A kept server's socket as the client's input: dropped, it says the input ended.
pub struct SocketInput(UnixStream);

impl Write for SocketInput {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl SocketInput {
    /// Says [`ATTACH`] and `nonce` on a kept server's `socket`: the client's input and output.
    #[allow(clippy::type_complexity)]
    pub fn attach(
        mut socket: UnixStream,
        nonce: &str,
    ) -> std::io::Result<(Box<dyn Write + Send>, Box<dyn Read + Send>)> {
        writeln!(socket, "{ATTACH} {nonce}")?;
        Ok((Box::new(SocketInput(socket.try_clone()?)), Box::new(socket)))
    }
}

impl Drop for SocketInput {
    fn drop(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Write);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 40, point 4: a host's refusal to run an untrusted agent is shown by this machine's
    /// rule: its message and every value of the launch it asks about on one line each.
    #[test]
    fn a_hosts_error_and_the_launch_it_asks_about_draw_no_lines_of_their_own() {
        let wire: WireError = serde_json::from_value(serde_json::json!({
            "code": "agents_untrusted",
            "message": format!("untrusted\nAgent `x` is trusted.\u{1b}[2J{}", "m".repeat(5_000)),
            "details": {
                "digest": "d",
                "shown": {
                    "agent": "x\nTrust this and run it? yes",
                    "command": ["\"true\""],
                    "command_line": "[\"true\"]\n  in  /safe",
                    "cwd": "/w",
                    "env": [],
                    "inherits": "nothing",
                    "agents_file": "/w/.zibby/studio.toml",
                    "covers": ["a\nb"],
                },
            },
        }))
        .unwrap();
        let error = wire.into_error("host");
        let message = error.to_string();
        assert!(!message.contains('\n') && !message.contains('\u{1b}'), "{message}");
        assert!(message.ends_with("… (5,035 characters in all)"), "{message}");
        assert!(message.chars().count() < MAX_REMOTE_MESSAGE_CHARS + 100, "cut");
        let (digest, shown) = error.untrusted_launch().unwrap();
        assert_eq!(digest, "d");
        assert_eq!(shown.agent, "x\\nTrust this and run it? yes");
        assert_eq!(shown.command_line, r#"["true"]"#);
        assert_eq!(shown.covers, ["a\\nb"]);
    }

    #[test]
    fn a_long_line_is_dropped_and_the_next_one_read() {
        let mut input = io::Cursor::new(b"short\nthis one is too long\nnext".to_vec());
        let mut line = Vec::new();
        assert_eq!(read_line_bounded(&mut input, 8, &mut line).unwrap(), LineRead::Line);
        assert_eq!(line, b"short");
        assert_eq!(read_line_bounded(&mut input, 8, &mut line).unwrap(), LineRead::TooLong);
        assert_eq!(line, b"this one");
        assert_eq!(read_line_bounded(&mut input, 8, &mut line).unwrap(), LineRead::Line);
        assert_eq!(line, b"next");
        assert_eq!(read_line_bounded(&mut input, 8, &mut line).unwrap(), LineRead::End);
    }

    #[test]
    fn frames_read_as_replies_notifications_or_unmatched_errors() {
        let reply = parse_server_frame(br#"{"id": 3, "result": null}"#).unwrap();
        assert!(
            matches!(reply, ServerFrame::Reply { id: 3, outcome: Ok(raw) } if raw == b"null"),
            "{reply:?}"
        );
        let failed = parse_server_frame(br#"{"id": 4, "error": {"code": "io", "message": "m"}}"#).unwrap();
        assert!(
            matches!(failed, ServerFrame::Reply { id: 4, outcome: Err(ref e) } if e.code == "io"),
            "{failed:?}"
        );
        let unmatched = parse_server_frame(br#"{"id": null, "error": {"code": "invalid_request", "message": "m"}}"#);
        assert!(matches!(unmatched, Ok(ServerFrame::Unmatched(_))), "{unmatched:?}");
        let note = parse_server_frame(br#"{"method": "change", "params": {"type": "x"}}"#).unwrap();
        assert!(
            matches!(note, ServerFrame::Notification(ref n) if n.method == CHANGE),
            "{note:?}"
        );
        assert!(parse_server_frame(b"[1]").is_err());
        assert!(parse_server_frame(br#"{"id": 1}"#).is_err());
        let line = data_reply_line(5, 1 << 20);
        assert_eq!(line, b"{\"id\":5,\"data\":1048576}\n");
        let data = parse_server_frame(&line[..line.len() - 1]).unwrap();
        assert!(matches!(data, ServerFrame::Data { id: 5, len: 1048576 }), "{data:?}");
    }

    /// A reply as the server writes it: its head, the result's text, its end.
    fn whole_reply(id: u64, result: &impl Serialize) -> Vec<u8> {
        let mut frame = Vec::new();
        start_reply(id, &mut frame);
        serde_json::to_writer(&mut frame, result).unwrap();
        frame.extend_from_slice(REPLY_END);
        frame
    }

    #[test]
    fn a_reply_carries_its_result_as_written_and_null_is_a_result() {
        let result = serde_json::json!({"rows": [1, 2], "name": "a\nb"});
        let frame = whole_reply(7, &result);
        assert_eq!(frame.last(), Some(&b'\n'), "one line");
        assert_eq!(frame.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        assert!(frame.starts_with(br#"{"id":7,"result":{"#), "{frame:?}");
        let read = parse_server_frame(&frame[..frame.len() - 1]).unwrap();
        let ServerFrame::Reply {
            id: 7,
            outcome: Ok(raw),
        } = read
        else {
            panic!("{read:?}")
        };
        assert_eq!(serde_json::from_slice::<Value>(raw).unwrap(), result);
        let nothing = whole_reply(8, &());
        let read = parse_server_frame(&nothing[..nothing.len() - 1]).unwrap();
        assert!(
            matches!(read, ServerFrame::Reply { id: 8, outcome: Ok(raw) } if raw == b"null"),
            "{read:?}"
        );
        let failed = error_frame(None, &WireError::from(&Error::RunNotLive { id: "r".into() }));
        let read = parse_server_frame(&failed[..failed.len() - 1]).unwrap();
        assert!(
            matches!(read, ServerFrame::Unmatched(ref e) if e.code == "run_not_live"),
            "{read:?}"
        );
    }

    #[test]
    fn a_result_that_is_not_json_is_refused_by_the_frame_or_by_its_reading() {
        // Another shape than the server's own: read field by field.
        assert!(parse_server_frame(br#"{"id": 1, "result": [1, }"#).is_err());
        assert!(parse_server_frame(br#"{"id": 1, "result": "unterminated}"#).is_err());
        assert!(parse_server_frame(b"{\"id\": 1, \"result\": \"\xff\"}").is_err());
        // The server's own shape: the text is handed on, and reading it as any type fails.
        for line in [
            &br#"{"id":1,"result":[1, }"#[..],
            br#"{"id":1,"result":1,"error":{"code":"io","message":"m"}}"#,
            b"{\"id\":1,\"result\":\"\xff\"}",
        ] {
            match parse_server_frame(line) {
                Ok(ServerFrame::Reply { outcome: Ok(text), .. }) => {
                    assert!(serde_json::from_slice::<Value>(text).is_err(), "{line:?}");
                }
                other => assert!(other.is_err(), "{other:?}"),
            }
        }
    }

    #[test]
    fn a_notification_frame_reads_back_as_its_event() {
        let change = Change::SessionRemoved {
            workspace: "/w".into(),
            session_id: crate::SessionId::parse("1_a").unwrap(),
        };
        let frame = notification_frame(CHANGE, &change);
        let read = parse_server_frame(&frame[..frame.len() - 1]).unwrap();
        let ServerFrame::Notification(notification) = read else {
            panic!("{read:?}")
        };
        assert_eq!(notification.change(), Some(change));
    }

    #[test]
    fn a_wire_error_keeps_its_code_and_names_the_host() {
        let wire = WireError::from(&Error::RunNotLive { id: "r".into() });
        let error = wire.into_error("buildbox");
        assert_eq!(error.code(), ErrorCode::RunNotLive);
        assert_eq!(error.to_string(), "buildbox: run `r` is not running");
        let unknown = WireError {
            code: "from_the_future".into(),
            message: "m".into(),
            details: None,
        };
        assert_eq!(unknown.into_error("h").code(), ErrorCode::Internal);
    }

    #[test]
    fn a_kept_servers_socket_is_named_by_its_build_and_workspace() {
        let path = kept_socket_path("/home/me/", "0123456789abcdef", "/home/me/ws");
        assert!(
            path.starts_with("/home/me/.zibby-studio/run/0123456789abcdef-"),
            "{path}"
        );
        assert!(path.ends_with(".sock"));
        assert_ne!(path, kept_socket_path("/home/me", "0123456789abcdef", "/home/me/other"));
        assert!(is_build_id("0123456789abcdef"));
        assert!(!is_build_id("../../etc/passwd"));
        assert!(!is_build_id("0123456789ABCDEF"));
    }
}
