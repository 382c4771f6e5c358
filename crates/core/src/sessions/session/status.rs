//! A session's status and its nodes' from the folder alone (docs/protocol.md §5: nothing marks the
//! end of a run): the result file, events, quiet time, and whether the engine's process is there.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::model::{SessionNode, Timestamp, RUNNING_QUIET_WINDOW, SESSIONS_DIR};
use crate::status::Status;
use crate::vocabulary::id::SessionId;

/// A node's status from the session's, the current node and what `events.json` said of it.
pub(super) fn node_status(
    node: &SessionNode,
    current: Option<&str>,
    session: Status,
    from_events: Option<&Status>,
) -> Status {
    if let Some(status) = from_events {
        if *status != Status::Running || session == Status::Running {
            return *status;
        }
    }
    let is_current = current == Some(node.name.as_str());
    match (is_current, session) {
        (true, Status::Running) => Status::Running,
        // The engine writes a node's folder after the node's work succeeded.
        (_, _) if node.path.is_some() => Status::Success,
        (true, Status::Success) => Status::Success,
        (true, other) => other,
        (false, _) => Status::Unknown,
    }
}

/// How long before its session id's time the engine of a run may have started (`npx`, a slow
/// start), and how long after it (`/proc`'s boot time is to the second).
const ENGINE_STARTED_BEFORE: Duration = Duration::from_secs(60);
const ENGINE_STARTED_AFTER: Duration = Duration::from_secs(2);

/// Whether the process of a session's run may still be there: a process working in the
/// session's workspace that started at its id's time (an engine id, `<unix_ms>_<suffix>`), or
/// one with a file of the session open, as `/proc` says. True when nothing can tell (an id without a time, no `/proc`, a folder not in a
/// workspace's sessions folder): then its files' times alone decide.
pub(super) fn engine_still_there(session_path: &Path, id: &SessionId) -> bool {
    let Some(created) = id.unix_ms() else {
        return true;
    };
    let Some(workspace) = session_path.ancestors().nth(SESSIONS_DIR.len() + 1) else {
        return true;
    };
    if session_path.parent() != Some(&workspace.join(SESSIONS_DIR.join("/"))) {
        return true;
    }
    let from = created.saturating_sub(ENGINE_STARTED_BEFORE.as_millis() as u64);
    let to = created + ENGINE_STARTED_AFTER.as_millis() as u64;
    crate::vocabulary::process::run_process_present(workspace, session_path, from, to).unwrap_or(true)
}

/// The status of a session from its files alone (docs/protocol.md §5: nothing marks the end of a run).
pub(super) fn infer_status(result: Option<&Value>, updated_at: Timestamp, now: SystemTime) -> Status {
    if let Some(result) = result {
        let flag = |key: &str| result.get(key).and_then(Value::as_bool);
        if flag("stoppedExternally") == Some(true) || flag("stoppedByStudio") == Some(true) {
            return Status::Cancelled;
        }
        if let Some(status) = result.get("status").and_then(Value::as_str).and_then(parse_status_word) {
            return status;
        }
        let has_error = result.get("error").is_some_and(|e| !e.is_null());
        return if flag("success") == Some(false) || has_error {
            Status::Error
        } else {
            Status::Success
        };
    }
    let quiet_for = now.duration_since(updated_at.to_system_time()).unwrap_or_default();
    if quiet_for < RUNNING_QUIET_WINDOW {
        Status::Running
    } else {
        Status::Unknown
    }
}

/// A status word of the folder's files (`node_end`, `failed`, …) in the one vocabulary.
pub(super) fn parse_status_word(word: &str) -> Option<Status> {
    let word = word.to_ascii_lowercase();
    Some(match word.as_str() {
        "running" | "started" | "start" | "begin" | "node_begin" | "node_start" | "in_progress" => Status::Running,
        "success" | "succeeded" | "done" | "completed" | "complete" | "ok" | "passed" => Status::Success,
        "error" | "failed" | "failure" | "fail" => Status::Error,
        "cancelled" | "canceled" | "stopped" => Status::Cancelled,
        "interrupted" | "killed" => Status::Interrupted,
        _ => {
            if word.contains("fail") || word.contains("error") {
                Status::Error
            } else if word.contains("start") || word.contains("begin") {
                Status::Running
            } else if word.contains("end") || word.contains("complete") || word.contains("finish") {
                Status::Success
            } else {
                return None;
            }
        }
    })
}

/// Node names in order of first appearance in `events.json`, each with its last known status.
pub(super) fn node_order_from_events(events: &[Value]) -> Vec<(String, Status)> {
    let mut order: Vec<(String, Status)> = Vec::new();
    for event in events {
        let Some(node) = ["node", "nodeName", "node_name"]
            .iter()
            .find_map(|k| event.get(*k).and_then(Value::as_str))
        else {
            continue;
        };
        let mut status = ["status", "type", "event", "phase"]
            .iter()
            .find_map(|k| event.get(*k).and_then(Value::as_str).and_then(parse_status_word));
        if event.get("success").and_then(Value::as_bool) == Some(false) {
            status = Some(Status::Error);
        }
        match order.iter_mut().find(|(n, _)| n == node) {
            Some(entry) => {
                if let Some(status) = status {
                    entry.1 = status;
                }
            }
            None => order.push((node.to_owned(), status.unwrap_or(Status::Unknown))),
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_words_map_to_the_one_vocabulary() {
        assert_eq!(parse_status_word("node_end"), Some(Status::Success));
        assert_eq!(parse_status_word("node_failed"), Some(Status::Error));
        assert_eq!(parse_status_word("node_start"), Some(Status::Running));
        assert_eq!(parse_status_word("validation"), None);
    }

    #[test]
    fn a_result_decides_over_quiet_time() {
        let now = SystemTime::now();
        let recent = Timestamp::from_system_time(now);
        let old = Timestamp::from_system_time(now - Duration::from_secs(3600));
        let stopped = serde_json::json!({"success": true, "stoppedExternally": true});
        assert_eq!(infer_status(Some(&stopped), recent, now), Status::Cancelled);
        assert_eq!(
            infer_status(Some(&serde_json::json!({"success": false})), recent, now),
            Status::Error
        );
        assert_eq!(
            infer_status(Some(&serde_json::json!({"answer": 1})), old, now),
            Status::Success
        );
        assert_eq!(infer_status(None, recent, now), Status::Running);
        assert_eq!(infer_status(None, old, now), Status::Unknown);
    }
}
