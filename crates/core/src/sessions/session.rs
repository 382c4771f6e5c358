//! Session folders (PROTOCOL.md §5): one folder read into a typed [`Session`], and the listing of a
//! workspace's sessions.
//!
//! Every file but the folder itself is optional and may be malformed or half-written: a bad file
//! degrades only its own field and adds a [`Problem`] naming it, never fails the whole session.
//!
//! **What a folder says a session is called** (for sessions the studio did not start; the store's
//! word wins over it, see `store::session_model`). Checked against the engine's captures: the
//! engine alone (every era) writes neither a workflow name nor a prompt into the folder
//! (`.session-info.json` holds `sessionPath`, `sessionTimestamp`, `currentNode`, `createdAt`
//! and `config`; node folders hold `raw_stream_output.txt`), so such a session has neither. The
//! documented layout (the `zibby` CLI, the cloud) can say more; the first that says wins:
//!
//! - `agent`: a top-level string `workflow`, `workflowName`, `workflowType`, `agent` or
//!   `agentName` of `.session-info.json`, else of `result.json`, else of the first event of
//!   `events.json` that has one;
//! - `title`: a top-level string `prompt` of `result.json`, else, in the documented layout, the
//!   prompt file (`prompt.txt`) of the first node, in node order, that has one (the first 4 KiB
//!   of at most [`TITLE_PROMPT_FILES`] nodes, a regular file never reached through a link).
//!
//! Either is made one line ([`one_line`]): the first line that has text, trimmed, control
//! characters dropped, at most [`TITLE_CHARS`] characters (cut at a word, with `…`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::sessions::cost::{self, NodeUsage, UsageTotal};
use crate::sessions::untrusted;
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// The sessions folder below a workspace's root.
pub const SESSIONS_DIR: [&str; 3] = [".zibby", "output", "sessions"];

/// A session whose files changed within this window, and that has no result, is taken as running.
pub const RUNNING_QUIET_WINDOW: Duration = Duration::from_secs(120);

/// Files larger than this are listed but not parsed in place (they are paged elsewhere).
const MAX_PARSED_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A folder of a session is read up to this many entries (a session has a few dozen).
const MAX_FOLDER_ENTRIES: usize = 10_000;

/// A listing reads `events.json` up to this size (larger ones only in full reads).
const SUMMARY_EVENTS_BYTES: u64 = 256 * 1024;

/// How much of a node's prompt a [`Session`] carries inline.
const PROMPT_PREVIEW_BYTES: u64 = 4 * 1024;

/// A title or an agent name is at most this many characters.
pub const TITLE_CHARS: usize = 80;

/// The title is looked for in the prompt files of at most this many nodes.
pub const TITLE_PROMPT_FILES: usize = 16;

/// The keys that name a session's workflow or agent, in the folder's JSON files.
const NAME_KEYS: [&str; 5] = ["workflow", "workflowName", "workflowType", "agent", "agentName"];

pub const SESSION_INFO_FILE: &str = ".session-info.json";
pub const RESULT_FILE: &str = "result.json";
pub const EVENTS_FILE: &str = "events.json";
pub const RAW_STREAM_FILE: &str = "raw_stream_output.txt";
const NODES_DIR: &str = "nodes";
const PROMPT_FILE: &str = "prompt.txt";
const RAW_OUTPUT_FILE: &str = "raw_output.txt";

/// A moment, as milliseconds since the Unix epoch; written (and sent to the window) as RFC 3339
/// UTC text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub fn from_system_time(time: SystemTime) -> Timestamp {
        Timestamp(time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64))
    }

    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    pub fn to_rfc3339(self) -> String {
        humantime::format_rfc3339_millis(self.to_system_time()).to_string()
    }

    pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
        humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
            .ok()
            .map(Timestamp::from_system_time)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse_rfc3339(&text).ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {text}")))
    }
}

/// Which of the two folder layouts of PROTOCOL.md §5 a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// What the engine writes alone: `.session-info.json` and `<node>/raw_stream_output.txt`.
    Engine,
    /// What the `zibby` CLI and the cloud write: `result.json`, `events.json`, `nodes/<node>/…`.
    Documented,
}

/// A file of the session that could not be read as expected, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Problem {
    /// The file, relative to the session folder.
    pub file: String,
    pub reason: String,
}

