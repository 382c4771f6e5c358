//! The `nodes_seen` table: the nodes of a session the studio did not run, in the order a live
//! watch saw them begin, for what its folder cannot tell (the order of nodes whose folders were
//! written in the same instant, the nodes that write no folder). The watcher sees them in memory
//! (`SessionSummary::keep_order_seen`); the folder index's change sink (`index::record_change`)
//! records them here, and `session_model` lays them over the folder for every surface
//! (`sessions`, `show`, `watch`, the window's table and Timeline), so that the order seen live is
//! one fact with one owner, and outlives the watch that saw it.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::connection::QueryResult;
use super::workspaces;
use crate::sessions::session::{NodeSummary, Workspace};
use crate::status::Status;
use crate::vocabulary::id::SessionId;

/// A node as seen live: its name, and whether its place among the others is still a guess.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SeenNode {
    name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    order_uncertain: bool,
}

/// The nodes as a summary has them, as this table keeps them (JSON).
fn to_json(nodes: &[NodeSummary]) -> String {
    let seen: Vec<SeenNode> = nodes
        .iter()
        .map(|node| SeenNode {
            name: node.name.clone(),
            order_uncertain: node.order_uncertain,
        })
        .collect();
    serde_json::to_string(&seen).expect("node names serialise")
}

/// The nodes kept as JSON, as nodes of a summary (how each ended is not kept: `unknown`, which
/// only a node the folder no longer names keeps); `None` for a row that cannot be read.
fn from_json(json: &str) -> Option<Vec<NodeSummary>> {
    let seen: Vec<SeenNode> = serde_json::from_str(json).ok()?;
    Some(
        seen.into_iter()
            .map(|node| NodeSummary {
                name: node.name,
                status: Status::Unknown,
                usage: None,
                order_uncertain: node.order_uncertain,
            })
            .collect(),
    )
}

/// Records the nodes of session `id` as a live watch has them now, in their order (a row per
/// session, replaced when it changes).
pub(super) fn record(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    nodes: &[NodeSummary],
) -> QueryResult<()> {
    let key = workspaces::key(conn, workspace)?;
    let json = to_json(nodes);
    conn.prepare_cached(
        "INSERT INTO nodes_seen (workspace_id, session_id, nodes) VALUES (?1, ?2, ?3)
         ON CONFLICT (workspace_id, session_id) DO UPDATE SET nodes = ?3 WHERE nodes IS NOT ?3",
    )?
    .execute(params![key, id.as_str(), json])?;
    Ok(())
}

/// The nodes seen live of session `id`, if a watch saw any.
pub(super) fn of_session(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
) -> QueryResult<Option<Vec<NodeSummary>>> {
    let json: Option<String> = conn
        .prepare_cached(
            "SELECT n.nodes FROM nodes_seen n JOIN workspaces w ON w.id = n.workspace_id
             WHERE w.root = ?1 AND n.session_id = ?2",
        )?
        .query_row(params![workspace.root().to_string_lossy(), id.as_str()], |r| r.get(0))
        .optional()?;
    Ok(json.as_deref().and_then(from_json))
}

/// The nodes seen live of each session of a workspace that a watch saw, by session id.
pub(super) fn of_workspace(conn: &Connection, workspace: &Workspace) -> QueryResult<HashMap<String, Vec<NodeSummary>>> {
    let mut statement = conn.prepare_cached(
        "SELECT n.session_id, n.nodes FROM nodes_seen n JOIN workspaces w ON w.id = n.workspace_id WHERE w.root = ?1",
    )?;
    let rows = statement.query_map([workspace.root().to_string_lossy()], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut seen = HashMap::new();
    for row in rows {
        let (id, json) = row?;
        if let Some(nodes) = from_json(&json) {
            seen.insert(id, nodes);
        }
    }
    Ok(seen)
}

/// The nodes seen live of those of `ids` (sessions of `workspace`) that a watch saw, by
/// session id: one lookup by key each.
pub(super) fn of_sessions(
    conn: &Connection,
    workspace: &Workspace,
    ids: &[&str],
) -> QueryResult<HashMap<String, Vec<NodeSummary>>> {
    let mut seen = HashMap::new();
    let Some(key) = workspaces::known_key(conn, workspace)?.filter(|_| !ids.is_empty()) else {
        return Ok(seen);
    };
    let mut statement =
        conn.prepare_cached("SELECT nodes FROM nodes_seen WHERE workspace_id = ?1 AND session_id = ?2")?;
    for id in ids {
        let json: Option<String> = statement.query_row(params![key, id], |r| r.get(0)).optional()?;
        if let Some(nodes) = json.as_deref().and_then(from_json) {
            seen.insert((*id).to_owned(), nodes);
        }
    }
    Ok(seen)
}

/// Forgets what was seen of session `id` (its folder went, or the session was deleted).
pub(super) fn forget(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<()> {
    conn.execute(
        "DELETE FROM nodes_seen WHERE workspace_id = (SELECT id FROM workspaces WHERE root = ?1) AND session_id = ?2",
        params![workspace.root().to_string_lossy(), id.as_str()],
    )?;
    Ok(())
}
