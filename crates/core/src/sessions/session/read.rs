//! One session folder read into a typed [`Session`] ([`read_session_folder`]), or into the
//! summary a listing shows ([`read_summary`]).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::model::{
    Detail, FileRef, Layout, Problem, Session, SessionInfo, SessionNode, SessionSummary, Timestamp, EVENTS_FILE,
    NODES_DIR, ORDER_NOT_KNOWN, RAW_STREAM_FILE, RESULT_FILE, SESSION_INFO_FILE, STOP_FILES, STOP_FILE_TEXT,
    TITLE_PROMPT_FILES,
};
use super::reader::FolderReader;
use super::run_record::{self, RunRecordFile, RUN_RECORD_FILE};
use super::status::{engine_still_there, infer_status, node_order_from_events, node_status, parse_status_word};
use super::title::{name_in, one_line};
use crate::sessions::cost::{self, UsageTotal};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// A listing reads `events.json` up to this size (larger ones only in full reads).
const SUMMARY_EVENTS_BYTES: u64 = 256 * 1024;

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
                not_known: None,
            })
        }
    }
}

/// The studio's own stop files left in the folder of a run that ended: each era's engine removes
/// only the name it knows, and one of a run the studio did not start is nobody else's to remove
/// (issue 41: never a stop file left in a finished folder, where it would end the next run of an
/// engine that knows that name at once). A stop file someone else wrote stays. The folder keeps
/// its time: this is no change of the session.
fn remove_left_stop_files(path: &Path, stop_files: &[PathBuf]) {
    let ours: Vec<&PathBuf> = stop_files
        .iter()
        .filter(|file| std::fs::read(file).is_ok_and(|text| text == STOP_FILE_TEXT))
        .collect();
    if ours.is_empty() {
        return;
    }
    crate::sessions::private::keeping_folder_time(path, || {
        for file in ours {
            let _ = std::fs::remove_file(file);
        }
    });
}

/// Reads one session folder. Only a folder that cannot be listed at all is an error, and so is a
/// symbolic link in its place (never followed).
///
/// The steps: the folder itself (`open_folder`), its entries (`FolderListing::read`), its
/// files (`FolderFiles::read`), the studio's record of its last run there (`run_record`), the
/// session's status, its nodes in order (`nodes_in_order`, then the record's: `lay_record_nodes`),
/// what it is called (`title_of`), and each node's status, files and usage (`fill_nodes`).
pub fn read_session_folder(path: &Path, id: SessionId, detail: Detail, now: SystemTime) -> Result<Session, Error> {
    let not_found = || Error::SessionNotFound {
        id: id.to_string(),
        sessions_dir: path.parent().unwrap_or(path).into(),
    };
    let folder = open_folder(path, not_found)?;
    let mut reader = FolderReader {
        root: path,
        problems: Vec::new(),
        updated_at: None,
    };
    let mut listing = FolderListing::read(&mut reader, path, not_found)?;
    reader.touch(Some(&folder));
    let layout = listing.layout();
    let files = FolderFiles::read(&mut reader, &listing, detail);
    let (names, record) = if listing.has_run_record {
        studio_record(&mut reader, path, &files)
    } else {
        Default::default()
    };

    let updated_at = Timestamp::from_system_time(reader.updated_at.unwrap_or(UNIX_EPOCH));
    let created_at = id
        .unix_ms()
        .or(files.info.as_ref().and_then(|i| i.session_timestamp))
        .map(Timestamp);
    let current_node = files.info.as_ref().and_then(|i| i.current_node.clone());
    let mut status = infer_status(files.result.as_ref(), updated_at, now);
    if let (None, Some(said)) = (&files.result, files.info_status) {
        status = said;
    }
    if let Some(record) = record
        .as_ref()
        .filter(|_| matches!(status, Status::Running | Status::Unknown))
    {
        // The files cannot tell; the studio's record of the run can.
        status = record.status;
    }
    if status == Status::Running && !engine_still_there(path, &id) {
        // Written lately, but the process that ran it is gone: it ended, how is not recorded.
        status = Status::Unknown;
    }
    // A stop file of a run whose engine is gone (a long quiet node still has its engine there:
    // its stop stays).
    if !listing.stop_files.is_empty() && status != Status::Running && !engine_still_there(path, &id) {
        remove_left_stop_files(path, &listing.stop_files);
    }

    let event_order = node_order_from_events(&files.events);
    let mut nodes = nodes_in_order(&event_order, &mut listing.node_dirs, current_node.as_deref());
    let ran = record.as_ref().map(RunRecordFile::nodes_once).unwrap_or_default();
    if record.is_some() {
        lay_record_nodes(&mut nodes, &ran);
    }
    let failed = if files.result.is_none() && layout == Layout::Documented {
        failed_nodes(&mut reader, &listing.node_dirs)
    } else {
        Vec::new()
    };
    if status == Status::Unknown && !failed.is_empty() {
        // It ended, and a node's own result says it failed.
        status = Status::Error;
    }
    let agent = names
        .0
        .or_else(|| files.info_name.clone())
        .or_else(|| files.result.as_ref().and_then(name_in))
        .or_else(|| files.events.iter().find_map(name_in));
    let title = names
        .1
        .or_else(|| title_of(&mut reader, files.result.as_ref(), layout, &nodes, &listing.node_dirs));
    let session = SessionState {
        status,
        current_node: current_node.as_deref(),
        detail,
    };
    fill_nodes(&mut reader, &mut nodes, &event_order, &listing.node_dirs, &session);
    for node in nodes.iter_mut().filter(|n| failed.contains(&n.name)) {
        node.status = Status::Error;
    }
    if let Some(record) = &record {
        record_statuses(&mut nodes, &ran, record.status);
    }
    let usage = UsageTotal::of(nodes.iter().map(|n| n.usage.as_ref()));
    // The studio ran it: what the engine does not say, its record does.
    let not_known = not_known(layout, &files, status, &nodes).filter(|_| record.is_none());

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
        info: files.info,
        nodes,
        result: files.result,
        events: files.events,
        raw_stream_output: listing.files.remove(RAW_STREAM_FILE),
        problems: reader.problems,
        usage,
        imported: None,
        tags: Vec::new(),
        note: None,
        not_known,
    })
}

