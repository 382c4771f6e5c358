//! Bucket keys read as session paths: `<session id>/<path in the session>`, each segment held to
//! the rules of local folder names before it touches the mirror.

use crate::bucket::source::Source;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::{folder_name_problem, SessionId};

/// The object an uploader writes last, saying the session's upload is complete (the mirror's
/// "upload evidence"); it is not mirrored.
pub const UPLOAD_COMPLETE_MARKER: &str = ".upload-complete";

/// Most path segments a key may have under its session (the deepest engine layout is three).
const MAX_DEPTH: usize = 16;

/// `key` (relative to the prefix) as its session and its path in the session folder; `None` for
/// an object directly under the prefix (no session holds it). A key with an empty, `.`, `..`,
/// absolute or otherwise odd segment is refused, naming the source and the key.
pub fn session_path(source: &Source, key: &str) -> Result<Option<(SessionId, String)>, Error> {
    if key.starts_with('/') {
        return Err(source.error(key, "refused: the key is absolute"));
    }
    let Some((id, path)) = key.split_once('/') else {
        return Ok(None);
    };
    let id = SessionId::parse(id).map_err(|e| source.error(key, format!("refused: {e}")))?;
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() > MAX_DEPTH {
        return Err(source.error(key, format!("refused: deeper than {MAX_DEPTH} folders")));
    }
    for segment in &segments {
        if let Some(reason) = folder_name_problem(segment) {
            return Err(source.error(
                key,
                format!("refused: its segment `{}`: {reason}", segment.escape_debug()),
            ));
        }
    }
    Ok(Some((id, path.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_key_splits_into_its_id_and_path() {
        let source = Source::parse("s3://b/p").unwrap();
        let (id, path) = session_path(&source, "1795952464415_3prb/plan/raw_stream_output.txt")
            .unwrap()
            .unwrap();
        assert_eq!(
            (id.as_str(), path.as_str()),
            ("1795952464415_3prb", "plan/raw_stream_output.txt")
        );
        assert_eq!(session_path(&source, "README").unwrap(), None);
    }

    #[test]
    fn odd_keys_are_refused_naming_the_source_and_key() {
        let source = Source::parse("s3://b/p").unwrap();
        for key in [
            "s/../../etc/passwd",
            "../s/x",
            "/abs/x",
            "s//x",
            "s/./x",
            "s/a\u{202e}b",
            "s/",
        ] {
            let error = session_path(&source, key).unwrap_err().to_string();
            assert!(
                error.starts_with("s3://b/p: `") && error.contains("refused"),
                "{key}: {error}"
            );
        }
    }
}