/// A file that exists, with its size; its contents are read on demand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileRef {
    pub path: PathBuf,
    pub bytes: u64,
}

/// `.session-info.json`, as far as it parses.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionInfo {
    pub session_path: Option<String>,
    pub session_timestamp: Option<u64>,
    pub current_node: Option<String>,
    /// When the *current node* started (the engine rewrites the file before every node).
    pub created_at: Option<String>,
    /// May hold secrets: shown on request, never logged (nor sent to the window).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub config: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NodeArtifacts {
    pub prompt: Option<FileRef>,
    /// The first 4 KiB of the prompt, as text.
    pub prompt_preview: Option<String>,
    pub raw_output: Option<FileRef>,
    pub result: Option<FileRef>,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub result_value: Option<Value>,
    pub raw_stream: Option<FileRef>,
}

impl NodeArtifacts {
    /// Each file this lacks, taken from `other` (a node's second folder).
    fn fill_from(&mut self, other: NodeArtifacts) {
        if self.prompt.is_none() {
            self.prompt = other.prompt;
            self.prompt_preview = other.prompt_preview;
        }
        self.raw_output = self.raw_output.take().or(other.raw_output);
        if self.result.is_none() {
            self.result = other.result;
            self.result_value = other.result_value;
        }
        self.raw_stream = self.raw_stream.take().or(other.raw_stream);
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionNode {
    pub name: String,
    pub status: Status,
    /// The node's folder, when it has one.
    pub path: Option<PathBuf>,
    pub artifacts: NodeArtifacts,
    /// What its agent said it used (`cost`); `None` without a raw stream or a known format.
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub usage: Option<NodeUsage>,
}

/// The short form of a node, as listings show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NodeSummary {
    pub name: String,
    pub status: Status,
    /// What its agent said it used (`cost`); `None` when nothing says.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub usage: Option<NodeUsage>,
}

impl SessionSummary {
    /// "N/M nodes": the node executions that ended (any status but `running`: a node the run's
    /// end left open is over too) and those that began. The window's `progressOf` counts alike.
    pub fn nodes_progress(&self) -> (usize, usize) {
        let ended = self.nodes.iter().filter(|n| n.status != Status::Running).count();
        (ended, self.nodes.len())
    }
}

/// One session folder, read in full.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Session {
    pub id: SessionId,
    pub path: PathBuf,
    pub layout: Layout,
    /// The workflow or agent it ran (see [`SessionSummary::agent`]).
    pub agent: Option<String>,
    /// What it is called (see [`SessionSummary::title`]).
    pub title: Option<String>,
    pub status: Status,
    pub current_node: Option<String>,
    pub created_at: Option<Timestamp>,
    pub updated_at: Timestamp,
    pub info: Option<SessionInfo>,
    pub nodes: Vec<SessionNode>,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub result: Option<Value>,
    #[cfg_attr(feature = "ts", ts(type = "unknown[]"))]
    pub events: Vec<Value>,
    pub raw_stream_output: Option<FileRef>,
    pub problems: Vec<Problem>,
    /// The total over its nodes (`cost::UsageTotal`); `None` when no node has usage.
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub usage: Option<UsageTotal>,
    /// Where it was imported from (`zstudio import`, the window's Import…), as the store marks
    /// it; `None` for a session of this workspace's own runs, and from a folder alone.
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub imported: Option<Imported>,
}

/// Where a session came from, as the store marks it imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Imported {
    /// The bundle, folder or log it was imported from.
    pub from: String,
    pub at: Timestamp,
}

/// One session as the listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionSummary {
    pub id: SessionId,
    pub path: PathBuf,
    /// The workflow or agent it ran: the store's word for a session the studio ran, else the
    /// folder's (see the module doc); none when neither says.
    #[serde(default)]
    pub agent: Option<String>,
    /// What it is called, one line: the studio's first prompt, else the folder's (see the module
    /// doc), else the agent's name.
    #[serde(default)]
    pub title: Option<String>,
    pub status: Status,
    pub current_node: Option<String>,
    pub created_at: Option<Timestamp>,
    pub updated_at: Timestamp,
    pub nodes: Vec<NodeSummary>,
    pub problems: Vec<Problem>,
    /// The total over its nodes (`cost::UsageTotal`); `None` when no node has usage.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub usage: Option<UsageTotal>,
}

