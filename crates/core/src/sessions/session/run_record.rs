//! The studio's record of a run in its session folder ([`RUN_RECORD_FILE`]): what the studio knew
//! when a run it started ended (its agent, its title, how it ended, its nodes in order with their
//! times), written beside the engine's files so that a copy of the folder anywhere (a bucket,
//! `zibby agent download`, a colleague's copy, an import) reads as the original does. This file
//! owns its type, its writer ([`write`]) and its reader ([`read`]); the runner fills it from the
//! store when a run's end is recorded.
//!
//! Read as untrusted ground: a regular file never reached through a link, at most
//! [`MAX_RECORD_BYTES`], at most [`MAX_RECORD_NODES`] nodes, statuses in the one vocabulary
//! (`Status`), node names without control characters; anything else is a problem naming the
//! file, and the record is not used. The record is the run's only while the engine's own
//! `.session-info.json` still says what it said at the run's end (`folder_at_end`): a later run
//! outside the studio rewrites it before its first node, and the folder tells again.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::{SessionInfo, Timestamp, SESSION_INFO_FILE};
use super::reader::MAX_PARSED_FILE_BYTES;
use super::title::one_line;
use crate::sessions::{private, untrusted};
use crate::status::Status;
use crate::timeline::StoppedBy;
use crate::vocabulary::error::Error;

/// The file's name in a session folder (a dotfile, as the engine's `.session-info.json`).
pub const RUN_RECORD_FILE: &str = ".zibby-studio-run.json";

/// What the file says it is (`format`), and the version of its shape this studio writes.
pub const RUN_RECORD_FORMAT: &str = "zibby-studio-run";
pub const RUN_RECORD_VERSION: u32 = 1;

/// The record is read up to this size (a run of a thousand nodes takes about 150 KiB).
pub const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// A record names at most this many node executions (the writer keeps the first ones).
pub const MAX_RECORD_NODES: usize = 4_096;

/// A node's name is at most this many bytes.
const MAX_NODE_NAME_BYTES: usize = 256;

/// A run id is at most this many bytes.
const MAX_RUN_ID_BYTES: usize = 128;

/// What the studio knew of a run when it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecordFile {
    /// Always [`RUN_RECORD_FORMAT`].
    pub format: String,
    /// [`RUN_RECORD_VERSION`] when written by this studio.
    pub version: u32,
    pub run_id: String,
    /// The agent the studio ran it with, one line.
    pub agent: Option<String>,
    /// The first line of the session's first prompt (as `session_model::name_session` names it).
    pub title: Option<String>,
    /// How the run ended (never `running`).
    pub status: Status,
    pub stopped_by: Option<StoppedBy>,
    pub exit_code: Option<i64>,
    pub started_at: Timestamp,
    pub ended_at: Timestamp,
    /// The run's node executions in the order they began.
    pub nodes: Vec<RecordedNode>,
    /// What the engine's `.session-info.json` said when the run ended: the record is the run's
    /// only while the folder still says the same.
    pub folder_at_end: FolderAtEnd,
}

/// One node execution of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedNode {
    pub name: String,
    pub status: Status,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
}

/// `.session-info.json`'s `currentNode` and `createdAt` (rewritten by the engine before each
/// node), as they were when the run ended; both `None` without that file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderAtEnd {
    pub current_node: Option<String>,
    pub created_at: Option<String>,
}

impl FolderAtEnd {
    pub fn of(info: Option<&SessionInfo>) -> FolderAtEnd {
        FolderAtEnd {
            current_node: info.and_then(|i| i.current_node.clone()),
            created_at: info.and_then(|i| i.created_at.clone()),
        }
    }
}

impl FolderAtEnd {
    /// What the folder's `.session-info.json` says now, read as the folder reader reads it (a
    /// regular file, never through a link, bounded; one that does not parse says nothing).
    pub fn read(session_path: &Path) -> FolderAtEnd {
        let path = session_path.join(SESSION_INFO_FILE);
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        let value = is_file
            .then(|| untrusted::read_bounded(&path, MAX_PARSED_FILE_BYTES).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        let text = |key: &str| {
            let value = value.as_ref()?.as_object()?.get(key)?.as_str()?;
            Some(value.to_owned())
        };
        FolderAtEnd {
            current_node: text("currentNode").filter(|n| !n.is_empty()),
            created_at: text("createdAt"),
        }
    }
}

impl RunRecordFile {
    /// Whether the folder, read now, is still as the run left it (see the module doc).
    pub fn still_the_folders(&self, info: Option<&SessionInfo>) -> bool {
        self.folder_at_end == FolderAtEnd::of(info)
    }

