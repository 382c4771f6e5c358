//! The live export of sessions the studio did not start, as a watcher sees them (`zstudio
//! watch`): a node's span once the folder says the node ended, the session's span once it says
//! the session ended, each with the ids and attributes `otlp push` gives it (a session pushed
//! later adds no duplicate). Sessions that had ended when first seen are not sent (`otlp push
//! --since` sends those); sessions the studio ran are sent by the process that follows the run.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use super::live::LiveExport;
use super::push::Endpoint;
use super::runs::{session_runs, TraceOptions};
use crate::sessions::change::Change;
use crate::sessions::session::{Timestamp, Workspace};
use crate::status::Status;
use crate::store::Store;
use crate::vocabulary::id::SessionId;

/// What was sent of one session.
#[derive(Default)]
struct Seen {
    /// Nothing more to send: the studio runs it.
    done: bool,
    /// Its nodes that had ended when last looked at.
    nodes_ended: usize,
    /// The ids of the spans sent.
    sent: HashSet<Vec<u8>>,
}

/// Follows the changes of watched workspaces and sends their sessions' spans on `export`.
pub struct WatchedExport {
    store: Arc<Store>,
    /// Each workspace watched, with the endpoint its spans go to (`None`: not exported).
    workspaces: Vec<(Workspace, Option<Arc<Endpoint>>)>,
    sessions: HashMap<(PathBuf, String), Seen>,
}

impl WatchedExport {
    /// `workspaces` with their endpoints (`Endpoint::resolve`'s).
    pub fn new(store: Arc<Store>, workspaces: Vec<(Workspace, Option<Arc<Endpoint>>)>) -> WatchedExport {
        WatchedExport {
            store,
            workspaces,
            sessions: HashMap::new(),
        }
    }

    /// Whether any workspace has an endpoint.
    pub fn exports_anything(&self) -> bool {
        self.workspaces.iter().any(|(_, endpoint)| endpoint.is_some())
    }

    /// One change of a watched workspace: a session's spans that are due are put on `export`.
    pub fn change(&mut self, change: &Change, export: &LiveExport) {
        let (Change::SessionAdded {
            workspace,
            session_id,
            summary,
            ..
        }
        | Change::SessionUpdated {
            workspace,
            session_id,
            summary,
            ..
        }) = change
        else {
            return;
        };
        let Some((watched, Some(endpoint))) = self.workspaces.iter().find(|(w, _)| w.root() == workspace) else {
            return;
        };
        let ended = summary.status != Status::Running;
        let key = (workspace.clone(), session_id.to_string());
        // Only the sessions going are kept: one that ended (before it was first seen, or since)
        // is forgotten, and an update of it after is an ended session first seen (not sent).
        let seen = match self.sessions.get_mut(&key) {
            Some(seen) if seen.done && ended => {
                self.sessions.remove(&key);
                return;
            }
            Some(seen) => seen,
            None if ended => return,
            None => self.sessions.entry(key.clone()).or_default(),
        };
        if seen.done {
            return;
        }
        let nodes_ended = summary.nodes.iter().filter(|n| n.status != Status::Running).count();
        if nodes_ended <= seen.nodes_ended && !ended {
            return;
        }
        seen.nodes_ended = nodes_ended;
        // Asked each time: the studio may record its run after the folder appeared.
        if ran_here(&self.store, watched, session_id) {
            seen.done = true;
            return;
        }
        let now = SystemTime::now();
        let traces = match session_runs(&self.store, watched, session_id, TraceOptions::default(), now) {
            Ok(traces) => traces,
            Err(error) => {
                tracing::warn!(%session_id, %error, "cannot read a watched session for its live trace");
                return;
            }
        };
        // A session the studio did not run is one trace: its folder's.
        let Some(trace) = traces.first() else { return };
        let spans = super::map::run_spans(trace, Timestamp::from_system_time(now).0);
        let mut spans = spans.into_iter();
        let root = spans.next();
        let mut ended_spans: Vec<_> = trace
            .nodes
            .iter()
            .zip(spans)
            .filter(|(node, span)| node.status != Status::Running && seen.sent.insert(span.span_id.clone()))
            .map(|(_, span)| span)
            .collect();
        if ended {
            ended_spans.extend(root);
            self.sessions.remove(&key);
        }
        export.send(endpoint, &ended_spans);
    }
}

/// Whether the studio ran (or runs) session `id` (or cannot tell: then it is not sent).
fn ran_here(store: &Store, workspace: &Workspace, id: &SessionId) -> bool {
    store.runs(workspace, Some(id)).map_or(true, |runs| !runs.is_empty())
}
