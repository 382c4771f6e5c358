//! docs/architecture.md's module lists equal the code's modules (issue 42): each row of the lanes
//! table names exactly the modules of its lane's folder (the core's `crates/core/src/<lane>/`, the
//! protocol lane's `crates/protocol/src/`), and the shell's table exactly the files of
//! `src-tauri/src`. A file added and not listed, or a name listed whose file is gone, fails here,
//! naming both.

use std::collections::BTreeSet;
use std::path::Path;

use crate::harness::project_root;

/// Every `.rs` file under `dir`, as the module it is (its stem; `mod.rs` as its folder's name),
/// less the crate roots (`lib.rs`, `main.rs`), which are the crate and no module of it.
fn modules_in(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let stem = path.file_stem().unwrap().to_str().unwrap();
                let name = match stem {
                    "mod" => folder.file_name().unwrap().to_str().unwrap(),
                    "lib" | "main" if folder == dir => continue,
                    _ => stem,
                };
                found.insert(name.to_owned());
            }
        }
    }
    found
}

/// The names in backticks of a table cell.
fn names_in(cell: &str) -> BTreeSet<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The cells of each row of the first table after `heading`, its header row and separator left out.
fn table_rows<'a>(doc: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
    let after = doc
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("{heading} is in the doc"))
        .1;
    after
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|row| row.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

fn architecture_doc() -> String {
    std::fs::read_to_string(project_root().join("docs/architecture.md")).unwrap()
}

/// What the doc lists and the code has apart, one line each, `place` naming where.
fn differences(place: &str, listed: &BTreeSet<String>, present: &BTreeSet<String>) -> Vec<String> {
    let unlisted = present
        .difference(listed)
        .map(|module| format!("{place}: `{module}` is there and not listed"));
    let gone = listed
        .difference(present)
        .map(|name| format!("{place}: `{name}` is listed and not there"));
    unlisted.chain(gone).collect()
}

#[test]
fn the_architecture_doc_names_the_modules_of_each_lane() {
    let doc = architecture_doc();
    let mut lanes = Vec::new();
    let mut wrong = Vec::new();
    for cells in table_rows(&doc, "## The core's lanes") {
        let folder = names_in(cells[0])
            .into_iter()
            .find(|name| name.ends_with('/'))
            .unwrap_or_else(|| panic!("the lane `{}` names its folder", cells[0]));
        // A lane of the core by its folder there; another crate's by its path from the root.
        let dir = if folder.starts_with("crates/") {
            project_root().join(&folder)
        } else {
            project_root().join("crates/core/src").join(&folder)
        };
        assert!(dir.is_dir(), "{folder} (the lanes table) is a folder");
        // The lane's own `mod.rs` is the lane, named in the first cell, and may be in the second.
        let lane = folder.trim_end_matches('/');
        let without_lane = |names: BTreeSet<String>| names.into_iter().filter(|name| name != lane).collect();
        wrong.extend(differences(
            &folder,
            &without_lane(names_in(cells[1])),
            &without_lane(modules_in(&dir)),
        ));
        lanes.push(folder);
    }
    assert_eq!(
        lanes.len(),
        11,
        "the lanes' rows of docs/architecture.md were found: {lanes:?}"
    );
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's lanes table and the code differ:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_architecture_doc_names_the_shells_modules() {
    let doc = architecture_doc();
    let listed: BTreeSet<String> = table_rows(&doc, "## The shell's modules")
        .iter()
        .flat_map(|cells| names_in(cells[0]))
        .collect();
    let present = modules_in(&project_root().join("src-tauri/src"));
    assert!(present.len() > 10, "src-tauri/src's modules were found: {present:?}");
    let wrong = differences("src-tauri/src", &listed, &present);
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's table of the shell's modules and the code differ:\n{}",
        wrong.join("\n")
    );
}
