//! The `node_usage` table: what each node of a run printed on stdout that it used
//! (`cost::OutputUsageReader`, read as the run's output was recorded), kept per run and node: the
//! session model's word on a node's usage where its folder has no raw stream (docs/cli.md, "The
//! usage object").

use std::collections::HashMap;

use rusqlite::{params, Connection};

use super::connection::{QueryResult, Store};
use super::output;
use crate::sessions::cost::NodeUsage;
use crate::sessions::session::Workspace;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Per node name, its usage.
pub type UsageByNode = HashMap<String, NodeUsage>;

/// Keeps what a run's nodes printed that they used (in place of what was kept for the run).
pub(super) fn record(conn: &Connection, run_key: i64, usage: &UsageByNode) -> QueryResult<()> {
    conn.execute("DELETE FROM node_usage WHERE run_key = ?1", [run_key])?;
    let mut insert = conn.prepare_cached("INSERT INTO node_usage (run_key, node, usage) VALUES (?1, ?2, ?3)")?;
    for (node, usage) in usage {
        // A usage object always serialises (its numbers are finite).
        let Ok(json) = serde_json::to_string(usage) else {
            continue;
        };
        insert.execute(params![run_key, node, json])?;
    }
    Ok(())
}

/// [`record`] for a run by its id, in one transaction.
pub(super) fn record_for_run(store: &Store, run_id: &str, usage: &UsageByNode) -> Result<(), Error> {
    let run_key = store.with_conn(|conn| output::run_key(conn, run_id))?;
    store.batch(|| store.with_conn(|conn| record(conn, run_key, usage)))?
}

/// What a run's nodes printed that they used.
pub(super) fn of_run(conn: &Connection, run_id: &str) -> QueryResult<UsageByNode> {
    let mut statement = conn
        .prepare_cached("SELECT u.node, u.usage FROM node_usage u JOIN runs r ON r.key = u.run_key WHERE r.id = ?1")?;
    let rows = statement.query_map([run_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut by_node = UsageByNode::new();
    for row in rows {
        let (node, json) = row?;
        if let Ok(usage) = serde_json::from_str(&json) {
            by_node.insert(node, usage);
        }
    }
    Ok(by_node)
}

/// Per session of a workspace (or the one given), per node, what the newest run that printed
/// the node's usage on stdout says it used.
pub(super) fn of_sessions(
    conn: &Connection,
    workspace: &Workspace,
    session: Option<&SessionId>,
) -> QueryResult<HashMap<String, UsageByNode>> {
    let mut statement = conn.prepare_cached(
        "SELECT s.session_id, u.node, u.usage
                 FROM node_usage u JOIN runs r ON r.key = u.run_key JOIN sessions s ON s.key = r.session_key
                 JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND (?2 IS NULL OR s.session_id = ?2)
                 ORDER BY r.started_at DESC, r.key DESC",
    )?;
    let rows = statement.query_map(
        params![workspace.root().to_string_lossy(), session.map(SessionId::as_str)],
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)),
    )?;
    let mut by_session: HashMap<String, UsageByNode> = HashMap::new();
    for row in rows {
        let (session_id, node, json) = row?;
        let nodes = by_session.entry(session_id).or_default();
        if nodes.contains_key(&node) {
            continue; // a newer run's word came first
        }
        if let Ok(usage) = serde_json::from_str(&json) {
            nodes.insert(node, usage);
        }
    }
    Ok(by_session)
}
