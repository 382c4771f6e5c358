//! [`FolderReader`]: a session folder's files read as untrusted ground. Each file is optional and
//! may be malformed or half-written: what cannot be read adds a [`Problem`] naming it, and the
//! latest time seen is the session's update time.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use super::model::{
    FileRef, NodeArtifacts, Problem, SessionInfo, PROMPT_FILE, RAW_OUTPUT_FILE, RAW_STREAM_FILE, RESULT_FILE,
    SESSION_INFO_FILE,
};
use super::title::one_line;
use crate::sessions::untrusted;
use crate::vocabulary::error::Error;

/// Files larger than this are listed but not parsed in place (they are paged elsewhere).
pub(super) const MAX_PARSED_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A folder of a session is read up to this many entries (a session has a few dozen).
pub(super) const MAX_FOLDER_ENTRIES: usize = 10_000;

/// How much of a node's prompt a session carries inline.
const PROMPT_PREVIEW_BYTES: u64 = 4 * 1024;

/// Reads the files of one session folder, collecting what could not be read and the latest time.
pub(super) struct FolderReader<'a> {
    pub(super) root: &'a Path,
    pub(super) problems: Vec<Problem>,
    pub(super) updated_at: Option<SystemTime>,
}

impl FolderReader<'_> {
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(self.root).unwrap_or(path).display().to_string()
    }

    pub(super) fn problem(&mut self, path: &Path, reason: impl Into<String>) {
        let file = self.relative(path);
        self.problems.push(Problem {
            file,
            reason: reason.into(),
        });
    }

    pub(super) fn touch(&mut self, metadata: Option<&fs::Metadata>) {
        if let Some(modified) = metadata.and_then(|m| m.modified().ok()) {
            self.updated_at = Some(self.updated_at.map_or(modified, |u| u.max(modified)));
        }
    }

    /// The metadata of `path` itself (a link is not followed).
    pub(super) fn stat(&mut self, path: &Path) -> Option<fs::Metadata> {
        match fs::symlink_metadata(path) {
            Ok(metadata) => {
                self.touch(Some(&metadata));
                Some(metadata)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                self.problem(path, format!("cannot read: {e}"));
                None
            }
        }
    }

    /// The entries of a folder, at most [`MAX_FOLDER_ENTRIES`] (the rest is a problem).
    pub(super) fn list_dir(&mut self, dir: &Path) -> std::io::Result<Vec<(String, fs::FileType)>> {
        let mut entries = Vec::new();
        for (seen, entry) in fs::read_dir(dir)?.enumerate() {
            if seen == MAX_FOLDER_ENTRIES {
                self.problem(
                    dir,
                    format!("more than {MAX_FOLDER_ENTRIES} entries; the rest not read"),
                );
                break;
            }
            let entry = entry?;
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            match entry.file_name().into_string() {
                Ok(name) => entries.push((name, file_type)),
                Err(name) => self.problem(&dir.join(&name), "file name is not valid UTF-8; skipped"),
            }
        }
        Ok(entries)
    }

    /// A file the session may have, if it is there as a regular file; anything else in its place
    /// (a link, a FIFO, a device) is a problem, and never opened.
    pub(super) fn regular_file(&mut self, path: &Path) -> Option<FileRef> {
        let metadata = self.stat(path)?;
        if !metadata.is_file() {
            let kind = untrusted::kind_of(metadata.file_type());
            self.problem(path, format!("{kind}, not a regular file; not read"));
            return None;
        }
        Some(FileRef {
            path: path.to_owned(),
            bytes: metadata.len(),
        })
    }

    fn read_small(&mut self, file: &FileRef) -> Option<Vec<u8>> {
        if file.bytes > MAX_PARSED_FILE_BYTES {
            self.problem(&file.path, format!("{} bytes: too large to read in place", file.bytes));
            return None;
        }
        match untrusted::read_bounded(&file.path, MAX_PARSED_FILE_BYTES) {
            Ok(bytes) => Some(bytes),
            Err(Error::FileTooLarge { bytes, .. }) => {
                self.problem(&file.path, format!("{bytes} bytes: too large to read in place"));
                None
            }
            Err(e) => {
                let reason = match e {
                    Error::Io { source, .. } => format!("cannot read: {source}"),
                    other => other.to_string(),
                };
                self.problem(&file.path, reason);
                None
            }
        }
    }

    pub(super) fn parse_json(&mut self, file: &FileRef) -> Option<Value> {
        let bytes = self.read_small(file)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            self.problem(&file.path, "empty (still being written?)");
            return None;
        }
        match serde_json::from_slice(&bytes) {
            Ok(value) => Some(value),
            Err(e) => {
                self.problem(&file.path, format!("not valid JSON: {e}"));
                None
            }
        }
    }

    pub(super) fn session_info(&mut self, value: Value) -> Option<SessionInfo> {
        let Value::Object(map) = value else {
            self.problem(&self.root.join(SESSION_INFO_FILE), "not a JSON object");
            return None;
        };
        let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(SessionInfo {
            session_path: text("sessionPath"),
            session_timestamp: map.get("sessionTimestamp").and_then(Value::as_u64),
            current_node: text("currentNode").filter(|n| !n.is_empty()),
            created_at: text("createdAt"),
            config: map.get("config").cloned(),
        })
    }

    /// `events.json` as JSONL, a JSON array, or `{ "events": [...] }`.
    pub(super) fn events(&mut self, file: &FileRef) -> Vec<Value> {
        let Some(bytes) = self.read_small(file) else {
            return Vec::new();
        };
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() {
            return Vec::new();
        }
        if let Ok(value) = serde_json::from_slice::<Value>(trimmed) {
            return match value {
                Value::Array(events) => events,
                Value::Object(mut map) => match map.remove("events") {
                    Some(Value::Array(events)) => events,
                    _ => vec![Value::Object(map)],
                },
                _ => {
                    self.problem(&file.path, "neither JSONL, an array, nor {\"events\": [...]}");
                    Vec::new()
                }
            };
        }
        let mut events = Vec::new();
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        let last_line = lines.iter().rposition(|l| !l.trim_ascii().is_empty());
        for (number, line) in lines.iter().enumerate() {
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Value>(line) {
                Ok(value) => events.push(value),
                // A half-written last line is an event still being written.
                Err(_) if Some(number) == last_line && !bytes.ends_with(b"\n") => {}
                Err(e) => self.problem(&file.path, format!("line {}: not valid JSON: {e}", number + 1)),
            }
        }
        events
    }

    /// The first line of a node's prompt file, read up to [`PROMPT_PREVIEW_BYTES`]: a regular
    /// file only, never through a link (anything else in its place is a problem). Its time is not
    /// the session's update time here (the listing does not look at node files otherwise).
    pub(super) fn prompt_line(&mut self, dir: &Path) -> Option<String> {
        let path = dir.join(PROMPT_FILE);
        let metadata = fs::symlink_metadata(&path).ok()?;
        if !metadata.is_file() {
            let kind = untrusted::kind_of(metadata.file_type());
            self.problem(&path, format!("{kind}, not a regular file; not read"));
            return None;
        }
        match untrusted::read_prefix(&path, PROMPT_PREVIEW_BYTES) {
            Ok(bytes) => one_line(&String::from_utf8_lossy(&bytes)),
            Err(e) => {
                self.problem(&path, format!("cannot read: {e}"));
                None
            }
        }
    }

    /// A node folder's `result.json`, parsed, when it is there as a regular small file; read
    /// without counting its time as the session's (a listing reads it only to find a failure).
    pub(super) fn node_result(&mut self, dir: &Path) -> Option<Value> {
        let path = dir.join(RESULT_FILE);
        let metadata = fs::symlink_metadata(&path).ok()?;
        if !metadata.is_file() || metadata.len() > MAX_PARSED_FILE_BYTES {
            return None;
        }
        let bytes = untrusted::read_bounded(&path, MAX_PARSED_FILE_BYTES).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    pub(super) fn node_artifacts(&mut self, dir: &Path) -> NodeArtifacts {
        let mut file = |name: &str| self.regular_file(&dir.join(name));
        let prompt = file(PROMPT_FILE);
        let raw_output = file(RAW_OUTPUT_FILE);
        let result = file(RESULT_FILE);
        let raw_stream = file(RAW_STREAM_FILE);
        let prompt_preview = prompt
            .as_ref()
            .and_then(|p| untrusted::read_prefix(&p.path, PROMPT_PREVIEW_BYTES).ok())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let result_value = result.as_ref().and_then(|r| self.parse_json(r));
        NodeArtifacts {
            prompt,
            prompt_preview,
            raw_output,
            result,
            result_value,
            raw_stream,
        }
    }
}
