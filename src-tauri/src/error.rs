//! The one error that crosses IPC: `{code, message}`. The UI branches on `code` and shows `message`.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct CommandError {
    /// Stable and machine-readable: the core's [`studio_core::Error::code`].
    pub code: &'static str,
    pub message: String,
}

impl From<studio_core::Error> for CommandError {
    fn from(error: studio_core::Error) -> CommandError {
        CommandError {
            code: error.code(),
            message: error.to_string(),
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