impl SessionSummary {
    /// The usage total over its nodes, as they are now (after the store's nodes were laid over
    /// the folder's, say).
    pub fn total_usage(&mut self) {
        self.usage = UsageTotal::of(self.nodes.iter().map(|n| n.usage.as_ref()));
    }
}

impl Session {
    /// The usage total over its nodes, as they are now.
    pub fn total_usage(&mut self) {
        self.usage = UsageTotal::of(self.nodes.iter().map(|n| n.usage.as_ref()));
    }

    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            id: self.id.clone(),
            path: self.path.clone(),
            agent: self.agent.clone(),
            title: self.title.clone(),
            status: self.status,
            current_node: self.current_node.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            nodes: self
                .nodes
                .iter()
                .map(|n| NodeSummary {
                    name: n.name.clone(),
                    status: n.status,
                    usage: n.usage.clone(),
                })
                .collect(),
            problems: self.problems.clone(),
            usage: self.usage.clone(),
        }
    }

    /// Drops `.session-info.json`'s `config` (it may hold secrets).
    pub fn without_config(mut self) -> Session {
        if let Some(info) = &mut self.info {
            info.config = None;
        }
        self
    }
}

/// How much of a folder to read: listings skip `events.json` and node contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Summary,
    Full,
}

/// A project folder whose sessions live in `<root>/.zibby/output/sessions/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens an existing folder as a workspace (it need not have any sessions yet).
    pub fn open(root: impl AsRef<Path>) -> Result<Workspace, Error> {
        let root = root.as_ref();
        let metadata = fs::metadata(root).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => Error::WorkspaceNotFound { path: root.into() },
            _ => Error::io(root, source),
        })?;
        if !metadata.is_dir() {
            return Err(Error::NotAFolder { path: root.into() });
        }
        let root = fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
        Ok(Workspace { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the sessions folder is (it may be missing, or refused by [`Workspace::sessions_folder`]).
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join(SESSIONS_DIR.join("/"))
    }

    /// The sessions folder when it exists, checked on the way down: a symbolic link as `.zibby`,
    /// `output` or `sessions` is refused (a cloned repository could point it anywhere).
    pub fn sessions_folder(&self) -> Result<Option<PathBuf>, Error> {
        untrusted::confined_folder(&self.root, &SESSIONS_DIR)
    }

    /// The folder of a session; the id is validated, so the path stays inside the sessions folder.
    pub fn session_path(&self, id: &SessionId) -> PathBuf {
        self.sessions_dir().join(id.as_str())
    }

    /// Makes the folder of a new (or continued) session, never through a symbolic link.
    pub fn create_session_folder(&self, id: &SessionId) -> Result<PathBuf, Error> {
        self.sessions_folder()?;
        let path = self.session_path(id);
        crate::sessions::private::create_dir_all(&path)?;
        self.session_folder(id)
    }

    /// Reads one session in full.
    pub fn read_session(&self, id: &SessionId, now: SystemTime) -> Result<Session, Error> {
        read_session_folder(&self.session_folder(id)?, id.clone(), Detail::Full, now)
    }

    /// The folder of a session that exists (`session_not_found` otherwise): a real folder inside
    /// the workspace's sessions folder, never a symbolic link or one reached through a link.
    pub fn session_folder(&self, id: &SessionId) -> Result<PathBuf, Error> {
        let not_found = || Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: self.sessions_dir(),
        };
        let sessions = self.sessions_folder()?.ok_or_else(not_found)?;
        untrusted::confined_folder(&sessions, &[id.as_str()])?.ok_or_else(not_found)
    }

    /// Every session of the workspace, most recently updated first. A workspace with no sessions
    /// folder yet has no sessions; folders whose names are not valid ids are skipped.
    pub fn list_sessions(&self, now: SystemTime) -> Result<Vec<SessionSummary>, Error> {
        let folders = session_folders(self)?;
        let read = in_parallel(&folders, |(path, id)| Ok(read_summary(path, id, now)))?;
        let mut sessions: Vec<SessionSummary> = read.into_iter().flatten().collect();
        sort_most_recent_first(&mut sessions);
        Ok(sessions)
    }

    /// A workspace whose root is already canonical (as the store records it); it may be gone.
    pub fn from_canonical_root(root: PathBuf) -> Workspace {
        Workspace { root }
    }
}

