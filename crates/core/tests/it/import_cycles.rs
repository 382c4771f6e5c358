//! No import cycles (issue 13): between the files of each Rust crate of the workspace (the root
//! `Cargo.toml`'s package, the desktop shell, and its members; issue 42) and between the UI's
//! modules (value imports; `import type` and tests left out). A Rust file's imports are what a
//! reader follows from it, anywhere in the file but its unit tests, doc links included (see
//! [`rust_graph`]): `crate::` paths, `super::` paths (an item of the parent module, `use
//! super::Store`, is an edge to the parent's file), a parent's own `child::f` paths, and the crate
//! root's re-exports resolved to the file they name (issue 25). The team's `import-cycles` tool
//! follows the first two with lower-case names only; what it finds, this finds too.

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

/// The files of a crate's `src/` and what each imports (see [`rust_graph`]).
struct RustCrate {
    graph: BTreeMap<String, BTreeSet<String>>,
    /// `file: crate::name -> target`, for each path through a re-export of the crate root
    /// (`lib.rs`'s `pub use`) that names a file of the crate: the short path hides which file.
    through_root: Vec<String>,
}

const PATH: &str = r"([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)";

/// What each file of a crate imports, as a reader follows it, anywhere in the file but its unit
/// tests (doc links included):
/// - `crate::a::b` paths, resolved to the longest prefix that is a file; a path through a
///   re-export of the crate root (`crate::runner`, where `lib.rs` says `pub use runs::runner`)
///   resolved to the file it names;
/// - `super::x` paths, items of the parent module (`use super::Store`, `super::millis`, `use
///   super::*`) an edge to the parent's file, `super::child::x` one to the sibling's;
/// - a parent's own `child::f` paths (`mod child;` declared in it, `pub use child::X`,
///   `child::f(…)`, `self::child::f`), an edge to the child's file.
fn rust_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    rust_crate(src).graph
}

fn rust_crate(src: &Path) -> RustCrate {
    let files = files(src, &|name| name.ends_with(".rs"));
    let tests = Regex::new(r"(?s)#\[cfg\(test\)\]\s*mod tests\s*\{.*").unwrap();
    let crate_path = Regex::new(&format!(r"\bcrate::{PATH}")).unwrap();
    let super_path = Regex::new(&format!(r"\bsuper::(\*|{PATH})")).unwrap();
    let super_group = Regex::new(r"\buse super::\{([^}]*)\}").unwrap();
    let crate_group = Regex::new(r"\buse crate::\{([^}]*)\}").unwrap();
    let group_name = Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)(?:::|\s*,|\s*$|\s+as\b)").unwrap();
    let child_module = Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;").unwrap();
    // A path that starts with a name (not after `::`, a letter or a digit).
    let bare_path = Regex::new(&format!(
        r"(?:^|[^A-Za-z0-9_:])(?:self::)?([a-z_][a-z0-9_]*)::(?:{PATH})?"
    ))
    .unwrap();
    let resolve = |parts: &[&str]| -> Option<String> {
        (1..=parts.len()).rev().find_map(|k| {
            let base = parts[..k].join("/");
            [format!("{base}.rs"), format!("{base}/mod.rs")]
                .into_iter()
                .find(|candidate| files.contains_key(candidate))
        })
    };
    let reexports = root_reexports(files.get("lib.rs").map_or("", String::as_str));
    // A `crate::` path as the file it names, and whether it went through the root's re-exports.
    let resolve_crate = |path: &str| -> (Option<String>, bool) {
        let parts: Vec<&str> = path.split("::").collect();
        match reexports.get(parts[0]) {
            Some(real) => {
                let full: Vec<&str> = real
                    .iter()
                    .map(String::as_str)
                    .chain(parts[1..].iter().copied())
                    .collect();
                (resolve(&full), true)
            }
            None => (resolve(&parts), false),
        }
    };
    let mut graph = BTreeMap::new();
    let mut through_root = Vec::new();
    for (file, text) in &files {
        let text = tests.replace(text, "");
        let here: Vec<&str> = match file.as_str() {
            "lib.rs" | "main.rs" => Vec::new(),
            _ => file
                .strip_suffix("/mod.rs")
                .or(file.strip_suffix(".rs"))
                .unwrap()
                .split('/')
                .collect(),
        };
        let parent: Vec<&str> = here[..here.len().saturating_sub(1)].to_vec();
        let under_parent = |rest: &str| -> Option<String> {
            let mut base = parent.clone();
            let mut rest: Vec<&str> = rest.split("::").filter(|part| *part != "*").collect();
            while rest.first() == Some(&"super") {
                rest.remove(0);
                base.pop();
            }
            if base.is_empty() && rest.is_empty() {
                return None; // the crate root
            }
            resolve(&base.into_iter().chain(rest).collect::<Vec<_>>())
        };
        let mut targets = BTreeSet::new();
        let mut crate_paths = Vec::new();
        for m in crate_path.captures_iter(&text) {
            crate_paths.push(m[1].to_owned());
        }
        for m in crate_group.captures_iter(&text) {
            for name in group_name.captures_iter(&m[1]) {
                crate_paths.push(name[1].to_owned());
            }
        }
        for path in &crate_paths {
            let (target, short) = resolve_crate(path);
            if let (Some(target), true) = (&target, short) {
                let name = path.split("::").next().unwrap();
                through_root.push(format!("{file}: crate::{name} -> {target}"));
            }
            targets.extend(target);
        }
        for m in super_path.captures_iter(&text) {
            targets.extend(under_parent(&m[1]));
        }
        for m in super_group.captures_iter(&text) {
            for name in group_name.captures_iter(&m[1]) {
                targets.extend(under_parent(&name[1]));
            }
        }
        let children: BTreeSet<&str> = child_module
            .captures_iter(&text)
            .map(|m| m.get(1).unwrap().as_str())
            .collect();
        for m in bare_path.captures_iter(&text) {
            if children.contains(&m[1]) {
                let rest = m.get(2).map_or("", |rest| rest.as_str());
                let parts: Vec<&str> = here
                    .iter()
                    .copied()
                    .chain([&m[1]])
                    .chain(rest.split("::").filter(|part| !part.is_empty()))
                    .collect();
                targets.extend(resolve(&parts));
            }
        }
        targets.retain(|target| target != file && target != "lib.rs");
        graph.insert(file.clone(), targets);
    }
    through_root.sort();
    through_root.dedup();
    RustCrate { graph, through_root }
}

