//! What `zstudio` prints comes in part from untrusted files and agent output: an escape sequence
//! in a node name or an output line could retitle the terminal, write to the clipboard (OSC 52) or
//! hide text. [`Visible`] wraps standard output and shows every control character as a visible
//! escape instead (the core's rule, `studio_core::visible`): C0 controls but newline and tab, DEL,
//! C1 controls, the bidirectional controls that reorder text and the zero-width characters. The
//! escape is JSON's (`\u001b`), so that inside a `--json` string it still means the same
//! character and the JSON stays valid.

use std::io::{self, Write};

pub struct Visible<W: Write> {
    inner: W,
    /// The start of a character cut by the end of the last write.
    pending: Vec<u8>,
}

impl<W: Write> Visible<W> {
    pub fn new(inner: W) -> Visible<W> {
        Visible {
            inner,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for Visible<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(buf);
        let mut shown = String::with_capacity(bytes.len());
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    push_visible(&mut shown, text);
                    rest = &[];
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    push_visible(&mut shown, std::str::from_utf8(valid).expect("checked valid"));
                    match error.error_len() {
                        // Cut at the end of this write: kept for the next one.
                        None => {
                            self.pending = after.to_vec();
                            rest = &[];
                        }
                        Some(invalid) => {
                            for byte in &after[..invalid] {
                                shown.push_str(&format!("\\x{byte:02x}"));
                            }
                            rest = &after[invalid..];
                        }
                    }
                }
            }
        }
        self.inner.write_all(shown.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn push_visible(shown: &mut String, text: &str) {
    studio_core::visible::push_visible(shown, text, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(pieces: &[&[u8]]) -> String {
        let mut out = Visible::new(Vec::new());
        for piece in pieces {
            out.write_all(piece).unwrap();
        }
        String::from_utf8(out.inner).unwrap()
    }

    #[test]
    fn escapes_are_shown_and_text_is_kept() {
        let osc52 = b"node \x1b]52;c;ZXZpbA==\x07 done\n\ttabbed \xc2\x9b2J \xe2\x80\xaeevil\r\n";
        assert_eq!(
            shown(&[osc52]),
            "node \\u001b]52;c;ZXZpbA==\\u0007 done\n\ttabbed \\u009b2J \\u202eevil\\u000d\n"
        );
        assert_eq!(shown(&["séance → جلسة\n".as_bytes()]), "séance → جلسة\n");
    }

    #[test]
    fn a_character_cut_between_writes_is_joined_and_invalid_bytes_are_shown() {
        let text = "é\u{202e}".as_bytes();
        assert_eq!(shown(&[&text[..1], &text[1..3], &text[3..]]), "é\\u202e");
        assert_eq!(shown(&[b"a\xffb"]), "a\\xffb");
    }

    #[test]
    fn json_through_it_stays_json_meaning_the_same() {
        let value = serde_json::json!({"node": "a\u{9b}b\u{202e}c\u{7f}"});
        let mut out = Visible::new(Vec::new());
        serde_json::to_writer(&mut out, &value).unwrap();
        let text = String::from_utf8(out.inner).unwrap();
        assert!(!text.contains('\u{9b}'), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
    }
}