/// What the studio's record of a run says the session is called (`agent`, `title`), and the
/// record itself while the folder is still as that run left it (else a run outside the studio
/// wrote there since, and the folder tells). A record that cannot be used is a problem naming
/// it; its time is never the session's.
fn studio_record(
    reader: &mut FolderReader,
    path: &Path,
    files: &FolderFiles,
) -> ((Option<String>, Option<String>), Option<RunRecordFile>) {
    let record = match run_record::read(path) {
        Ok(record) => record,
        Err(reason) => {
            // A link in its place is said once (the listing says it).
            if !reader.problems.iter().any(|p| p.file == RUN_RECORD_FILE) {
                reader.problem(&path.join(RUN_RECORD_FILE), reason);
            }
            None
        }
    };
    let names = record
        .as_ref()
        .map(|r| (r.agent.clone(), r.title.clone()))
        .unwrap_or_default();
    (names, record.filter(|r| r.still_the_folders(files.info.as_ref())))
}

/// The run's nodes (`ran`, once each in the order they began) laid over the folder's, as the
/// store lays its spans (`session_model`): in the run's order, certain; a node that wrote no
/// folder is there too; the folder's other nodes (of earlier runs) each after the node before it
/// in the folder's order that the run ran (or first), still a guess only among themselves.
fn lay_record_nodes(nodes: &mut Vec<SessionNode>, ran: &[(&str, Status)]) {
    let mut ran_nodes: Vec<SessionNode> = ran.iter().map(|(name, _)| SessionNode::without_folder(name)).collect();
    let mut before_any: Vec<SessionNode> = Vec::new();
    let mut after: HashMap<String, Vec<SessionNode>> = HashMap::new();
    let mut previous: Option<String> = None;
    for node in nodes.drain(..) {
        if let Some(slot) = ran_nodes.iter_mut().find(|r| r.name == node.name) {
            previous = Some(node.name.clone());
            *slot = SessionNode {
                order_uncertain: false,
                ..node
            };
        } else {
            match &previous {
                Some(name) => after.entry(name.clone()).or_default().push(node),
                None => before_any.push(node),
            }
        }
    }
    nodes.append(&mut before_any);
    for node in ran_nodes {
        let name = node.name.clone();
        nodes.push(node);
        nodes.append(&mut after.remove(&name).unwrap_or_default());
    }
    if nodes.iter().filter(|n| n.order_uncertain).count() < 2 {
        for node in nodes.iter_mut() {
            node.order_uncertain = false;
        }
    }
}

