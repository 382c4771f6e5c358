//! The folder index: a workspace's listing through the store, so that sessions whose folders did
//! not change are not read again.
//!
//! A folder's fingerprint is the modification time and size of what a summary is read from (the
//! folder itself, its `nodes/` folder, `.session-info.json`, `result.json`, `events.json`, and
//! each node's `raw_stream_output.txt`, which its usage is read from). A
//! cached summary is used while the fingerprint holds, except for `running` sessions, which are
//! read again each time (their status depends on how long they have been quiet).
//!
//! The index keeps a summary without its nodes' usage objects, and those apart (`node_usage`: a
//! slot per node), so that a listing of totals only ([`NodeDetail::TotalsOnly`], the window's
//! table) does not parse three times the bytes it shows: a session's own total is in its summary.

use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

use rusqlite::{params, Connection};

use super::connection::{timestamp, write_transaction, QueryResult, Store};
use super::sessions::SessionRow;
use super::{nodes_seen, output_usage, runs, session_model, sessions, spans, tags, workspaces};
use crate::sessions::change::{Change, ChangeSink};
use crate::sessions::cost::{NodeUsage, UsageTotal};
use crate::sessions::session::{self, SessionSummary, Workspace};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// How much of each node a listing gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeDetail {
    /// Each node with its usage object (`zstudio sessions --json`).
    WithUsage,
    /// The sessions' totals, their nodes without their usage (the window's table): a session's
    /// nodes' usage is read only where the store's word is laid over it (a session the studio
    /// ran, or whose nodes printed their usage on stdout), which makes its total again.
    TotalsOnly,
}

/// The listing of a workspace through the index (a session whose folder did not change is not
/// read again), with as much of each node as `detail` says: pinned sessions first, most recently
/// pinned first, then most recently updated first. A session the studio runs or ran is `running`
/// while its run lives, and takes its last run's status when its files cannot tell.
pub(super) fn listing(
    store: &Store,
    workspace: &Workspace,
    now: SystemTime,
    detail: NodeDetail,
) -> Result<Vec<SessionRow>, Error> {
    let runs = store.with_conn(|conn| runs::last_of_each_session(conn, workspace))?;
    let printed = store.with_conn(|conn| output_usage::of_sessions(conn, workspace, None))?;
    let laid_over: HashSet<&str> = runs
        .iter()
        .map(|run| run.session_id.as_str())
        .chain(printed.keys().map(String::as_str))
        .collect();
    let node_usage = match detail {
        NodeDetail::WithUsage => NodeUsageOf::Every,
        NodeDetail::TotalsOnly => NodeUsageOf::These(&laid_over),
    };
    let mut sessions = list(store, workspace, now, node_usage)?;
    let mut seen = store.with_conn(|conn| nodes_seen::of_workspace(conn, workspace))?;
    for summary in &mut sessions {
        session_model::with_nodes_seen(summary, seen.remove(summary.id.as_str()));
    }
    let last_runs: Vec<session_model::LastRun<'_>> = runs.iter().map(session_model::LastRun::from).collect();
    let mut spans = store.with_conn(|conn| spans::last_runs_nodes(conn, workspace))?;
    session_model::with_recorded_runs(sessions.iter_mut(), &last_runs, |run_id| {
        spans.remove(run_id).unwrap_or_default()
    });
    for summary in &mut sessions {
        session_model::with_printed_usage(summary, printed.get(summary.id.as_str()));
    }
    let live_runs: HashMap<&str, &str> = runs
        .iter()
        .filter(|run| run.status == Status::Running)
        .map(|run| (run.session_id.as_str(), run.id.as_str()))
        .collect();
    let mut facts = store.with_conn(|conn| sessions::facts(conn, workspace))?;
    let mut tags = store.with_conn(|conn| tags::of_workspace(conn, workspace))?;
    let mut rows: Vec<SessionRow> = sessions
        .into_iter()
        .map(|mut summary| {
            let (pinned_at, title, agent, messages, has_note) = facts.remove(summary.id.as_str()).unwrap_or_default();
            let tags = tags.remove(summary.id.as_str()).unwrap_or_default();
            session_model::name_session(&mut summary, title, agent);
            let live_run = live_runs.get(summary.id.as_str()).map(|id| (*id).to_owned());
            SessionRow {
                summary,
                pinned: pinned_at.is_some(),
                pinned_at: pinned_at.map(timestamp),
                messages,
                live_run,
                tags,
                has_note,
                fetching: false,
            }
        })
        .collect();
    // A stable sort keeps the most-recent-first order within each group.
    rows.sort_by_key(|row| std::cmp::Reverse(row.pinned_at));
    Ok(rows)
}

/// What the sessions listed cost in all: the total over every node of every one of them
/// (`cost::UsageTotal::sum` of their totals: a lower bound, saying so, when some node has no
/// cost); `None` when no node has usage. The window's Sessions header and `zstudio sessions`
/// give it.
pub fn usage_of_sessions(rows: &[SessionRow]) -> Option<UsageTotal> {
    UsageTotal::sum(
        rows.iter()
            .map(|row| (row.summary.nodes.len(), row.summary.usage.as_ref())),
    )
}

