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
use std::path::Path;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{timestamp, write_transaction, QueryResult, Store};
use super::sessions::SessionRow;
use super::{nodes_seen, output_usage, runs, session_model, sessions, spans, tags, workspaces};
use crate::sessions::change::{Change, ChangeSink};
use crate::sessions::cost::{NodeUsage, UsageTotal};
use crate::sessions::session::{self, SessionSummary, SessionsFolder, Timestamp, Workspace};
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
    let mut overlay = Overlay::load(store, workspace)?;
    let laid_over = overlay.laid_over();
    let node_usage = match detail {
        NodeDetail::WithUsage => NodeUsageOf::Every,
        NodeDetail::TotalsOnly => NodeUsageOf::These(&laid_over),
    };
    let sessions = list(store, workspace, now, node_usage)?;
    let mut rows = overlay.rows(sessions, detail);
    // A stable sort keeps the most-recent-first order within each group.
    rows.sort_by_key(|row| std::cmp::Reverse(row.pinned_at));
    Ok(rows)
}

/// What the store lays over a workspace's folders (its runs, the usage its runs' nodes printed,
/// the nodes a watch saw, pins, names, tags), read once for a listing and taken from session by
/// session as its rows are made (a listing in chunks reads it once, not once a chunk; a page
/// reads the nodes seen of its own rows only: `Overlay::load_for`).
pub(crate) struct Overlay {
    /// Each session's last run, by session id.
    last_runs: HashMap<String, runs::RunRecord>,
    printed: HashMap<String, output_usage::UsageByNode>,
    seen: HashMap<String, Vec<crate::sessions::session::NodeSummary>>,
    /// The last runs' node spans, by run id.
    spans: HashMap<String, Vec<spans::Span>>,
    facts: HashMap<String, sessions::SessionFacts>,
    tags: HashMap<String, Vec<String>>,
}

impl Overlay {
    /// The whole overlay of `workspace`, for a listing of all its sessions.
    pub(crate) fn load(store: &Store, workspace: &Workspace) -> Result<Overlay, Error> {
        let mut overlay = Overlay::load_for(store, workspace, &[])?;
        overlay.seen = store.with_conn(|conn| nodes_seen::of_workspace(conn, workspace))?;
        Ok(overlay)
    }

    /// The overlay for a page of `workspace`'s sessions, `ids`: the nodes a watch saw of those
    /// sessions only. `nodes_seen` holds a row for every session a watch saw change, so it grows
    /// with the history, not with the studio's own records as the rest does (100,000 rows read
    /// for each page took some 70 ms at a year's history).
    pub(crate) fn load_for(store: &Store, workspace: &Workspace, ids: &[&str]) -> Result<Overlay, Error> {
        let mut overlay = Overlay::without_seen(store, workspace)?;
        overlay.see(store, workspace, ids)?;
        Ok(overlay)
    }

    /// The nodes a watch saw of `ids` too (those the overlay does not hold yet).
    pub(crate) fn see(&mut self, store: &Store, workspace: &Workspace, ids: &[&str]) -> Result<(), Error> {
        let seen = store.with_conn(|conn| nodes_seen::of_sessions(conn, workspace, ids))?;
        self.seen.extend(seen);
        Ok(())
    }

    fn without_seen(store: &Store, workspace: &Workspace) -> Result<Overlay, Error> {
        store.with_conn(|conn| {
            let mut last_runs = HashMap::new();
            // Newest first: the first run seen per session is its last.
            for run in runs::last_of_each_session(conn, workspace)? {
                last_runs.entry(run.session_id.clone()).or_insert(run);
            }
            Ok(Overlay {
                last_runs,
                printed: output_usage::of_sessions(conn, workspace, None)?,
                seen: HashMap::new(),
                spans: spans::last_runs_nodes(conn, workspace)?,
                facts: sessions::facts(conn, workspace)?,
                tags: tags::of_workspace(conn, workspace)?,
            })
        })
    }

    /// The sessions whose nodes' usage the store's word is laid over (a session the studio ran,
    /// or whose nodes printed their usage on stdout): a listing of totals reads theirs.
    pub(crate) fn laid_over(&self) -> HashSet<&str> {
        self.last_runs
            .keys()
            .chain(self.printed.keys())
            .map(String::as_str)
            .collect()
    }

