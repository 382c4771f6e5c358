//! The one error that crosses IPC: `{code, message}`, and `details` for the errors the window acts
//! on. The UI branches on `code` and shows `message`.

use serde::Serialize;
use studio_core::ErrorCode;

/// Every failed command rejects with this; the UI branches on `code`, never on `message`.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[error("{message} ({code})")]
pub struct CommandError {
    /// Stable and machine-readable: the core's [`studio_core::Error::code`].
    pub code: ErrorCode,
    pub message: String,
    /// `agents_untrusted`: the `AgentLaunch` to show before trusting the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "unknown"))]
    pub details: Option<serde_json::Value>,
}

impl From<studio_core::Error> for CommandError {
    fn from(error: studio_core::Error) -> CommandError {
        CommandError {
            code: error.code(),
            message: error.to_string(),
            details: error.details(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_code_and_message() {
        let error = CommandError::from(studio_core::Error::WorkspaceNotFound {
            path: "/nowhere".into(),
        });
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            serde_json::json!({"code": "workspace_not_found", "message": "workspace not found: /nowhere"}),
            "the UI reads exactly these two fields"
        );
    }
}
