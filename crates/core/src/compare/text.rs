//! Line diffs of two texts, bounded: lines are compared by a 64-bit hash of their text (escapes
//! stripped), so two outputs of any size cost sixteen bytes a line (its hash and its place), and
//! only the lines of the hunks shown are ever held as text. The diff itself is `similar`'s (Myers, with a deadline past which
//! it settles for a coarser answer); changed words inside a changed line are `similar`'s too.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use serde::Serialize;
use similar::{Algorithm, ChangeTag, DiffOp};

use crate::usage;

/// How much of a diff is computed and shown at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Hunks given at once per text (the rest on demand: [`TextDiff::more`]).
    pub hunks: usize,
    /// Hunks passed over first (the ones already shown, when more are asked for).
    pub skip_hunks: usize,
    /// Unchanged lines around each change.
    pub context: usize,
    /// Lines of one hunk given at most (a hunk of a million changed lines says how many it cut).
    pub hunk_lines: usize,
    /// Characters of one line given at most.
    pub line_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hunks: 3,
            skip_hunks: 0,
            context: 3,
            hunk_lines: 400,
            line_chars: 2_000,
        }
    }
}

/// Past this, the diff of one text settles for a coarser answer (still a correct diff).
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// Words are marked only in lines up to this long (a word diff of two 1 MiB lines is no help).
const WORD_DIFF_MAX_CHARS: usize = 4_000;

/// What one line of a hunk is: the same on both sides, only in A, only in B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum LineOp {
    #[serde(rename = " ")]
    Same,
    #[serde(rename = "-")]
    Removed,
    #[serde(rename = "+")]
    Added,
}

/// A run of characters of a changed line, changed or not (against the line it replaced).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WordPart {
    pub changed: bool,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DiffLine {
    pub op: LineOp,
    /// The line, escapes stripped, at most [`Limits::line_chars`] characters.
    pub text: String,
    /// For a `-` line paired with a `+` line (a line changed in place): its parts, the changed
    /// words marked. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub words: Option<Vec<WordPart>>,
}

/// One hunk, as a unified diff has it: 1-based first lines and line counts on each side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Hunk {
    pub a_start: usize,
    pub a_lines: usize,
    pub b_start: usize,
    pub b_lines: usize,
    pub lines: Vec<DiffLine>,
    /// Lines of the hunk left out past [`Limits::hunk_lines`].
    pub lines_cut: usize,
}

/// The difference of two texts: whether they differ, and their first hunks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TextDiff {
    pub changed: bool,
    pub hunks: Vec<Hunk>,
    /// More hunks follow the ones given (ask with [`Limits::skip_hunks`]).
    pub more: bool,
}

/// A line as compared: escapes stripped (a colour change is no change), the `│ ` prefixes the
/// engine puts before every line printed inside a node (their count is the nesting, which a
/// retry changes: the same line one attempt deeper is the same line), and the whitespace at its
/// end (Node's caret line under a minified source line is a thousand spaces or more).
pub fn comparable(text: &str) -> Cow<'_, str> {
    if memchr::memchr(0x1b, text.as_bytes()).is_none() {
        return Cow::Borrowed(usage::without_bars(text).trim_end());
    }
    let plain = crate::protocol::strip_ansi(text.as_bytes());
    Cow::Owned(
        usage::without_bars(&String::from_utf8_lossy(&plain))
            .trim_end()
            .to_owned(),
    )
}

/// A line's hash, as compared ([`comparable`]): foldhash's, the same for every comparison.
pub fn line_hash(text: &str) -> u64 {
    foldhash::quality::FixedState::with_seed(0).hash_one(&*comparable(text))
}

/// A line as shown: as compared ([`comparable`]), cut at `max_chars`.
pub fn shown_line(text: &str, max_chars: usize) -> String {
    let plain = comparable(text);
    match plain.char_indices().nth(max_chars) {
        Some((cut, _)) => format!(
            "{}{}",
            &plain[..cut],
            crate::protocol::cut_marker((plain.len() - cut) as u64)
        ),
        None => plain.into_owned(),
    }
}

/// The hunks of two hashed texts to show, before their text is read: `similar`'s grouped ops.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub changed: bool,
    pub groups: Vec<Vec<DiffOp>>,
    pub more: bool,
}

/// Diffs two texts by their line hashes and keeps the hunks `limits` asks for.
pub fn plan(a: &[u64], b: &[u64], limits: &Limits) -> Plan {
    if a == b {
        return Plan::default();
    }
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, a, b, Some(Instant::now() + DIFF_DEADLINE));
    let groups = similar::group_diff_ops(ops, limits.context);
    let more = groups.len() > limits.skip_hunks + limits.hunks;
    Plan {
        changed: true,
        groups: groups.into_iter().skip(limits.skip_hunks).take(limits.hunks).collect(),
        more,
    }
}