    /// The rows of `sessions`, in their order, with what the store knows of each laid over
    /// (each session's part of the overlay is taken: a session is made a row once). With
    /// [`NodeDetail::TotalsOnly`], the nodes of a session the store's word is not laid over lose
    /// their usage objects (its total stays).
    pub(crate) fn rows(&mut self, mut sessions: Vec<SessionSummary>, detail: NodeDetail) -> Vec<SessionRow> {
        for summary in &mut sessions {
            let laid_over =
                self.last_runs.contains_key(summary.id.as_str()) || self.printed.contains_key(summary.id.as_str());
            if detail == NodeDetail::TotalsOnly && !laid_over {
                for node in &mut summary.nodes {
                    node.usage = None;
                }
            }
            session_model::with_nodes_seen(summary, self.seen.remove(summary.id.as_str()));
        }
        let last_runs: Vec<session_model::LastRun<'_>> = sessions
            .iter()
            .filter_map(|summary| self.last_runs.get(summary.id.as_str()))
            .map(session_model::LastRun::from)
            .collect();
        let spans = &mut self.spans;
        session_model::with_recorded_runs(sessions.iter_mut(), &last_runs, |run_id| {
            spans.remove(run_id).unwrap_or_default()
        });
        for summary in &mut sessions {
            session_model::with_printed_usage(summary, self.printed.get(summary.id.as_str()));
        }
        sessions
            .into_iter()
            .map(|mut summary| {
                let id = summary.id.as_str();
                let (pinned_at, title, agent, messages, has_note) = self.facts.remove(id).unwrap_or_default();
                let tags = self.tags.remove(id).unwrap_or_default();
                let live_run = self
                    .last_runs
                    .get(id)
                    .filter(|run| run.status == Status::Running)
                    .map(|run| run.id.clone());
                session_model::name_session(&mut summary, title, agent);
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
            .collect()
    }
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

pub(super) struct Cached {
    pub(super) fingerprint: String,
    pub(super) summary: String,
    /// Its nodes' usage objects, a slot per node; `None` when no node has usage.
    pub(super) node_usage: Option<String>,
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
pub(super) fn from_cache(entry: &Cached) -> Option<SessionSummary> {
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

    let names_stamp = names_stamp(workspace)?;
    let folders = session::session_folders(workspace)?;
    let held = hold_sessions_folder(workspace)?;
    let results = session::in_parallel(&folders, |(path, id)| {
        read_through(path, held.as_ref(), id, cached.get(id.as_str()), now)
    })?;

    let mut sessions = Vec::with_capacity(results.len());
    store.with_conn(|conn| {
        let tx = write_transaction(conn)?;
        for listed in results.into_iter().flatten() {
            if let Some(print) = &listed.fresh {
                store_summary(&tx, workspace_key, &listed.summary, print)?;
            }
            cached.remove(listed.summary.id.as_str());
            sessions.push(listed.summary);
        }
        for gone in cached.keys() {
            forget_row(&tx, workspace_key, gone)?;
        }
        // Every name was compared with the index: the sessions folder's time says so from here on.
        record_names_stamp(&tx, workspace_key, names_stamp.as_ref())?;
        Ok(tx.commit()?)
    })?;
    session::sort_most_recent_first(&mut sessions);
    Ok(sessions)
}

/// A session folder's summary through its index entry (`cached`): the entry's while the
/// folder's fingerprint holds and it was not `running` (whose status depends on the clock), else
/// read afresh with the fingerprint to store. `None` when the folder went or cannot be read. The
/// fingerprints are taken through the sessions folder `held` open ([`hold_sessions_folder`]),
/// else by the folder's `path`: the same strings.
pub(super) fn read_through(
    path: &Path,
    held: Option<&SessionsFolder>,
    id: &SessionId,
    cached: Option<&Cached>,
    now: SystemTime,
) -> Result<Option<Listed>, Error> {
    let print_of = |previous: Option<&str>| match held {
        Some(folder) => folder.fingerprint(id.as_str(), previous),
        None => session::fingerprint(path, previous),
    };
    let Some(print) = print_of(cached.map(|c| c.fingerprint.as_str())) else {
        return Ok(None); // deleted since the folder was listed
    };
    if let Some(entry) = cached {
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
    let print = match cached {
        Some(_) => match print_of(None) {
            Some(print) => print,
            None => return Ok(None),
        },
        None => print,
    };
    Ok(session::read_summary(path, id, now).map(|summary| Listed {
        summary,
        fresh: Some(print),
    }))
}

/// The sessions folder of `workspace` held open, for the fingerprints of many of its sessions
/// ([`read_through`]): each file resolved from it by two names, not by the whole path's (at
/// 100,000 sessions, fingerprints by path were a sixth of a first launch's CPU time, most of it
/// walking the paths). `None` when there is no sessions folder or it cannot be opened (the
/// fingerprints are then taken by path).
pub(super) fn hold_sessions_folder(workspace: &Workspace) -> Result<Option<SessionsFolder>, Error> {
    Ok(workspace
        .sessions_folder()?
        .and_then(|dir| SessionsFolder::open(&dir).ok()))
}

/// Stores a summary read afresh in the index, with its place in the listing (its `updated_at`)
/// and whether it is `running` (read again by every listing, `catalogue`).
pub(super) fn store_summary(
    conn: &Connection,
    workspace_key: i64,
    summary: &SessionSummary,
    print: &str,
) -> QueryResult<()> {
    let (json, node_usage) = cached_columns(summary);
    conn.prepare_cached(
        "INSERT INTO folder_index (workspace_id, session_id, fingerprint, summary, node_usage, updated_at, running)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (workspace_id, session_id)
         DO UPDATE SET fingerprint = ?3, summary = ?4, node_usage = ?5, updated_at = ?6, running = ?7",
    )?
    .execute(params![
        workspace_key,
        summary.id.as_str(),
        print,
        json,
        node_usage,
        summary.updated_at.0 as i64,
        summary.status == Status::Running
    ])?;
    Ok(())
}

/// Drops one session's row (a trigger forgets the workspace's names stamp with it: see
/// [`names_stamp`]).
pub(super) fn forget_row(conn: &Connection, workspace_key: i64, id: &str) -> QueryResult<()> {
    conn.prepare_cached("DELETE FROM folder_index WHERE workspace_id = ?1 AND session_id = ?2")?
        .execute(params![workspace_key, id])?;
    Ok(())
}

/// How much older than now the sessions folder's own time must be for the names stamp to be
/// trusted: a folder made within the same tick of the file system's clock as the last one would
/// leave the time as it was (ext4's clock ticks are milliseconds; two seconds cover any).
const STAMP_SETTLED: std::time::Duration = std::time::Duration::from_secs(2);

/// The sessions folder's own identity and modification time (`<inode>:<seconds>.<nanoseconds>`),
/// taken before its names are read: a folder made or removed in it changes the time, so while
/// the stamp recorded with the index ([`record_names_stamp`]) is the folder's, no name was added
/// or removed since the index last compared every name. `None` when there is no sessions folder
/// or its time is too recent to tell a later change by ([`STAMP_SETTLED`]).
pub(super) fn names_stamp(workspace: &Workspace) -> Result<Option<String>, Error> {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = workspace.sessions_folder()? else {
        return Ok(None);
    };
    let Ok(meta) = std::fs::symlink_metadata(&dir) else {
        return Ok(None);
    };
    let settled = meta
        .modified()
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|age| age >= STAMP_SETTLED);
    Ok(settled.then(|| format!("{}:{}.{}", meta.ino(), meta.mtime(), meta.mtime_nsec())))
}

/// Records that every name of the sessions folder was compared with the index when its stamp was
/// `stamp` (none: nothing is recorded, the next page reads the names again).
pub(super) fn record_names_stamp(conn: &Connection, workspace_key: i64, stamp: Option<&String>) -> QueryResult<()> {
    match stamp {
        Some(stamp) => conn
            .prepare_cached("INSERT OR REPLACE INTO folder_names (workspace_id, stamp) VALUES (?1, ?2)")?
            .execute(params![workspace_key, stamp])?,
        None => conn
            .prepare_cached("DELETE FROM folder_names WHERE workspace_id = ?1")?
            .execute(params![workspace_key])?,
    };
    Ok(())
}

pub(super) struct Listed {
    pub(super) summary: SessionSummary,
    /// The fingerprint to store, when the summary was read afresh.
    pub(super) fresh: Option<String>,
}

/// A session folder as the folder index last saw it: its fingerprint, when its files last changed
/// (its summary's `updated_at`) and whether it was `running`. Not its summary: a watcher holds
/// the summaries of the few sessions it watches, and looks a swept one's up when it reads it
/// again ([`indexed_summary`]), so that 100,000 sessions are not 100,000 summaries in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFolder {
    pub fingerprint: String,
    pub updated_at: Timestamp,
    pub running: bool,
}

impl IndexedFolder {
    /// A folder with `fingerprint` read as `summary`.
    pub fn new(fingerprint: String, summary: &SessionSummary) -> IndexedFolder {
        IndexedFolder {
            fingerprint,
            updated_at: summary.updated_at,
            running: summary.status == Status::Running,
        }
    }
}

/// What the folder index knows of a workspace's session folders, by session: what a watcher
/// starts from instead of reading every folder again (`watcher::Watcher::start_seeded`). No
/// summary is read (the index's `updated_at` and `running` columns say what the watcher needs).
pub fn indexed_folders(store: &Store, workspace: &Workspace) -> Result<HashMap<SessionId, IndexedFolder>, Error> {
    store.with_conn(|conn| {
        // Read only: a workspace the store never knew has no rows (and gets no key made here).
        let Some(key) = workspaces::known_key(conn, workspace)? else {
            return Ok(HashMap::new());
        };
        let mut statement = conn.prepare_cached(
            "SELECT session_id, fingerprint, updated_at, running FROM folder_index WHERE workspace_id = ?1",
        )?;
        let rows = statement.query_map([key], |r| {
            Ok((
                SessionId::parse(&r.get::<_, String>(0)?).ok(),
                IndexedFolder {
                    fingerprint: r.get(1)?,
                    updated_at: Timestamp(r.get::<_, i64>(2)?.max(0) as u64),
                    running: r.get(3)?,
                },
            ))
        })?;
        let rows = rows.collect::<Result<Vec<_>, _>>()?;
        // A row whose id is not a session id is no session folder.
        Ok(rows
            .into_iter()
            .filter_map(|(id, folder)| Some((id?, folder)))
            .collect())
    })
}

/// The summaries the folder index holds of a workspace's sessions last updated at `since` or
/// after (their nodes' usage included; one that cannot be read back is left out).
pub fn indexed_summaries_since(
    store: &Store,
    workspace: &Workspace,
    since: Timestamp,
) -> Result<Vec<SessionSummary>, Error> {
    store.with_conn(|conn| {
        let Some(key) = workspaces::known_key(conn, workspace)? else {
            return Ok(Vec::new());
        };
        // `updated_at` is written from the summary's own, so the query's bound is the summary's.
        let mut statement = conn.prepare_cached(
            "SELECT fingerprint, summary, node_usage FROM folder_index WHERE workspace_id = ?1 AND updated_at >= ?2",
        )?;
        let rows = statement.query_map(params![key, since.0 as i64], cached)?;
        let mut summaries = Vec::new();
        for row in rows {
            summaries.extend(from_cache(&row?));
        }
        Ok(summaries)
    })
}

/// A row of `fingerprint, summary, node_usage`.
fn cached(r: &rusqlite::Row<'_>) -> rusqlite::Result<Cached> {
    Ok(Cached {
        fingerprint: r.get(0)?,
        summary: r.get(1)?,
        node_usage: r.get(2)?,
    })
}

/// The summary the folder index holds of one session (its nodes' usage included), if it holds a
/// readable one: what a watcher compares a swept session's new read with.
pub fn indexed_summary(store: &Store, workspace: &Workspace, id: &SessionId) -> Result<Option<SessionSummary>, Error> {
    store.with_conn(|conn| {
        let Some(key) = workspaces::known_key(conn, workspace)? else {
            return Ok(None);
        };
        let cached = conn
            .prepare_cached(
                "SELECT fingerprint, summary, node_usage FROM folder_index WHERE workspace_id = ?1 AND session_id = ?2",
            )?
            .query_row(params![key, id.as_str()], cached)
            .optional()?;
        Ok(cached.as_ref().and_then(from_cache))
    })
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
        forget_row(conn, key, id.as_str())
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
    store.with_conn(|conn| {
        let key = workspaces::key(conn, &workspace)?;
        store_summary(conn, key, summary, &print)
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
