//! The `messages` table: a session's conversation, in order; a user's first message names the
//! session when nothing else did.

use std::time::SystemTime;

use rusqlite::{params, Connection};
use serde::Serialize;

use super::connection::{millis, timestamp, write_transaction, QueryResult};
use super::{search, sessions};
use crate::sessions::session::{Timestamp, Workspace};
use crate::vocabulary::id::SessionId;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Message {
    pub seq: i64,
    pub role: String,
    pub text: String,
    pub created_at: Timestamp,
}

/// Adds a message to the session's conversation (indexed for search) and returns its number.
pub(super) fn append(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    role: &str,
    text: &str,
    now: SystemTime,
) -> QueryResult<i64> {
    let key = sessions::key(conn, workspace, id, now)?;
    let tx = write_transaction(conn)?;
    let seq: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_key = ?1",
        [key],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT INTO messages (session_key, seq, role, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![key, seq, role, text, millis(now)],
    )?;
    let message_id = tx.last_insert_rowid();
    search::index(&tx, search::Kind::Message, message_id, text)?;
    if role == "user" {
        tx.execute(
            "UPDATE sessions SET title = COALESCE(title, substr(?2, 1, 120)), updated_at = ?3 WHERE key = ?1",
            params![key, text.trim(), millis(now)],
        )?;
    }
    tx.commit()?;
    Ok(seq)
}

/// The session's messages, in order.
pub(super) fn of_session(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Vec<Message>> {
    let Some(key) = sessions::existing_key(conn, workspace, id)? else {
        return Ok(Vec::new());
    };
    let mut statement =
        conn.prepare_cached("SELECT seq, role, text, created_at FROM messages WHERE session_key = ?1 ORDER BY seq")?;
    let rows = statement.query_map([key], |r| {
        Ok(Message {
            seq: r.get(0)?,
            role: r.get(1)?,
            text: r.get(2)?,
            created_at: timestamp(r.get(3)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
