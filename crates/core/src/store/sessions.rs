//! The `sessions` table: what the studio knows of a session beyond its folder (its key for the
//! other tables, pin, title, agent, where it was imported from, note), and deleting a session whole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::de::value::{CowStrDeserializer, MapAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::connection::{millis, timestamp, write_transaction, QueryResult};
use super::{folder_text, nodes_seen, search, workspaces};
use crate::sessions::session::{read_summary, SessionSummary, Timestamp, Workspace};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// A session as the studio lists it: what its folder says, and what the studio knows of it (its
/// `agent` and `title` are the summary's, named by `session_model::name_session`). Written as
/// one object, the summary's fields and its own; read back without a flattened field's tree of
/// values (`RowVisitor`: a remote workspace's listing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// Its tags, in the order they were added (`zstudio tag`).
    pub tags: Vec<String>,
    /// Whether it has a note (`zstudio note`; `show` gives its text).
    pub has_note: bool,
    /// Listed by a cloud workspace before its files are fetched: the id alone, its details to
    /// come (`app::cloud::CloudWorkspace::fetching`). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub fetching: bool,
}

// Reading a [`SessionRow`] without `#[serde(flatten)]`'s detour: a flattened field is read by
// first copying each row's every field into serde's own tree of values (10,000 rows' worth in
// a remote listing, most of the time it took to read). The row's own fields are taken out of
// its object as they come; every other field goes straight to the summary's own reading (so
// what it requires, defaults and ignores is the summary's).
impl<'de> Deserialize<'de> for SessionRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SessionRow, D::Error> {
        deserializer.deserialize_map(RowVisitor)
    }
}

/// The row's own fields, as they were met.
#[derive(Default)]
struct RowOwnFields {
    pinned: Option<bool>,
    pinned_at: Option<Option<Timestamp>>,
    messages: Option<i64>,
    live_run: Option<Option<String>>,
    tags: Option<Vec<String>>,
    has_note: Option<bool>,
    fetching: Option<bool>,
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = SessionRow;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session row (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SessionRow, A::Error> {
        let mut own = RowOwnFields::default();
        let summary = SessionSummary::deserialize(MapAccessDeserializer::new(SummaryFields { map, own: &mut own }))?;
        Ok(SessionRow {
            summary,
            pinned: own.pinned.ok_or_else(|| de::Error::missing_field("pinned"))?,
            pinned_at: own.pinned_at.flatten(),
            messages: own.messages.ok_or_else(|| de::Error::missing_field("messages"))?,
            live_run: own.live_run.flatten(),
            // A host from before tags lists none.
            tags: own.tags.unwrap_or_default(),
            has_note: own.has_note.unwrap_or(false),
            fetching: own.fetching.unwrap_or(false),
        })
    }
}

/// The row's object as the summary reads it: without the row's own fields, which are read
/// into `own` on the way.
struct SummaryFields<'a, A> {
    map: A,
    own: &'a mut RowOwnFields,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SummaryFields<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key::<FieldName<'de>>()? {
            let own = &mut *self.own;
            match key.0.as_ref() {
                "pinned" => own.pinned = Some(self.map.next_value()?),
                "pinned_at" => own.pinned_at = Some(self.map.next_value()?),
                "messages" => own.messages = Some(self.map.next_value()?),
                "live_run" => own.live_run = Some(self.map.next_value()?),
                "tags" => own.tags = Some(self.map.next_value()?),
                "has_note" => own.has_note = Some(self.map.next_value()?),
                "fetching" => own.fetching = Some(self.map.next_value()?),
                _ => return seed.deserialize(CowStrDeserializer::new(key.0)).map(Some),
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A field's name, borrowed from the input when it can be.
struct FieldName<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for FieldName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<FieldName<'de>, D::Error> {
        deserializer.deserialize_str(FieldNameVisitor)
    }
}

struct FieldNameVisitor;

impl<'de> Visitor<'de> for FieldNameVisitor {
    type Value = FieldName<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<FieldName<'de>, E> {
        Ok(FieldName(Cow::Borrowed(name)))
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<FieldName<'de>, E> {
        Ok(FieldName(Cow::Owned(name.to_owned())))
    }

