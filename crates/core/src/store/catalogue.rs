//! The catalogue: a workspace's listing read from the folder index (`index`) a page at a time, in
//! the listing's own order (pinned sessions first, most recently pinned first, then most recently
//! updated first, the later id first), through the index `folder_index_by_recency`: a page of 50
//! reads and checks 50 index rows and their folders, whatever the history. What the store lays
//! over them (runs, pins, tags, printed usage: `index::Overlay`) is still read for the whole
//! workspace on each page: it grows with the studio's own records, not with the folders; but the
//! nodes a watch saw (`nodes_seen`, a row for each session a watch saw change, which grows with
//! the history) are read for the page's rows only.
//!
//! # How fresh a page is
//!
//! The index is kept current by every full listing and, while a studio watches, by its watcher
//! (`index::keeping_current`). Behind it, before a page is cut:
//!
//! - **Folders added or removed** are found by the sessions folder's own time (one `stat`): a
//!   folder made or removed in it changes that time. While it is the one recorded when every name
//!   was last compared with the index (`index::names_stamp`), no name came or went; else one
//!   `readdir` of the names (no `stat` of the folders) is compared with the index, new folders
//!   are read and placed, removed ones dropped.
//! - **`running` sessions**, wherever they are in the listing, are read again (their status
//!   depends on the clock, and a live session moves up as it writes): a few, not the history.
//! - **The page's own rows** are checked by their fingerprints (the `stat`s of what a summary is
//!   read from, `session::fingerprint`); a changed folder is read again, and when that moved it
//!   the page is cut again (at most 3 times, `RECUTS`).
//!
//! What a page does not see: a session outside the page, recorded as ended, whose files changed
//! in place while no studio watched (an engine resuming an old session with no studio open). It
//! keeps its recorded place until a full listing (`zstudio sessions` without `--limit`, the
//! window's reconciling behind its first screen) or the watcher reads it.
//!
//! `stream` is the full listing a chunk at a time: every name compared, every row's
//! fingerprint checked, in the order the catalogue had when it began (a row read again because
//! it changed is given as it is now, in that place; the next listing places it by its new time).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{write_transaction, QueryResult, Store};
use super::index::{self, Cached, NodeDetail, Overlay};
use super::sessions::SessionRow;
use super::workspaces;
use crate::sessions::cost::UsageTotal;
use crate::sessions::session::{self, SessionSummary, Workspace};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// How many times a page is cut again when reading its changed rows moved them.
const RECUTS: usize = 3;

/// An index row as a page reads it: its session id, its place (`updated_at`), its entry.
type Entry = (String, i64, Cached);

/// The page of `workspace`'s listing from `offset`, at most `limit` rows (see the module doc for
/// what is checked against the folders first).
pub(super) fn page(
    store: &Store,
    workspace: &Workspace,
    now: SystemTime,
    detail: NodeDetail,
    offset: usize,
    limit: usize,
) -> Result<Vec<SessionRow>, Error> {
    let key = store.with_conn(|conn| workspaces::key(conn, workspace))?;
    reconcile_names(store, workspace, key, now, false)?;
    let running = store.with_conn(|conn| running_entries(conn, key))?;
    check(store, workspace, key, running, now)?;
    let mut summaries = Vec::new();
    for _ in 0..RECUTS {
        let entries = store.with_conn(|conn| entries_in_order(conn, key, offset, limit))?;
        let (checked, moved) = check(store, workspace, key, entries, now)?;
        summaries = checked;
        if !moved {
            break;
        }
    }
    let ids: Vec<&str> = summaries.iter().map(|summary| summary.id.as_str()).collect();
    let mut overlay = Overlay::load_for(store, workspace, &ids)?;
    Ok(overlay.rows(summaries, detail))
}

