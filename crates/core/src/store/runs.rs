//! The `runs` table: the runs the studio started, their process while they live, who follows
//! them, and how they ended.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::connection::{millis, parse_status, timestamp, write_transaction, QueryResult};
use super::sessions;
use crate::sessions::session::{Timestamp, Workspace};
use crate::status::Status;
use crate::timeline::StoppedBy;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::launch::Budget;
use crate::vocabulary::process::{self, ProcessIdentity};

/// A run as the store records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunRecord {
    pub id: String,
    pub session_id: String,
    /// The workspace the session belongs to.
    pub workspace: PathBuf,
    pub agent: Option<String>,
    pub command: Vec<String>,
    pub pid: Option<i64>,
    pub process_group: Option<i64>,
    /// Who the process group's leader is (its id, start time and boot), as recorded when it
    /// started: signals go to the group only while this still matches.
    #[serde(skip)]
    pub process_identity: Option<crate::vocabulary::process::ProcessIdentity>,
    pub status: Status,
    /// A `running` run that no studio process follows (it was left running, or its studio died).
    pub detached: bool,
    /// The studio process that follows the run.
    #[serde(skip)]
    pub owner_pid: Option<i64>,
    /// When that process started (clock ticks since boot), to tell it from a process that took
    /// its id.
    #[serde(skip)]
    pub owner_start_time: Option<i64>,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    pub stopped_by: Option<StoppedBy>,
    /// A stop asked for by another studio process (`graceful` or `forced`).
    pub stop_requested: Option<StoppedBy>,
    /// The run keeper's folder, for a run that can outlive its studio.
    pub keeper_dir: Option<PathBuf>,
    pub replayed_node: Option<String>,
    /// Where the run was asked for when not by the studio's own faces: `mcp` for a run started
    /// or re-run through `zstudio mcp` (`Store::run_set_origin`); none for the window's, `zstudio run`'s
    /// and `serve`'s.
    pub origin: Option<String>,
    /// The limits it was started with (`max_cost_usd`, `max_tokens`), when it had any.
    pub budget: Option<Budget>,
    /// What its nodes used, where asked for (`Store::with_runs_usage`; see `session_model`).
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub usage: Option<crate::sessions::cost::UsageTotal>,
}

/// What a new run is.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub session: &'a SessionId,
    pub agent: Option<&'a str>,
    pub command: &'a [String],
    pub replayed_node: Option<&'a str>,
    /// The first prompt becomes the session's title when it has none.
    pub prompt: Option<&'a str>,
    pub started_at: SystemTime,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome<'a> {
    pub status: Status,
    pub exit_code: Option<i32>,
    pub error: Option<&'a str>,
    pub stopped_by: Option<&'a str>,
    pub ended_at: SystemTime,
}

/// A recorded leader identity, when all of it was recorded.
pub(super) fn identity(pgid: Option<i64>, start_time: Option<i64>, boot_id: Option<String>) -> Option<ProcessIdentity> {
    Some(ProcessIdentity {
        pid: u32::try_from(pgid?).ok()?,
        start_time: u64::try_from(start_time?).ok()?,
        boot_id: boot_id?,
    })
}

/// The studio process that follows a run, as recorded: its id and, since schema 9, its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Owner {
    pub(super) pid: Option<i64>,
    pub(super) start_time: Option<i64>,
}

/// This process's start time, as an owner's is recorded.
fn own_start_time() -> Option<i64> {
    ProcessIdentity::of(std::process::id()).map(|me| me.start_time as i64)
}

/// Whether the studio process that owns a run lives: not when the run was started in another
/// boot (the owner's id names someone else now), nor when that id answers no more, nor when the
/// process that holds it now started at another time than the owner did (the id was reused).
pub(super) fn owner_alive(owner: Owner, boot: Option<&str>, is_alive: impl Fn(u32) -> bool) -> bool {
    let same_boot = boot.is_none_or(|boot| Some(boot) == process::boot_id());
    let Some(pid) = owner.pid.and_then(|pid| u32::try_from(pid).ok()) else {
        return false;
    };
    let same_process = || match owner.start_time {
        Some(start) => ProcessIdentity::of(pid).is_some_and(|now| now.start_time as i64 == start),
        None => true,
    };
    same_boot && (pid == std::process::id() || (is_alive(pid) && same_process()))
}

/// Records a new run (`running`) and returns its id, a UUID v7.
pub(super) fn insert(conn: &Connection, workspace: &Workspace, run: &NewRun<'_>) -> QueryResult<String> {
    let key = sessions::key(conn, workspace, run.session, run.started_at)?;
    let id = uuid::Uuid::now_v7().to_string();
    let command = serde_json::to_string(run.command).expect("strings serialise");
    let tx = write_transaction(conn)?;
    tx.execute(
        "INSERT INTO runs (id, session_key, agent, command, status, started_at, replayed_node, owner_pid,
                 owner_start_time)
             VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8)",
        params![
            id,
            key,
            run.agent,
            command,
            millis(run.started_at),
            run.replayed_node,
            std::process::id(),
            own_start_time()
        ],
    )?;
    tx.execute(
        "UPDATE sessions SET agent = COALESCE(agent, ?2), title = COALESCE(title, substr(?3, 1, 120)),
             updated_at = ?4 WHERE key = ?1",
        params![key, run.agent, run.prompt.map(str::trim), millis(run.started_at)],
    )?;
    tx.commit()?;
    Ok(id)
}