struct Cached {
    fingerprint: String,
    summary: String,
    /// Its nodes' usage objects, a slot per node; `None` when no node has usage.
    node_usage: Option<String>,
}

/// A summary as the index keeps it: without its nodes' usage, and that apart (a slot per node,
/// `None` when no node has any).
fn cached_columns(summary: &SessionSummary) -> (String, Option<String>) {
    let usage: Vec<Option<&NodeUsage>> = summary.nodes.iter().map(|node| node.usage.as_ref()).collect();
    let mut bare = summary.clone();
    for node in &mut bare.nodes {
        node.usage = None;
    }
    let summary = serde_json::to_string(&bare).expect("summaries serialise");
    let usage = usage
        .iter()
        .any(Option::is_some)
        .then(|| serde_json::to_string(&usage).expect("usage objects serialise"));
    (summary, usage)
}

/// A cached summary, with its nodes' usage when the index read it (see [`list`]); `None` when
/// the cache cannot be read (the folder is read again).
fn from_cache(entry: &Cached) -> Option<SessionSummary> {
    let mut summary = serde_json::from_str::<SessionSummary>(&entry.summary).ok()?;
    if let Some(json) = &entry.node_usage {
        let usage: Vec<Option<NodeUsage>> = serde_json::from_str(json).ok()?;
        if usage.len() != summary.nodes.len() {
            return None;
        }
        for (node, usage) in summary.nodes.iter_mut().zip(usage) {
            node.usage = usage;
        }
    }
    Some(summary)
}

/// Whose nodes' usage a listing reads from the index.
pub(crate) enum NodeUsageOf<'a> {
    Every,
    /// These sessions' only (by id).
    These(&'a HashSet<&'a str>),
}

/// The summaries of a workspace's sessions through the index, with their nodes' usage for the
/// sessions `node_usage` says (a summary read afresh always has it). The others' is not even
/// read from the database.
pub(crate) fn list(
    store: &Store,
    workspace: &Workspace,
    now: SystemTime,
    node_usage: NodeUsageOf<'_>,
) -> Result<Vec<SessionSummary>, Error> {
    let (workspace_key, mut cached) = store.with_conn(|conn| {
        let workspace_key = workspaces::key(conn, workspace)?;
        let cached: HashMap<String, Cached> = cached_rows(conn, workspace_key, node_usage)?.into_iter().collect();
        Ok((workspace_key, cached))
    })?;

    let folders = session::session_folders(workspace)?;
    let results = session::in_parallel(&folders, |(path, id)| -> Result<Option<Listed>, Error> {
        let cached_entry = cached.get(id.as_str());
        let Some(print) = session::fingerprint(path, cached_entry.map(|c| c.fingerprint.as_str())) else {
            return Ok(None); // deleted since the folder was listed
        };
        if let Some(entry) = cached_entry {
            if entry.fingerprint == print {
                if let Some(summary) = from_cache(entry) {
                    if summary.status != Status::Running {
                        return Ok(Some(Listed { summary, fresh: None }));
                    }
                }
            }
        }
        // A changed folder may have new nodes, whose raw streams the fingerprint made from the
        // previous one did not look at: the one stored is made afresh.
        let print = match cached_entry {
            Some(_) => match session::fingerprint(path, None) {
                Some(print) => print,
                None => return Ok(None),
            },
            None => print,
        };
        Ok(session::read_summary(path, id, now).map(|summary| Listed {
            summary,
            fresh: Some(print),
        }))
    })?;

    let mut sessions = Vec::with_capacity(results.len());
    store.with_conn(|conn| {
        let tx = write_transaction(conn)?;
        {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO folder_index (workspace_id, session_id, fingerprint, summary, node_usage)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (workspace_id, session_id) DO UPDATE SET fingerprint = ?3, summary = ?4, node_usage = ?5",
            )?;
            for listed in results.into_iter().flatten() {
                if let Some(print) = &listed.fresh {
                    let (json, node_usage) = cached_columns(&listed.summary);
                    upsert.execute(params![
                        workspace_key,
                        listed.summary.id.as_str(),
                        print,
                        json,
                        node_usage
                    ])?;
                }
                cached.remove(listed.summary.id.as_str());
                sessions.push(listed.summary);
            }
            let mut forget =
                tx.prepare_cached("DELETE FROM folder_index WHERE workspace_id = ?1 AND session_id = ?2")?;
            for gone in cached.keys() {
                forget.execute(params![workspace_key, gone])?;
            }
        }
        Ok(tx.commit()?)
    })?;
    session::sort_most_recent_first(&mut sessions);
    Ok(sessions)
}

struct Listed {
    summary: SessionSummary,
    /// The fingerprint to store, when the summary was read afresh.
    fresh: Option<String>,
}

/// A session folder as the folder index last saw it: its fingerprint, and the summary read then
/// (its nodes' usage included).
#[derive(Debug, Clone)]
pub struct IndexedFolder {
    pub fingerprint: String,
    pub summary: SessionSummary,
}

