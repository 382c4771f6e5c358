//! No import cycles (issue 13): between the files of each crate under `crates/` (`crate::` and
//! `super::` paths, anywhere in a file but its unit tests, doc links included: a doc link is a
//! dependency a reader follows), and between the UI's modules (value imports; `import type` and
//! tests left out). The rules are those of the team's `import-cycles` tool, so the two agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use regex::Regex;

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` ending in `extension`, relative to `dir`, with its text.
fn files(dir: &Path, keep: &dyn Fn(&str) -> bool) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
            if keep(&relative) {
                found.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    found
}

/// The groups of files that import each other, each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut g = DiGraph::<&str, ()>::new();
    let nodes: BTreeMap<&str, _> = graph.keys().map(|k| (k.as_str(), g.add_node(k.as_str()))).collect();
    for (from, targets) in graph {
        for to in targets {
            if let Some(&to) = nodes.get(to.as_str()) {
                g.add_edge(nodes[from.as_str()], to, ());
            }
        }
    }
    let mut found: Vec<Vec<String>> = tarjan_scc(&g)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut names: Vec<String> = component.iter().map(|&n| g[n].to_owned()).collect();
            names.sort();
            names
        })
        .collect();
    found.sort();
    found
}

fn rust_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = files(src, &|name| name.ends_with(".rs"));
    let tests = Regex::new(r"(?s)#\[cfg\(test\)\]\s*mod tests\s*\{.*").unwrap();
    let path = r"([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)";
    let crate_path = Regex::new(&format!(r"\bcrate::{path}")).unwrap();
    let super_path = Regex::new(&format!(r"\bsuper::{path}")).unwrap();
    let super_group = Regex::new(r"\buse super::\{([^}]*)\}").unwrap();
    let crate_group = Regex::new(r"\buse crate::\{([^}]*)\}").unwrap();
    let group_name = Regex::new(r"([a-z_][a-z0-9_]*)(?:::|\s*,|\s*$)").unwrap();
    let resolve = |parts: &[&str]| -> Option<String> {
        (1..=parts.len()).rev().find_map(|k| {
            let base = parts[..k].join("/");
            [format!("{base}.rs"), format!("{base}/mod.rs")]
                .into_iter()
                .find(|candidate| files.contains_key(candidate))
        })
    };
    let mut graph = BTreeMap::new();
    for (file, text) in &files {
        let text = tests.replace(text, "");
        let here = file.strip_suffix("/mod.rs").or(file.strip_suffix(".rs")).unwrap();
        let parent: Vec<&str> = match here.rsplit_once('/') {
            Some((parent, _)) => parent.split('/').collect(),
            None => Vec::new(),
        };
        let under_parent = |rest: &str| -> Option<String> {
            let parts: Vec<&str> = parent.iter().copied().chain(rest.split("::")).collect();
            resolve(&parts)
        };
        let mut targets = BTreeSet::new();
        for m in crate_path.captures_iter(&text) {
            targets.extend(resolve(&m[1].split("::").collect::<Vec<_>>()));
        }
        for m in super_path.captures_iter(&text) {
            targets.extend(under_parent(&m[1]));
        }
        for m in super_group.captures_iter(&text) {
            for name in group_name.captures_iter(&m[1]) {
                targets.extend(under_parent(&name[1]));
            }
        }
        for m in crate_group.captures_iter(&text) {
            for name in group_name.captures_iter(&m[1]) {
                targets.extend(resolve(&[&name[1]]));
            }
        }
        targets.retain(|target| target != file && target != "lib.rs");
        graph.insert(file.clone(), targets);
    }
    graph
}

fn ui_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = files(src, &|name| {
        (name.ends_with(".ts") || name.ends_with(".svelte")) && !name.contains(".test.")
    });
    let import =
        Regex::new(r#"(?m)^\s*import\s+(?:[^;]*?\s)?from\s+["'](\.[^"']+)["']|^\s*import\s+["'](\.[^"']+)["']"#)
            .unwrap();
    let type_only = Regex::new(r"^\s*import\s+type\b").unwrap();
    let mut graph = BTreeMap::new();
    for (file, text) in &files {
        let folder = Path::new(file).parent().unwrap();
        let mut targets = BTreeSet::new();
        for m in import.captures_iter(text) {
            if type_only.is_match(&m[0]) {
                continue;
            }
            let spec = m.get(1).or(m.get(2)).unwrap().as_str();
            let joined = normalise(&folder.join(spec));
            let found = [joined.clone(), format!("{joined}.ts"), format!("{joined}/index.ts")]
                .into_iter()
                .find(|candidate| files.contains_key(candidate));
            targets.extend(found);
        }
        graph.insert(file.clone(), targets);
    }
    graph
}

/// `a/./b/../c` as `a/c`.
fn normalise(path: &Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.to_str().unwrap().split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let root = project_root();
    let mut found = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let entry = entry.unwrap();
        let src = entry.path().join("src");
        if src.is_dir() {
            crates += 1;
            for cycle in cycles(&rust_graph(&src)) {
                let name = entry.file_name().into_string().unwrap();
                found.push(format!("crates/{name}/src: {}", cycle.join(" <-> ")));
            }
        }
    }
    assert!(crates >= 3, "the crates were not found under {}", root.display());
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

/// The core's lanes, lowest first (docs/architecture.md): a file imports only files of its own
/// lane or of a lane before it.
const CORE_LANES: [&str; 7] = ["vocabulary", "sessions", "store", "compare", "runs", "watch", "app"];

#[test]
fn each_file_of_the_core_imports_only_its_lane_and_those_below() {
    let graph = rust_graph(&project_root().join("crates/core/src"));
    let lane = |file: &str| {
        let folder = file.split('/').next().unwrap();
        CORE_LANES.iter().position(|lane| *lane == folder)
    };
    let mut upward = Vec::new();
    for (file, targets) in &graph {
        if file == "lib.rs" {
            continue;
        }
        let here = lane(file).unwrap_or_else(|| panic!("{file} is in no lane folder: {CORE_LANES:?}"));
        for target in targets {
            if lane(target).is_some_and(|there| there > here) {
                upward.push(format!("{file} -> {target}"));
            }
        }
    }
    assert!(upward.is_empty(), "imports of a higher lane:\n{}", upward.join("\n"));
}

#[test]
fn the_ui_has_no_import_cycle_between_its_modules() {
    let src = project_root().join("ui/src");
    let graph = ui_graph(&src);
    assert!(
        graph.len() > 10,
        "the UI's modules were not found under {}",
        src.display()
    );
    let found = cycles(&graph);
    assert!(found.is_empty(), "import cycles in ui/src: {found:?}");
}

/// The check finds what it is for: a cycle through a doc link, one through `super::`, and a value
/// import cycle in TypeScript that a type-only import does not make.
#[test]
fn the_check_finds_a_cycle_it_is_shown() {
    let dir = tempfile::TempDir::new().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a; pub mod store;").unwrap();
    std::fs::write(src.join("a.rs"), "/// See [`crate::store::Store`].\npub struct A;").unwrap();
    std::fs::write(src.join("store/mod.rs"), "mod index;\npub struct Store;").unwrap();
    std::fs::write(src.join("store/index.rs"), "use super::make;\nuse crate::a::A;").unwrap();
    assert!(
        cycles(&rust_graph(&src)).is_empty(),
        "store/index -> a -> store/mod is no cycle"
    );
    std::fs::write(
        src.join("store/mod.rs"),
        "mod index;\npub struct Store;\nfn f() { index::g() }\nuse crate::a::A;",
    )
    .unwrap();
    std::fs::write(src.join("a.rs"), "use crate::store::index::g;").unwrap();
    assert_eq!(
        cycles(&rust_graph(&src)),
        [vec![
            "a.rs".to_owned(),
            "store/index.rs".to_owned(),
            "store/mod.rs".to_owned()
        ]]
    );

    let ui = dir.path().join("ui");
    std::fs::create_dir_all(&ui).unwrap();
    std::fs::write(ui.join("a.ts"), "import { b } from \"./b\";\nexport const a = 1;").unwrap();
    std::fs::write(ui.join("b.ts"), "import type { A } from \"./a\";\nexport const b = 2;").unwrap();
    assert!(cycles(&ui_graph(&ui)).is_empty(), "a type-only import is no cycle");
    std::fs::write(ui.join("b.ts"), "import { a } from \"./a\";\nexport const b = a;").unwrap();
    assert_eq!(cycles(&ui_graph(&ui)), [vec!["a.ts".to_owned(), "b.ts".to_owned()]]);
}
