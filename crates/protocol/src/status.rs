//! The one status vocabulary of runs, nodes and sessions.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Success,
    Error,
    Cancelled,
    Interrupted,
    /// The files do not tell (a session the studio did not start, quiet for a while).
    Unknown,
}

impl Status {
    /// Every status, in the order above.
    pub const ALL: [Status; 6] = [
        Status::Running,
        Status::Success,
        Status::Error,
        Status::Cancelled,
        Status::Interrupted,
        Status::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Success => "success",
            Status::Error => "error",
            Status::Cancelled => "cancelled",
            Status::Interrupted => "interrupted",
            Status::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}
