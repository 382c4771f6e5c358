//! What a session is, as the studio reads it: its folder's files, its nodes, its summary.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::sessions::cost::{NodeUsage, UsageTotal};
use crate::status::Status;
use crate::vocabulary::id::SessionId;

/// The sessions folder below a workspace's root.
pub const SESSIONS_DIR: [&str; 3] = [".zibby", "output", "sessions"];

/// A session whose files changed within this window, and that has no result, is taken as running.
pub const RUNNING_QUIET_WINDOW: Duration = Duration::from_secs(120);

/// A title or an agent name is at most this many characters.
pub const TITLE_CHARS: usize = 80;

/// The title is looked for in the prompt files of at most this many nodes.
pub const TITLE_PROMPT_FILES: usize = 16;

pub const SESSION_INFO_FILE: &str = ".session-info.json";
pub const RESULT_FILE: &str = "result.json";
pub const EVENTS_FILE: &str = "events.json";
pub const RAW_STREAM_FILE: &str = "raw_stream_output.txt";
/// The documented layout's folder of node folders.
pub const NODES_DIR: &str = "nodes";
/// The stop files: both names every engine era knows between them (docs/protocol.md §3).
pub const STOP_FILES: [&str; 2] = [".zibby-studio-stop", ".zibby-stop"];
/// What the studio writes in a stop file: how one of its own is told from another's.
pub const STOP_FILE_TEXT: &[u8] = b"stop requested by Zibby Studio\n";
pub(super) const PROMPT_FILE: &str = "prompt.txt";
pub const RAW_OUTPUT_FILE: &str = "raw_output.txt";

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

/// Which of the two folder layouts of docs/protocol.md §5 a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileRef {
    pub path: PathBuf,
    pub bytes: u64,
}

/// `.session-info.json`, as far as it parses.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
    pub(super) fn fill_from(&mut self, other: NodeArtifacts) {
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

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
    /// Its place among the nodes is a guess: nothing recorded the order it ran in (no events, no
    /// span, not seen live) and its folder was written in the same tick of the file system's
    /// clock (4 ms) as another node's, so the two could have run either way round. Absent
    /// (false) when the order is known.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub order_uncertain: bool,
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
    /// Its place among the nodes is a guess: nothing recorded the order it ran in (no events, no
    /// span, not seen live) and its folder was written in the same tick of the file system's
    /// clock (4 ms) as another node's, so the two could have run either way round. Absent
    /// (false) when the order is known.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub order_uncertain: bool,
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
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
    /// Its tags, in the order added (the store's; none from a folder alone).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Its note (the store's; none from a folder alone).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub note: Option<String>,
    /// What the studio cannot know of this session and how to get the full story, in one
    /// sentence for a user: a run it did not start, whose engine left no record of how it ended
    /// (see docs/cli.md, "Where each fact comes from"). Absent when nothing is missing that a
    /// run through the studio would have recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub not_known: Option<String>,
}

/// Where a session came from, as the store marks it imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
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
    /// What the studio cannot know of this session and how to get the full story, in one
    /// sentence for a user: a run it did not start, whose engine left no record of how it ended
    /// (see docs/cli.md, "Where each fact comes from"). Absent when nothing is missing that a
    /// run through the studio would have recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub not_known: Option<String>,
}

/// What [`SessionSummary::not_known`] adds while some node's place is a guess.
pub(crate) const ORDER_NOT_KNOWN: &str =
    " Nor is the order of the nodes marked `?`: their folders were written in the same instant.";

impl SessionSummary {
    /// Whether any node's place is a guess ([`NodeSummary::order_uncertain`]).
    pub fn order_uncertain(&self) -> bool {
        self.nodes.iter().any(|n| n.order_uncertain)
    }

    /// The order seen live, for the nodes whose order the folder cannot tell: `previous` is this
    /// session as read before (by a watcher, as it changed). A node it had in a known order keeps
    /// that order, ahead of the nodes it had not seen yet (they began later), and is no longer a
    /// guess; of the nodes not seen before, one alone is in its place, two or more still guess
    /// among themselves. A node `previous` had and the folder no longer names (one that wrote no
    /// folder, current then) is kept in its place, its status `unknown` (nothing recorded how it
    /// ended). Nothing changes when the folder tells the order of every node it had before.
    pub fn keep_order_seen(&mut self, previous: &SessionSummary) {
        if previous.id == self.id {
            self.keep_nodes_seen(&previous.nodes);
        }
    }

