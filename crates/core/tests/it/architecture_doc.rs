//! docs/architecture.md's table of the core's lanes names every module each lane has (issue 42):
//! a file added to a lane's folder and not to its row fails here, naming both.

use std::collections::BTreeSet;
use std::path::Path;

/// Every `.rs` file under `dir`, as the module it is (its stem; `mod.rs` as its folder's name).
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
                let name = if stem == "mod" {
                    folder.file_name().unwrap().to_str().unwrap()
                } else {
                    stem
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

#[test]
fn the_architecture_doc_names_every_module_of_each_lane() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../../docs/architecture.md")).unwrap();
    let mut lanes_checked = 0;
    let mut missing = Vec::new();
    for row in doc.lines().filter(|line| line.starts_with("| ")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        // A lane's row: `| name (`folder/`) | modules | holds |`.
        let Some(folder) = cells
            .first()
            .and_then(|lane| lane.split('`').nth(1))
            .filter(|f| f.ends_with('/'))
        else {
            continue;
        };
        let dir = root.join("src").join(folder);
        if !dir.is_dir() {
            continue;
        }
        lanes_checked += 1;
        let listed = names_in(cells[1]);
        // The lane's own `mod.rs` is the lane, named in the first cell.
        let lane = folder.trim_end_matches('/');
        for module in modules_in(&dir).into_iter().filter(|module| module != lane) {
            if !listed.contains(&module) {
                missing.push(format!("{folder}: `{module}`"));
            }
        }
    }
    assert_eq!(lanes_checked, 10, "the lanes' rows of docs/architecture.md were found");
    assert!(
        missing.is_empty(),
        "docs/architecture.md's lanes table does not name these modules:\n{}",
        missing.join("\n")
    );
}