/// What the folder index knows of a workspace's session folders, by session: what a watcher
/// starts from instead of reading every folder again (`watcher::Watcher::start_seeded`). An entry
/// whose summary cannot be read back is left out (its folder is read again).
pub fn indexed_folders(store: &Store, workspace: &Workspace) -> Result<HashMap<SessionId, IndexedFolder>, Error> {
    let entries = store.with_conn(|conn| {
        let key = workspaces::key(conn, workspace)?;
        cached_rows(conn, key, NodeUsageOf::Every)
    })?;
    Ok(entries
        .into_iter()
        .filter_map(|(id, entry)| {
            let id = SessionId::parse(&id).ok()?;
            let summary = from_cache(&entry)?;
            Some((
                id,
                IndexedFolder {
                    fingerprint: entry.fingerprint,
                    summary,
                },
            ))
        })
        .collect())
}

/// The folder index's rows of a workspace, by session id, with the node usage of the sessions
/// `node_usage` names (`None` for the others).
fn cached_rows(
    conn: &Connection,
    workspace_key: i64,
    node_usage: NodeUsageOf<'_>,
) -> QueryResult<Vec<(String, Cached)>> {
    let mut statement = conn.prepare_cached(
        "SELECT session_id, fingerprint, summary,
                    CASE WHEN ?2 IS NULL OR session_id IN (SELECT value FROM json_each(?2)) THEN node_usage END
             FROM folder_index WHERE workspace_id = ?1",
    )?;
    let wanted = match node_usage {
        NodeUsageOf::Every => None,
        NodeUsageOf::These(ids) => Some(serde_json::to_string(ids).expect("ids serialise")),
    };
    let rows = statement.query_map(params![workspace_key, wanted], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Cached {
                fingerprint: r.get(1)?,
                summary: r.get(2)?,
                node_usage: r.get(3)?,
            },
        ))
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// Drops one session from the index (its folder changed in a way the caller knows about).
pub fn forget(store: &Store, workspace: &Workspace, id: &SessionId) -> Result<(), Error> {
    store.with_conn(|conn| {
        let key = workspaces::key(conn, workspace)?;
        conn.execute(
            "DELETE FROM folder_index WHERE workspace_id = ?1 AND session_id = ?2",
            params![key, id.as_str()],
        )?;
        Ok(())
    })
}

/// Records a watcher change in the index, so that a listing after a restart reads again only
/// the folders that changed while no studio was watching. The nodes of a session the studio did
/// not run, as the watch saw them (what its folder cannot tell), go to `nodes_seen`, their one
/// owner, which every surface lays over the folder.
pub fn record_change(store: &Store, change: &Change) -> Result<(), Error> {
    let workspace = Workspace::from_canonical_root(change.workspace().to_owned());
    let (summary, id) = match change {
        Change::SessionAdded {
            summary, session_id, ..
        }
        | Change::SessionUpdated {
            summary, session_id, ..
        } => (summary, session_id),
        Change::SessionRemoved { session_id, .. } => {
            store.with_conn(|conn| nodes_seen::forget(conn, &workspace, session_id))?;
            return forget(store, &workspace, session_id);
        }
        Change::OutputAppended { .. }
        | Change::NodeChanged { .. }
        | Change::RunStatusChanged { .. }
        | Change::RunOutputAppended { .. }
        | Change::WatchPolling { .. }
        | Change::AgentsChanged { .. } => return Ok(()),
    };
    if matches!(change, Change::SessionUpdated { .. }) && !summary.nodes.is_empty() {
        // An update is what the watch saw since it first read the folder; a session the studio
        // ran has its runs' spans instead (`session_model::with_recorded_runs`).
        store.with_conn(|conn| {
            if !runs::ran(conn, &workspace, id)? {
                nodes_seen::record(conn, &workspace, id, &summary.nodes)?;
            }
            Ok(())
        })?;
    }
    let Some(print) = session::fingerprint(&summary.path, None) else {
        return forget(store, &workspace, id);
    };
    let (json, node_usage) = cached_columns(summary);
    store.with_conn(|conn| {
        let key = workspaces::key(conn, &workspace)?;
        conn.execute(
            "INSERT INTO folder_index (workspace_id, session_id, fingerprint, summary, node_usage)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (workspace_id, session_id) DO UPDATE SET fingerprint = ?3, summary = ?4, node_usage = ?5",
            params![key, id.as_str(), print, json, node_usage],
        )?;
        Ok(())
    })
}

/// A change sink that keeps the index current, then passes each change on to `next`.
/// The store takes the workspaces as watched from here on (`folder_text`: searches walk their
/// folders again only after a change).
pub fn keeping_current(store: std::sync::Arc<Store>, workspaces: &[&Workspace], next: ChangeSink) -> ChangeSink {
    for workspace in workspaces {
        store.watched.started(workspace.root());
    }
    std::sync::Arc::new(move |change| {
        store.watched.changed(change.workspace());
        if let Err(error) = record_change(&store, &change) {
            tracing::warn!(%error, "the folder index missed a change; the next listing reads that folder again");
        }
        next(change)
    })
}