    /// [`SessionSummary::keep_order_seen`], from this session's nodes as seen live (`seen`, in
    /// the order seen: what the store keeps of a watch, say).
    pub fn keep_nodes_seen(&mut self, seen_nodes: &[NodeSummary]) {
        let names_all = seen_nodes
            .iter()
            .all(|seen| self.nodes.iter().any(|n| n.name == seen.name));
        if names_all && !self.order_uncertain() {
            return;
        }
        let mut kept: Vec<NodeSummary> = Vec::with_capacity(self.nodes.len());
        for seen in seen_nodes {
            match self.nodes.iter().position(|n| n.name == seen.name) {
                Some(at) => {
                    let mut node = self.nodes.remove(at);
                    node.order_uncertain = seen.order_uncertain;
                    kept.push(node);
                }
                None => kept.push(NodeSummary {
                    status: Status::Unknown,
                    order_uncertain: seen.order_uncertain,
                    ..seen.clone()
                }),
            }
        }
        let new_guesses = self.nodes.iter().filter(|n| n.order_uncertain).count();
        if new_guesses < 2 {
            for node in &mut self.nodes {
                node.order_uncertain = false;
            }
        }
        kept.append(&mut self.nodes);
        self.nodes = kept;
        if !self.order_uncertain() {
            // Seen live, the order is known: the note no longer says it is not.
            if let Some(note) = &mut self.not_known {
                *note = note.replace(ORDER_NOT_KNOWN, "");
            }
        }
    }

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
                    order_uncertain: n.order_uncertain,
                })
                .collect(),
            problems: self.problems.clone(),
            usage: self.usage.clone(),
            not_known: self.not_known.clone(),
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
            order_uncertain: false,
        }
    }
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
            order_uncertain: false,
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
            not_known: None,
        };
        assert_eq!(summary.nodes_progress(), (3, 4));
    }

    fn summary_of(nodes: &[(&str, Status, bool)]) -> SessionSummary {
        SessionSummary {
            id: SessionId::parse("1777678254000_a").unwrap(),
            path: PathBuf::new(),
            agent: None,
            title: None,
            status: Status::Unknown,
            current_node: None,
            created_at: None,
            updated_at: Timestamp(0),
            nodes: nodes
                .iter()
                .map(|(name, status, order_uncertain)| NodeSummary {
                    name: (*name).to_owned(),
                    status: *status,
                    usage: None,
                    order_uncertain: *order_uncertain,
                })
                .collect(),
            problems: Vec::new(),
            usage: None,
            not_known: None,
        }
    }

    fn nodes_of(summary: &SessionSummary) -> Vec<(&str, Status, bool)> {
        summary
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.status, n.order_uncertain))
            .collect()
    }

    #[test]
    fn the_order_seen_live_wins_over_a_guess_and_keeps_nodes_without_folders() {
        use Status::{Running, Success, Unknown};
        // Seen live: plan, then execute (each read on its own); the folder alone cannot tell.
        let seen = summary_of(&[("plan", Success, false), ("execute", Running, false)]);
        let mut read = summary_of(&[
            ("execute", Success, true),
            ("plan", Success, true),
            ("report", Success, false),
        ]);
        read.keep_order_seen(&seen);
        assert_eq!(
            nodes_of(&read),
            [
                ("plan", Success, false),
                ("execute", Success, false),
                ("report", Success, false)
            ]
        );

        // The note said the order was not known; seen live, it is.
        let mut read = summary_of(&[("execute", Success, true), ("plan", Success, true)]);
        read.not_known = Some(format!(
            "Run outside the studio.{ORDER_NOT_KNOWN} For the full story, …"
        ));
        read.keep_order_seen(&seen);
        assert_eq!(
            read.not_known.as_deref(),
            Some("Run outside the studio. For the full story, …")
        );

        // `process` wrote no folder: seen as the current node, then gone from the folder's word.
        let seen = summary_of(&[("fetch", Success, false), ("process", Running, false)]);
        let mut read = summary_of(&[("fetch", Success, false), ("publish", Success, false)]);
        read.keep_order_seen(&seen);
        assert_eq!(
            nodes_of(&read),
            [
                ("fetch", Success, false),
                ("process", Unknown, false),
                ("publish", Success, false)
            ]
        );
        let again = read.clone();
        read.keep_order_seen(&again);
        assert_eq!(read, again, "read again, the same");

        // Two nodes never seen apart stay a guess; what the folder orders is left alone.
        let seen = summary_of(&[("start", Success, false)]);
        let mut read = summary_of(&[
            ("start", Success, false),
            ("right", Success, true),
            ("left", Success, true),
        ]);
        read.keep_order_seen(&seen);
        assert_eq!(
            nodes_of(&read),
            [
                ("start", Success, false),
                ("right", Success, true),
                ("left", Success, true)
            ]
        );
    }
}