/// The run's process and process group, with the identity of the group's leader as it is now.
pub(super) fn set_process(conn: &Connection, run_id: &str, pid: u32, process_group: u32) -> QueryResult<()> {
    let identity = ProcessIdentity::of(process_group);
    conn.execute(
        "UPDATE runs SET pid = ?2, pgid = ?3, pgid_start_time = ?4, boot_id = ?5 WHERE id = ?1",
        params![
            run_id,
            pid,
            process_group,
            identity.as_ref().map(|i| i.start_time as i64),
            identity.as_ref().map(|i| i.boot_id.as_str())
        ],
    )?;
    Ok(())
}

/// Records the run keeper's folder of a run.
pub(super) fn set_keeper_dir(conn: &Connection, run_id: &str, dir: &Path) -> QueryResult<()> {
    conn.execute(
        "UPDATE runs SET keeper_dir = ?2 WHERE id = ?1",
        params![run_id, dir.to_string_lossy()],
    )?;
    Ok(())
}

/// Records where a run was asked for (`mcp`: through `zstudio mcp`); the runs of the studio's own
/// faces have none.
pub(super) fn set_origin(conn: &Connection, run_id: &str, origin: &str) -> QueryResult<()> {
    let changed = conn.execute("UPDATE runs SET origin = ?2 WHERE id = ?1", params![run_id, origin])?;
    if changed == 0 {
        return Err(Error::RunNotFound { id: run_id.to_owned() }.into());
    }
    Ok(())
}

/// Records the limits a run was started with (its `max_cost_usd` and `max_tokens`: the daily
/// one was checked before it started), for a studio that adopts it; none recorded when it has
/// neither.
pub(super) fn set_budget(conn: &Connection, run_id: &str, budget: &Budget) -> QueryResult<()> {
    if budget.max_cost_usd.is_none() && budget.max_tokens.is_none() {
        return Ok(());
    }
    let limits = serde_json::json!({ "max_cost_usd": budget.max_cost_usd, "max_tokens": budget.max_tokens });
    conn.execute(
        "UPDATE runs SET budget = ?2 WHERE id = ?1",
        params![run_id, limits.to_string()],
    )?;
    Ok(())
}

/// Claims a run no live studio process owns for this process; `false` when another got there
/// first.
pub(super) fn claim(conn: &Connection, run_id: &str, owner: Option<i64>) -> QueryResult<bool> {
    let changed = conn.execute(
        "UPDATE runs SET owner_pid = ?3, owner_start_time = ?4 WHERE id = ?1 AND status = 'running' AND owner_pid IS ?2",
        params![run_id, owner, std::process::id(), own_start_time()],
    )?;
    Ok(changed == 1)
}

pub(super) fn detach(conn: &Connection, run_id: &str) -> QueryResult<()> {
    conn.execute(
        "UPDATE runs SET owner_pid = NULL, owner_start_time = NULL WHERE id = ?1",
        [run_id],
    )?;
    Ok(())
}

/// Runs nobody owns any more that have a keeper folder.
pub(super) fn detached_kept(conn: &Connection) -> QueryResult<Vec<RunRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE r.status = 'running' AND r.keeper_dir IS NOT NULL"
    );
    let mut statement = conn.prepare(&sql)?;
    let rows = statement.query_map([], from_row)?;
    let runs: Vec<RunRecord> = rows.collect::<Result<_, _>>()?;
    let owned = |run: &RunRecord| {
        owner_alive(
            Owner {
                pid: run.owner_pid,
                start_time: run.owner_start_time,
            },
            run.process_identity.as_ref().map(|i| i.boot_id.as_str()),
            process::process_alive,
        )
    };
    Ok(runs.into_iter().filter(|r| !owned(r)).collect())
}

/// Records that another studio process asked the run to stop, and how.
pub(super) fn request_stop(conn: &Connection, run_id: &str, how: StoppedBy) -> QueryResult<()> {
    conn.execute(
        "UPDATE runs SET stop_requested = ?2 WHERE id = ?1",
        params![run_id, how.as_str()],
    )?;
    Ok(())
}