    /// The nodes once each, in the order they first began, each with its last execution's
    /// status (a node run again in a loop is one entry, as the store's spans are listed).
    pub fn nodes_once(&self) -> Vec<(&str, Status)> {
        let mut once: Vec<(&str, Status)> = Vec::new();
        for node in &self.nodes {
            match once.iter_mut().find(|(name, _)| *name == node.name) {
                Some(entry) => entry.1 = node.status,
                None => once.push((&node.name, node.status)),
            }
        }
        once
    }

    /// What a reader may rely on, or why not (one reason, naming the field).
    fn validate(mut self) -> Result<RunRecordFile, String> {
        if self.format != RUN_RECORD_FORMAT {
            return Err(format!(
                "not a studio run record (format `{}`)",
                escape(&self.format, 40)
            ));
        }
        if self.version != RUN_RECORD_VERSION {
            return Err(format!(
                "version {} of the run record; this studio reads version {RUN_RECORD_VERSION}",
                self.version
            ));
        }
        if self.status == Status::Running {
            return Err("status `running`: a record is written once the run ended".to_owned());
        }
        if self.run_id.is_empty() || self.run_id.len() > MAX_RUN_ID_BYTES || has_control(&self.run_id) {
            return Err("run_id: empty, too long or with control characters".to_owned());
        }
        if self.nodes.len() > MAX_RECORD_NODES {
            return Err(format!("{} nodes: more than {MAX_RECORD_NODES}", self.nodes.len()));
        }
        for node in &self.nodes {
            if node.name.is_empty() || node.name.len() > MAX_NODE_NAME_BYTES || has_control(&node.name) {
                return Err(format!(
                    "node name `{}`: empty, too long or with control characters",
                    escape(&node.name, 40)
                ));
            }
        }
        self.agent = self.agent.as_deref().and_then(one_line);
        self.title = self.title.as_deref().and_then(one_line);
        Ok(self)
    }
}

fn has_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() || is_bidi(c))
}

/// Bidirectional controls, which reorder what is shown after them.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A bad value, shown in a problem: its first `chars` characters, hidden ones as escapes.
fn escape(text: &str, chars: usize) -> String {
    text.chars().take(chars).flat_map(char::escape_debug).collect()
}

