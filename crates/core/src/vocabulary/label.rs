//! The words a user gives sessions: tags, a note, the names of saved views. Each is checked here,
//! once, before the store keeps it (issue 44, point 8); a refusal names the rule and the value.

use serde::{Deserialize, Serialize};

use crate::vocabulary::error::Error;
use crate::vocabulary::visible::{is_bidi_control, is_zero_width};

/// The longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 64;
/// The most tags a session holds.
pub const MAX_TAGS_PER_SESSION: usize = 32;
/// The longest note, in bytes (UTF-8).
pub const MAX_NOTE_BYTES: usize = 64 * 1024;
/// The longest name of a saved view, in characters (a view's name follows a tag's rules).
pub const MAX_VIEW_NAME_CHARS: usize = MAX_TAG_CHARS;

/// A tag that passed [`Tag::parse`]: short, one line, nothing hidden, no spaces at its ends.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Tag(String);

impl Tag {
    pub fn parse(tag: &str) -> Result<Tag, Error> {
        match label_problem(tag) {
            Some(rule) => Err(Error::InvalidTag {
                tag: tag.to_owned(),
                rule,
            }),
            None => Ok(Tag(tag.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Tag {
    type Error = Error;
    fn try_from(tag: String) -> Result<Tag, Error> {
        Tag::parse(&tag)
    }
}

impl From<Tag> for String {
    fn from(tag: Tag) -> String {
        tag.0
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a saved view's name: the rules of a tag.
pub fn check_view_name(name: &str) -> Result<(), Error> {
    match label_problem(name) {
        Some(rule) => Err(Error::InvalidViewName {
            name: name.to_owned(),
            rule,
        }),
        None => Ok(()),
    }
}

/// Checks a note's size: at most [`MAX_NOTE_BYTES`]. Any text is a note (it is shown as text).
pub fn check_note(session_id: &str, note: &str) -> Result<(), Error> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(Error::NoteTooLarge {
            id: session_id.to_owned(),
            bytes: note.len(),
            limit: MAX_NOTE_BYTES,
        });
    }
    Ok(())
}

/// Checks that a session may hold `count` tags.
pub fn check_tag_count(session_id: &str, count: usize) -> Result<(), Error> {
    if count > MAX_TAGS_PER_SESSION {
        return Err(Error::TooManyTags {
            id: session_id.to_owned(),
            count,
            limit: MAX_TAGS_PER_SESSION,
        });
    }
    Ok(())
}

/// The rule a tag or a view's name breaks, if any.
fn label_problem(label: &str) -> Option<&'static str> {
    if label.is_empty() {
        return Some("it is empty");
    }
    if label.chars().count() > MAX_TAG_CHARS {
        return Some("longer than 64 characters");
    }
    if label.chars().any(char::is_control) {
        return Some("it holds a control character");
    }
    if label.chars().any(|c| is_bidi_control(c) || is_zero_width(c)) {
        return Some("it holds a bidirectional or invisible formatting character");
    }
    if label.trim() != label {
        return Some("it begins or ends with whitespace");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::error::ErrorCode;

    fn refused(tag: &str) -> String {
        let error = Tag::parse(tag).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidTag, "{tag:?}");
        error.to_string()
    }

    #[test]
    fn a_tag_is_taken_as_given() {
        for tag in ["bug", "needs review", "été-2026", "a:b/c", &"x".repeat(64), "🦀"] {
            assert_eq!(Tag::parse(tag).unwrap().as_str(), tag);
        }
    }

    #[test]
    fn each_refusal_names_its_rule_and_the_tag() {
        assert!(refused("").contains("it is empty"));
        let long = "y".repeat(65);
        let said = refused(&long);
        assert!(
            said.contains("longer than 64 characters") && said.contains(&long),
            "{said}"
        );
        // 64 characters of 4 bytes each are one tag: the limit counts characters.
        assert!(Tag::parse(&"🦀".repeat(64)).is_ok());
        let said = refused("bad\nline");
        assert!(
            said.contains("control character") && said.contains(r"bad\nline"),
            "{said}"
        );
        assert!(refused("tab\there").contains("control character"));
        let said = refused("abc\u{202E}def");
        assert!(said.contains("bidirectional") && said.contains(r"\u{202e}"), "{said}");
        assert!(refused("zero\u{200B}width").contains("invisible"));
        assert!(refused(" lead").contains("whitespace"));
        assert!(refused("trail ").contains("whitespace"));
        assert!(refused("trail\u{3000}").contains("whitespace"));
    }

    #[test]
    fn a_note_is_bounded_by_bytes_and_a_session_by_its_tag_count() {
        assert!(check_note("s1", &"n".repeat(MAX_NOTE_BYTES)).is_ok());
        let error = check_note("s1", &"n".repeat(MAX_NOTE_BYTES + 1)).unwrap_err();
        assert_eq!(error.code(), ErrorCode::NoteTooLarge);
        let said = error.to_string();
        assert!(
            said.contains("65537 bytes") && said.contains("65536") && said.contains("`s1`"),
            "{said}"
        );
        assert!(check_tag_count("s1", 32).is_ok());
        let error = check_tag_count("s1", 33).unwrap_err();
        assert_eq!(error.code(), ErrorCode::TooManyTags);
        assert!(error.to_string().contains("at most 32"), "{error}");
    }

    #[test]
    fn a_view_name_follows_the_rules_of_a_tag() {
        assert!(check_view_name("failed this week").is_ok());
        let error = check_view_name("x\u{2066}").unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidViewName);
        assert!(error.to_string().contains("bidirectional"), "{error}");
    }

    #[test]
    fn a_tag_reads_only_when_valid() {
        assert_eq!(serde_json::from_str::<Tag>(r#""ok""#).unwrap().as_str(), "ok");
        assert!(serde_json::from_str::<Tag>(r#""bad\u0007""#).is_err());
    }
}
