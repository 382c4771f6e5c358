//! Session folders (docs/protocol.md §5): one folder read into a typed [`Session`], and the listing of a
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
//!
//! One file per step: `model` (what a session is: [`Session`], [`SessionSummary`], their nodes,
//! [`Timestamp`], the folder's file names), `workspace` (a [`Workspace`] and its session folders,
//! listed), `read` (one folder read, in named steps), `reader` (the folder's files read as
//! untrusted ground, problems collected), `status` (a session's and its nodes' status from the
//! files alone), `title` (what a folder says a session is called), `fingerprint` (what the
//! watcher compares), `run_record` (the studio's record of a run it started, written into the
//! folder when the run ends and read back wherever the folder is copied: [`RUN_RECORD_FILE`]).

mod fingerprint;
mod model;
mod read;
mod reader;
mod run_record;
mod status;
mod title;
mod workspace;

pub use fingerprint::{fingerprint, node_folders, NodeFolder, SessionsFolder};
pub use model::{
    Detail, FileRef, Imported, Layout, NodeArtifacts, NodeSummary, Problem, Session, SessionInfo, SessionNode,
    SessionSummary, Timestamp, EVENTS_FILE, NODES_DIR, RAW_OUTPUT_FILE, RAW_STREAM_FILE, RESULT_FILE,
    RUNNING_QUIET_WINDOW, SESSIONS_DIR, SESSION_INFO_FILE, STOP_FILES, STOP_FILE_TEXT, TITLE_CHARS, TITLE_PROMPT_FILES,
};
pub use read::{read_session_folder, read_summary};
pub use run_record::{
    read as read_run_record, write as write_run_record, FolderAtEnd, RecordedNode, RunRecordFile, MAX_RECORD_BYTES,
    MAX_RECORD_NODES, RUN_RECORD_FILE, RUN_RECORD_FORMAT, RUN_RECORD_VERSION,
};
pub use title::one_line;
pub use workspace::{in_parallel, session_folders, sort_most_recent_first, Workspace};