/// The session folders of a workspace, with their ids; none when there is no sessions folder.
/// Symbolic links named like sessions are included: reading one gives a session that names the
/// problem (see [`read_summary`]), so that a listing shows them without following them.
pub fn session_folders(workspace: &Workspace) -> Result<Vec<(PathBuf, SessionId)>, Error> {
    let Some(dir) = workspace.sessions_folder()? else {
        return Ok(Vec::new());
    };
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        if !entry.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()) {
            continue;
        }
        let Some(id) = entry.file_name().to_str().and_then(|n| SessionId::parse(n).ok()) else {
            continue;
        };
        folders.push((entry.path(), id));
    }
    Ok(folders)
}

/// Maps `work` over `items` on a few threads (folder reads wait on the disk), keeping the order.
pub fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    work: impl Fn(&I) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let chunk = items.len().div_ceil(threads).max(64);
    std::thread::scope(|scope| {
        let work = &work;
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Result<Vec<T>, Error>>()))
            .collect();
        let mut all = Vec::with_capacity(items.len());
        for worker in workers {
            all.extend(worker.join().expect("session reader thread panicked")?);
        }
        Ok(all)
    })
}

pub fn sort_most_recent_first(sessions: &mut [SessionSummary]) {
    sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| b.id.cmp(&a.id)));
}

/// The summary of one session folder for a listing; `None` when it is gone. A folder that cannot
/// be read (a symbolic link, no permission) is a session with status `unknown` whose problem
/// says why: one bad folder never hides the others.
pub fn read_summary(path: &Path, id: &SessionId, now: SystemTime) -> Option<SessionSummary> {
    match read_session_folder(path, id.clone(), Detail::Summary, now) {
        Ok(session) => Some(session.summary()),
        Err(Error::SessionNotFound { .. }) => None,
        Err(error) => {
            let updated_at = fs::symlink_metadata(path).ok().and_then(|m| m.modified().ok());
            Some(SessionSummary {
                id: id.clone(),
                path: path.to_owned(),
                agent: None,
                title: None,
                status: Status::Unknown,
                current_node: None,
                created_at: id.unix_ms().map(Timestamp),
                updated_at: Timestamp::from_system_time(updated_at.unwrap_or(UNIX_EPOCH)),
                nodes: Vec::new(),
                problems: vec![Problem {
                    file: ".".to_owned(),
                    reason: error.to_string(),
                }],
                usage: None,
            })
        }
    }
}

