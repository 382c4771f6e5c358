//! How sessions the studio ran ended: the files of a session do not mark the end of a run
//! (PROTOCOL.md §5), but the store knows how its runs ended.

use std::collections::HashMap;

use super::{RunRecord, Span};
use crate::session::{SessionSummary, Timestamp};
use crate::status::Status;

/// What [`with_ended_runs`] needs of a run.
#[derive(Debug, Clone, Copy)]
pub struct LastRun<'a> {
    pub id: &'a str,
    pub session_id: &'a str,
    pub status: Status,
    pub ended_at: Option<Timestamp>,
}

impl<'a> From<&'a RunRecord> for LastRun<'a> {
    fn from(run: &'a RunRecord) -> LastRun<'a> {
        LastRun {
            id: &run.id,
            session_id: &run.session_id,
            status: run.status,
            ended_at: run.ended_at,
        }
    }
}

/// How much later than its last run's end a session folder may be written and still be that
/// run's (the agent's last writes and the studio's end record race).
const WRITTEN_WITH_THE_RUN_MS: u64 = 2_000;

/// Files do not mark the end of a run (PROTOCOL.md §5): a session the studio ran and stopped reads
/// `running` for two minutes, then `unknown`. The store knows better: such a session, not written
/// since its last run ended, takes that run's status, and its nodes left `running` take their
/// node spans' status (else the run's).
///
pub fn with_ended_runs<'a>(
    sessions: impl Iterator<Item = &'a mut SessionSummary>,
    runs: &[LastRun<'_>],
    spans_of: impl Fn(&str) -> Vec<Span>,
) {
    // `runs` is newest first: the first run seen per session is its last.
    let mut last_runs: HashMap<&str, &LastRun<'_>> = HashMap::new();
    for run in runs {
        last_runs.entry(run.session_id).or_insert(run);
    }
    for summary in sessions {
        let Some(run) = last_runs.get(summary.id.as_str()) else {
            continue;
        };
        if run.status == Status::Running {
            // A live run's session is running, however long its current node has been quiet.
            summary.status = Status::Running;
            continue;
        }
        let Some(ended_at) = run.ended_at else { continue };
        let files_cannot_tell = matches!(summary.status, Status::Running | Status::Unknown);
        let written_since = summary.updated_at.0 > ended_at.0 + WRITTEN_WITH_THE_RUN_MS;
        if run.status == Status::Running || !files_cannot_tell || written_since {
            continue;
        }
        summary.status = run.status;
        if summary.nodes.iter().any(|node| node.status == Status::Running) {
            let spans = spans_of(run.id);
            for node in summary.nodes.iter_mut().filter(|node| node.status == Status::Running) {
                let span = spans
                    .iter()
                    .rev()
                    .find(|span| span.kind == "node" && span.name == node.name);
                node.status = span
                    .map(|span| span.status)
                    .filter(|status| *status != Status::Running)
                    .unwrap_or(run.status);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::session::NodeSummary;
    use crate::SessionId;

    fn row(id: &str, status: Status, updated_at: u64, nodes: &[(&str, Status)]) -> SessionSummary {
        SessionSummary {
            id: SessionId::parse(id).unwrap(),
            path: PathBuf::from("/p").join(id),
            status,
            current_node: None,
            created_at: None,
            updated_at: Timestamp(updated_at),
            nodes: nodes
                .iter()
                .map(|(name, status)| NodeSummary {
                    name: (*name).to_owned(),
                    status: *status,
                })
                .collect(),
            problems: Vec::new(),
        }
    }

    fn run<'a>(id: &'a str, session_id: &'a str, status: Status, ended_at: Option<u64>) -> LastRun<'a> {
        LastRun {
            id,
            session_id,
            status,
            ended_at: ended_at.map(Timestamp),
        }
    }

    fn span(name: &str, status: Status) -> Span {
        Span {
            id: 1,
            parent_id: None,
            run_id: "r".into(),
            name: name.into(),
            kind: "node".into(),
            depth: 0,
            started_at: Timestamp(0),
            ended_at: None,
            status,
        }
    }

    fn statuses(row: &SessionSummary) -> (Status, Vec<Status>) {
        (row.status, row.nodes.iter().map(|n| n.status).collect())
    }

    #[test]
    fn a_session_whose_files_cannot_tell_takes_its_last_runs_status() {
        let mut rows = [row(
            "s",
            Status::Running,
            10_000,
            &[("plan", Status::Success), ("write", Status::Running)],
        )];
        let runs = [run("r", "s", Status::Cancelled, Some(10_500))];
        with_ended_runs(rows.iter_mut(), &runs, |_| vec![span("write", Status::Success)]);
        assert_eq!(
            statuses(&rows[0]),
            (Status::Cancelled, vec![Status::Success, Status::Success]),
            "the run was stopped after write ended: the node span says so"
        );

        let mut rows = [row("s", Status::Unknown, 10_000, &[("write", Status::Running)])];
        with_ended_runs(rows.iter_mut(), &runs, |_| Vec::new());
        assert_eq!(statuses(&rows[0]), (Status::Cancelled, vec![Status::Cancelled]));
    }

    #[test]
    fn files_that_tell_live_runs_and_later_writes_win() {
        let untouched = |status: Status, updated_at: u64, runs: &[LastRun<'_>]| {
            let mut rows = [row("s", status, updated_at, &[("a", status)])];
            with_ended_runs(rows.iter_mut(), runs, |_| panic!("no spans needed"));
            statuses(&rows[0]) == (status, vec![status])
        };
        let ended = [run("r", "s", Status::Cancelled, Some(10_000))];
        assert!(untouched(Status::Error, 10_000, &ended), "a result file decides");
        assert!(
            untouched(Status::Running, 60_000, &ended),
            "written after the run: someone else runs it"
        );
        assert!(
            untouched(Status::Running, 10_000, &[run("r", "s", Status::Running, None)]),
            "still live"
        );
        let mut quiet = [row("s", Status::Unknown, 10_000, &[("a", Status::Unknown)])];
        with_ended_runs(quiet.iter_mut(), &[run("r", "s", Status::Running, None)], |_| {
            Vec::new()
        });
        assert_eq!(
            quiet[0].status,
            Status::Running,
            "a live run's session is running, even if quiet"
        );
        assert!(untouched(Status::Running, 10_000, &[]), "never run by the studio");
        let newest_first = [
            run("r2", "s", Status::Running, None),
            run("r1", "s", Status::Cancelled, Some(10_000)),
        ];
        assert!(
            untouched(Status::Running, 10_000, &newest_first),
            "the last run decides"
        );
    }
}
