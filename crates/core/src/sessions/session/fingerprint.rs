//! A session folder's fingerprint: what the watcher compares to tell that a summary may have changed.

use std::borrow::Cow;
use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstatat, FileStat, Mode};

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
    let stat = |relative: &str| {
        let path = match relative {
            "" => Cow::Borrowed(folder),
            _ => Cow::Owned(folder.join(relative)),
        };
        // Links are not followed (a session folder's files are untrusted): a link's own times count.
        fs::symlink_metadata(path).ok().map(|m| Stamp::of_metadata(&m))
    };
    print_with(stat, previous, || node_folders_for_print(folder))
}

/// A sessions folder held open, to take its session folders' fingerprints through it
/// ([`SessionsFolder::fingerprint`]): what the watcher's sweep does, a few dozen sessions a second.
#[derive(Debug)]
pub struct SessionsFolder {
    path: PathBuf,
    fd: OwnedFd,
}

impl SessionsFolder {
    pub fn open(path: &Path) -> std::io::Result<SessionsFolder> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, Mode::empty()).map_err(std::io::Error::from)?;
        Ok(SessionsFolder {
            path: path.to_owned(),
            fd,
        })
    }

    /// The [`fingerprint`] of its session folder `id` (the same string), each file looked up from
    /// this folder: two names to resolve (`<id>/result.json`), not every name of the whole path
    /// (at 100,000 sessions, walking the whole paths was most of a sweep's cost).
    pub fn fingerprint(&self, id: &str, previous: Option<&str>) -> Option<String> {
        print_with(self.stat_in(id), previous, || {
            node_folders_for_print(&self.path.join(id))
        })
    }

    /// Whether session folder `id` is unchanged at a glance since its fingerprint `print` was
    /// taken: the folder's own time and `.session-info.json`'s time and size, two `fstatat`s of
    /// the [`fingerprint`]'s six or more. They change with every file created, removed or renamed
    /// in the folder, and with every run of the engine in it (it rewrites `.session-info.json`
    /// before each node); not with a file rewritten in place by another hand, which only the
    /// whole fingerprint sees.
    pub fn unchanged_at_a_glance(&self, id: &str, print: &str) -> bool {
        head(&mut self.stat_in(id)).is_some_and(|head| {
            print
                .strip_prefix(head.as_str())
                .is_some_and(|rest| rest.starts_with('|'))
        })
    }

    /// A file's stamp by its path relative to session folder `id` (`""`: the folder), looked up
    /// from this folder.
    fn stat_in<'a>(&'a self, id: &'a str) -> impl FnMut(&str) -> Option<Stamp> + 'a {
        let mut path = String::with_capacity(id.len() + 64);
        move |relative: &str| {
            path.clear();
            path.push_str(id);
            if !relative.is_empty() {
                path.push('/');
                path.push_str(relative);
            }
            // As `fingerprint`: the last name's link is not followed.
            let stat = fstatat(&self.fd, path.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
            Some(Stamp::of_stat(&stat))
        }
    }
}

/// What a fingerprint keeps of a file: its modification time and its size.
struct Stamp {
    seconds: i64,
    nanoseconds: i64,
    len: u64,
}

impl Stamp {
    fn of_metadata(metadata: &fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            seconds: metadata.mtime(),
            nanoseconds: metadata.mtime_nsec(),
            len: metadata.len(),
        }
    }

    fn of_stat(stat: &FileStat) -> Stamp {
        Stamp {
            seconds: stat.st_mtime,
            nanoseconds: stat.st_mtime_nsec,
            len: u64::try_from(stat.st_size).unwrap_or_default(),
        }
    }

    fn part(stamp: Option<Stamp>) -> String {
        stamp.map_or_else(
            || "-".to_owned(),
            |s| format!("{}.{}:{}", s.seconds, s.nanoseconds, s.len),
        )
    }
}