/// Writes the record into `session_path` (0600, by a new file renamed into place, never through
/// a link, in a folder reached through none), leaving the folder's own modification time as it
/// was: the studio's own write never reads as the folder written after the run. A missing
/// session folder is not made (nothing to describe).
pub fn write(session_path: &Path, record: &RunRecordFile) -> Result<(), Error> {
    match std::fs::symlink_metadata(session_path) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => {
            return Err(Error::NotAFolder {
                path: session_path.into(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(session_path, e)),
    }
    // No link anywhere on the way: the record goes into this folder or nowhere.
    drop(private::open_dir_no_symlinks(session_path)?);
    let mut bytes = serde_json::to_vec_pretty(record).expect("a run record serialises");
    bytes.push(b'\n');
    private::keeping_folder_time(session_path, || {
        private::replace_file(&session_path.join(RUN_RECORD_FILE), &bytes)
    })
}

/// The record in `session_path`: `Ok(None)` when there is none, `Err(reason)` when one is there
/// that cannot be used (a link or another kind of file in its place, too large, not JSON, a
/// field out of bounds). Its time is not read: the studio's own write is not a change of the
/// session.
pub fn read(session_path: &Path) -> Result<Option<RunRecordFile>, String> {
    let path = session_path.join(RUN_RECORD_FILE);
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    if !metadata.is_file() {
        let kind = untrusted::kind_of(metadata.file_type());
        return Err(format!("{kind}, not a regular file; not read"));
    }
    if metadata.len() > MAX_RECORD_BYTES {
        return Err(format!(
            "{} bytes: larger than a run record can be ({MAX_RECORD_BYTES})",
            metadata.len()
        ));
    }
    let bytes = match untrusted::read_bounded(&path, MAX_RECORD_BYTES) {
        Ok(bytes) => bytes,
        Err(Error::FileTooLarge { bytes, .. }) => {
            return Err(format!(
                "{bytes} bytes: larger than a run record can be ({MAX_RECORD_BYTES})"
            ))
        }
        Err(Error::Io { source, .. }) => return Err(format!("cannot read: {source}")),
        Err(other) => return Err(other.to_string()),
    };
    let record: RunRecordFile = serde_json::from_slice(&bytes).map_err(|e| format!("not a valid run record: {e}"))?;
    record.validate().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RunRecordFile {
        RunRecordFile {
            format: RUN_RECORD_FORMAT.to_owned(),
            version: RUN_RECORD_VERSION,
            run_id: "0192-run".to_owned(),
            agent: Some("planner".to_owned()),
            title: Some("Plan a trip".to_owned()),
            status: Status::Cancelled,
            stopped_by: Some(StoppedBy::Graceful),
            exit_code: Some(0),
            started_at: Timestamp(1_000),
            ended_at: Timestamp(9_000),
            nodes: vec![
                RecordedNode {
                    name: "plan".to_owned(),
                    status: Status::Success,
                    started_at: Timestamp(1_100),
                    ended_at: Some(Timestamp(2_000)),
                },
                RecordedNode {
                    name: "act".to_owned(),
                    status: Status::Cancelled,
                    started_at: Timestamp(2_000),
                    ended_at: Some(Timestamp(9_000)),
                },
                RecordedNode {
                    name: "plan".to_owned(),
                    status: Status::Error,
                    started_at: Timestamp(3_000),
                    ended_at: None,
                },
            ],
            folder_at_end: FolderAtEnd::default(),
        }
    }

    #[test]
    fn written_private_without_moving_the_folders_time_and_read_back_the_same() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(dir.path())
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(an_hour_ago))
            .unwrap();
        write(dir.path(), &record()).unwrap();
        write(dir.path(), &record()).unwrap();
        assert_eq!(std::fs::metadata(dir.path()).unwrap().modified().unwrap(), an_hour_ago);
        let mode = std::fs::metadata(dir.path().join(RUN_RECORD_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read(dir.path()), Ok(Some(record())));
        assert_eq!(
            record().nodes_once(),
            [("plan", Status::Error), ("act", Status::Cancelled)]
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        // No folder, no record (and no folder made).
        write(&dir.path().join("gone"), &record()).unwrap();
        assert!(!dir.path().join("gone").exists());
    }

    #[test]
    fn never_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("linked")).unwrap();
        assert!(write(&dir.path().join("linked"), &record()).is_err());
        assert!(!real.join(RUN_RECORD_FILE).exists());
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), real.join(RUN_RECORD_FILE)).unwrap();
        let problem = read(&real).unwrap_err();
        assert!(problem.contains("not a regular file"), "{problem}");
    }

    #[test]
    fn a_hostile_record_is_a_named_problem() {
        let dir = tempfile::tempdir().unwrap();
        let with = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut value = serde_json::to_value(record()).unwrap();
            edit(&mut value);
            std::fs::write(dir.path().join(RUN_RECORD_FILE), serde_json::to_vec(&value).unwrap()).unwrap();
            read(dir.path())
        };
        let problem = |result: Result<Option<RunRecordFile>, String>, says: &str| {
            let reason = result.unwrap_err();
            assert!(reason.contains(says), "{reason} (expected: {says})");
        };
        problem(with(&|v| v["status"] = "exploded".into()), "unknown variant");
        problem(with(&|v| v["status"] = "running".into()), "running");
        problem(with(&|v| v["version"] = 9.into()), "version 9");
        problem(with(&|v| v["format"] = "x".into()), "not a studio run record");
        problem(
            with(&|v| v["nodes"][0]["name"] = "a\u{1b}[2Jb".into()),
            "control characters",
        );
        problem(
            with(&|v| v["nodes"][0]["name"] = "a\u{202e}b".into()),
            "control characters",
        );
        problem(with(&|v| v["nodes"][0]["status"] = 7.into()), "not a valid run record");
        let many = serde_json::json!({"name": "n", "status": "success", "started_at": "1970-01-01T00:00:01Z"});
        problem(
            with(&|v| v["nodes"] = vec![many.clone(); MAX_RECORD_NODES + 1].into()),
            "more than",
        );
        let named = with(&|v| v["title"] = "\u{1b}]0;pwned\u{7}Plan\u{202e} it\nsecond".into());
        let title = named.unwrap().unwrap().title.unwrap();
        assert!(!title.chars().any(|c| c.is_control() || is_bidi(c)), "{title:?}");
        std::fs::write(dir.path().join(RUN_RECORD_FILE), b"{\"format\": ").unwrap();
        problem(read(dir.path()), "not a valid run record");
        let huge = vec![b' '; MAX_RECORD_BYTES as usize + 1];
        std::fs::write(dir.path().join(RUN_RECORD_FILE), huge).unwrap();
        problem(read(dir.path()), "larger than a run record can be");
    }
}
