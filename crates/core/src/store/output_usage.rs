//! What each node of a run printed on stdout that it used (`cost::OutputUsageReader`, read as
//! the run's output was recorded), kept per run and node: the session model's word on a node's
//! usage where its folder has no raw stream (docs/cli.md, "The usage object").

use std::collections::HashMap;

use rusqlite::params;

use super::Store;
use crate::sessions::cost::NodeUsage;
use crate::sessions::session::Workspace;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Per node name, its usage.
pub type UsageByNode = HashMap<String, NodeUsage>;

impl Store {
    /// Keeps what a run's nodes printed that they used (in place of what was kept for the run).
    pub fn record_output_usage(&self, run_id: &str, usage: &UsageByNode) -> Result<(), Error> {
        let conn = self.conn();
        let run_key = super::output::run_key(self, &conn, run_id)?;
        self.batch(|| -> Result<(), Error> {
            conn.execute("DELETE FROM node_usage WHERE run_key = ?1", [run_key])
                .map_err(|e| self.err(e))?;
            let mut insert = conn
                .prepare_cached("INSERT INTO node_usage (run_key, node, usage) VALUES (?1, ?2, ?3)")
                .map_err(|e| self.err(e))?;
            for (node, usage) in usage {
                // A usage object always serialises (its numbers are finite).
                let Ok(json) = serde_json::to_string(usage) else {
                    continue;
                };
                insert.execute(params![run_key, node, json]).map_err(|e| self.err(e))?;
            }
            Ok(())
        })?
    }

    /// What a run's nodes printed that they used.
    pub fn output_usage(&self, run_id: &str) -> Result<UsageByNode, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached("SELECT u.node, u.usage FROM node_usage u JOIN runs r ON r.key = u.run_key WHERE r.id = ?1")
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([run_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut by_node = UsageByNode::new();
        for row in rows {
            let (node, json) = row.map_err(|e| self.err(e))?;
            if let Ok(usage) = serde_json::from_str(&json) {
                by_node.insert(node, usage);
            }
        }
        Ok(by_node)
    }

    /// Per session of a workspace (or the one given), per node, what the newest run that printed
    /// the node's usage on stdout says it used.
    pub fn sessions_output_usage(
        &self,
        workspace: &Workspace,
        session: Option<&SessionId>,
    ) -> Result<HashMap<String, UsageByNode>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT s.session_id, u.node, u.usage
                 FROM node_usage u JOIN runs r ON r.key = u.run_key JOIN sessions s ON s.key = r.session_key
                 JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND (?2 IS NULL OR s.session_id = ?2)
                 ORDER BY r.started_at DESC, r.key DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map(
                params![workspace.root().to_string_lossy(), session.map(SessionId::as_str)],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)),
            )
            .map_err(|e| self.err(e))?;
        let mut by_session: HashMap<String, UsageByNode> = HashMap::new();
        for row in rows {
            let (session_id, node, json) = row.map_err(|e| self.err(e))?;
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
}