/// Reads one session folder. Only a folder that cannot be listed at all is an error, and so is a
/// symbolic link in its place (never followed).
pub fn read_session_folder(path: &Path, id: SessionId, detail: Detail, now: SystemTime) -> Result<Session, Error> {
    let not_found = || Error::SessionNotFound {
        id: id.to_string(),
        sessions_dir: path.parent().unwrap_or(path).into(),
    };
    let folder = match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => return Err(Error::SymlinkRefused { path: path.into() }),
        Ok(metadata) if !metadata.is_dir() => return Err(Error::NotAFolder { path: path.into() }),
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut reader = FolderReader {
        root: path,
        problems: Vec::new(),
        updated_at: None,
    };
    let entries = reader.list_dir(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => not_found(),
        _ => Error::io(path, e),
    })?;
    reader.touch(Some(&folder));

    let mut files: HashMap<String, FileRef> = HashMap::new();
    let mut node_dirs: Vec<NodeDir> = Vec::new();
    let mut nodes_dir = None;
    for (name, file_type) in &entries {
        let child = path.join(name);
        if file_type.is_dir() {
            if name == NODES_DIR {
                nodes_dir = Some(child);
            } else if !name.starts_with('.') {
                let stat = reader.stat(&child);
                node_dirs.push(NodeDir::new(name.clone(), child, stat.as_ref()));
            }
        } else if [SESSION_INFO_FILE, RESULT_FILE, EVENTS_FILE, RAW_STREAM_FILE].contains(&name.as_str()) {
            if let Some(file) = reader.regular_file(&child) {
                files.insert(name.clone(), file);
            }
        } else if file_type.is_symlink() {
            // A link where a node folder could be: said, not followed.
            reader.problem(&child, "a symbolic link; not followed");
        }
    }
    if let Some(nodes_dir) = &nodes_dir {
        if let Ok(children) = reader.list_dir(nodes_dir) {
            for (name, file_type) in children {
                if file_type.is_dir() && !name.starts_with('.') {
                    let child = nodes_dir.join(&name);
                    let stat = reader.stat(&child);
                    node_dirs.push(NodeDir::new(name, child, stat.as_ref()));
                }
            }
        }
    }
    let layout = if nodes_dir.is_some() || files.contains_key(RESULT_FILE) || files.contains_key(EVENTS_FILE) {
        Layout::Documented
    } else {
        Layout::Engine
    };

    let info_value = files.get(SESSION_INFO_FILE).and_then(|f| reader.parse_json(f));
    let info_name = info_value.as_ref().and_then(name_in);
    let info = info_value.and_then(|value| reader.session_info(value));
    let result = files.get(RESULT_FILE).and_then(|f| reader.parse_json(f));
    // Listings read a small events.json too: it gives the nodes' order and status.
    let events = match (detail, files.get(EVENTS_FILE)) {
        (Detail::Full, Some(file)) => reader.events(file),
        (Detail::Summary, Some(file)) if file.bytes <= SUMMARY_EVENTS_BYTES => reader.events(file),
        _ => Vec::new(),
    };

    let updated_at = Timestamp::from_system_time(reader.updated_at.unwrap_or(UNIX_EPOCH));
    let created_at = id
        .unix_ms()
        .or(info.as_ref().and_then(|i| i.session_timestamp))
        .map(Timestamp);
    let current_node = info.as_ref().and_then(|i| i.current_node.clone());
    let mut status = infer_status(result.as_ref(), updated_at, now);
    if status == Status::Running && !engine_still_there(path, &id) {
        // Written lately, but the process that ran it is gone: it ended, how is not recorded.
        status = Status::Unknown;
    }

    // Nodes in the order they ran: from events.json when it says, else by their folders' times
    // (written, then made), else as the folder lists them: never by name (a stable sort).
    node_dirs.sort_by_key(|dir| (dir.modified, dir.created));
    let event_order = node_order_from_events(&events);
    let mut nodes: Vec<SessionNode> = Vec::new();
    for (name, _) in &event_order {
        push_node(&mut nodes, name, None);
    }
    for NodeDir { name, path: dir, .. } in &node_dirs {
        push_node(&mut nodes, name, Some(dir.clone()));
    }
    if let Some(current) = &current_node {
        push_node(&mut nodes, current, None);
    }
    let agent = info_name
        .or_else(|| result.as_ref().and_then(name_in))
        .or_else(|| events.iter().find_map(name_in));
    let title = result
        .as_ref()
        .and_then(|r| r.get("prompt"))
        .and_then(Value::as_str)
        .and_then(one_line)
        .or_else(|| {
            // The engine writes no prompt files: only the documented layout's are looked for
            // (a listing of engine sessions costs no more), in `nodes/<node>/` or `<node>/`.
            if layout != Layout::Documented {
                return None;
            }
            nodes.iter().take(TITLE_PROMPT_FILES).find_map(|node| {
                node_dirs
                    .iter()
                    .filter(|dir| dir.name == node.name)
                    .find_map(|dir| reader.prompt_line(&dir.path))
            })
        });
    let event_status: HashMap<&str, Status> = event_order.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    for node in &mut nodes {
        node.status = node_status(
            node,
            current_node.as_deref(),
            status,
            event_status.get(node.name.as_str()),
        );
        if let (Detail::Full, Some(dir)) = (detail, node.path.clone()) {
            node.artifacts = reader.node_artifacts(&dir);
            // The `zibby` CLI writes `nodes/<node>/` beside the engine's `<node>/`: a file the
            // node's first folder lacks is read from the other.
            for other in node_dirs
                .iter()
                .filter(|other| other.name == node.name && other.path != dir)
            {
                let more = reader.node_artifacts(&other.path);
                node.artifacts.fill_from(more);
            }
        }
        node.usage = node
            .path
            .as_ref()
            .and_then(|dir| cost::read_node_usage(&dir.join(RAW_STREAM_FILE)));
    }
    let usage = UsageTotal::of(nodes.iter().map(|n| n.usage.as_ref()));

    Ok(Session {
        id,
        path: path.to_owned(),
        layout,
        agent,
        title,
        status,
        current_node,
        created_at,
        updated_at,
        info,
        nodes,
        result,
        events,
        raw_stream_output: files.remove(RAW_STREAM_FILE),
        problems: reader.problems,
        usage,
        imported: None,
    })
}