/// Each node the run ran takes its recorded status; a node of the folder left `running` ended
/// with the run.
fn record_statuses(nodes: &mut [SessionNode], ran: &[(&str, Status)], run_status: Status) {
    for node in nodes.iter_mut() {
        match ran.iter().find(|(name, _)| *name == node.name) {
            Some((_, status)) => node.status = *status,
            None if node.status == Status::Running => node.status = run_status,
            None => {}
        }
    }
}

/// The folder's own metadata: a symbolic link or a file in its place is refused.
fn open_folder(path: &Path, not_found: impl Fn() -> Error) -> Result<fs::Metadata, Error> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(Error::SymlinkRefused { path: path.into() }),
        Ok(metadata) if !metadata.is_dir() => Err(Error::NotAFolder { path: path.into() }),
        Ok(metadata) => Ok(metadata),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(not_found()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// What a session folder holds: its known files, its node folders (`<node>/` and
/// `nodes/<node>/`), and whether it has `nodes/`.
struct FolderListing {
    files: HashMap<String, FileRef>,
    node_dirs: Vec<NodeDir>,
    nodes_dir: Option<PathBuf>,
    /// Whether an entry is named as the studio's run record (of any kind: `run_record::read`
    /// says what is wrong with one that is not a file). Without one, it is never looked for.
    has_run_record: bool,
    /// The stop files there ([`STOP_FILES`]: regular files only).
    stop_files: Vec<PathBuf>,
}

impl FolderListing {
    /// Lists the folder and its `nodes/`; a link where a node folder could be is a problem, never
    /// followed.
    fn read(reader: &mut FolderReader, path: &Path, not_found: impl Fn() -> Error) -> Result<FolderListing, Error> {
        let entries = reader.list_dir(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => not_found(),
            _ => Error::io(path, e),
        })?;
        let mut listing = FolderListing {
            files: HashMap::new(),
            node_dirs: Vec::new(),
            nodes_dir: None,
            has_run_record: entries.iter().any(|(name, _)| name == RUN_RECORD_FILE),
            stop_files: entries
                .iter()
                .filter(|(name, file_type)| file_type.is_file() && STOP_FILES.contains(&name.as_str()))
                .map(|(name, _)| path.join(name))
                .collect(),
        };
        for (name, file_type) in &entries {
            let child = path.join(name);
            if file_type.is_dir() {
                if name == NODES_DIR {
                    listing.nodes_dir = Some(child);
                } else if !name.starts_with('.') {
                    let stat = reader.stat(&child);
                    listing.node_dirs.push(NodeDir::new(name.clone(), child, stat.as_ref()));
                }
            } else if [SESSION_INFO_FILE, RESULT_FILE, EVENTS_FILE, RAW_STREAM_FILE].contains(&name.as_str()) {
                if let Some(file) = reader.regular_file(&child) {
                    listing.files.insert(name.clone(), file);
                }
            } else if file_type.is_symlink() {
                // A link where a node folder could be: said, not followed.
                reader.problem(&child, "a symbolic link; not followed");
            }
        }
        if let Some(nodes_dir) = &listing.nodes_dir {
            if let Ok(children) = reader.list_dir(nodes_dir) {
                for (name, file_type) in children {
                    if file_type.is_dir() && !name.starts_with('.') {
                        let child = nodes_dir.join(&name);
                        let stat = reader.stat(&child);
                        listing.node_dirs.push(NodeDir::new(name, child, stat.as_ref()));
                    }
                }
            }
        }
        Ok(listing)
    }

    /// The documented layout has `nodes/`, `result.json` or `events.json`; the engine's has none.
    fn layout(&self) -> Layout {
        if self.nodes_dir.is_some() || self.files.contains_key(RESULT_FILE) || self.files.contains_key(EVENTS_FILE) {
            Layout::Documented
        } else {
            Layout::Engine
        }
    }
}

/// The session's own files, parsed as far as they parse.
struct FolderFiles {
    info: Option<SessionInfo>,
    /// The workflow or agent `.session-info.json` names.
    info_name: Option<String>,
    /// The run's end, where `.session-info.json` says it (a top-level `status` word other than a
    /// running one; the engine alone never writes one, the tools around it may).
    info_status: Option<Status>,
    result: Option<Value>,
    events: Vec<Value>,
}