/// Which lines of each side the planned hunks show (0-based), given at most `hunk_lines` a hunk.
pub fn wanted_lines(plan: &Plan, limits: &Limits) -> (Vec<usize>, Vec<usize>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for group in &plan.groups {
        walk_hunk(group, limits.hunk_lines, |op, a_index, b_index| match op {
            LineOp::Same | LineOp::Removed => a.push(a_index),
            LineOp::Added => b.push(b_index),
        });
    }
    a.sort_unstable();
    a.dedup();
    b.sort_unstable();
    b.dedup();
    (a, b)
}

/// Each shown line of a hunk in order, up to `max_lines`: its op and its index on each side
/// (the side it is not on: where it would go). Returns how many lines were left out.
fn walk_hunk(group: &[DiffOp], max_lines: usize, mut line: impl FnMut(LineOp, usize, usize)) -> usize {
    let mut shown = 0usize;
    let mut cut = 0usize;
    let mut emit = |op: LineOp, a: usize, b: usize| {
        if shown < max_lines {
            shown += 1;
            line(op, a, b);
        } else {
            cut += 1;
        }
    };
    for op in group {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        {
            match tag {
                similar::DiffTag::Equal => {
                    for (i, a) in old_range.clone().enumerate() {
                        emit(LineOp::Same, a, new_range.start + i);
                    }
                }
                similar::DiffTag::Delete => old_range
                    .clone()
                    .for_each(|a| emit(LineOp::Removed, a, new_range.start)),
                similar::DiffTag::Insert => new_range.clone().for_each(|b| emit(LineOp::Added, old_range.start, b)),
                similar::DiffTag::Replace => {
                    old_range
                        .clone()
                        .for_each(|a| emit(LineOp::Removed, a, new_range.start));
                    new_range.clone().for_each(|b| emit(LineOp::Added, old_range.end, b));
                }
            }
        }
    }
    cut
}

/// The planned hunks with their lines' text (`a_text`, `b_text`: the wanted lines, by index).
pub fn hunks(
    plan: Plan,
    a_text: &HashMap<usize, String>,
    b_text: &HashMap<usize, String>,
    limits: &Limits,
) -> TextDiff {
    let mut hunks = Vec::with_capacity(plan.groups.len());
    for group in &plan.groups {
        let (first, last) = (group.first(), group.last());
        let (a_range, b_range) = match (first, last) {
            (Some(first), Some(last)) => (
                first.old_range().start..last.old_range().end,
                first.new_range().start..last.new_range().end,
            ),
            _ => continue,
        };
        let mut lines = Vec::new();
        let lines_cut = walk_hunk(group, limits.hunk_lines, |op, a, b| {
            let text = match op {
                LineOp::Same | LineOp::Removed => a_text.get(&a),
                LineOp::Added => b_text.get(&b),
            };
            lines.push(DiffLine {
                op,
                text: text.cloned().unwrap_or_default(),
                words: None,
            });
        });
        mark_words(&mut lines);
        hunks.push(Hunk {
            a_start: a_range.start + 1,
            a_lines: a_range.len(),
            b_start: b_range.start + 1,
            b_lines: b_range.len(),
            lines,
            lines_cut,
        });
    }
    TextDiff {
        changed: plan.changed,
        hunks,
        more: plan.more,
    }
}

/// Marks the changed words of each `-` line paired with the `+` line in the same place of the
/// next run of `+` lines (the first removed with the first added, and so on).
fn mark_words(lines: &mut [DiffLine]) {
    let mut i = 0;
    while i < lines.len() {
        if lines[i].op != LineOp::Removed {
            i += 1;
            continue;
        }
        let removed = i;
        while i < lines.len() && lines[i].op == LineOp::Removed {
            i += 1;
        }
        let added = i;
        while i < lines.len() && lines[i].op == LineOp::Added {
            i += 1;
        }
        let pairs = (added - removed).min(i - added);
        for k in 0..pairs {
            let (old, new) = (removed + k, added + k);
            if lines[old].text.len() > WORD_DIFF_MAX_CHARS || lines[new].text.len() > WORD_DIFF_MAX_CHARS {
                continue;
            }
            let (old_words, new_words) = word_parts(&lines[old].text, &lines[new].text);
            lines[old].words = Some(old_words);
            lines[new].words = Some(new_words);
        }
    }
}

/// The parts of two lines, each with the words the other does not have marked.
fn word_parts(old: &str, new: &str) -> (Vec<WordPart>, Vec<WordPart>) {
    let diff = similar::TextDiff::from_words(old, new);
    let (mut a, mut b): (Vec<WordPart>, Vec<WordPart>) = (Vec::new(), Vec::new());
    let push = |parts: &mut Vec<WordPart>, changed: bool, text: &str| match parts.last_mut() {
        Some(last) if last.changed == changed => last.text.push_str(text),
        _ => parts.push(WordPart {
            changed,
            text: text.to_owned(),
        }),
    };
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Equal => {
                push(&mut a, false, change.value());
                push(&mut b, false, change.value());
            }
            ChangeTag::Delete => push(&mut a, true, change.value()),
            ChangeTag::Insert => push(&mut b, true, change.value()),
        }
    }
    (a, b)
}