/// The whole listing of `workspace`, given to `emit` `chunk` rows at a time in the listing's
/// order: every name compared with the index first (one `readdir`), then each chunk's folders
/// checked by their fingerprints and read again where they changed, as it is given. The first
/// rows are out before the last folder is looked at.
pub(super) fn stream(
    store: &Store,
    workspace: &Workspace,
    now: SystemTime,
    detail: NodeDetail,
    chunk: usize,
    mut emit: impl FnMut(Vec<SessionRow>) -> Result<(), Error>,
) -> Result<(), Error> {
    let key = store.with_conn(|conn| workspaces::key(conn, workspace))?;
    reconcile_names(store, workspace, key, now, true)?;
    let order = store.with_conn(|conn| ids_in_order(conn, key))?;
    let mut overlay = Overlay::load(store, workspace)?;
    for ids in order.chunks(chunk.max(1)) {
        let entries = store.with_conn(|conn| entries_by_id(conn, key, ids))?;
        let (summaries, _) = check(store, workspace, key, entries, now)?;
        emit(overlay.rows(summaries, detail))?;
    }
    Ok(())
}

/// A page of the catalogue of `workspace` as the store last saw its folders, in the listing's
/// order, from `offset`, at most `limit` rows: no folder read but the `running` sessions' (read
/// again: their status depends on the clock). The window's pages while a watcher reconciles the
/// index behind them (the watcher, seeded with the same index, `index::indexed_folders`, reads
/// each folder that differs and reports it). Each row's folder is looked at (its fingerprint's
/// `stat`s, no file opened; not when `look` is false): the ids of the rows whose folder differs
/// from the catalogue (or went) are given apart, `checking`, until the watcher read them. A row whose summary cannot be read
/// back is left out (the watcher reads its folder and reports it). Empty when the store never
/// listed the workspace.
pub(super) fn recorded_page(
    store: &Store,
    workspace: &Workspace,
    now: SystemTime,
    detail: NodeDetail,
    (offset, limit): (usize, usize),
    look: bool,
) -> Result<RecordedPage, Error> {
    let key = store.with_conn(|conn| workspaces::key(conn, workspace))?;
    let running = store.with_conn(|conn| running_entries(conn, key))?;
    check(store, workspace, key, running, now)?;
    let entries = store.with_conn(|conn| entries_in_order(conn, key, offset, limit))?;
    let differs = session::in_parallel(&entries, |(id, _, cached)| {
        let Ok(id) = SessionId::parse(id) else { return Ok(false) };
        if !look {
            return Ok(false);
        }
        let print = session::fingerprint(&workspace.session_path(&id), Some(&cached.fingerprint));
        Ok(print.as_deref() != Some(cached.fingerprint.as_str()))
    })?;
    let checking = entries
        .iter()
        .zip(differs)
        .filter(|(_, differs)| *differs)
        .map(|((id, _, _), _)| id.clone())
        .collect();
    let summaries = entries
        .iter()
        .filter_map(|(_, _, cached)| index::from_cache(cached))
        .collect();
    let ids: Vec<&str> = entries.iter().map(|(id, _, _)| id.as_str()).collect();
    let rows = Overlay::load_for(store, workspace, &ids)?.rows(summaries, detail);
    Ok(RecordedPage { rows, checking })
}

/// A page of the catalogue as recorded (`recorded_page`).
pub struct RecordedPage {
    pub rows: Vec<SessionRow>,
    /// The ids of its rows whose folder differs from the catalogue (being checked).
    pub checking: Vec<String>,
}