/// The crate root's re-exports (`pub use runs::{keeper, runner};`, `pub use error::Error;`), each
/// name to the path it stands for, re-exports of re-exports followed (`Error`:
/// `vocabulary::error::Error`).
fn root_reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let group = Regex::new(r"(?m)^\s*pub use ([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)::\{([^}]*)\};").unwrap();
    let single =
        Regex::new(r"(?m)^\s*pub use ([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)::([A-Za-z_][A-Za-z0-9_]*);").unwrap();
    let name = Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").unwrap();
    let mut direct: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in group.captures_iter(lib) {
        for item in name.find_iter(&m[2]) {
            let path = m[1].split("::").chain([item.as_str()]).map(str::to_owned).collect();
            direct.insert(item.as_str().to_owned(), path);
        }
    }
    for m in single.captures_iter(lib) {
        let path = m[1].split("::").chain([&m[2]]).map(str::to_owned).collect();
        direct.insert(m[2].to_owned(), path);
    }
    let expand = |path: &[String]| -> Vec<String> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            match direct.get(&path[0]) {
                Some(real) if real[0] != path[0] => path = real.iter().chain(&path[1..]).cloned().collect(),
                _ => break,
            }
        }
        path
    };
    direct.iter().map(|(name, path)| (name.clone(), expand(path))).collect()
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