/// A node's folder, and the times that order it.
struct NodeDir {
    name: String,
    path: PathBuf,
    modified: SystemTime,
    /// When the folder was made (statx's birth time), where the file system keeps it: it tells
    /// nodes apart whose folders were last written in the same instant.
    created: Option<SystemTime>,
}

impl NodeDir {
    fn new(name: String, path: PathBuf, stat: Option<&fs::Metadata>) -> NodeDir {
        NodeDir {
            name,
            path,
            modified: stat.and_then(|m| m.modified().ok()).unwrap_or(UNIX_EPOCH),
            created: stat.and_then(|m| m.created().ok()),
        }
    }
}

impl SessionNode {
    /// A node known from elsewhere (the store's spans) that has no folder.
    pub fn without_folder(name: &str) -> SessionNode {
        SessionNode {
            name: name.to_owned(),
            status: Status::Unknown,
            path: None,
            artifacts: NodeArtifacts {
                prompt: None,
                prompt_preview: None,
                raw_output: None,
                result: None,
                result_value: None,
                raw_stream: None,
            },
            usage: None,
        }
    }
}

fn push_node(nodes: &mut Vec<SessionNode>, name: &str, path: Option<PathBuf>) {
    match nodes.iter_mut().find(|n| n.name == name) {
        Some(node) => {
            if node.path.is_none() {
                node.path = path;
            }
        }
        None => nodes.push(SessionNode {
            path,
            ..SessionNode::without_folder(name)
        }),
    }
}

fn node_status(node: &SessionNode, current: Option<&str>, session: Status, from_events: Option<&Status>) -> Status {
    if let Some(status) = from_events {
        if *status != Status::Running || session == Status::Running {
            return *status;
        }
    }
    let is_current = current == Some(node.name.as_str());
    match (is_current, session) {
        (true, Status::Running) => Status::Running,
        // The engine writes a node's folder after the node's work succeeded.
        (_, _) if node.path.is_some() => Status::Success,
        (true, Status::Success) => Status::Success,
        (true, other) => other,
        (false, _) => Status::Unknown,
    }
}

/// How long before its session id's time the engine of a run may have started (`npx`, a slow
/// start), and how long after it (`/proc`'s boot time is to the second).
const ENGINE_STARTED_BEFORE: Duration = Duration::from_secs(60);
const ENGINE_STARTED_AFTER: Duration = Duration::from_secs(2);

/// Whether the process of a session's run may still be there: a process working in the
/// session's workspace that started at its id's time (an engine id, `<unix_ms>_<suffix>`), or
/// one with a file of the session open, as `/proc` says. True when nothing can tell (an id without a time, no `/proc`, a folder not in a
/// workspace's sessions folder): then its files' times alone decide.
fn engine_still_there(session_path: &Path, id: &SessionId) -> bool {
    let Some(created) = id.unix_ms() else {
        return true;
    };
    let Some(workspace) = session_path.ancestors().nth(SESSIONS_DIR.len() + 1) else {
        return true;
    };
    if session_path.parent() != Some(&workspace.join(SESSIONS_DIR.join("/"))) {
        return true;
    }
    let from = created.saturating_sub(ENGINE_STARTED_BEFORE.as_millis() as u64);
    let to = created + ENGINE_STARTED_AFTER.as_millis() as u64;
    crate::vocabulary::process::run_process_present(workspace, session_path, from, to).unwrap_or(true)
}

/// The status of a session from its files alone (PROTOCOL.md §5: nothing marks the end of a run).
fn infer_status(result: Option<&Value>, updated_at: Timestamp, now: SystemTime) -> Status {
    if let Some(result) = result {
        let flag = |key: &str| result.get(key).and_then(Value::as_bool);
        if flag("stoppedExternally") == Some(true) || flag("stoppedByStudio") == Some(true) {
            return Status::Cancelled;
        }
        if let Some(status) = result.get("status").and_then(Value::as_str).and_then(parse_status_word) {
            return status;
        }
        let has_error = result.get("error").is_some_and(|e| !e.is_null());
        return if flag("success") == Some(false) || has_error {
            Status::Error
        } else {
            Status::Success
        };
    }
    let quiet_for = now.duration_since(updated_at.to_system_time()).unwrap_or_default();
    if quiet_for < RUNNING_QUIET_WINDOW {
        Status::Running
    } else {
        Status::Unknown
    }
}