impl FolderFiles {
    fn read(reader: &mut FolderReader, listing: &FolderListing, detail: Detail) -> FolderFiles {
        let info_value = listing.files.get(SESSION_INFO_FILE).and_then(|f| reader.parse_json(f));
        let info_name = info_value.as_ref().and_then(name_in);
        let info_status = info_value
            .as_ref()
            .and_then(|value| value.get("status"))
            .and_then(Value::as_str)
            .and_then(parse_status_word)
            .filter(|status| *status != Status::Running);
        let info = info_value.and_then(|value| reader.session_info(value));
        let result = listing.files.get(RESULT_FILE).and_then(|f| reader.parse_json(f));
        // Listings read a small events.json too: it gives the nodes' order and status.
        let events = match (detail, listing.files.get(EVENTS_FILE)) {
            (Detail::Full, Some(file)) => reader.events(file),
            (Detail::Summary, Some(file)) if file.bytes <= SUMMARY_EVENTS_BYTES => reader.events(file),
            _ => Vec::new(),
        };
        FolderFiles {
            info,
            info_name,
            info_status,
            result,
            events,
        }
    }
}

/// Nodes in the order they ran: from events.json when it says, else by their folders' times
/// (written, then made), else as the folder lists them: never by name (a stable sort). The
/// current node comes last when no event orders it: `.session-info.json` is rewritten before
/// each node, so it names the node that began last (with a folder or without one).
///
/// Nodes ordered by their folders alone whose folders' times are the same (written and made in
/// one tick of the file system's clock, 4 ms) could have run either way round: each is marked
/// [`SessionNode::order_uncertain`], rather than shown in an order that may be wrong.
fn nodes_in_order(
    event_order: &[(String, Status)],
    node_dirs: &mut [NodeDir],
    current_node: Option<&str>,
) -> Vec<SessionNode> {
    node_dirs.sort_by_key(|dir| (dir.modified, dir.created));
    let mut nodes: Vec<SessionNode> = Vec::new();
    for (name, _) in event_order {
        push_node(&mut nodes, name, None);
    }
    for NodeDir { name, path: dir, .. } in node_dirs.iter() {
        push_node(&mut nodes, name, Some(dir.clone()));
    }
    let current_last = current_node.filter(|current| !event_order.iter().any(|(name, _)| name == current));
    if let Some(current) = current_node {
        push_node(&mut nodes, current, None);
    }
    if let Some(at) = current_last.and_then(|current| nodes.iter().position(|n| n.name == current)) {
        let node = nodes.remove(at);
        nodes.push(node);
    }
    // Each node placed by its first folder's times (the folder it was given above).
    let placed_by_folder = |node: &SessionNode| {
        let ordered =
            event_order.iter().any(|(name, _)| *name == node.name) || Some(node.name.as_str()) == current_last;
        let first = node_dirs.iter().find(|dir| dir.name == node.name);
        first
            .filter(|_| !ordered)
            .map(|dir| (dir.modified, dir.created_by_run()))
    };
    let times: Vec<_> = nodes.iter().map(placed_by_folder).collect();
    for (node, time) in nodes.iter_mut().zip(&times) {
        node.order_uncertain = time.is_some() && times.iter().filter(|other| *other == time).count() > 1;
    }
    nodes
}

/// The nodes whose own `result.json` (the documented layout's, in either of their folders) says
/// they failed, for a session that has no `result.json` of its own.
fn failed_nodes(reader: &mut FolderReader, node_dirs: &[NodeDir]) -> Vec<String> {
    let mut failed = Vec::new();
    for dir in node_dirs {
        let says_failed = reader
            .node_result(&dir.path)
            .is_some_and(|result| infer_status(Some(&result), Timestamp(0), UNIX_EPOCH) == Status::Error);
        if says_failed && !failed.contains(&dir.name) {
            failed.push(dir.name.clone());
        }
    }
    failed
}

