//! Retention: which sessions a rule would delete. Pinned sessions are always kept, and nothing is
//! deleted without first being reported ([`plan`] only decides; the caller deletes).

use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::sessions::SessionRow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Keep sessions updated within the last N days.
    KeepDays(u64),
    /// Keep the N most recently updated sessions.
    KeepLast(usize),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Doomed {
    pub session_id: String,
    pub updated_at: crate::sessions::session::Timestamp,
    pub path: std::path::PathBuf,
}

/// The sessions `rule` would delete from `sessions` (any order), never a pinned one.
pub fn plan(sessions: &[SessionRow], rule: Rule, now: SystemTime) -> Vec<Doomed> {
    let mut candidates: Vec<&SessionRow> = sessions.iter().collect();
    candidates.sort_by(|a, b| {
        b.summary
            .updated_at
            .cmp(&a.summary.updated_at)
            .then_with(|| b.summary.id.cmp(&a.summary.id))
    });
    candidates
        .into_iter()
        .enumerate()
        .filter(|(rank, session)| match rule {
            Rule::KeepLast(n) => *rank >= n,
            Rule::KeepDays(days) => {
                let cutoff = now
                    .checked_sub(Duration::from_secs(days * 86_400))
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                session.summary.updated_at.to_system_time() < cutoff
            }
        })
        .map(|(_, session)| session)
        .filter(|session| !session.pinned)
        .map(|session| Doomed {
            session_id: session.summary.id.to_string(),
            updated_at: session.summary.updated_at,
            path: session.summary.path.clone(),
        })
        .collect()
}