/// The source folders of every Rust crate of the workspace (the root `Cargo.toml`), relative to
/// `root`: the root package's (the desktop shell's `src-tauri/src`, its library and its binary)
/// and each member's: the folders of the crate roots its `Cargo.toml` names (`[lib]`, `[[bin]]`)
/// and its `src/`.
fn workspace_sources(root: &Path) -> Vec<String> {
    let manifest = |dir: &Path| -> toml::Table {
        let path = dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let workspace = manifest(root);
    let members = workspace["workspace"]["members"]
        .as_array()
        .expect("[workspace] members");
    let mut crates = vec![String::new()];
    crates.extend(members.iter().map(|member| member.as_str().unwrap().to_owned()));
    let mut sources = BTreeSet::new();
    for dir in crates {
        let package = manifest(&root.join(&dir));
        let targets = package
            .get("lib")
            .into_iter()
            .chain(package.get("bin").and_then(toml::Value::as_array).into_iter().flatten());
        let mut roots: Vec<String> = targets
            .filter_map(|target| target.get("path")?.as_str().map(str::to_owned))
            .collect();
        // Cargo's default crate roots, `src/lib.rs` and `src/main.rs`.
        if roots.is_empty() || root.join(&dir).join("src").is_dir() {
            roots.push("src/lib.rs".to_owned());
        }
        for crate_root in roots {
            let folder = Path::new(&dir).join(crate_root).parent().unwrap().to_owned();
            assert!(
                root.join(&folder).is_dir(),
                "{}: no such folder (the crate {dir:?})",
                folder.display()
            );
            sources.insert(folder.to_str().unwrap().to_owned());
        }
    }
    sources.into_iter().collect()
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let root = project_root();
    let sources = workspace_sources(&root);
    for expected in ["src-tauri/src", "crates/core/src", "crates/cli/src", "tests/agent/src"] {
        assert!(
            sources.iter().any(|src| src == expected),
            "{expected} is not among the crates scanned: {sources:?}"
        );
    }
    let mut found = Vec::new();
    for src in &sources {
        for cycle in cycles(&rust_graph(&root.join(src))) {
            found.push(format!("{src}: {}", cycle.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

/// The core's lanes, lowest first (docs/architecture.md): a file imports only files of its own
/// lane or of a lane before it.
const CORE_LANES: [&str; 10] = [
    "vocabulary",
    "sessions",
    "store",
    "compare",
    "runs",
    "share",
    "bucket",
    "watch",
    "app",
    "remote",
];

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

/// A file of the core names a lane's file by its own path (`crate::runs::runner`), not through a
/// re-export of the crate root (`crate::runner`), which hides which lane it imports (the paths
/// stay for the CLI, the shell and the tests). The protocol crate's modules are re-exported as the
/// core's (`crate::protocol`, `crate::timeline`, `crate::status`): they name no file of the core.
#[test]
fn no_file_of_the_core_imports_a_lane_through_the_crate_root() {
    let core = rust_crate(&project_root().join("crates/core/src"));
    assert!(
        core.through_root.is_empty(),
        "short paths through lib.rs's re-exports:\n{}",
        core.through_root.join("\n")
    );
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

/// The check finds what it is for: a cycle through a doc link, one through `super::` (an item of
/// the parent, or the parent naming its child), a path through the crate root's re-exports, and a
/// value import cycle in TypeScript that a type-only import does not make.
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

    // An item of the parent (`use super::Store`) and a parent's own `child::f` paths.
    std::fs::write(src.join("a.rs"), "pub struct A;").unwrap();
    std::fs::write(src.join("store/mod.rs"), "mod index;\npub struct Store;").unwrap();
    std::fs::write(src.join("store/index.rs"), "use super::Store;").unwrap();
    assert!(
        cycles(&rust_graph(&src)).is_empty(),
        "the parent does not use its child"
    );
    for parent in [
        "mod index;\npub struct Store;\nfn f() { index::g() }",
        "mod index;\npub use index::{G, H};\npub struct Store;",
        "pub(crate) mod index;\npub struct Store;\n/// See [`self::index::g`].\nfn f() {}",
    ] {
        std::fs::write(src.join("store/mod.rs"), parent).unwrap();
        assert_eq!(
            cycles(&rust_graph(&src)),
            [vec!["store/index.rs".to_owned(), "store/mod.rs".to_owned()]],
            "{parent}"
        );
    }
    std::fs::write(
        src.join("store/mod.rs"),
        "mod index;\npub struct Store;\nfn f() { x::index::g() }",
    )
    .unwrap();
    std::fs::write(src.join("store/index.rs"), "use super::{millis, Store};").unwrap();
    assert!(
        cycles(&rust_graph(&src)).is_empty(),
        "`x::index` is not the child `index`"
    );
    std::fs::write(src.join("store/index.rs"), "pub fn g() {}").unwrap();

    // A path through the crate root's re-exports is the file it names, and is said.
    std::fs::write(
        src.join("lib.rs"),
        "pub mod a; pub mod store; pub mod runs;\npub use runs::{runner, stop};\npub use runner::Supervisor;\npub use other_crate::status;",
    )
    .unwrap();
    std::fs::create_dir_all(src.join("runs")).unwrap();
    std::fs::write(src.join("runs/mod.rs"), "pub mod runner;\npub mod stop;").unwrap();
    std::fs::write(
        src.join("runs/runner.rs"),
        "use crate::store::Store;\npub struct Supervisor;",
    )
    .unwrap();
    std::fs::write(src.join("runs/stop.rs"), "").unwrap();
    std::fs::write(
        src.join("store/mod.rs"),
        "mod index;\nuse crate::Supervisor;\nuse crate::status::Status;",
    )
    .unwrap();
    let found = rust_crate(&src);
    assert_eq!(
        found.through_root,
        ["store/mod.rs: crate::Supervisor -> runs/runner.rs"],
        "the protocol crate's re-export names no file"
    );
    assert_eq!(
        cycles(&found.graph),
        [vec!["runs/runner.rs".to_owned(), "store/mod.rs".to_owned()]]
    );

    let ui = dir.path().join("ui");
    std::fs::create_dir_all(&ui).unwrap();
    std::fs::write(ui.join("a.ts"), "import { b } from \"./b\";\nexport const a = 1;").unwrap();
    std::fs::write(ui.join("b.ts"), "import type { A } from \"./a\";\nexport const b = 2;").unwrap();
    assert!(cycles(&ui_graph(&ui)).is_empty(), "a type-only import is no cycle");
    std::fs::write(ui.join("b.ts"), "import { a } from \"./a\";\nexport const b = a;").unwrap();
    assert_eq!(cycles(&ui_graph(&ui)), [vec!["a.ts".to_owned(), "b.ts".to_owned()]]);
}
