//! Session ids, validated before they ever touch a path (docs/protocol.md §1).

use serde::{Deserialize, Serialize};

use crate::vocabulary::error::Error;
use crate::vocabulary::visible::is_bidi_control;

/// A session id that is safe to use as one folder name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

/// Longest id accepted: folder names on common filesystems stop at 255 bytes.
const MAX_ID_BYTES: usize = 255;

impl SessionId {
    pub fn parse(id: &str) -> Result<SessionId, Error> {
        match folder_name_problem(id) {
            Some(reason) => Err(Error::InvalidSessionId {
                id: id.escape_debug().to_string(),
                reason,
            }),
            None => Ok(SessionId(id.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The creation time encoded in an engine id (`<unix_ms>_<suffix>`), if it has one.
    pub fn unix_ms(&self) -> Option<u64> {
        let (ms, suffix) = self.0.split_once('_')?;
        if ms.len() < 10 || suffix.is_empty() {
            return None;
        }
        ms.parse().ok()
    }
}

/// Why `name` cannot be one folder or file name of the session layout (a session id, or a name
/// inside a session folder, as an imported archive gives it), or `None` when it can: empty, `.`
/// or `..` (or holding `..`), a path separator, NUL, a control or bidirectional-control character,
/// longer than 255 bytes.
pub fn folder_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." || name.contains("..") {
        Some("it contains `..`")
    } else if name.contains('/') || name.contains('\\') {
        Some("it contains a path separator")
    } else if name.contains('\0') {
        Some("it contains a NUL byte")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else if name.chars().any(is_bidi_control) {
        // A name shown reordered could pass for another one (CVE-2021-42574, "Trojan Source").
        Some("it contains a bidirectional-control character")
    } else if name.len() > MAX_ID_BYTES {
        Some("it is longer than 255 bytes")
    } else {
        None
    }
}

impl TryFrom<String> for SessionId {
    type Error = Error;
    fn try_from(id: String) -> Result<Self, Error> {
        SessionId::parse(&id)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_ids_and_ci_ids_are_accepted() {
        for id in ["1777678254943_ymcw", "run-1", "ci-build-42", "séance"] {
            assert_eq!(SessionId::parse(id).unwrap().as_str(), id);
        }
        assert_eq!(
            SessionId::parse("1777678254943_ymcw").unwrap().unix_ms(),
            Some(1777678254943)
        );
        assert_eq!(SessionId::parse("run-1").unwrap().unix_ms(), None);
    }

    #[test]
    fn ids_that_could_leave_the_sessions_folder_are_rejected() {
        for id in ["", ".", "..", "../x", "a/b", "a\\b", "x..y", "a\0b", "a\nb"] {
            let err = SessionId::parse(id).expect_err(id);
            assert!(err.to_string().contains("session id"), "{err}");
        }
        assert!(SessionId::parse(&"x".repeat(256)).is_err());
    }

    #[test]
    fn ids_that_would_show_reordered_are_rejected() {
        for id in ["a\u{202E}b", "run\u{2066}-1", "x\u{200F}", "\u{061C}1"] {
            let err = SessionId::parse(id).expect_err(id);
            assert!(err.to_string().contains("bidirectional"), "{err}");
        }
        // Right-to-left letters themselves are fine.
        assert!(SessionId::parse("جلسة-1").is_ok());
    }
}
