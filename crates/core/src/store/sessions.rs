//! The `sessions` table: what the studio knows of a session beyond its folder (its key for the
//! other tables, pin, title, agent, where it was imported from), and deleting a session whole.

use std::collections::HashMap;
use std::path::Path;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::connection::{millis, timestamp, write_transaction, QueryResult};
use super::{folder_text, nodes_seen, search, workspaces};
use crate::sessions::session::{read_summary, SessionSummary, Timestamp, Workspace};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// A session as the studio lists it: what its folder says, and what the studio knows of it (its
/// `agent` and `title` are the summary's, named by `session_model::name_session`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionRow {
    #[serde(flatten)]
    pub summary: SessionSummary,
    pub pinned: bool,
    pub pinned_at: Option<Timestamp>,
    /// The messages of its conversation.
    pub messages: i64,
    /// The id of its run that is live now (started by this or another studio process).
    pub live_run: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pin {
    pub session_id: String,
    pub pinned_at: Timestamp,
}

/// What the store knows of a session for its row: pinned time, title (the beginning of its first
/// prompt), agent, message count.
pub(super) type SessionFacts = (Option<i64>, Option<String>, Option<String>, i64);

/// The key of a session row, created on first use.
pub(crate) fn key(conn: &Connection, workspace: &Workspace, id: &SessionId, now: SystemTime) -> QueryResult<i64> {
    let workspace_key = workspaces::key(conn, workspace)?;
    conn.prepare_cached(
        "INSERT INTO sessions (workspace_id, session_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
             ON CONFLICT (workspace_id, session_id) DO NOTHING",
    )?
    .execute(params![workspace_key, id.as_str(), millis(now)])?;
    Ok(conn
        .prepare_cached("SELECT key FROM sessions WHERE workspace_id = ?1 AND session_id = ?2")?
        .query_row(params![workspace_key, id.as_str()], |r| r.get(0))?)
}

/// The key of a session row, if the store has one.
pub(crate) fn existing_key(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Option<i64>> {
    Ok(conn
        .query_row(
            "SELECT s.key FROM sessions s JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND s.session_id = ?2",
            params![workspace.root().to_string_lossy(), id.as_str()],
            |r| r.get(0),
        )
        .optional()?)
}

pub(super) fn pin(conn: &Connection, workspace: &Workspace, id: &SessionId, now: SystemTime) -> QueryResult<()> {
    let key = key(conn, workspace, id, now)?;
    conn.execute(
        "UPDATE sessions SET pinned_at = COALESCE(pinned_at, ?2) WHERE key = ?1",
        params![key, millis(now)],
    )?;
    Ok(())
}

pub(super) fn unpin(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<()> {
    if let Some(key) = existing_key(conn, workspace, id)? {
        conn.execute("UPDATE sessions SET pinned_at = NULL WHERE key = ?1", [key])?;
    }
    Ok(())
}

/// Pinned sessions of a workspace, most recently pinned first.
pub(super) fn pins(conn: &Connection, workspace: &Workspace) -> QueryResult<Vec<Pin>> {
    let mut statement = conn.prepare_cached(
        "SELECT s.session_id, s.pinned_at FROM sessions s JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND s.pinned_at IS NOT NULL ORDER BY s.pinned_at DESC, s.session_id",
    )?;
    let rows = statement.query_map([workspace.root().to_string_lossy()], |r| {
        Ok(Pin {
            session_id: r.get(0)?,
            pinned_at: timestamp(r.get(1)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What the studio knows of each session of a workspace, by id.
pub(super) fn facts(conn: &Connection, workspace: &Workspace) -> QueryResult<HashMap<String, SessionFacts>> {
    let mut statement = conn.prepare_cached(
        "SELECT s.session_id, s.pinned_at, s.title, s.agent,
                        (SELECT count(*) FROM messages m WHERE m.session_key = s.key)
                 FROM sessions s JOIN workspaces w ON w.id = s.workspace_id WHERE w.root = ?1",
    )?;
    let rows = statement.query_map([workspace.root().to_string_lossy()], |r| {
        Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What the store calls a session: the beginning of its first prompt (`title`) and the agent
/// the studio ran it with, each when recorded.
pub(super) fn names(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
) -> QueryResult<(Option<String>, Option<String>)> {
    let Some(key) = existing_key(conn, workspace, id)? else {
        return Ok((None, None));
    };
    Ok(
        conn.query_row("SELECT title, agent FROM sessions WHERE key = ?1", [key], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?,
    )
}

/// The session's title: the beginning of its first prompt, else the agent's name.
pub(super) fn title(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Option<String>> {
    let Some(key) = existing_key(conn, workspace, id)? else {
        return Ok(None);
    };
    Ok(conn.query_row(
        "SELECT COALESCE(title, agent) FROM sessions WHERE key = ?1",
        [key],
        |r| r.get(0),
    )?)
}

/// Whether a session is known to the store or has a folder.
pub(super) fn exists(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<bool> {
    match workspace.session_folder(id) {
        Ok(_) => Ok(true),
        Err(Error::SessionNotFound { .. }) => Ok(existing_key(conn, workspace, id)?.is_some()),
        // A link in its place (or on the way) is said, not taken as "no such session".
        Err(e) => Err(e.into()),
    }
}

/// Deletes a session: its rows in one transaction, then its folder, moved by `discard`. Refused
/// while a run of the session is live: one of the studio's, or one it did not start whose folder
/// reads `running`.
pub(super) fn delete(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    discard: impl FnOnce(&Path) -> Result<(), Error>,
) -> QueryResult<()> {
    // Only ever a real folder inside the workspace's sessions folder (links are refused).
    let folder = match workspace.session_folder(id) {
        Ok(folder) => Some(folder),
        Err(Error::SessionNotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let key = existing_key(conn, workspace, id)?;
    if key.is_none() && folder.is_none() {
        return Err(Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        }
        .into());
    }
    // A run the studio did not start is not in the store: its folder reading `running` (the one
    // rule of `read_summary`, which `stop_outside` uses too) says it is still going. Read before
    // the write lock is taken; refused after a studio run's refusal, which names its run.
    let running_outside = folder
        .as_ref()
        .is_some_and(|folder| read_summary(folder, id, SystemTime::now()).is_some_and(|s| s.status == Status::Running));
    let tx = write_transaction(conn)?;
    if let Some(key) = key {
        let live: Option<String> = tx
            .query_row(
                "SELECT id FROM runs WHERE session_key = ?1 AND status = 'running' LIMIT 1",
                [key],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(run_id) = live {
            return Err(Error::SessionLive {
                id: id.to_string(),
                run_id,
            }
            .into());
        }
    }
    if running_outside {
        return Err(Error::SessionRunningOutside { id: id.to_string() }.into());
    }
    if let Some(key) = key {
        search::unindex_session(&tx, key)?;
        tx.execute("DELETE FROM sessions WHERE key = ?1", [key])?;
    }
    tx.execute(
        "DELETE FROM folder_index WHERE workspace_id = (SELECT id FROM workspaces WHERE root = ?1) AND session_id = ?2",
        params![workspace.root().to_string_lossy(), id.as_str()],
    )?;
    nodes_seen::forget(&tx, workspace, id)?;
    folder_text::forget_session(&tx, workspace, id.as_str())?;
    // The folder goes last: if moving it fails, the rows come back with the rollback.
    if let Some(folder) = folder {
        discard(&folder)?;
    }
    Ok(tx.commit()?)
}
