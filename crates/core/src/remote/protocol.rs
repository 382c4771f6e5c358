//! The studio server's wire protocol (`zstudio serve --stdio`, docs/cli.md): JSON lines.
//!
//! The server prints one banner line ([`Banner`]) before any frame; then each line is a frame.
//! The client sends requests `{id, method, params}`; the server answers each with
//! `{id, result}` or `{id, error: {code, message, details?}}` (the code is the core's
//! [`ErrorCode`] word), in any order, and sends notifications `{method, params}` (no id) for what
//! happens: [`CHANGE`] (a `watch --json` line) and [`RUN_EVENT`] (a `run --json` line). A frame
//! is at most [`MAX_REQUEST_BYTES`] one way and [`MAX_REPLY_BYTES`] the other.

use std::io::{self, BufRead};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runs::runner::RunEvent;
use crate::sessions::change::Change;
use crate::vocabulary::error::{Error, ErrorCode};

/// The protocol's version: both ends must speak the same (the client's `hello` says its own).
pub const PROTOCOL_VERSION: u32 = 1;

/// The most bytes a request line may hold (a request names a method and a few arguments).
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// The most bytes a reply or notification line may hold (a listing of 10,000 sessions is
/// about 10 MB; an output page is at most 5,000 lines).
pub const MAX_REPLY_BYTES: usize = 64 << 20;

/// The first request of a connection: `{protocol_version}`, answered with the server's
/// [`Banner`] (a mismatch is answered `protocol_mismatch` and the server exits).
pub const HELLO: &str = "hello";

/// Starts sending [`CHANGE`] notifications for the workspace's sessions (no parameters).
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

/// A chunk of an open export (`remote::export::ExportRead`), base64.
pub const EXPORT_READ: &str = "export_read";

/// Lets an open export go: the server removes its bundle.
pub const EXPORT_CLOSE: &str = "export_close";

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
}

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
    /// unknown word, from a newer server, becomes `internal`).
    pub fn into_error(self, host: &str) -> Error {
        let code = ErrorCode::from_word(&self.code).unwrap_or(ErrorCode::Internal);
        Error::Remote {
            host: host.to_owned(),
            code,
            message: self.message,
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

/// The reply to request `id`: its result or its error.
pub fn reply_frame(id: Option<u64>, outcome: Result<Value, WireError>) -> Vec<u8> {
    let frame = match outcome {
        Ok(result) => serde_json::json!({"id": id, "result": result}),
        Err(error) => serde_json::json!({"id": id, "error": error}),
    };
    line_of(&frame)
}

/// A notification frame.
pub fn notification_frame(method: &str, params: &impl Serialize) -> Vec<u8> {
    let params = serde_json::to_value(params).unwrap_or(Value::Null);
    line_of(&serde_json::json!({"method": method, "params": params}))
}

/// `value` as one line of JSON, newline-terminated (serde_json escapes every newline within).
pub fn line_of(value: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    line.push(b'\n');
    line
}

/// A frame from the server, as the client reads it.
#[derive(Debug)]
pub enum ServerFrame {
    Reply {
        id: u64,
        outcome: Result<Value, WireError>,
    },
    Notification(Notification),
    /// An error answered to a frame the server could not read (no id to match).
    Unmatched(WireError),
}

/// Reads a server's line: a reply (an `id` and a `result` or an `error`) or a notification.
pub fn parse_server_frame(line: &[u8]) -> Result<ServerFrame, String> {
    let mut value: serde_json::Map<String, Value> =
        serde_json::from_slice(line).map_err(|e| format!("a line that is not a JSON object ({e})"))?;
    let id = value.remove("id").unwrap_or(Value::Null);
    if let Some(error) = value.remove("error") {
        let error: WireError =
            serde_json::from_value(error).map_err(|e| format!("an error frame that does not read ({e})"))?;
        return Ok(match id.as_u64() {
            Some(id) => ServerFrame::Reply {
                id,
                outcome: Err(error),
            },
            None => ServerFrame::Unmatched(error),
        });
    }
    if let (Some(id), Some(result)) = (id.as_u64(), value.remove("result")) {
        return Ok(ServerFrame::Reply {
            id,
            outcome: Ok(result),
        });
    }
    match (value.remove("method"), value.remove("params")) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            matches!(
                reply,
                ServerFrame::Reply {
                    id: 3,
                    outcome: Ok(Value::Null)
                }
            ),
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
}
