//! What comes before a studio server's banner on a link: a remote shell's lines (skipped, kept
//! for errors, bounded), and a start script's prelude (`zstudio-prelude NONCE` … `zstudio-prelude-end
//! NONCE serve|stop`), read by the client (`remote::client`'s `RemoteClient`)
//! and by the ssh start (`remote::ssh::start`).

use std::io::BufRead;
use std::sync::Mutex;

use crate::remote::protocol::{read_line_bounded, LineRead};
use crate::vocabulary::visible::shown;

/// Skips lines (kept in `junk`, at most `max_junk` bytes in all) until one that `wanted` takes:
/// what a remote shell prints before `what`.
pub(crate) fn skip_junk_until<T>(
    input: &mut impl BufRead,
    max_junk: usize,
    junk: &Mutex<Vec<u8>>,
    what: &str,
    mut wanted: impl FnMut(&[u8]) -> Option<T>,
) -> Result<T, String> {
    let mut line = Vec::new();
    loop {
        let read = read_line_bounded(input, max_junk + 1, &mut line)
            .map_err(|e| format!("cannot read from the studio server: {e}"))?;
        let mut junk = junk.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if read == LineRead::End {
            return Err(format!("the link closed before {what}{}", quoted_junk(&junk)));
        }
        if read == LineRead::Line {
            if let Some(found) = wanted(&line) {
                return Ok(found);
            }
        }
        junk.extend_from_slice(&line);
        junk.push(b'\n');
        if junk.len() > max_junk {
            return Err(format!(
                "more than {max_junk} bytes came before {what}{}",
                quoted_junk(&junk)
            ));
        }
    }
}

/// What a start script says before the studio server it starts
/// (`RemoteClient::connect_after_prelude`): its lines between `zstudio-prelude NONCE` and
/// `zstudio-prelude-end NONCE serve` (the server's banner follows) or `… stop` (the script ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prelude {
    /// Its lines, at most [`MAX_PRELUDE_LINES`] of at most [`MAX_PRELUDE_LINE_BYTES`] each (not
    /// UTF-8: read lossily, for the caller to parse).
    pub lines: Vec<String>,
    /// Whether the server's banner follows.
    pub server_follows: bool,
}

/// The most lines a prelude has.
pub const MAX_PRELUDE_LINES: usize = 16;
/// The longest line of a prelude (a path, with its key).
pub const MAX_PRELUDE_LINE_BYTES: usize = 8 * 1024;

/// Reads a start script's prelude for `nonce`: the lines before its first line are skipped as a
/// remote shell's (at most `max_junk` bytes, kept in `junk`); its own lines are bounded in number
/// and length, and it ends with `serve` or `stop`, or it is refused with what was wrong.
pub fn read_prelude(
    input: &mut impl BufRead,
    nonce: &str,
    max_junk: usize,
    junk: &Mutex<Vec<u8>>,
) -> Result<Prelude, String> {
    let first = format!("zstudio-prelude {nonce}");
    let last = format!("zstudio-prelude-end {nonce} ");
    skip_junk_until(input, max_junk, junk, "the start script's first line", |line| {
        (line == first.as_bytes()).then_some(())
    })?;
    let mut lines = Vec::new();
    let mut line = Vec::new();
    loop {
        let read = read_line_bounded(input, MAX_PRELUDE_LINE_BYTES, &mut line)
            .map_err(|e| format!("cannot read from the start script: {e}"))?;
        match read {
            LineRead::Line => {}
            LineRead::End => {
                return Err(format!(
                    "the start script ended after {} lines, unfinished",
                    lines.len()
                ))
            }
            LineRead::TooLong => {
                return Err(format!(
                    "the start script said a line longer than {MAX_PRELUDE_LINE_BYTES} bytes"
                ))
            }
        }
        if let Some(verdict) = line.strip_prefix(last.as_bytes()) {
            let server_follows = match verdict {
                b"serve" => true,
                b"stop" => false,
                other => {
                    return Err(format!(
                        "the start script ended with `{}`, not `serve` or `stop`",
                        shown(&String::from_utf8_lossy(other))
                    ))
                }
            };
            return Ok(Prelude { lines, server_follows });
        }
        if lines.len() == MAX_PRELUDE_LINES {
            return Err(format!("the start script said more than {MAX_PRELUDE_LINES} lines"));
        }
        lines.push(String::from_utf8_lossy(&line).into_owned());
    }
}

/// What came before the banner, quoted with its hidden characters as escapes (its last 300
/// bytes at most).
pub(crate) fn quoted_junk(junk: &[u8]) -> String {
    if junk.is_empty() {
        return String::new();
    }
    let from = junk.len().saturating_sub(300);
    let text = String::from_utf8_lossy(&junk[from..]);
    let cut = if from > 0 { "…" } else { "" };
    format!("; before it came: \"{cut}{}\"", shown(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Result<Prelude, String> {
        read_prelude(&mut &text[..], "n1", 64, &Mutex::new(Vec::new()))
    }

    #[test]
    fn a_prelude_is_read_after_a_shells_junk() {
        let prelude =
            read(b"Welcome\nzstudio-prelude n0\nzstudio-prelude n1\nhome /h\nzstudio-prelude-end n1 serve\n{}\n")
                .unwrap();
        assert_eq!(prelude.lines, ["home /h"]);
        assert!(prelude.server_follows);
        let stopped = read(b"zstudio-prelude n1\nzstudio-prelude-end n1 stop\n").unwrap();
        assert!(stopped.lines.is_empty() && !stopped.server_follows);
    }

    #[test]
    fn a_prelude_past_its_bounds_or_unfinished_is_refused() {
        let junk = read(&[b'x'; 100]).unwrap_err();
        assert!(junk.starts_with("more than 64 bytes came before"), "{junk}");
        let many = format!("zstudio-prelude n1\n{}", "a b\n".repeat(MAX_PRELUDE_LINES + 1));
        assert!(read(many.as_bytes()).unwrap_err().contains("more than 16 lines"));
        let long = format!("zstudio-prelude n1\nhome {}\n", "x".repeat(MAX_PRELUDE_LINE_BYTES));
        assert!(read(long.as_bytes()).unwrap_err().contains("longer than"));
        let verdict = read(b"zstudio-prelude n1\nzstudio-prelude-end n1 run\n").unwrap_err();
        assert!(verdict.contains("not `serve` or `stop`"), "{verdict}");
        let cut = read(b"zstudio-prelude n1\nhome /h\n").unwrap_err();
        assert!(cut.contains("ended after 1 lines"), "{cut}");
        assert!(read(b"home /h\n").unwrap_err().starts_with("the link closed before"));
    }
}