fn parse_status_word(word: &str) -> Option<Status> {
    let word = word.to_ascii_lowercase();
    Some(match word.as_str() {
        "running" | "started" | "start" | "begin" | "node_begin" | "node_start" | "in_progress" => Status::Running,
        "success" | "succeeded" | "done" | "completed" | "complete" | "ok" | "passed" => Status::Success,
        "error" | "failed" | "failure" | "fail" => Status::Error,
        "cancelled" | "canceled" | "stopped" => Status::Cancelled,
        "interrupted" | "killed" => Status::Interrupted,
        _ => {
            if word.contains("fail") || word.contains("error") {
                Status::Error
            } else if word.contains("start") || word.contains("begin") {
                Status::Running
            } else if word.contains("end") || word.contains("complete") || word.contains("finish") {
                Status::Success
            } else {
                return None;
            }
        }
    })
}

/// Node names in order of first appearance in `events.json`, each with its last known status.
fn node_order_from_events(events: &[Value]) -> Vec<(String, Status)> {
    let mut order: Vec<(String, Status)> = Vec::new();
    for event in events {
        let Some(node) = ["node", "nodeName", "node_name"]
            .iter()
            .find_map(|k| event.get(*k).and_then(Value::as_str))
        else {
            continue;
        };
        let mut status = ["status", "type", "event", "phase"]
            .iter()
            .find_map(|k| event.get(*k).and_then(Value::as_str).and_then(parse_status_word));
        if event.get("success").and_then(Value::as_bool) == Some(false) {
            status = Some(Status::Error);
        }
        match order.iter_mut().find(|(n, _)| n == node) {
            Some(entry) => {
                if let Some(status) = status {
                    entry.1 = status;
                }
            }
            None => order.push((node.to_owned(), status.unwrap_or(Status::Unknown))),
        }
    }
    order
}

/// The workflow or agent a JSON object of the folder names (a top-level string of [`NAME_KEYS`]).
fn name_in(value: &Value) -> Option<String> {
    NAME_KEYS
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str).and_then(one_line))
}

/// `text` as a one-line title: its first line that has text, trimmed, without escape sequences,
/// control characters (bidirectional ones too) as spaces and runs of spaces as one,
/// at most [`TITLE_CHARS`] characters (cut at the last space of the last quarter if there is
/// one, ending with `…`); `None` when it has no text.
pub fn one_line(text: &str) -> Option<String> {
    // Bidirectional controls would reorder what is shown around them: they go as control
    // characters do.
    let control = |c: char| {
        c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let text = String::from_utf8_lossy(&crate::protocol::strip_ansi(text.as_bytes())).into_owned();
    let line = text
        .lines()
        .find(|line| line.chars().any(|c| !c.is_whitespace() && !control(c)))?;
    // Control characters (a tab) are spaces; runs of spaces are one.
    let spaced: String = line.chars().map(|c| if control(c) { ' ' } else { c }).collect();
    let clean = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    let clean = clean.as_str();
    if clean.is_empty() {
        return None;
    }
    if clean.chars().count() <= TITLE_CHARS {
        return Some(clean.to_owned());
    }
    let cut: String = clean.chars().take(TITLE_CHARS - 1).collect();
    let at_word = cut
        .rfind(' ')
        .filter(|&space| cut[..space].chars().count() >= TITLE_CHARS * 3 / 4)
        .map_or(cut.as_str(), |space| &cut[..space]);
    Some(format!("{}…", at_word.trim_end()))
}

struct FolderReader<'a> {
    root: &'a Path,
    problems: Vec<Problem>,
    updated_at: Option<SystemTime>,
}