/// The diff of two texts held whole (a prompt, a result as JSON): the same hunks as a streamed
/// output's.
pub fn diff_texts(a: &str, b: &str, limits: &Limits) -> TextDiff {
    let a_lines: Vec<&str> = a.lines().collect();
    let b_lines: Vec<&str> = b.lines().collect();
    let a_hashes: Vec<u64> = a_lines.iter().map(|l| line_hash(l)).collect();
    let b_hashes: Vec<u64> = b_lines.iter().map(|l| line_hash(l)).collect();
    let plan = plan(&a_hashes, &b_hashes, limits);
    let (wanted_a, wanted_b) = wanted_lines(&plan, limits);
    let text = |lines: &[&str], wanted: Vec<usize>| -> HashMap<usize, String> {
        wanted
            .into_iter()
            .filter_map(|i| lines.get(i).map(|l| (i, shown_line(l, limits.line_chars))))
            .collect()
    };
    hunks(plan, &text(&a_lines, wanted_a), &text(&b_lines, wanted_b), limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whitespace_at_a_lines_end_is_not_compared_nor_shown() {
        let caret_line = " ".repeat(1_025);
        assert_eq!(shown_line(&caret_line, 2_000), "");
        assert_eq!(line_hash("done  \t"), line_hash("done"));
        assert_eq!(shown_line("\x1b[32m│ done\x1b[0m   ", 2_000), "done");
        assert_ne!(
            line_hash("  done"),
            line_hash("done"),
            "leading whitespace is the line's"
        );
    }

    fn ops(diff: &TextDiff) -> Vec<String> {
        diff.hunks
            .iter()
            .flat_map(|h| {
                h.lines
                    .iter()
                    .map(|l| format!("{}{}", serde_json::to_value(l.op).unwrap().as_str().unwrap(), l.text))
            })
            .collect()
    }

    #[test]
    fn a_changed_line_is_a_hunk_with_its_context_and_its_changed_words() {
        let a = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";
        let b = "one\ntwo\nthree\nfour\nFIVE five\nsix\nseven\neight\n";
        let diff = diff_texts(a, b, &Limits::default());
        assert!(diff.changed && !diff.more);
        assert_eq!(diff.hunks.len(), 1);
        let hunk = &diff.hunks[0];
        assert_eq!((hunk.a_start, hunk.a_lines, hunk.b_start, hunk.b_lines), (2, 7, 2, 7));
        assert_eq!(
            ops(&diff),
            [
                " two",
                " three",
                " four",
                "-five",
                "+FIVE five",
                " six",
                " seven",
                " eight"
            ]
        );
        let added = hunk.lines.iter().find(|l| l.op == LineOp::Added).unwrap();
        let changed: Vec<&str> = added
            .words
            .as_ref()
            .unwrap()
            .iter()
            .filter(|w| w.changed)
            .map(|w| w.text.as_str())
            .collect();
        assert_eq!(changed, ["FIVE "]);
    }

    #[test]
    fn escapes_make_no_difference_and_equal_texts_none() {
        let diff = diff_texts("\x1b[32mok\x1b[0m\nline", "ok\nline", &Limits::default());
        assert_eq!(diff, TextDiff::default());
        let nested = diff_texts(
            "│ │ attempt\n│ │   indented\n│",
            "│ attempt\n│   indented\n│ ",
            &Limits::default(),
        );
        assert_eq!(nested, TextDiff::default());
        assert_eq!(comparable("│ │   indented"), "  indented");
    }

    #[test]
    fn hunks_come_a_few_at_a_time_and_long_hunks_are_cut_saying_so() {
        let a: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let b: String = (0..100)
            .map(|i| {
                if i % 10 == 5 {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        let limits = Limits {
            hunks: 2,
            ..Limits::default()
        };
        let first = diff_texts(&a, &b, &limits);
        assert_eq!((first.hunks.len(), first.more), (2, true));
        assert_eq!(first.hunks[1].a_start, 13);
        let last = diff_texts(
            &a,
            &b,
            &Limits {
                skip_hunks: 8,
                ..limits
            },
        );
        assert_eq!((last.hunks.len(), last.more), (2, false));
        assert_eq!(last.hunks[1].lines[3].text, "line 95");

        let cut = diff_texts(
            &a,
            "",
            &Limits {
                hunk_lines: 10,
                ..limits
            },
        );
        assert_eq!(
            (cut.hunks[0].lines.len(), cut.hunks[0].lines_cut, cut.hunks[0].a_lines),
            (10, 90, 100)
        );
    }
}
