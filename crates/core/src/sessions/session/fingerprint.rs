//! A session folder's fingerprint: what the watcher compares to tell that a summary may have changed.

use std::fs;
use std::path::Path;

use super::model::{EVENTS_FILE, NODES_DIR, RAW_STREAM_FILE, RESULT_FILE, SESSION_INFO_FILE};
use super::reader::MAX_FOLDER_ENTRIES;
use super::run_record::RUN_RECORD_FILE;

/// The fingerprint of a session folder: changes whenever its summary may have. Creating or
/// removing a file changes the folder's own time, so `result.json`, `events.json` and `nodes/`
/// are looked at only when the previous fingerprint saw them (or there is none).
///
/// Its last part is the time and size of every node's `raw_stream_output.txt` (what the node's
/// usage is read from, `cost`), which the engine rewrites in place at each attempt: the nodes
/// are the previous fingerprint's while the folder and `nodes/` did not change, else listed.
pub fn fingerprint(folder: &Path, previous: Option<&str>) -> Option<String> {
    use std::fmt::Write;
    use std::os::unix::fs::MetadataExt;
    let stamp = |m: &fs::Metadata| format!("{}.{}:{}", m.mtime(), m.mtime_nsec(), m.len());
    // Links are not followed (a session folder's files are untrusted): a link's own times count.
    let dir = fs::symlink_metadata(folder).ok()?;
    let mut print = format!("{}.{}", dir.mtime(), dir.mtime_nsec());
    let same_folder = previous.is_some_and(|p| p.split('|').next() == Some(print.as_str()));
    let mut seen = previous.map(|p| p.split('|').skip(1));
    // The studio's run record is written leaving the folder's time as it was: always looked at.
    for name in [SESSION_INFO_FILE, RESULT_FILE, EVENTS_FILE, "nodes", RUN_RECORD_FILE] {
        let was_absent = seen.as_mut().and_then(Iterator::next) == Some("-");
        let part = if same_folder && was_absent && ![SESSION_INFO_FILE, RUN_RECORD_FILE].contains(&name) {
            "-".to_owned()
        } else {
            fs::symlink_metadata(folder.join(name)).map_or_else(|_| "-".to_owned(), |m| stamp(&m))
        };
        let _ = write!(print, "|{part}");
    }
    let previous_nodes = previous
        .filter(|p| p.rsplit_once(RAW_PART).map(|(head, _)| head) == Some(print.as_str()))
        .and_then(|p| p.rsplit_once(RAW_PART))
        .map(|(_, nodes)| nodes);
    let nodes: Vec<String> = match previous_nodes {
        Some(nodes) => nodes
            .split('/')
            .step_by(2)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect(),
        None => node_folders_for_print(folder),
    };
    print.push_str(RAW_PART);
    for (i, node) in nodes.iter().enumerate() {
        // `e<name>`: `<folder>/<name>/`; `d<name>`: `nodes/<name>/`. A name has no `/`.
        let dir = match node.split_at(1) {
            ("d", name) => folder.join(NODES_DIR).join(name),
            (_, name) => folder.join(name),
        };
        let raw = fs::symlink_metadata(dir.join(RAW_STREAM_FILE)).map_or_else(|_| "-".to_owned(), |m| stamp(&m));
        let _ = write!(print, "{}{node}/{raw}", if i == 0 { "" } else { "/" });
    }
    Some(print)
}

/// What separates a fingerprint's raw-stream part from the rest.
const RAW_PART: &str = "|raw:";

/// A session's node folders, as the fingerprint names them (`e<name>` or `d<name>`).
fn node_folders_for_print(folder: &Path) -> Vec<String> {
    node_folders(folder)
        .into_iter()
        .map(|node| format!("{}{}", if node.in_nodes_dir { 'd' } else { 'e' }, node.name))
        .collect()
}

/// A node folder of a session folder: `<folder>/<name>/` (the engine's layout) or
/// `<folder>/nodes/<name>/` (the documented one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFolder {
    pub name: String,
    pub in_nodes_dir: bool,
}

impl NodeFolder {
    /// Its path relative to the session folder, `/`-separated, without a trailing `/`.
    pub fn relative_path(&self) -> String {
        if self.in_nodes_dir {
            format!("{NODES_DIR}/{}", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// The node folders of a session folder: its folders, then those of its `nodes/`, each by name
/// (not links, not hidden, not `nodes/` itself, nothing through a link; at most
/// `MAX_FOLDER_ENTRIES` entries read of each folder).
pub fn node_folders(folder: &Path) -> Vec<NodeFolder> {
    // Each entry's type as the folder lists it (a link is not a folder): `nodes/` is read only
    // when it is a folder, at no cost of its own.
    let dirs = |dir: &Path| -> Vec<String> {
        let Ok(entries) = fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .take(MAX_FOLDER_ENTRIES)
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| !name.starts_with('.'))
            .collect();
        names.sort();
        names
    };
    let top = dirs(folder);
    let has_nodes_dir = top.iter().any(|name| name == NODES_DIR);
    let mut nodes: Vec<NodeFolder> = top
        .into_iter()
        .filter(|name| name != NODES_DIR)
        .map(|name| NodeFolder {
            name,
            in_nodes_dir: false,
        })
        .collect();
    if has_nodes_dir {
        nodes.extend(dirs(&folder.join(NODES_DIR)).into_iter().map(|name| NodeFolder {
            name,
            in_nodes_dir: true,
        }));
    }
    nodes
}