impl FolderReader<'_> {
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(self.root).unwrap_or(path).display().to_string()
    }

    fn problem(&mut self, path: &Path, reason: impl Into<String>) {
        let file = self.relative(path);
        self.problems.push(Problem {
            file,
            reason: reason.into(),
        });
    }

    fn touch(&mut self, metadata: Option<&fs::Metadata>) {
        if let Some(modified) = metadata.and_then(|m| m.modified().ok()) {
            self.updated_at = Some(self.updated_at.map_or(modified, |u| u.max(modified)));
        }
    }

    /// The metadata of `path` itself (a link is not followed).
    fn stat(&mut self, path: &Path) -> Option<fs::Metadata> {
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
    fn list_dir(&mut self, dir: &Path) -> std::io::Result<Vec<(String, fs::FileType)>> {
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
    fn regular_file(&mut self, path: &Path) -> Option<FileRef> {
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

    fn parse_json(&mut self, file: &FileRef) -> Option<Value> {
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

    fn session_info(&mut self, value: Value) -> Option<SessionInfo> {
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
    fn events(&mut self, file: &FileRef) -> Vec<Value> {
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
    fn prompt_line(&mut self, dir: &Path) -> Option<String> {
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

    fn node_artifacts(&mut self, dir: &Path) -> NodeArtifacts {
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
    for name in [SESSION_INFO_FILE, RESULT_FILE, EVENTS_FILE, "nodes"] {
        let was_absent = seen.as_mut().and_then(Iterator::next) == Some("-");
        let part = if same_folder && was_absent && name != SESSION_INFO_FILE {
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
    let dirs = |dir: &Path, kind: char| -> Vec<String> {
        let Ok(entries) = fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .take(MAX_FOLDER_ENTRIES)
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| !name.starts_with('.') && (kind == 'd' || name != NODES_DIR))
            .map(|name| format!("{kind}{name}"))
            .collect();
        names.sort();
        names
    };
    let mut nodes = dirs(folder, 'e');
    nodes.extend(dirs(&folder.join(NODES_DIR), 'd'));
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_progress_counts_every_node_but_the_running_ones_as_ended() {
        let node = |status| NodeSummary {
            name: "n".into(),
            status,
            usage: None,
        };
        let summary = SessionSummary {
            id: SessionId::parse("1777678254000_a").unwrap(),
            path: PathBuf::new(),
            agent: None,
            title: None,
            status: Status::Running,
            current_node: None,
            created_at: None,
            updated_at: Timestamp(0),
            nodes: vec![
                node(Status::Success),
                node(Status::Unknown),
                node(Status::Error),
                node(Status::Running),
            ],
            problems: Vec::new(),
            usage: None,
        };
        assert_eq!(summary.nodes_progress(), (3, 4));
    }

    #[test]
    fn a_title_is_one_clean_line_cut_at_a_word() {
        assert_eq!(
            one_line("\n \t\n  Plan\ta  trip \nmore").as_deref(),
            Some("Plan a trip")
        );
        assert_eq!(
            one_line("\x1b[31mred\x1b[0m \x1b]0;title\x1b\\ok\u{202e}!").as_deref(),
            Some("red ok !")
        );
        assert_eq!(one_line(" \n\x07\n"), None);
        let long = "word ".repeat(40);
        let cut = one_line(&long).unwrap();
        assert_eq!(cut.chars().count(), 75, "{cut}");
        assert!(cut.ends_with("word…"), "{cut}");
        let unbroken = one_line(&"é".repeat(200)).unwrap();
        assert_eq!(unbroken, format!("{}…", "é".repeat(79)));
    }

    #[test]
    fn status_words_map_to_the_one_vocabulary() {
        assert_eq!(parse_status_word("node_end"), Some(Status::Success));
        assert_eq!(parse_status_word("node_failed"), Some(Status::Error));
        assert_eq!(parse_status_word("node_start"), Some(Status::Running));
        assert_eq!(parse_status_word("validation"), None);
    }

    #[test]
    fn a_result_decides_over_quiet_time() {
        let now = SystemTime::now();
        let recent = Timestamp::from_system_time(now);
        let old = Timestamp::from_system_time(now - Duration::from_secs(3600));
        let stopped = serde_json::json!({"success": true, "stoppedExternally": true});
        assert_eq!(infer_status(Some(&stopped), recent, now), Status::Cancelled);
        assert_eq!(
            infer_status(Some(&serde_json::json!({"success": false})), recent, now),
            Status::Error
        );
        assert_eq!(
            infer_status(Some(&serde_json::json!({"answer": 1})), old, now),
            Status::Success
        );
        assert_eq!(infer_status(None, recent, now), Status::Running);
        assert_eq!(infer_status(None, old, now), Status::Unknown);
    }
}