    fn visit_string<E: de::Error>(self, name: String) -> Result<FieldName<'de>, E> {
        Ok(FieldName(Cow::Owned(name)))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pin {
    pub session_id: String,
    pub pinned_at: Timestamp,
}

/// What the store knows of a session for its row: pinned time, title (the beginning of its first
/// prompt), agent, message count, whether it has a note.
pub(super) type SessionFacts = (Option<i64>, Option<String>, Option<String>, i64, bool);

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
                        (SELECT count(*) FROM messages m WHERE m.session_key = s.key), s.note IS NOT NULL
                 FROM sessions s JOIN workspaces w ON w.id = s.workspace_id WHERE w.root = ?1",
    )?;
    let rows = statement.query_map([workspace.root().to_string_lossy()], |r| {
        Ok((
            r.get::<_, String>(0)?,
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
        ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// How a row was read before: the summary as a flattened field.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Flattened {
        #[serde(flatten)]
        summary: SessionSummary,
        pinned: bool,
        pinned_at: Option<Timestamp>,
        messages: i64,
        live_run: Option<String>,
    }

    fn summary_fields() -> serde_json::Map<String, Value> {
        let summary = json!({
            "id": "1795000000000_0001",
            "path": "/w/.zibby/output/sessions/1795000000000_0001",
            "agent": "plan \"quoted\"",
            "title": "a title",
            "status": "success",
            "current_node": null,
            "created_at": "2026-11-29T12:00:00.000Z",
            "updated_at": "2026-11-29T12:00:01.000Z",
            "nodes": [],
            "problems": [],
            "usage": null
        });
        summary.as_object().unwrap().clone()
    }

    /// `row` as text, its fields in the order given.
    fn text(fields: &[(&str, Value)]) -> String {
        let fields: Vec<String> = fields
            .iter()
            .map(|(name, value)| format!("{}:{value}", json!(name)))
            .collect();
        format!("{{{}}}", fields.join(","))
    }

    fn both(text: &str) -> (Result<SessionRow, String>, Result<Flattened, String>) {
        (
            serde_json::from_str::<SessionRow>(text).map_err(|e| e.to_string()),
            serde_json::from_str::<Flattened>(text).map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn a_row_reads_as_its_flattened_reading_did_its_fields_in_any_order() {
        let own = [
            ("pinned", json!(true)),
            ("pinned_at", json!("2026-11-30T08:00:00.000Z")),
            ("messages", json!(3)),
            ("live_run", json!("run-1")),
        ];
        let summary: Vec<(&str, Value)> = summary_fields()
            .into_iter()
            .map(|(k, v)| (&*Box::leak(k.into_boxed_str()), v))
            .collect();
        let mut orders = vec![
            summary.iter().chain(&own).cloned().collect::<Vec<_>>(),
            own.iter().chain(&summary).cloned().collect(),
        ];
        // The row's fields among the summary's, and an unknown field (ignored by both).
        let mut mixed = summary.clone();
        for (at, field) in own.iter().enumerate() {
            mixed.insert(at * 3 + 1, field.clone());
        }
        mixed.push(("from_a_newer_server", json!({"x": [1]})));
        orders.push(mixed);
        // The row's optional fields absent, or null.
        orders.push(
            summary
                .iter()
                .cloned()
                .chain([own[0].clone(), own[2].clone()])
                .collect(),
        );
        orders.push(
            summary
                .iter()
                .cloned()
                .chain([
                    own[0].clone(),
                    ("pinned_at", Value::Null),
                    own[2].clone(),
                    ("live_run", Value::Null),
                ])
                .collect(),
        );
        for fields in &orders {
            let text = text(fields);
            let (row, flattened) = both(&text);
            let (row, flattened) = (row.unwrap(), flattened.unwrap());
            assert_eq!(
                (&row.summary, row.pinned, row.pinned_at, row.messages, &row.live_run),
                (
                    &flattened.summary,
                    flattened.pinned,
                    flattened.pinned_at,
                    flattened.messages,
                    &flattened.live_run
                ),
                "{text}"
            );
            // Written back and read again, the same row.
            let again: SessionRow = serde_json::from_slice(&serde_json::to_vec(&row).unwrap()).unwrap();
            assert_eq!(again, row);
        }
    }

    #[test]
    fn a_row_missing_a_field_it_requires_is_refused_naming_it() {
        let summary: Vec<(&str, Value)> = summary_fields()
            .into_iter()
            .map(|(k, v)| (&*Box::leak(k.into_boxed_str()), v))
            .collect();
        let own = [("pinned", json!(false)), ("messages", json!(0))];
        for missing in ["pinned", "messages", "status", "updated_at"] {
            let fields: Vec<(&str, Value)> = summary
                .iter()
                .chain(&own)
                .filter(|(name, _)| *name != missing)
                .cloned()
                .collect();
            let (row, flattened) = both(&text(&fields));
            let error = row.unwrap_err();
            assert!(error.contains(&format!("missing field `{missing}`")), "{error}");
            assert!(flattened.is_err());
        }
        let (row, _) = both(r#"{"pinned": "yes"}"#);
        assert!(row.unwrap_err().contains("invalid type"));
        assert!(serde_json::from_str::<SessionRow>("[1]").is_err());
    }
}