/// What a session the studio did not run cannot say, once, in words for a user (see
/// [`Session::not_known`]): an engine folder (no `result.json`, no events) whose run ended.
fn not_known(layout: Layout, files: &FolderFiles, status: Status, nodes: &[SessionNode]) -> Option<String> {
    if layout != Layout::Engine
        || files.result.is_some()
        || files.info_status.is_some()
        || !files.events.is_empty()
        || status == Status::Running
    {
        return None;
    }
    let order = if nodes.iter().any(|n| n.order_uncertain) {
        ORDER_NOT_KNOWN
    } else {
        ""
    };
    Some(format!(
        "Run outside the studio: its engine records neither how a run ended nor the nodes that \
         write no folder, so the status can read `unknown` and nodes can be missing.{order} For \
         the full story, run it with `zstudio run -- <command>` (or set \
         ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS=1, which engines of every era honour, and import its \
         output with `zstudio import`)."
    ))
}

/// What the folder says the session is called: `result.json`'s `prompt`, else (documented layout
/// only) the first node's prompt file that has a line.
fn title_of(
    reader: &mut FolderReader,
    result: Option<&Value>,
    layout: Layout,
    nodes: &[SessionNode],
    node_dirs: &[NodeDir],
) -> Option<String> {
    result
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
        })
}

/// What a node's status and files are read against.
struct SessionState<'a> {
    status: Status,
    current_node: Option<&'a str>,
    detail: Detail,
}

