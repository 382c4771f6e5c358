//! The `trusted_launches` table: the launches of agents (by [`Launch::trust_key`]) the user
//! trusted in a workspace, each with the budget trusted with it (its ceiling: a launch whose
//! budget is [`Budget::within`] it is trusted; raised or removed, it is asked about again), and
//! saving an agent, whose launches the user wrote and so trusts.

use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};

use super::connection::{millis, QueryResult};
use super::workspaces;
use crate::sessions::agents::{Budget, Launch};
use crate::sessions::session::Workspace;
use crate::vocabulary::error::Error;

/// Whether the user trusted this launch of an agent in the workspace, with a budget it keeps
/// within.
pub(super) fn trusted(conn: &Connection, workspace: &Workspace, launch: &Launch) -> QueryResult<bool> {
    let workspace_key = workspaces::key(conn, workspace)?;
    let trusted_budget = conn
        .query_row(
            "SELECT max_cost_usd, max_tokens, daily_usd FROM trusted_launches
                 WHERE workspace_id = ?1 AND digest = ?2",
            params![workspace_key, launch.trust_key],
            |r| {
                Ok(Budget {
                    max_cost_usd: r.get(0)?,
                    max_tokens: r.get::<_, Option<i64>>(1)?.map(|n| n.max(0) as u64),
                    daily_usd: r.get(2)?,
                })
            },
        )
        .optional()?;
    Ok(trusted_budget.is_some_and(|trusted| launch.budget.within(&trusted)))
}

/// Records that the user trusts this launch of an agent in the workspace, its budget as the
/// ceiling from now on.
pub(super) fn trust(conn: &Connection, workspace: &Workspace, launch: &Launch, now: SystemTime) -> QueryResult<()> {
    let workspace_key = workspaces::key(conn, workspace)?;
    let budget = launch.budget;
    conn.execute(
        "INSERT INTO trusted_launches (workspace_id, digest, trusted_at, max_cost_usd, max_tokens, daily_usd)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT DO UPDATE SET trusted_at = excluded.trusted_at, max_cost_usd = excluded.max_cost_usd,
                     max_tokens = excluded.max_tokens, daily_usd = excluded.daily_usd",
        params![
            workspace_key,
            launch.trust_key,
            millis(now),
            budget.max_cost_usd,
            budget.max_tokens.map(|n| n.min(i64::MAX as u64) as i64),
            budget.daily_usd
        ],
    )?;
    Ok(())
}

/// `Ok` when `launch` is trusted, else [`Error::AgentsUntrusted`] with what it would run.
pub(super) fn require(conn: &Connection, workspace: &Workspace, launch: Launch) -> QueryResult<()> {
    if trusted(conn, workspace, &launch)? {
        Ok(())
    } else {
        Err(Error::AgentsUntrusted {
            launch: Box::new(launch),
        }
        .into())
    }
}