/// What all of `workspace`'s sessions in the catalogue cost (`index::usage_of_sessions` over
/// them), without making their rows: each session's own total and node count are taken from its
/// summary by the database (no summary parsed here), but for the sessions the store's word is
/// laid over (a session the studio ran, or whose nodes printed their usage), whose rows are made
/// as the listing makes them.
pub(super) fn usage(store: &Store, workspace: &Workspace) -> Result<Option<UsageTotal>, Error> {
    // The nodes a watch saw, of the sessions laid over only (the rows made here).
    let mut overlay = Overlay::load_for(store, workspace, &[])?;
    let laid_over: HashSet<String> = overlay.laid_over().into_iter().map(str::to_owned).collect();
    // In the listing's order, so that the sum is the listing's to the last bit.
    let (totals, laid_over_entries) = store.with_conn(|conn| {
        let Some(key) = workspaces::known_key(conn, workspace)? else {
            return Ok((Vec::new(), Vec::new()));
        };
        let mut statement = conn.prepare_cached(
            "SELECT f.session_id, json_array_length(f.summary, '$.nodes'), json_extract(f.summary, '$.usage')
             FROM folder_index f
                 LEFT JOIN sessions s ON s.workspace_id = f.workspace_id AND s.session_id = f.session_id
             WHERE f.workspace_id = ?1
             ORDER BY s.pinned_at IS NULL, s.pinned_at DESC, f.updated_at DESC, f.session_id DESC",
        )?;
        let rows = statement.query_map([key], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })?;
        let mut totals = Vec::new();
        let mut ids = Vec::new();
        for row in rows {
            let (id, nodes, usage) = row?;
            if laid_over.contains(&id) {
                ids.push(id.clone());
                totals.push((id, None));
            } else {
                let usage = usage.and_then(|json| serde_json::from_str::<UsageTotal>(&json).ok());
                totals.push((id, Some((nodes.unwrap_or(0) as usize, usage))));
            }
        }
        Ok((totals, entries_by_id(conn, key, &ids)?))
    })?;
    let ids: Vec<&str> = laid_over_entries.iter().map(|(id, _, _)| id.as_str()).collect();
    overlay.see(store, workspace, &ids)?;
    let summaries = laid_over_entries
        .iter()
        .filter_map(|(_, _, cached)| index::from_cache(cached))
        .collect();
    let made: HashMap<String, (usize, Option<UsageTotal>)> = overlay
        .rows(summaries, NodeDetail::TotalsOnly)
        .into_iter()
        .map(|row| (row.summary.id.to_string(), (row.summary.nodes.len(), row.summary.usage)))
        .collect();
    Ok(UsageTotal::sum(totals.iter().filter_map(|(id, read)| {
        let (nodes, usage) = read.as_ref().or_else(|| made.get(id))?;
        Some((*nodes, usage.as_ref()))
    })))
}

/// A first launch's catalogue of `workspace` (the index holds none of its folders), made newest
/// first: the sessions folder's names (one `readdir`, its stamp taken before), by id, the newest
/// first (an id begins with its creation time); `first` folders read and stored, then `chunk` at
/// a time, `each` told after each with how many folders there are; the names stamp recorded at
/// the end (every name was compared). After the first, each chunk is read on a thread of its own
/// while the one before it is stored, so that the folders' reading never waits for SQLite.
pub(super) fn fill(
    store: &Store,
    workspace: &Workspace,
    now: SystemTime,
    (first, chunk): (usize, usize),
    mut each: impl FnMut(usize),
) -> Result<(), Error> {
    let key = store.with_conn(|conn| workspaces::key(conn, workspace))?;
    let stamp = index::names_stamp(workspace)?;
    let mut folders = session::session_folders(workspace)?;
    folders.sort_by(|a, b| b.1.as_str().cmp(a.1.as_str()));
    let held = index::hold_sessions_folder(workspace)?;
    let read = |part: &[(PathBuf, SessionId)]| {
        session::in_parallel(part, |(path, id)| {
            index::read_through(path, held.as_ref(), id, None, now)
        })
    };
    let mut store_part = |read: Vec<Option<index::Listed>>| {
        store.with_conn(|conn| {
            let tx = write_transaction(conn)?;
            for listed in read.into_iter().flatten() {
                if let Some(print) = &listed.fresh {
                    index::store_summary(&tx, key, &listed.summary, print)?;
                }
            }
            Ok(tx.commit()?)
        })?;
        each(folders.len());
        Ok::<(), Error>(())
    };
    // The first page's folders, alone: nothing else read meanwhile.
    let (page, rest) = folders.split_at(first.min(folders.len()));
    store_part(read(page)?)?;
    std::thread::scope(|scope| {
        let (sender, read_parts) = std::sync::mpsc::sync_channel(1);
        let read = &read;
        scope.spawn(move || {
            for part in rest.chunks(chunk.max(1)) {
                // The receiver gone (an error storing the one before): nothing more to read.
                if sender.send(read(part)).is_err() {
                    break;
                }
            }
        });
        read_parts.into_iter().try_for_each(|part| store_part(part?))
    })?;
    store.with_conn(|conn| index::record_names_stamp(conn, key, stamp.as_ref()))
}