/// Each node's status, and in a full read its files (from both of its folders), and its usage.
fn fill_nodes(
    reader: &mut FolderReader,
    nodes: &mut [SessionNode],
    event_order: &[(String, Status)],
    node_dirs: &[NodeDir],
    session: &SessionState,
) {
    let event_status: HashMap<&str, Status> = event_order.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    for node in nodes.iter_mut() {
        node.status = node_status(
            node,
            session.current_node,
            session.status,
            event_status.get(node.name.as_str()),
        );
        if let (Detail::Full, Some(dir)) = (session.detail, node.path.clone()) {
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
}

/// A node's folder, and the times that order it.
struct NodeDir {
    name: String,
    path: PathBuf,
    modified: SystemTime,
    /// When the folder was made (statx's birth time), where the file system keeps it: it tells
    /// nodes apart whose folders were last written in the same instant (see
    /// [`NodeDir::created_by_run`] for when it says nothing of the run).
    created: Option<SystemTime>,
}

impl NodeDir {
    fn new(name: String, path: PathBuf, stat: Option<&fs::Metadata>) -> NodeDir {
        let modified = stat.and_then(|m| m.modified().ok()).unwrap_or(UNIX_EPOCH);
        NodeDir {
            name,
            path,
            modified,
            created: stat.and_then(|m| m.created().ok()),
        }
    }

    /// Its birth time when the run made it. Not for a folder made after its last write: a copy
    /// (an import, a bucket's mirror) that set its time back made it, so its birth says the
    /// copy's order, not the run's (issue 41, point 4): such nodes still sort by it (a copy
    /// makes them in one order each time) but are marked uncertain.
    fn created_by_run(&self) -> Option<SystemTime> {
        self.created.filter(|created| *created <= self.modified)
    }
}

/// Adds a node, or gives the one already there the folder it lacks.
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn dir(name: &str, modified_ms: u64, created_ms: Option<u64>) -> NodeDir {
        NodeDir {
            name: name.to_owned(),
            path: PathBuf::from(name),
            modified: UNIX_EPOCH + Duration::from_millis(modified_ms),
            created: created_ms.map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }

    fn order(nodes: &[SessionNode]) -> Vec<(&str, bool)> {
        nodes.iter().map(|n| (n.name.as_str(), n.order_uncertain)).collect()
    }

    #[test]
    fn folders_of_one_tick_are_marked_uncertain_and_the_current_node_goes_last() {
        // A three-node pipeline whose folders were all written in one 4 ms tick, listed by the
        // file system as report, plan, execute: report began last (`currentNode`).
        let mut dirs = vec![
            dir("report", 8, Some(8)),
            dir("plan", 8, Some(8)),
            dir("execute", 8, Some(8)),
        ];
        let nodes = nodes_in_order(&[], &mut dirs, Some("report"));
        assert_eq!(order(&nodes), [("plan", true), ("execute", true), ("report", false)]);

        // Times apart: the order is known.
        let mut dirs = vec![
            dir("execute", 8, Some(4)),
            dir("plan", 4, Some(0)),
            dir("report", 12, Some(8)),
        ];
        let nodes = nodes_in_order(&[], &mut dirs, Some("report"));
        assert_eq!(order(&nodes), [("plan", false), ("execute", false), ("report", false)]);

        // The same write time but made apart: the making orders them.
        let mut dirs = vec![dir("execute", 8, Some(4)), dir("plan", 8, Some(0))];
        let nodes = nodes_in_order(&[], &mut dirs, None);
        assert_eq!(order(&nodes), [("plan", false), ("execute", false)]);

        // A current node without a folder (a custom node, or the one that failed) comes last too.
        let mut dirs = vec![dir("fetch", 4, None)];
        let nodes = nodes_in_order(&[], &mut dirs, Some("process"));
        assert_eq!(order(&nodes), [("fetch", false), ("process", false)]);
    }

    /// Issue 41, point 4: a copy (an import, a bucket's mirror) makes the node folders in its own
    /// order (by name) and sets their times back to the run's: two folders the run wrote in one
    /// tick are uncertain in the copy too, not ordered by the copy's making.
    #[test]
    fn a_copys_making_never_orders_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let then = UNIX_EPOCH + Duration::from_millis(1_790_000_000_008);
        // Made apart (a copy fetching each node's files in turn), their times set back to one.
        for name in ["execute", "plan"] {
            let folder = dir.path().join(name);
            fs::create_dir(&folder).unwrap();
            fs::File::open(&folder).unwrap().set_modified(then).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut dirs: Vec<NodeDir> = ["plan", "execute"]
            .into_iter()
            .map(|name| {
                let path = dir.path().join(name);
                let stat = fs::metadata(&path).unwrap();
                NodeDir::new(name.to_owned(), path, Some(&stat))
            })
            .collect();
        let nodes = nodes_in_order(&[], &mut dirs, None);
        assert!(nodes.iter().all(|n| n.order_uncertain), "{:?}", order(&nodes));
        assert_eq!(
            order(&nodes),
            [("execute", true), ("plan", true)],
            "still in the one order the copy made them in"
        );

        // Folders written after they were made (as a run writes them) keep their birth times.
        let folder = dir.path().join("fetch");
        fs::create_dir(&folder).unwrap();
        fs::write(folder.join("out.txt"), "x").unwrap();
        let stat = fs::metadata(&folder).unwrap();
        let fetch = NodeDir::new("fetch".into(), folder, Some(&stat));
        assert_eq!(fetch.created_by_run().is_some(), stat.created().is_ok());
    }

    #[test]
    fn the_records_nodes_come_in_its_order_and_the_folders_others_keep_their_place() {
        // The folder: `old` (an earlier run's), then the run's `boom`, then `late`, all in one tick.
        let mut dirs = vec![dir("old", 8, Some(8)), dir("boom", 8, Some(8)), dir("late", 8, Some(8))];
        let mut nodes = nodes_in_order(&[], &mut dirs, None);
        assert!(nodes.iter().all(|n| n.order_uncertain));
        let ran = [("prep", Status::Success), ("boom", Status::Error)];
        lay_record_nodes(&mut nodes, &ran);
        record_statuses(&mut nodes, &ran, Status::Error);
        let laid: Vec<_> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.status, n.path.is_some()))
            .collect();
        assert_eq!(
            laid,
            [
                ("old", Status::Unknown, true),
                ("prep", Status::Success, false),
                ("boom", Status::Error, true),
                ("late", Status::Unknown, true)
            ]
        );
        // The run's nodes are certain; the two others, of one tick, still guess between them.
        let marks: Vec<bool> = nodes.iter().map(|n| n.order_uncertain).collect();
        assert_eq!(marks, [true, false, false, true]);
        // One other node alone guesses nothing.
        let mut dirs = vec![dir("old", 8, Some(8)), dir("boom", 8, Some(8))];
        let mut nodes = nodes_in_order(&[], &mut dirs, None);
        lay_record_nodes(&mut nodes, &ran);
        assert!(nodes.iter().all(|n| !n.order_uncertain));
    }

    #[test]
    fn events_order_nodes_whatever_their_folders_times() {
        let events = [
            ("plan".to_owned(), Status::Success),
            ("execute".to_owned(), Status::Success),
        ];
        let mut dirs = vec![dir("execute", 8, None), dir("plan", 8, None)];
        let nodes = nodes_in_order(&events, &mut dirs, Some("execute"));
        assert_eq!(order(&nodes), [("plan", false), ("execute", false)]);
    }
}
