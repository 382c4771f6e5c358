//! The repository's Markdown docs link only to what is there (issue 42: README linked a
//! `PROTOCOL.md` the repository did not have): every relative link of README.md,
//! CONTRIBUTING.md, `docs/` and the fixtures' READMEs names a file or folder that exists, and a
//! heading of it when it names one (`docs/protocol.md#5-the-session-folder`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::harness::project_root;

/// The lines of a Markdown file outside its fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_code = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The anchor a heading gets (GitHub's rule): lower case, spaces as `-`, letters, digits, `-`
/// and `_` kept, everything else dropped; a repeated one gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line
            .trim_start_matches('#')
            .strip_prefix(' ')
            .filter(|_| line.starts_with('#'))
        else {
            continue;
        };
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut anchor = slug.clone();
        let mut repeat = 0;
        while !found.insert(anchor.clone()) {
            repeat += 1;
            anchor = format!("{slug}-{repeat}");
        }
    }
    found
}

/// The targets of a line's links and images (`](target)`), code spans left out.
fn link_targets(line: &str) -> Vec<&str> {
    let prose: Vec<&str> = line.split('`').step_by(2).collect();
    prose
        .iter()
        .flat_map(|part| part.split("](").skip(1))
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target))
        .filter(|target| !target.contains(' '))
        .collect()
}

fn markdown_docs() -> Vec<PathBuf> {
    let root = project_root();
    let mut docs = vec![
        root.join("README.md"),
        root.join("CONTRIBUTING.md"),
        root.join("ui/README.md"),
    ];
    for folder in [
        "docs",
        "tests/fixtures/zibby-captures",
        "tests/fixtures/usage",
        "tests/fixtures/compare",
    ] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "md") {
                docs.push(entry.path());
            }
        }
    }
    docs.retain(|doc| doc.is_file());
    docs
}

#[test]
fn every_relative_link_of_the_docs_names_what_is_there() {
    let docs = markdown_docs();
    assert!(docs.len() >= 6, "the docs were found: {docs:?}");
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        let name = doc.strip_prefix(project_root()).unwrap().display().to_string();
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = if path.is_empty() {
                    doc.clone()
                } else {
                    doc.parent().unwrap().join(path)
                };
                if !file.exists() {
                    broken.push(format!("{name}:{number}: {target}: no such file"));
                } else if !anchor.is_empty()
                    && file.extension().is_some_and(|e| e == "md")
                    && !anchors(&std::fs::read_to_string(&file).unwrap()).contains(anchor)
                {
                    broken.push(format!("{name}:{number}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(checked > 30, "the docs' links were found: {checked}");
    assert!(broken.is_empty(), "links to nothing:\n{}", broken.join("\n"));
}

#[test]
fn a_heading_and_a_link_read_as_github_reads_them() {
    let text =
        "# Title\n## 5. The session folder\n```\n# not a heading\n```\n## `zstudio mcp [--allow-runs]`\n## Title\n";
    let found = anchors(text);
    let expected = ["title", "5-the-session-folder", "zstudio-mcp---allow-runs", "title-1"];
    assert_eq!(found, expected.iter().map(|a| a.to_string()).collect());
    assert_eq!(
        link_targets("see [a](docs/a.md#x), `[not](b.md)` and ![](c.png) [text with space](d e)"),
        ["docs/a.md#x", "c.png"]
    );
}
