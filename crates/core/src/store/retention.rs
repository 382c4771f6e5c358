//! Retention: which sessions a rule would delete. Pinned sessions are always kept, tagged and
//! annotated ones (a tag or a note) unless asked, and nothing is deleted without first being
//! reported ([`plan`] only decides; the caller deletes).

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

/// What a rule would delete, and what it keeps that it would have deleted otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub doomed: Vec<Doomed>,
    /// Pinned sessions the rule reached, kept.
    pub kept_pinned: usize,
    /// Tagged or annotated sessions (not pinned) the rule reached, kept (without
    /// `include_tagged`).
    pub kept_tagged: usize,
}

/// The sessions `rule` would delete from `sessions` (any order): never a pinned one, and a
/// tagged or annotated one only with `include_tagged`.
pub fn plan(sessions: &[SessionRow], rule: Rule, now: SystemTime, include_tagged: bool) -> Plan {
    let mut candidates: Vec<&SessionRow> = sessions.iter().collect();
    candidates.sort_by(|a, b| {
        b.summary
            .updated_at
            .cmp(&a.summary.updated_at)
            .then_with(|| b.summary.id.cmp(&a.summary.id))
    });
    let reached = candidates.into_iter().enumerate().filter(|(rank, session)| match rule {
        Rule::KeepLast(n) => *rank >= n,
        Rule::KeepDays(days) => {
            let cutoff = now
                .checked_sub(Duration::from_secs(days * 86_400))
                .unwrap_or(SystemTime::UNIX_EPOCH);
            session.summary.updated_at.to_system_time() < cutoff
        }
    });
    let mut plan = Plan::default();
    for (_, session) in reached {
        if session.pinned {
            plan.kept_pinned += 1;
        } else if !include_tagged && (!session.tags.is_empty() || session.has_note) {
            plan.kept_tagged += 1;
        } else {
            plan.doomed.push(Doomed {
                session_id: session.summary.id.to_string(),
                updated_at: session.summary.updated_at,
                path: session.summary.path.clone(),
            });
        }
    }
    plan
}
