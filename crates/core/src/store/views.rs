//! Saved views (`saved_views`): the sessions table's filters (status, agent, tags, pinned, search
//! text) under a name, per workspace, and what a listing keeps through them.

use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::connection::{millis, timestamp, QueryResult};
use super::search::SearchHit;
use super::sessions::SessionRow;
use super::workspaces;
use crate::sessions::session::{Timestamp, Workspace};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::label::{self, Tag};

/// Which sessions a listing keeps: each filter set narrows it (all must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Filters {
    /// Only the sessions of this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub status: Option<Status>,
    /// Only the sessions of this agent (as the listing names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub agent: Option<String>,
    /// Only the sessions holding every one of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<String>>", optional))]
    pub tags: Vec<Tag>,
    /// Only the pinned sessions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub pinned: bool,
    /// Only the sessions a search for this text finds (among its first [`SEARCH_HITS`] hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub search: Option<String>,
}

/// How many hits of its search text a filter looks through for the sessions it keeps.
pub const SEARCH_HITS: usize = 5_000;

impl Filters {
    /// Whether `row` passes every filter but the search text (which needs the store).
    pub fn keeps(&self, row: &SessionRow) -> bool {
        self.status.is_none_or(|status| row.summary.status == status)
            && self
                .agent
                .as_deref()
                .is_none_or(|agent| row.summary.agent.as_deref() == Some(agent))
            && self
                .tags
                .iter()
                .all(|tag| row.tags.iter().any(|held| held == tag.as_str()))
            && (!self.pinned || row.pinned)
    }

    /// The rows of a listing that pass every filter, in their order; the search text keeps the
    /// sessions among the first [`SEARCH_HITS`] hits `search` answers for it (asked only when
    /// there is one: this store's search, or a remote workspace's).
    pub fn apply(
        &self,
        rows: Vec<SessionRow>,
        search: impl FnOnce(&str, usize) -> Result<Vec<SearchHit>, Error>,
    ) -> Result<Vec<SessionRow>, Error> {
        let found: Option<std::collections::HashSet<String>> = match self.search.as_deref() {
            Some(text) => Some(
                search(text, SEARCH_HITS)?
                    .into_iter()
                    .map(|hit| hit.session_id)
                    .collect(),
            ),
            None => None,
        };
        Ok(rows
            .into_iter()
            .filter(|row| self.keeps(row))
            .filter(|row| {
                found
                    .as_ref()
                    .is_none_or(|found| found.contains(row.summary.id.as_str()))
            })
            .collect())
    }
}

/// A saved view: its name, its filters, when it was saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SavedView {
    pub name: String,
    pub filters: Filters,
    pub saved_at: Timestamp,
}

/// Saves `filters` under `name` in the workspace (a view of that name is replaced).
pub(super) fn save(
    conn: &Connection,
    workspace: &Workspace,
    name: &str,
    filters: &Filters,
    now: SystemTime,
) -> QueryResult<()> {
    label::check_view_name(name)?;
    let key = workspaces::key(conn, workspace)?;
    let filters = serde_json::to_string(filters).map_err(|e| Error::InvalidRequest {
        reason: format!("view `{name}`: {e}"),
    })?;
    conn.execute(
        "INSERT INTO saved_views (workspace_id, name, filters, saved_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (workspace_id, name) DO UPDATE SET filters = ?3, saved_at = ?4",
        params![key, name, filters, millis(now)],
    )?;
    Ok(())
}

/// The saved views of a workspace, by name.
pub(super) fn list(conn: &Connection, workspace: &Workspace) -> QueryResult<Vec<SavedView>> {
    let Some(key) = workspaces::known_key(conn, workspace)? else {
        return Ok(Vec::new());
    };
    let mut statement =
        conn.prepare_cached("SELECT name, filters, saved_at FROM saved_views WHERE workspace_id = ?1 ORDER BY name")?;
    let rows = statement.query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let mut views = Vec::new();
    for row in rows {
        let (name, filters, saved_at): (String, String, i64) = row?;
        views.push(read_view(name, &filters, saved_at)?);
    }
    Ok(views)
}

/// The saved view `name` of a workspace; refused naming it when there is none.
pub(super) fn get(conn: &Connection, workspace: &Workspace, name: &str) -> QueryResult<SavedView> {
    let found: Option<(String, i64)> = match workspaces::known_key(conn, workspace)? {
        Some(key) => conn
            .query_row(
                "SELECT filters, saved_at FROM saved_views WHERE workspace_id = ?1 AND name = ?2",
                params![key, name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?,
        None => None,
    };
    let Some((filters, saved_at)) = found else {
        return Err(Error::ViewNotFound { name: name.to_owned() }.into());
    };
    read_view(name.to_owned(), &filters, saved_at)
}

/// Deletes the saved view `name`; refused naming it when there is none.
pub(super) fn delete(conn: &Connection, workspace: &Workspace, name: &str) -> QueryResult<()> {
    let deleted = match workspaces::known_key(conn, workspace)? {
        Some(key) => conn.execute(
            "DELETE FROM saved_views WHERE workspace_id = ?1 AND name = ?2",
            params![key, name],
        )?,
        None => 0,
    };
    if deleted == 0 {
        return Err(Error::ViewNotFound { name: name.to_owned() }.into());
    }
    Ok(())
}

fn read_view(name: String, filters: &str, saved_at: i64) -> QueryResult<SavedView> {
    let filters = serde_json::from_str(filters).map_err(|e| Error::InvalidRequest {
        reason: format!("saved view `{name}` does not read: {e}"),
    })?;
    Ok(SavedView {
        name,
        filters,
        saved_at: timestamp(saved_at),
    })
}
