//! Text from files and agents made visible: every character that could hide, reorder or draw
//! text is shown as its escape instead. One rule for every surface that shows untrusted text as
//! it is: `zstudio`'s output ([`push_visible`] with newlines kept) and what a trust prompt shows
//! ([`shown`]: newlines too, and long values folded with their length said), so that a value in
//! `.zibby/studio.toml` can neither draw lines of its own in the prompt nor read as another
//! command.
//!
//! The escape is JSON's (`\u001b`): inside a `--json` string it still means the same character.

/// Whether `c` is shown as its escape: C0 controls (but newline and tab, when `keep_lines`), DEL,
/// C1 controls, the bidirectional controls that reorder text, and the zero-width characters that
/// hide text.
pub fn is_hidden(c: char, keep_lines: bool) -> bool {
    if c == '\n' || c == '\t' {
        return !keep_lines;
    }
    c.is_control() || is_bidi_control(c) || is_zero_width(c)
}

/// The characters that reorder text when shown: embeddings, overrides, isolates and marks.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that take no room: a value holding them reads as another value.
pub fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{180E}' | '\u{00AD}')
}

/// Appends `text` to `shown`, each hidden character as its escape (`\n` and `\t` for those two
/// when they are not kept, `\uXXXX` for the others).
pub fn push_visible(shown: &mut String, text: &str, keep_lines: bool) {
    for c in text.chars() {
        if !is_hidden(c, keep_lines) {
            shown.push(c);
        } else if c == '\n' {
            shown.push_str("\\n");
        } else if c == '\t' {
            shown.push_str("\\t");
        } else {
            shown.push_str(&format!("\\u{:04x}", u32::from(c)));
        }
    }
}

/// Values longer than this many characters are folded in a prompt.
pub const FOLD_AFTER_CHARS: usize = 160;
/// How much of a folded value is shown.
const FOLDED_HEAD_CHARS: usize = 120;

/// `text` as a prompt shows it: on one line, every hidden character escaped, and past
/// [`FOLD_AFTER_CHARS`] shown characters cut, saying how long it is (`… (5,000 characters in
/// all)`). Showing a shown value again changes nothing.
pub fn shown(text: &str) -> String {
    shown_within(text, FOLD_AFTER_CHARS, FOLDED_HEAD_CHARS)
}

/// [`shown`] with bounds of its own: past `fold_after` shown characters, the first `head` of
/// them (never half an escape), then how many characters `text` has.
pub fn shown_within(text: &str, fold_after: usize, head: usize) -> String {
    let mut out = String::with_capacity(text.len().min(fold_after * 2));
    push_visible(&mut out, text, false);
    if out.chars().count() <= fold_after {
        return out;
    }
    out.clear();
    let (mut kept, mut one) = (0, String::new());
    for c in text.chars() {
        one.clear();
        push_visible(&mut one, c.encode_utf8(&mut [0; 4]), false);
        kept += one.chars().count();
        if kept > head {
            break;
        }
        out.push_str(&one);
    }
    out.push_str(&format!(
        "… ({} characters in all)",
        thousands(text.chars().count() as u64)
    ));
    out
}

/// `text` as [`shown`], in double quotes, its own quotes and backslashes escaped: a list of them
/// tells where each argument begins and ends (`["sh", "-c", "a b"]`).
pub fn quoted(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{}\"", shown(&escaped))
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_bidi_and_zero_width_characters_are_shown_as_escapes() {
        assert_eq!(shown("a\nFile: x"), "a\\nFile: x");
        assert_eq!(shown("rm\u{202E}txt.exe"), "rm\\u202etxt.exe");
        assert_eq!(shown("to\u{200B}ken"), "to\\u200bken");
        assert_eq!(shown("\u{1b}]52;c;x\u{7}"), "\\u001b]52;c;x\\u0007");
        let mut kept = String::new();
        push_visible(&mut kept, "one\n\ttwo\u{1b}", true);
        assert_eq!(kept, "one\n\ttwo\\u001b");
    }

    #[test]
    fn quoted_values_say_where_they_begin_and_end() {
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(quoted("say \"hi\"\\n"), "\"say \\\"hi\\\"\\\\n\"");
        assert_eq!(quoted("two\nlines"), "\"two\\nlines\"");
    }

    #[test]
    fn a_long_value_is_folded_with_its_length() {
        let long = "x".repeat(5000);
        let folded = shown(&long);
        assert!(folded.starts_with(&"x".repeat(FOLDED_HEAD_CHARS)), "{folded}");
        assert!(folded.ends_with("… (5,000 characters in all)"), "{folded}");
        assert_eq!(shown(&"y".repeat(FOLD_AFTER_CHARS)), "y".repeat(FOLD_AFTER_CHARS));
        let hidden = "\u{202E}\n".repeat(100);
        let folded = shown(&hidden);
        assert!(folded.starts_with("\\u202e\\n"), "{folded}");
        assert!(folded.chars().count() <= FOLD_AFTER_CHARS, "{folded}");
        assert_eq!(shown(&folded), folded, "showing a shown value again changes nothing");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