pub(super) fn finish(conn: &Connection, run_id: &str, outcome: &RunOutcome<'_>) -> QueryResult<()> {
    let changed = conn.execute(
        "UPDATE runs SET status = ?2, exit_code = ?3, error = ?4, stopped_by = ?5, ended_at = ?6,
                 pid = NULL, pgid = NULL, pgid_start_time = NULL WHERE id = ?1",
        params![
            run_id,
            outcome.status.as_str(),
            outcome.exit_code,
            outcome.error,
            outcome.stopped_by,
            millis(outcome.ended_at)
        ],
    )?;
    if changed == 0 {
        return Err(Error::RunNotFound { id: run_id.to_owned() }.into());
    }
    Ok(())
}

/// A run as a watcher follows it: whose it is, and whether it is still `running`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunState {
    /// The run's row, in the order runs were recorded.
    pub key: i64,
    pub run_id: String,
    pub workspace: PathBuf,
    pub session_id: String,
    pub running: bool,
}

/// The runs still `running`, and every run recorded after `after_key`: what a watcher compares
/// with what it read last to tell which runs started or ended since.
pub(super) fn running_or_newer(conn: &Connection, after_key: i64) -> QueryResult<Vec<RunState>> {
    let mut statement = conn.prepare_cached(
        "SELECT r.key, r.id, w.root, s.session_id, r.status = 'running' FROM runs r
             JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE r.status = 'running' OR r.key > ?1",
    )?;
    let rows = statement.query_map([after_key], |row| {
        Ok(RunState {
            key: row.get(0)?,
            run_id: row.get(1)?,
            workspace: PathBuf::from(row.get::<_, String>(2)?),
            session_id: row.get(3)?,
            running: row.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What [`from_row`] reads, from `runs r`, `sessions s` and `workspaces w`.
const COLUMNS: &str = "r.id, s.session_id, r.agent, r.command, r.pid, r.pgid, r.status, r.started_at,
        r.ended_at, r.exit_code, r.error, r.stopped_by, r.replayed_node, r.owner_pid, r.stop_requested, w.root,
        r.keeper_dir, r.pgid_start_time, r.boot_id, r.owner_start_time, r.origin, r.budget";

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    let command: String = row.get(3)?;
    let status = parse_status(&row.get::<_, String>(6)?);
    let owner: Option<i64> = row.get(13)?;
    Ok(RunRecord {
        id: row.get(0)?,
        session_id: row.get(1)?,
        agent: row.get(2)?,
        command: serde_json::from_str(&command).unwrap_or_default(),
        pid: row.get(4)?,
        process_group: row.get(5)?,
        process_identity: identity(row.get(5)?, row.get(17)?, row.get(18)?),
        status,
        detached: status == Status::Running && owner.is_none(),
        owner_pid: owner,
        owner_start_time: row.get(19)?,
        started_at: timestamp(row.get(7)?),
        ended_at: row.get::<_, Option<i64>>(8)?.map(timestamp),
        exit_code: row.get(9)?,
        error: row.get(10)?,
        stopped_by: row.get::<_, Option<String>>(11)?.as_deref().and_then(StoppedBy::parse),
        stop_requested: row.get::<_, Option<String>>(14)?.as_deref().and_then(StoppedBy::parse),
        workspace: PathBuf::from(row.get::<_, String>(15)?),
        keeper_dir: row.get::<_, Option<String>>(16)?.map(PathBuf::from),
        replayed_node: row.get(12)?,
        origin: row.get(20)?,
        budget: row
            .get::<_, Option<String>>(21)?
            .and_then(|text| serde_json::from_str(&text).ok()),
        usage: None,
    })
}

/// Runs of a workspace (or of one session), newest first.
pub(super) fn of_workspace(
    conn: &Connection,
    workspace: &Workspace,
    session: Option<&SessionId>,
) -> QueryResult<Vec<RunRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE w.root = ?1 AND (?2 IS NULL OR s.session_id = ?2) ORDER BY r.started_at DESC, r.id DESC"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(
        params![workspace.root().to_string_lossy(), session.map(SessionId::as_str)],
        from_row,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Whether the studio ran session `id` (a run of it is in the store).
pub(super) fn ran(conn: &Connection, workspace: &Workspace, id: &SessionId) -> QueryResult<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE w.root = ?1 AND s.session_id = ?2 LIMIT 1",
        )?
        .query_row(params![workspace.root().to_string_lossy(), id.as_str()], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The last run of each session of a workspace (what a listing needs; not every run ever).
pub(super) fn last_of_each_session(conn: &Connection, workspace: &Workspace) -> QueryResult<Vec<RunRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE w.root = ?1
               AND r.started_at = (SELECT MAX(started_at) FROM runs WHERE session_key = r.session_key)
             ORDER BY r.started_at DESC, r.id DESC"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map([workspace.root().to_string_lossy()], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One run by its id, in any workspace.
pub(super) fn by_id(conn: &Connection, run_id: &str) -> QueryResult<RunRecord> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE r.id = ?1"
    );
    conn.query_row(&sql, [run_id], from_row)
        .optional()?
        .ok_or_else(|| Error::RunNotFound { id: run_id.to_owned() }.into())
}
