//! What a tool answers, without the SDK: a result ([`Answer`]) or a failure ([`Failure`]), an
//! error naming what was wrong with the call ([`ToolError`]).

use serde_json::{json, Value};
use studio_core::Error;

use super::shown::shown_value;

/// A tool's result: the structured value and a short text for clients that show text only.
pub struct Answer {
    pub structured: Value,
    pub text: String,
}

/// What went wrong with a call.
pub enum Failure {
    /// The call was answered with an error naming what was wrong (`isError`).
    Tool(ToolError),
    /// No such tool (a protocol error, as the protocol asks).
    NoSuchTool(String),
}

/// A tool error: the studio's error code and a message.
pub struct ToolError {
    pub code: String,
    pub message: String,
}

impl ToolError {
    pub fn new(code: &str, message: impl Into<String>) -> ToolError {
        ToolError {
            code: code.to_owned(),
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> ToolError {
        ToolError::new("invalid_request", message)
    }

    pub fn structured(&self) -> Value {
        shown_value(json!({"error": {"code": self.code, "message": self.message}}))
    }

    pub fn text(&self) -> String {
        let mut text = String::new();
        studio_core::visible::push_visible(&mut text, &studio_core::share::redact_secrets(&self.message), false);
        format!("error ({}): {text}", self.code)
    }
}

impl From<Error> for ToolError {
    fn from(error: Error) -> ToolError {
        let message = match &error {
            // The core's words name `zstudio run --trust`: here, trust is the user's alone.
            Error::AgentsUntrusted { launch } => format!(
                "agent `{}` is not trusted in this workspace: the user trusts it in the studio's window or with `zstudio run --agent NAME --trust`; an MCP call never grants trust",
                launch.agent
            ),
            _ => error.to_string(),
        };
        ToolError::new(error.code().as_str(), message)
    }
}

impl From<ToolError> for Failure {
    fn from(error: ToolError) -> Failure {
        Failure::Tool(error)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::Tool(error.into())
    }
}

pub fn internal(error: serde_json::Error) -> Failure {
    Failure::Tool(ToolError::new("internal", format!("cannot write the result: {error}")))
}
