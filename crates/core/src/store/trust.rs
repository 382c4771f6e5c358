//! The `trusted_launches` table: the launches of agents (by their digest) the user trusted in a
//! workspace, and saving an agent, whose launches the user wrote and so trusts.

use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{millis, QueryResult};
use super::workspaces;
use crate::sessions::agents::Launch;
use crate::sessions::session::Workspace;
use crate::vocabulary::error::Error;

/// Whether the user trusted this launch of an agent in the workspace.
pub(super) fn trusted(conn: &Connection, workspace: &Workspace, digest: &str) -> QueryResult<bool> {
    let workspace_key = workspaces::key(conn, workspace)?;
    Ok(conn
        .query_row(
            "SELECT 1 FROM trusted_launches WHERE workspace_id = ?1 AND digest = ?2",
            params![workspace_key, digest],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Records that the user trusts this launch of an agent in the workspace.
pub(super) fn trust(conn: &Connection, workspace: &Workspace, digest: &str, now: SystemTime) -> QueryResult<()> {
    let workspace_key = workspaces::key(conn, workspace)?;
    conn.execute(
        "INSERT INTO trusted_launches (workspace_id, digest, trusted_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
        params![workspace_key, digest, millis(now)],
    )?;
    Ok(())
}

/// `Ok` when `launch` is trusted, else [`Error::AgentsUntrusted`] with what it would run.
pub(super) fn require(conn: &Connection, workspace: &Workspace, launch: Launch) -> QueryResult<()> {
    if trusted(conn, workspace, &launch.digest)? {
        Ok(())
    } else {
        Err(Error::AgentsUntrusted {
            launch: Box::new(launch),
        }
        .into())
    }
}