/// A fingerprint, each file's stamp taken by `stat` (of a path relative to the session folder;
/// `""` is the folder), the node folders listed by `list_nodes` when the previous print's are
/// not current.
fn print_with(
    mut stat: impl FnMut(&str) -> Option<Stamp>,
    previous: Option<&str>,
    list_nodes: impl FnOnce() -> Vec<String>,
) -> Option<String> {
    use std::fmt::Write;
    let mut print = head(&mut stat)?;
    let folder_part = print.split('|').next();
    let same_folder = previous.is_some_and(|p| p.split('|').next() == folder_part);
    let mut seen = previous.map(|p| p.split('|').skip(2));
    // The studio's run record is written leaving the folder's time as it was: always looked at.
    for name in [RESULT_FILE, EVENTS_FILE, "nodes", RUN_RECORD_FILE] {
        let was_absent = seen.as_mut().and_then(Iterator::next) == Some("-");
        let part = if same_folder && was_absent && name != RUN_RECORD_FILE {
            "-".to_owned()
        } else {
            Stamp::part(stat(name))
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
        None => list_nodes(),
    };
    print.push_str(RAW_PART);
    for (i, node) in nodes.iter().enumerate() {
        // `e<name>`: `<folder>/<name>/`; `d<name>`: `nodes/<name>/`. A name has no `/`.
        let raw = match node.split_at(1) {
            ("d", name) => format!("{NODES_DIR}/{name}/{RAW_STREAM_FILE}"),
            (_, name) => format!("{name}/{RAW_STREAM_FILE}"),
        };
        let raw = Stamp::part(stat(&raw));
        let _ = write!(print, "{}{node}/{raw}", if i == 0 { "" } else { "/" });
    }
    Some(print)
}

/// A fingerprint's first two parts: the folder's own time, then `.session-info.json`'s stamp
/// (what [`SessionsFolder::unchanged_at_a_glance`] compares); `None` when the folder is gone.
fn head(stat: &mut impl FnMut(&str) -> Option<Stamp>) -> Option<String> {
    let dir = stat("")?;
    let info = Stamp::part(stat(SESSION_INFO_FILE));
    Some(format!("{}.{}|{info}", dir.seconds, dir.nanoseconds))
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::time::Duration;

    use super::*;

    /// Both ways of taking a fingerprint, with and without the previous one: the same string.
    fn both(sessions: &Path, id: &str, previous: Option<&str>) -> String {
        let by_path = fingerprint(&sessions.join(id), previous).expect("the folder is there");
        let open = SessionsFolder::open(sessions).unwrap();
        assert_eq!(
            open.fingerprint(id, previous).as_deref(),
            Some(by_path.as_str()),
            "{id}"
        );
        by_path
    }

    #[test]
    fn a_fingerprint_through_the_open_sessions_folder_is_the_same_and_sees_the_same_changes() {
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path();
        // The engine's layout (a node folder beside the files), and the documented one (nodes/).
        let engine = sessions.join("1777000000000_engine");
        fs::create_dir_all(engine.join("plan")).unwrap();
        fs::write(engine.join(SESSION_INFO_FILE), "{}").unwrap();
        fs::write(engine.join(RESULT_FILE), r#"{"success":true}"#).unwrap();
        fs::write(engine.join("plan").join(RAW_STREAM_FILE), "a\n").unwrap();
        let documented = sessions.join("1777000001000_documented");
        fs::create_dir_all(documented.join("nodes/write")).unwrap();
        fs::write(documented.join(EVENTS_FILE), "").unwrap();
        fs::write(documented.join("nodes/write").join(RAW_STREAM_FILE), "b\n").unwrap();
        // A link where a file is: its own times count, not its target's.
        let linked = sessions.join("1777000002000_linked");
        fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(engine.join(RESULT_FILE), linked.join(RESULT_FILE)).unwrap();

        for id in [
            "1777000000000_engine",
            "1777000001000_documented",
            "1777000002000_linked",
        ] {
            let first = both(sessions, id, None);
            assert_eq!(both(sessions, id, Some(&first)), first, "nothing changed: {id}");
        }
        let engine_print = both(sessions, "1777000000000_engine", None);
        assert!(engine_print.contains("|raw:eplan/"), "{engine_print}");
        let documented_print = both(sessions, "1777000001000_documented", None);
        assert!(documented_print.contains("|raw:dwrite/"), "{documented_print}");

        // Rewritten in place (the folder's time kept): seen through the open folder too.
        std::thread::sleep(Duration::from_millis(20));
        fs::write(engine.join(RESULT_FILE), r#"{"success":false}"#).unwrap();
        fs::write(engine.join("plan").join(RAW_STREAM_FILE), "a\nb\n").unwrap();
        let rewritten = both(sessions, "1777000000000_engine", Some(&engine_print));
        assert_ne!(rewritten, engine_print);

        // At a glance: unchanged by those (in place, not `.session-info.json`); changed by the
        // engine's rewrite of `.session-info.json` in place, and by a file created.
        let open = SessionsFolder::open(sessions).unwrap();
        let glance = |id: &str, print: &str| open.unchanged_at_a_glance(id, print);
        assert!(glance("1777000000000_engine", &engine_print));
        assert!(glance("1777000000000_engine", &rewritten));
        fs::write(engine.join(SESSION_INFO_FILE), r#"{"currentNode":"plan"}"#).unwrap();
        assert!(!glance("1777000000000_engine", &rewritten));
        let info_rewritten = both(sessions, "1777000000000_engine", Some(&rewritten));
        assert!(glance("1777000000000_engine", &info_rewritten));
        fs::write(documented.join(RESULT_FILE), "{}").unwrap();
        assert!(!glance("1777000001000_documented", &documented_print));
        assert!(!glance("1777000009000_gone", &documented_print));
        assert!(SessionsFolder::open(sessions)
            .unwrap()
            .fingerprint("1777000009000_gone", None)
            .is_none());
    }
}