/// Whether the catalogue holds any session of `workspace` (else a listing reads every folder).
pub(super) fn holds(store: &Store, workspace: &Workspace) -> Result<bool, Error> {
    store.with_conn(|conn| {
        let Some(key) = workspaces::known_key(conn, workspace)? else {
            return Ok(false);
        };
        Ok(conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM folder_index WHERE workspace_id = ?1)")?
            .query_row([key], |r| r.get(0))?)
    })
}

/// How many sessions the catalogue holds for `workspace` (as the last page or listing left it):
/// the count its triggers keep (`folder_counts`), one row read whatever the history.
pub(super) fn len(store: &Store, workspace: &Workspace) -> Result<usize, Error> {
    store.with_conn(|conn| {
        let Some(key) = workspaces::known_key(conn, workspace)? else {
            return Ok(0);
        };
        let count: Option<i64> = conn
            .prepare_cached("SELECT sessions FROM folder_counts WHERE workspace_id = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?;
        Ok(count.unwrap_or(0).max(0) as usize)
    })
}

/// Compares the sessions folder's names with the index unless its stamp says none came or went
/// since they last were (`force`: compares them anyway): new folders are read and stored, the
/// rows of folders gone dropped.
fn reconcile_names(store: &Store, workspace: &Workspace, key: i64, now: SystemTime, force: bool) -> Result<(), Error> {
    let stamp = index::names_stamp(workspace)?;
    if !force && stamp.is_some() {
        let recorded: Option<String> = store.with_conn(|conn| {
            Ok(conn
                .prepare_cached("SELECT stamp FROM folder_names WHERE workspace_id = ?1")?
                .query_row([key], |r| r.get(0))
                .optional()?)
        })?;
        if recorded == stamp {
            return Ok(());
        }
    }
    let folders = session::session_folders(workspace)?;
    let known: HashSet<String> = store.with_conn(|conn| {
        let mut statement = conn.prepare_cached("SELECT session_id FROM folder_index WHERE workspace_id = ?1")?;
        let ids = statement.query_map([key], |r| r.get::<_, String>(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    })?;
    let names: HashSet<&str> = folders.iter().map(|(_, id)| id.as_str()).collect();
    let new: Vec<_> = folders.iter().filter(|(_, id)| !known.contains(id.as_str())).collect();
    let held = index::hold_sessions_folder(workspace)?;
    let read = session::in_parallel(&new, |(path, id)| {
        index::read_through(path, held.as_ref(), id, None, now)
    })?;
    store.with_conn(|conn| {
        let tx = write_transaction(conn)?;
        for listed in read.into_iter().flatten() {
            if let Some(print) = &listed.fresh {
                index::store_summary(&tx, key, &listed.summary, print)?;
            }
        }
        for gone in known.iter().filter(|id| !names.contains(id.as_str())) {
            index::forget_row(&tx, key, gone)?;
        }
        index::record_names_stamp(&tx, key, stamp.as_ref())?;
        Ok(tx.commit()?)
    })
}

/// The summaries of `entries`, in their order, each checked against its folder
/// (`index::read_through`): read again and stored where it changed or is `running`, its row
/// dropped where its folder went. Also whether that moved any of them in the listing.
fn check(
    store: &Store,
    workspace: &Workspace,
    key: i64,
    entries: Vec<Entry>,
    now: SystemTime,
) -> Result<(Vec<SessionSummary>, bool), Error> {
    let entries: Vec<(SessionId, i64, Cached)> = entries
        .into_iter()
        .filter_map(|(id, updated_at, cached)| Some((SessionId::parse(&id).ok()?, updated_at, cached)))
        .collect();
    let held = index::hold_sessions_folder(workspace)?;
    let read = session::in_parallel(&entries, |(id, _, cached)| {
        index::read_through(&workspace.session_path(id), held.as_ref(), id, Some(cached), now)
    })?;
    let mut moved = false;
    let mut summaries = Vec::with_capacity(read.len());
    store.with_conn(|conn| {
        let tx = write_transaction(conn)?;
        for ((id, updated_at, _), listed) in entries.iter().zip(read) {
            let Some(listed) = listed else {
                index::forget_row(&tx, key, id.as_str())?;
                moved = true;
                continue;
            };
            if let Some(print) = &listed.fresh {
                index::store_summary(&tx, key, &listed.summary, print)?;
                moved |= listed.summary.updated_at.0 as i64 != *updated_at;
            }
            summaries.push(listed.summary);
        }
        Ok(tx.commit()?)
    })?;
    Ok((summaries, moved))
}

/// The columns an [`Entry`] is read from, `f` the folder index.
const ENTRY: &str = "f.session_id, f.updated_at, f.fingerprint, f.summary, f.node_usage";

fn entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        Cached {
            fingerprint: r.get(2)?,
            summary: r.get(3)?,
            node_usage: r.get(4)?,
        },
    ))
}

