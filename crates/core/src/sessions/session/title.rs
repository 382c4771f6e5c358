//! What a folder says a session is called: a name from its JSON files ([`name_in`]) and any text
//! made one clean line ([`one_line`]).

use serde_json::Value;

use super::model::TITLE_CHARS;

/// The keys that name a session's workflow or agent, in the folder's JSON files.
const NAME_KEYS: [&str; 5] = ["workflow", "workflowName", "workflowType", "agent", "agentName"];

/// The workflow or agent a JSON object of the folder names (a top-level string of [`NAME_KEYS`]).
pub(super) fn name_in(value: &Value) -> Option<String> {
    NAME_KEYS
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str).and_then(one_line))
}

/// `text` as a one-line title: its first line that has text, trimmed, without escape sequences,
/// control characters (bidirectional ones too) as spaces and runs of spaces as one,
/// at most [`TITLE_CHARS`] characters (cut at the last space of the last quarter if there is
/// one, ending with `…`); `None` when it has no text.
pub fn one_line(text: &str) -> Option<String> {
    // Bidirectional controls would reorder what is shown around them: they go as control
    // characters do.
    let control = |c: char| {
        c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let text = String::from_utf8_lossy(&crate::protocol::strip_ansi(text.as_bytes())).into_owned();
    let line = text
        .lines()
        .find(|line| line.chars().any(|c| !c.is_whitespace() && !control(c)))?;
    // Control characters (a tab) are spaces; runs of spaces are one.
    let spaced: String = line.chars().map(|c| if control(c) { ' ' } else { c }).collect();
    let clean = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    let clean = clean.as_str();
    if clean.is_empty() {
        return None;
    }
    if clean.chars().count() <= TITLE_CHARS {
        return Some(clean.to_owned());
    }
    let cut: String = clean.chars().take(TITLE_CHARS - 1).collect();
    let at_word = cut
        .rfind(' ')
        .filter(|&space| cut[..space].chars().count() >= TITLE_CHARS * 3 / 4)
        .map_or(cut.as_str(), |space| &cut[..space]);
    Some(format!("{}…", at_word.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_one_clean_line_cut_at_a_word() {
        assert_eq!(
            one_line("\n \t\n  Plan\ta  trip \nmore").as_deref(),
            Some("Plan a trip")
        );
        assert_eq!(
            one_line("\x1b[31mred\x1b[0m \x1b]0;title\x1b\\ok\u{202e}!").as_deref(),
            Some("red ok !")
        );
        assert_eq!(one_line(" \n\x07\n"), None);
        let long = "word ".repeat(40);
        let cut = one_line(&long).unwrap();
        assert_eq!(cut.chars().count(), 75, "{cut}");
        assert!(cut.ends_with("word…"), "{cut}");
        let unbroken = one_line(&"é".repeat(200)).unwrap();
        assert_eq!(unbroken, format!("{}…", "é".repeat(79)));
    }
}
