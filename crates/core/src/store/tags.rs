//! Tags and notes of sessions (`session_tags`, `sessions.note`), keyed by the session's row as a
//! pin is: the workspace's root (a bucket workspace's is its own) and the session id. What they
//! hold is checked by `label` before it is kept; a note is in the search index (kind `note`).

use std::collections::HashMap;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{millis, write_transaction, QueryResult};
use super::{search, sessions};
use crate::sessions::session::Workspace;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::label::{self, Tag};

/// Adds `tags` to a session (those it has already stay as they are); refused, nothing added, when
/// the session would hold more than `label::MAX_TAGS_PER_SESSION`. Returns its tags after.
pub(super) fn add(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    tags: &[Tag],
    now: SystemTime,
) -> QueryResult<Vec<String>> {
    let tx = write_transaction(conn)?;
    let key = sessions::key(&tx, workspace, id, now)?;
    let mut after = of_key(&tx, key)?;
    for tag in tags {
        if !after.iter().any(|held| held == tag.as_str()) {
            after.push(tag.as_str().to_owned());
        }
    }
    label::check_tag_count(id.as_str(), after.len())?;
    for tag in tags {
        tx.prepare_cached(
            "INSERT INTO session_tags (session_key, tag, tagged_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_key, tag) DO NOTHING",
        )?
        .execute(params![key, tag.as_str(), millis(now)])?;
    }
    let after = of_key(&tx, key)?;
    tx.commit()?;
    Ok(after)
}

/// Removes `tags` from a session (a tag it does not have is no error). Returns its tags after.
pub(super) fn remove(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    tags: &[Tag],
) -> QueryResult<Vec<String>> {
    let Some(key) = sessions::existing_key(conn, workspace, id)? else {
        return Ok(Vec::new());
    };
    let tx = write_transaction(conn)?;
    for tag in tags {
        tx.prepare_cached("DELETE FROM session_tags WHERE session_key = ?1 AND tag = ?2")?
            .execute(params![key, tag.as_str()])?;
    }
    let after = of_key(&tx, key)?;
    tx.commit()?;
    Ok(after)
}

/// A session's tags, in the order they were added.
pub(super) fn of_session(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Vec<String>> {
    match sessions::existing_key(conn, workspace, id)? {
        Some(key) => of_key(conn, key),
        None => Ok(Vec::new()),
    }
}

fn of_key(conn: &Connection, key: i64) -> QueryResult<Vec<String>> {
    let mut statement =
        conn.prepare_cached("SELECT tag FROM session_tags WHERE session_key = ?1 ORDER BY tagged_at, rowid")?;
    let tags = statement.query_map([key], |r| r.get(0))?;
    Ok(tags.collect::<Result<_, _>>()?)
}

/// The tags of every tagged session of a workspace, by session id, each in the order added.
pub(super) fn of_workspace(conn: &Connection, workspace: &Workspace) -> QueryResult<HashMap<String, Vec<String>>> {
    let mut statement = conn.prepare_cached(
        "SELECT s.session_id, t.tag FROM session_tags t JOIN sessions s ON s.key = t.session_key
             JOIN workspaces w ON w.id = s.workspace_id WHERE w.root = ?1 ORDER BY t.tagged_at, t.rowid",
    )?;
    let mut rows = statement.query([workspace.root().to_string_lossy()])?;
    let mut tags: HashMap<String, Vec<String>> = HashMap::new();
    while let Some(row) = rows.next()? {
        tags.entry(row.get(0)?).or_default().push(row.get(1)?);
    }
    Ok(tags)
}

/// Sets a session's note (`None` or empty: removes it), in the search index as the note's one
/// row. Refused over `label::MAX_NOTE_BYTES`.
pub(super) fn set_note(
    conn: &Connection,
    workspace: &Workspace,
    id: &SessionId,
    note: Option<&str>,
    now: SystemTime,
) -> QueryResult<()> {
    let note = note.filter(|note| !note.is_empty());
    if let Some(note) = note {
        label::check_note(id.as_str(), note)?;
    }
    let tx = write_transaction(conn)?;
    let key = match note {
        Some(_) => sessions::key(&tx, workspace, id, now)?,
        None => match sessions::existing_key(&tx, workspace, id)? {
            Some(key) => key,
            None => return Ok(()),
        },
    };
    search::unindex_note(&tx, key)?;
    tx.execute(
        "UPDATE sessions SET note = ?2, noted_at = ?3 WHERE key = ?1",
        params![key, note, note.map(|_| millis(now))],
    )?;
    if let Some(note) = note {
        search::index(&tx, search::Kind::Note, key, note)?;
    }
    tx.commit()?;
    Ok(())
}

/// A session's note, if it has one.
pub(super) fn note(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<Option<String>> {
    let Some(key) = sessions::existing_key(conn, workspace, id)? else {
        return Ok(None);
    };
    Ok(conn
        .query_row("SELECT note FROM sessions WHERE key = ?1", [key], |r| r.get(0))
        .optional()?
        .flatten())
}