/// The listing's pinned part (`columns` of each row): most recently pinned first, then as the
/// rest. Pins are few: read whole.
fn pinned<T>(
    conn: &Connection,
    key: i64,
    columns: &str,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> QueryResult<Vec<T>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {columns} FROM folder_index f
             JOIN sessions s ON s.workspace_id = f.workspace_id AND s.session_id = f.session_id
         WHERE f.workspace_id = ?1 AND s.pinned_at IS NOT NULL
         ORDER BY s.pinned_at DESC, f.updated_at DESC, f.session_id DESC"
    ))?;
    let rows = statement.query_map([key], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The listing's unpinned part from `offset`, at most `limit` rows (`-1`: all), most recently
/// updated first, through the index `folder_index_by_recency`.
fn unpinned<T>(
    conn: &Connection,
    key: i64,
    columns: &str,
    (offset, limit): (i64, i64),
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> QueryResult<Vec<T>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {columns} FROM folder_index f
         WHERE f.workspace_id = ?1 AND NOT EXISTS (
             SELECT 1 FROM sessions s
             WHERE s.workspace_id = ?1 AND s.session_id = f.session_id AND s.pinned_at IS NOT NULL)
         ORDER BY f.updated_at DESC, f.session_id DESC LIMIT ?2 OFFSET ?3"
    ))?;
    let rows = statement.query_map(params![key, limit, offset], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The index's rows from `offset` in the listing's order, at most `limit`.
fn entries_in_order(conn: &Connection, key: i64, offset: usize, limit: usize) -> QueryResult<Vec<Entry>> {
    let pinned = pinned(conn, key, ENTRY, entry)?;
    let pins = pinned.len();
    let mut rows: Vec<Entry> = pinned.into_iter().skip(offset).take(limit).collect();
    let wanted = limit - rows.len();
    if wanted > 0 {
        let from = offset.saturating_sub(pins);
        rows.extend(unpinned(conn, key, ENTRY, (from as i64, wanted as i64), entry)?);
    }
    Ok(rows)
}

/// Every session id of the index, in the listing's order.
fn ids_in_order(conn: &Connection, key: i64) -> QueryResult<Vec<String>> {
    let id = |r: &rusqlite::Row<'_>| r.get::<_, String>(0);
    let mut ids = pinned(conn, key, "f.session_id", id)?;
    ids.extend(unpinned(conn, key, "f.session_id", (0, -1), id)?);
    Ok(ids)
}

/// The index's rows of `ids`, in their order (an id no longer there is left out).
fn entries_by_id(conn: &Connection, key: i64, ids: &[String]) -> QueryResult<Vec<Entry>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {ENTRY} FROM folder_index f WHERE f.workspace_id = ?1 AND f.session_id = ?2"
    ))?;
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(row) = statement.query_row(params![key, id], entry).optional()? {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The rows recorded `running` (read again by every page: see the module doc).
fn running_entries(conn: &Connection, key: i64) -> QueryResult<Vec<Entry>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {ENTRY} FROM folder_index f WHERE f.workspace_id = ?1 AND f.running = 1"
    ))?;
    let rows = statement.query_map([key], entry)?;
    Ok(rows.collect::<Result<_, _>>()?)
}
