//! The `workspaces` table: a row per workspace the studio has known (its root), and when the
//! window last opened it.

use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{millis, QueryResult};
use crate::sessions::session::Workspace;

/// The key of a workspace, created on first use.
pub(crate) fn key(conn: &Connection, workspace: &Workspace) -> QueryResult<i64> {
    let root = workspace.root().to_string_lossy();
    conn.prepare_cached("INSERT INTO workspaces (root) VALUES (?1) ON CONFLICT (root) DO NOTHING")?
        .execute([&root])?;
    Ok(conn
        .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")?
        .query_row([&root], |r| r.get(0))?)
}

/// The key of a workspace the store has known, `None` for one it never saw (nothing created).
pub(super) fn known_key(conn: &Connection, workspace: &Workspace) -> QueryResult<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")?
        .query_row([workspace.root().to_string_lossy()], |r| r.get(0))
        .optional()?)
}

/// Records that the window opened `workspace` now (it becomes the most recent).
pub(super) fn opened(conn: &Connection, workspace: &Workspace, now: SystemTime) -> QueryResult<()> {
    let key = key(conn, workspace)?;
    conn.execute(
        "UPDATE workspaces SET opened_at = ?2 WHERE id = ?1",
        params![key, millis(now)],
    )?;
    Ok(())
}

/// The workspaces the window opened, most recent first, at most `limit`.
pub(super) fn recent(conn: &Connection, limit: usize) -> QueryResult<Vec<PathBuf>> {
    let mut statement = conn.prepare_cached(
        "SELECT root FROM workspaces WHERE opened_at IS NOT NULL ORDER BY opened_at DESC, id DESC LIMIT ?1",
    )?;
    let rows = statement.query_map([limit as i64], |r| r.get::<_, String>(0).map(PathBuf::from))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
