//! Rooms a newcomer can live in (issue 25): no source file of the core, the protocol, the CLI,
//! the shared arguments or the shell is over [`MAX_FILE_LINES`] lines (its unit tests aside), and
//! no function outside tests over [`MAX_FUNCTION_LINES`]. The exceptions are listed below, each
//! with its reason; one that is no longer needed fails the test too, so the list stays true.
//!
//! Functions are found as rustfmt lays them out: a line that starts an `fn` item, and the first
//! later line that closes a brace at the same indentation.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 800;
const MAX_FUNCTION_LINES: usize = 120;

/// Files over [`MAX_FILE_LINES`], relative to the project's root, and why.
const FILE_EXCEPTIONS: &[(&str, &str)] = &[];

/// Functions over [`MAX_FUNCTION_LINES`] (`file::function`), and why.
const FUNCTION_EXCEPTIONS: &[(&str, &str)] = &[(
    "src-tauri/src/lib.rs::run",
    "the Tauri builder: one chain of plugins, handlers and window set-up, read top to bottom",
)];

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The file's lines before its unit tests (`#[cfg(test)]` followed by `mod tests`).
fn lines_before_tests(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|pair| pair[0].trim() == "#[cfg(test)]" && pair[1].trim_start().starts_with("mod tests"))
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

/// Each function's name and length in lines.
fn functions(lines: &[&str]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let Some(after_fn) = ["pub(crate) fn ", "pub(super) fn ", "pub fn ", "fn "]
            .iter()
            .chain(&["pub const fn ", "const fn "])
            .find_map(|prefix| code.strip_prefix(prefix))
        else {
            continue;
        };
        let name: String = after_fn
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = line.len() - code.len();
        // A declaration without a body (in a trait) ends at its `;`, before any `{`.
        let opens = lines[start..].iter().position(|l| l.contains('{'));
        let declared = lines[start..].iter().position(|l| l.trim_end().ends_with(';'));
        let end = match (opens, declared) {
            (_, Some(semicolon)) if opens.is_none_or(|brace| semicolon < brace) => Some(semicolon),
            _ => lines[start..].iter().enumerate().skip(1).find_map(|(i, l)| {
                let t = l.trim_start();
                (l.len() - t.len() == indent && t.starts_with('}')).then_some(i)
            }),
        };
        // `fn a() {}` on one line.
        let end = if lines[start].trim_end().ends_with('}') {
            Some(0)
        } else {
            end
        };
        if let Some(length) = end {
            found.push((name, length + 1));
        }
    }
    found
}

#[test]
fn no_room_is_too_big_to_live_in() {
    let root = project_root();
    let mut files = Vec::new();
    for dir in [
        "crates/core/src",
        "crates/protocol/src",
        "crates/cli/src",
        "crates/args/src",
        "src-tauri/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut too_big = Vec::new();
    let mut exceptions_used = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&root).unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let lines = lines_before_tests(&text);
        if lines.len() > MAX_FILE_LINES {
            if FILE_EXCEPTIONS.iter().any(|(file, _)| *file == relative) {
                exceptions_used.push(relative.clone());
            } else {
                too_big.push(format!("{relative}: {} lines", lines.len()));
            }
        }
        for (name, length) in functions(&lines) {
            if length > MAX_FUNCTION_LINES {
                let key = format!("{relative}::{name}");
                if FUNCTION_EXCEPTIONS.iter().any(|(f, _)| *f == key) {
                    exceptions_used.push(key);
                } else {
                    too_big.push(format!("{key}: {length} lines"));
                }
            }
        }
    }
    assert!(
        too_big.is_empty(),
        "over {MAX_FILE_LINES} lines a file or {MAX_FUNCTION_LINES} a function (split it, or list it \
         with its reason in room_sizes.rs):\n{}",
        too_big.join("\n")
    );
    let stale: Vec<&str> = FILE_EXCEPTIONS
        .iter()
        .chain(FUNCTION_EXCEPTIONS)
        .map(|(what, _)| *what)
        .filter(|what| !exceptions_used.iter().any(|used| used == what))
        .collect();
    assert!(stale.is_empty(), "exceptions no longer needed: {stale:?}");
}

#[test]
fn functions_are_measured_as_rustfmt_lays_them_out() {
    let text = "fn short() {\n    one();\n}\n\nimpl A {\n    pub fn long(\n        x: u8,\n    ) -> u8 {\n        x\n    }\n}\ntrait T {\n    fn declared(&self);\n}\n";
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        functions(&lines),
        [
            ("short".to_owned(), 3),
            ("long".to_owned(), 5),
            ("declared".to_owned(), 1)
        ]
    );
    let with_tests = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\n";
    assert_eq!(lines_before_tests(with_tests), ["fn a() {}"]);
}
