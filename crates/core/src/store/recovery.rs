//! Crash recovery: the runs left `running` by studio processes that are gone, settled.

use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::{params, Connection};
use serde::Serialize;

use super::connection::{millis, QueryResult};
use super::logs::{self, Entry, Level};
use super::runs::{identity, owner_alive, Owner};
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::process::ProcessIdentity;

/// What `Store::recover` decided about a run left `running` by a studio that died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovered {
    pub run_id: String,
    pub session_id: String,
    /// `interrupted` (its process group is gone) or `running` (detached, still alive).
    pub status: Status,
}

/// A run left `running`, as recovery reads it.
struct Orphan {
    run_id: String,
    session_id: String,
    root: String,
    pgid: Option<i64>,
    owner: Owner,
    stop_requested: Option<String>,
    leader: Option<ProcessIdentity>,
    boot: Option<String>,
}

/// Reconciles runs left `running` by studio processes that are gone: a run whose process group
/// is gone becomes `interrupted` (or `cancelled`, when a stop was asked for), with a log line;
/// one whose group still lives is detached.
pub(super) fn recover(
    conn: &Connection,
    is_alive: impl Fn(u32) -> bool,
    is_group_alive: impl Fn(u32) -> bool,
    now: SystemTime,
) -> QueryResult<Vec<Recovered>> {
    let mut recovered = Vec::new();
    for run in running(conn)? {
        if owner_alive(run.owner, run.boot.as_deref(), &is_alive) {
            continue;
        }
        // A group whose leader is not the process the run started (its id was reused, or
        // was never identified) is not the run's, alive or not.
        let group_alive = run.pgid.is_some_and(|g| is_group_alive(g as u32))
            && run.leader.as_ref().is_some_and(ProcessIdentity::is_current);
        let id = SessionId::parse(&run.session_id)?;
        // Only while the owner is still the one read: a process that claimed the run meanwhile
        // (to adopt it or settle it) keeps it.
        let status = if group_alive {
            let let_go = conn.execute(
                "UPDATE runs SET owner_pid = NULL, owner_start_time = NULL WHERE id = ?1 AND owner_pid IS ?2",
                params![run.run_id, run.owner.pid],
            )?;
            if let_go == 0 {
                continue;
            }
            Status::Running
        } else {
            match settle(conn, &run, &id, now)? {
                Some(status) => status,
                None => continue,
            }
        };
        recovered.push(Recovered {
            run_id: run.run_id,
            session_id: run.session_id,
            status,
        });
    }
    Ok(recovered)
}

/// The runs left `running`.
fn running(conn: &Connection) -> QueryResult<Vec<Orphan>> {
    let mut statement = conn.prepare(
        "SELECT r.id, s.session_id, w.root, r.pgid, r.owner_pid, r.stop_requested, r.pgid_start_time,
                 r.boot_id, r.owner_start_time FROM runs r
                 JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
                 WHERE r.status = 'running'",
    )?;
    let rows = statement
        .query_map([], |r| {
            let boot: Option<String> = r.get(7)?;
            Ok(Orphan {
                run_id: r.get(0)?,
                session_id: r.get(1)?,
                root: r.get(2)?,
                pgid: r.get(3)?,
                owner: Owner {
                    pid: r.get(4)?,
                    start_time: r.get(8)?,
                },
                stop_requested: r.get(5)?,
                leader: identity(r.get(3)?, r.get(6)?, boot.clone()),
                boot,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// Ends a run whose processes are gone: `cancelled` when someone asked it to stop, else
/// `interrupted`, with its open spans and a log line saying so. `None`: another process claimed
/// it meanwhile (it settles it).
fn settle(conn: &Connection, run: &Orphan, id: &SessionId, now: SystemTime) -> QueryResult<Option<Status>> {
    let workspace = Workspace::from_canonical_root(PathBuf::from(&run.root));
    let (status, event, message) = match &run.stop_requested {
        Some(_) => (
            Status::Cancelled,
            "run.cancelled",
            "The run was stopped; the studio process that supervised it had ended.",
        ),
        None => (
            Status::Interrupted,
            "run.interrupted",
            "The studio process that supervised this run ended, and the run's processes are gone.",
        ),
    };
    let settled = conn.execute(
        "UPDATE runs SET status = ?3, ended_at = ?2, pid = NULL, pgid = NULL, pgid_start_time = NULL,
                 owner_pid = NULL, owner_start_time = NULL,
                 stopped_by = stop_requested,
                 error = CASE WHEN ?3 = 'interrupted' THEN 'the studio that ran it stopped, and so did its processes' END
                 WHERE id = ?1 AND status = 'running' AND owner_pid IS ?4",
        params![run.run_id, millis(now), status.as_str(), run.owner.pid],
    )?;
    if settled == 0 {
        return Ok(None);
    }
    conn.execute(
        "UPDATE spans SET status = ?3, ended_at = ?2 WHERE run_id = ?1 AND ended_at IS NULL",
        params![run.run_id, millis(now), status.as_str()],
    )?;
    let fields = serde_json::json!({ "process_group": run.pgid, "stopped_by": run.stop_requested });
    logs::append(
        conn,
        &workspace,
        id,
        Some(&run.run_id),
        Entry {
            level: Level::Warn,
            event,
            message,
            fields: &fields,
            at: now,
        },
    )?;
    Ok(Some(status))
}
