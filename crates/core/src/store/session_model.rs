//! The session model: the one place that decides what every surface says of a session (its
//! status, its node executions in order with their statuses), from what the studio has of it.
//! `zstudio sessions`, `show` and `watch`, and the window's table, header and Nodes tab all read
//! it: the listing through [`with_recorded_runs`] (`Store::list_sessions`), one session through
//! [`as_recorded`] and [`read_session`] (`Store::as_recorded`, `Store::read_session`).
//!
//! The order of precedence, highest first (docs/cli.md, "Where each fact comes from"):
//! 1. the live run's events (the runner, for a run it follows now: `run`, Live runs; its spans are
//!    in the store as they happen, so 2 shows it too);
//! 2. the store's runs and node spans, for a session the studio ran and nothing wrote since
//!    its last run ended ([`with_recorded_runs`]);
//! 3. the run's output, read by the fold (markers, else the engine's human timeline), which is
//!    what made those spans;
//! 4. the folder: `result.json`, `events.json`, node folders, `.session-info.json`
//!    (`sessions::session`); folder times order nodes only when nothing else does, never names.
//!
//! "N/M nodes" is `SessionSummary::nodes_progress`: ended (any status but `running`) of begun.
//!
//! What a session is called ([`name_session`]), highest first:
//! - `agent`: the agent the studio ran it with (the store), else what its folder names (a
//!   workflow or agent name: `sessions::session`, module doc);
//! - `title`: the beginning of the first prompt the studio sent it (the store: a run's prompt or
//!   the first message), else its folder's first prompt, else the agent's name, as one line
//!   (`session::one_line`). A session the studio did not start, whose folder names nothing (the
//!   engine alone never does), has neither: the surfaces show its id.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use std::time::SystemTime;

use super::connection::Store;
use super::output_usage::{self, UsageByNode};
use super::runs::{self, RunRecord};
use super::spans::{self, Span, SpanKind};
use super::{nodes_seen, records, sessions, tags};
use crate::sessions::cost::{NodeUsage, UsageTotal};
use crate::sessions::session::{
    self, one_line, NodeSummary, Session, SessionNode, SessionSummary, Timestamp, Workspace,
};
use crate::status::Status;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// One session's summary as every surface shows it: its folder's, with its last recorded run
/// laid over it as the listing lays them (`with_recorded_runs`): `show`, `watch` and the listing
/// agree.
pub(super) fn as_recorded(store: &Store, workspace: &Workspace, summary: &mut SessionSummary) -> Result<(), Error> {
    let seen = store.with_conn(|conn| nodes_seen::of_session(conn, workspace, &summary.id))?;
    with_nodes_seen(summary, seen);
    let runs = store.with_conn(|conn| runs::of_workspace(conn, workspace, Some(&summary.id)))?;
    let last_runs: Vec<LastRun<'_>> = runs.iter().take(1).map(LastRun::from).collect();
    let (title, agent) = store.with_conn(|conn| sessions::names(conn, workspace, &summary.id))?;
    with_recorded_runs(std::iter::once(&mut *summary), &last_runs, |run_id| {
        store.with_conn(|conn| spans::of_run(conn, run_id)).unwrap_or_default()
    });
    let printed = store.with_conn(|conn| output_usage::of_sessions(conn, workspace, Some(&summary.id)))?;
    with_printed_usage(summary, printed.get(summary.id.as_str()));
    name_session(summary, title, agent);
    Ok(())
}

/// One session in full: its folder, with what the store knows laid over it as the listing
/// lays it: the same status and the same nodes, in the same order, as `sessions` and the
/// window's table give. A node the folder does not have (it wrote no folder) comes without
/// artifacts.
pub(super) fn read_session(
    store: &Store,
    workspace: &Workspace,
    id: &SessionId,
    now: SystemTime,
) -> Result<Session, Error> {
    let mut session = workspace.read_session(id, now)?;
    let mut summary = session.summary();
    as_recorded(store, workspace, &mut summary)?;
    session.status = summary.status;
    session.agent = summary.agent.clone();
    session.title = summary.title.clone();
    session.usage = summary.usage;
    session.imported = store.with_conn(|conn| records::imported(conn, workspace, id))?;
    session.tags = store.with_conn(|conn| tags::of_session(conn, workspace, id))?;
    session.note = store.with_conn(|conn| tags::note(conn, workspace, id))?;
    session.not_known = summary.not_known.clone();
    let mut by_name: HashMap<String, SessionNode> =
        session.nodes.drain(..).map(|node| (node.name.clone(), node)).collect();
    session.nodes = summary
        .nodes
        .into_iter()
        .map(|listed| {
            let mut node = by_name
                .remove(&listed.name)
                .unwrap_or_else(|| SessionNode::without_folder(&listed.name));
            node.status = listed.status;
            node.usage = listed.usage;
            node.order_uncertain = listed.order_uncertain;
            node
        })
        .collect();
    Ok(session)
}

/// The nodes a live watch saw of a session the studio did not run (`nodes_seen`), laid over its
/// folder's (`SessionSummary::keep_nodes_seen`): the order seen wins over the folder's times, and
/// a node that wrote no folder keeps its place (its status `unknown`). Below the store's runs
/// ([`with_recorded_runs`], laid after), above the folder.
pub(super) fn with_nodes_seen(summary: &mut SessionSummary, seen: Option<Vec<NodeSummary>>) {
    if let Some(seen) = seen {
        summary.keep_nodes_seen(&seen);
    }
}

/// The nodes a run ran, once each in the order they began, each with its usage if it has one.
pub type RunNodesUsage = Vec<(String, Option<NodeUsage>)>;

/// Fills each run's `usage`: the total over the nodes it ran ([`runs_nodes_usage`]).
pub(super) fn with_runs_usage(
    store: &Store,
    workspace: &Workspace,
    runs: &mut [RunRecord],
    now: SystemTime,
) -> Result<(), Error> {
    let nodes = runs_nodes_usage(store, workspace, runs, now)?;
    for (run, nodes) in runs.iter_mut().zip(nodes) {
        run.usage = UsageTotal::of(nodes.iter().map(|(_, usage)| usage.as_ref()));
    }
    Ok(())
}

/// For each run (in the order given), the nodes it ran (its node spans' names, once each, in
/// the order they began), each with its usage: what its session's folder says (the raw
/// streams hold what the node's last execution printed), unless a later run of the session
/// ran the node again (it was overwritten since), else what the run's own output printed
/// (`node_usage`). `zstudio runs`, `diff` and the window's compare view read this.
pub(super) fn runs_nodes_usage(
    store: &Store,
    workspace: &Workspace,
    runs: &[RunRecord],
    now: SystemTime,
) -> Result<Vec<RunNodesUsage>, Error> {
    let mut folders: HashMap<String, HashMap<String, NodeUsage>> = HashMap::new();
    let mut ran_later: HashMap<String, HashSet<String>> = HashMap::new();
    // Newest first, per session, whatever order the runs came in.
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| runs[b].started_at.cmp(&runs[a].started_at));
    let mut by_run: Vec<RunNodesUsage> = vec![Vec::new(); runs.len()];
    for index in order {
        let run = &runs[index];
        let usage_of = folders.entry(run.session_id.clone()).or_insert_with(|| {
            SessionId::parse(&run.session_id)
                .ok()
                .and_then(|id| session::read_summary(&workspace.session_path(&id), &id, now))
                .map(|summary| {
                    summary
                        .nodes
                        .into_iter()
                        .filter_map(|node| Some((node.name, node.usage?)))
                        .collect()
                })
                .unwrap_or_default()
        });
        let mut names: Vec<String> = Vec::new();
        let spans = store.with_conn(|conn| spans::of_run(conn, &run.id))?;
        for span in spans.into_iter().filter(|s| s.kind == SpanKind::Node) {
            if !names.contains(&span.name) {
                names.push(span.name);
            }
        }
        let later = ran_later.entry(run.session_id.clone()).or_default();
        let mut printed = store.with_conn(|conn| output_usage::of_run(conn, &run.id))?;
        by_run[index] = names
            .iter()
            .map(|name| {
                let folder = (!later.contains(name)).then(|| usage_of.get(name).cloned()).flatten();
                (name.clone(), folder.or_else(|| printed.remove(name)))
            })
            .collect();
        later.extend(names);
    }
    Ok(by_run)
}

/// Names a session (see the module doc): the store's `title` and `agent` (a session the studio
/// ran) win over what its folder says (already in `summary`); the title falls back to the agent.
pub fn name_session(summary: &mut SessionSummary, title: Option<String>, agent: Option<String>) {
    if let Some(agent) = agent.as_deref().and_then(one_line) {
        summary.agent = Some(agent);
    }
    summary.title = title
        .as_deref()
        .and_then(one_line)
        .or(summary.title.take())
        .or_else(|| summary.agent.clone());
}

/// Lays what a session's nodes printed on stdout that they used (the store's `node_usage`: the
/// newest run that printed it, per node) under the folder's word: a node whose folder holds no
/// usage (no raw stream: a failed agent node, a node of a captured log) takes it, and the
/// session's total is made again.
pub fn with_printed_usage(summary: &mut SessionSummary, printed: Option<&UsageByNode>) {
    let Some(printed) = printed else { return };
    let mut laid = false;
    for node in summary.nodes.iter_mut().filter(|node| node.usage.is_none()) {
        if let Some(usage) = printed.get(&node.name) {
            node.usage = Some(usage.clone());
            laid = true;
        }
    }
    if laid {
        summary.total_usage();
    }
}

/// What [`with_recorded_runs`] needs of a run.
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

/// Files do not mark the end of a run (docs/protocol.md §5), and nodes that write no folder (custom
/// code nodes, the engine's commonest kind) are not in them at all. For a session the studio ran,
/// the store knows better, and its word wins over the folder's (docs/cli.md, "Where each fact
/// comes from"), as long as nothing wrote the folder after the studio's last run of it ended:
///
/// - status: a live run's session is `running`; after its run, a session whose files cannot tell
///   (`running`/`unknown`) takes the run's status;
/// - nodes: the last run's node spans, in the order they began, each with its span's status (one
///   left `running` by the run's end takes the run's), the folder's other nodes (of earlier runs:
///   a replay runs one node) kept in their place. So the list and its statuses do not change with
///   time passing or with equal folder times.
pub fn with_recorded_runs<'a>(
    sessions: impl Iterator<Item = &'a mut SessionSummary>,
    runs: &[LastRun<'_>],
    mut spans_of: impl FnMut(&str) -> Vec<Span>,
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
        let live = run.status == Status::Running;
        let written_since = run
            .ended_at
            .is_some_and(|ended_at| summary.updated_at.0 > ended_at.0 + WRITTEN_WITH_THE_RUN_MS);
        if written_since {
            continue; // someone else ran it since: the folder tells
        }
        if live {
            // A live run's session is running, however long its current node has been quiet.
            summary.status = Status::Running;
        } else if run.ended_at.is_none() {
            continue;
        } else if matches!(summary.status, Status::Running | Status::Unknown) {
            summary.status = run.status;
        }
        let ended_as = (!live).then_some(run.status);
        merge_node_spans(&mut summary.nodes, &spans_of(run.id), ended_as);
        // The studio ran it: what the engine does not say, the run's record does.
        summary.not_known = None;
        summary.total_usage();
        if let Some(run_status) = ended_as {
            // What the folder left `running` ended with the run.
            for node in summary.nodes.iter_mut().filter(|node| node.status == Status::Running) {
                node.status = run_status;
            }
        }
    }
}

/// The folder's nodes with the last run's node spans laid over them (see [`with_recorded_runs`]).
/// `ended_as`: the run's status once it ended (a node span still `running` then takes it).
fn merge_node_spans(nodes: &mut Vec<NodeSummary>, spans: &[Span], ended_as: Option<Status>) {
    let mut ran: Vec<NodeSummary> = Vec::new();
    // Where each node the run ran is in `ran`, by name: a run of 80,000 node executions was
    // 80,000² comparisons a listing, with a find in `ran` for each (seconds of the app's CPU, its
    // table read again and again while the run went on).
    let mut place: HashMap<&str, usize> = HashMap::new();
    for span in spans.iter().filter(|span| span.kind == SpanKind::Node) {
        let status = match (span.status, ended_as) {
            (Status::Running, Some(run_status)) => run_status,
            (status, _) => status,
        };
        // A node run again in the same run (a loop) is one entry; its last execution's status.
        match place.entry(span.name.as_str()) {
            Entry::Occupied(at) => ran[*at.get()].status = status,
            Entry::Vacant(at) => {
                at.insert(ran.len());
                ran.push(NodeSummary {
                    name: span.name.clone(),
                    status,
                    usage: None,
                    order_uncertain: false,
                });
            }
        }
    }
    if ran.is_empty() {
        return;
    }
    // The folder's nodes the run did not run keep their place: each goes after the node before it
    // in the folder's order that the run did run (or first).
    let mut merged: Vec<NodeSummary> = Vec::with_capacity(ran.len() + nodes.len());
    let mut pending_before_any: Vec<NodeSummary> = Vec::new();
    let mut after: HashMap<String, Vec<NodeSummary>> = HashMap::new();
    let mut previous_ran: Option<String> = None;
    for node in nodes.drain(..) {
        if let Some(&at) = place.get(node.name.as_str()) {
            // What the folder says the node used (its raw stream) stays with it.
            ran[at].usage = node.usage;
            previous_ran = Some(node.name);
        } else {
            match &previous_ran {
                Some(name) => after.entry(name.clone()).or_default().push(node),
                None => pending_before_any.push(node),
            }
        }
    }
    merged.extend(pending_before_any);
    for node in ran {
        let name = node.name.clone();
        merged.push(node);
        merged.extend(after.remove(&name).unwrap_or_default());
    }
    *nodes = merged;
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::vocabulary::id::SessionId;

    fn row(id: &str, status: Status, updated_at: u64, nodes: &[(&str, Status)]) -> SessionSummary {
        SessionSummary {
            id: SessionId::parse(id).unwrap(),
            path: PathBuf::from("/p").join(id),
            agent: None,
            title: None,
            status,
            current_node: None,
            created_at: None,
            updated_at: Timestamp(updated_at),
            nodes: nodes
                .iter()
                .map(|(name, status)| NodeSummary {
                    name: (*name).to_owned(),
                    status: *status,
                    usage: None,
                    order_uncertain: false,
                })
                .collect(),
            problems: Vec::new(),
            usage: None,
            not_known: None,
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
            kind: SpanKind::Node,
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
        with_recorded_runs(rows.iter_mut(), &runs, |_| vec![span("write", Status::Success)]);
        assert_eq!(
            statuses(&rows[0]),
            (Status::Cancelled, vec![Status::Success, Status::Success]),
            "the run was stopped after write ended: the node span says so"
        );

        let mut rows = [row("s", Status::Unknown, 10_000, &[("write", Status::Running)])];
        with_recorded_runs(rows.iter_mut(), &runs, |_| Vec::new());
        assert_eq!(statuses(&rows[0]), (Status::Cancelled, vec![Status::Cancelled]));
    }

    #[test]
    fn the_runs_node_spans_decide_the_nodes_their_order_and_statuses_whatever_the_time() {
        // The folder: only `boom` wrote a folder; an hour later it reads `success` and `unknown`
        // (what the folder rules give when nothing runs), ordered by name on equal folder times.
        let spans = || {
            vec![
                span("prep", Status::Success),
                span("boom", Status::Error),
                span("never", Status::Running),
            ]
        };
        let runs = [run("r", "s", Status::Error, Some(10_500))];
        let mut soon = [row("s", Status::Running, 10_000, &[("boom", Status::Running)])];
        let mut later = [row("s", Status::Unknown, 10_000, &[("boom", Status::Success)])];
        with_recorded_runs(soon.iter_mut(), &runs, |_| spans());
        with_recorded_runs(later.iter_mut(), &runs, |_| spans());
        let expected = vec![
            ("prep".to_owned(), Status::Success),
            ("boom".to_owned(), Status::Error),
            ("never".to_owned(), Status::Error),
        ];
        for rows in [&soon, &later] {
            let nodes: Vec<(String, Status)> = rows[0].nodes.iter().map(|n| (n.name.clone(), n.status)).collect();
            assert_eq!((rows[0].status, nodes), (Status::Error, expected.clone()));
        }
    }

    #[test]
    fn a_replay_keeps_the_folders_other_nodes_in_their_place() {
        let mut rows = [row(
            "s",
            Status::Unknown,
            10_000,
            &[
                ("plan", Status::Success),
                ("write", Status::Success),
                ("check", Status::Success),
            ],
        )];
        let runs = [run("r2", "s", Status::Success, Some(10_500))];
        with_recorded_runs(rows.iter_mut(), &runs, |_| vec![span("write", Status::Error)]);
        let nodes: Vec<(&str, Status)> = rows[0].nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
        assert_eq!(
            nodes,
            [
                ("plan", Status::Success),
                ("write", Status::Error),
                ("check", Status::Success)
            ]
        );
    }

    #[test]
    fn files_that_tell_live_runs_and_later_writes_win() {
        let untouched = |status: Status, updated_at: u64, runs: &[LastRun<'_>]| {
            let mut rows = [row("s", status, updated_at, &[("a", status)])];
            with_recorded_runs(rows.iter_mut(), runs, |_| Vec::new());
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
        with_recorded_runs(quiet.iter_mut(), &[run("r", "s", Status::Running, None)], |_| {
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

    #[test]
    fn the_store_names_a_session_before_its_folder_and_the_title_falls_back_to_the_agent() {
        let named = |folder: (Option<&str>, Option<&str>), store: (Option<&str>, Option<&str>)| {
            let mut summary = row("s", Status::Unknown, 0, &[]);
            summary.agent = folder.0.map(str::to_owned);
            summary.title = folder.1.map(str::to_owned);
            name_session(&mut summary, store.1.map(str::to_owned), store.0.map(str::to_owned));
            (summary.agent, summary.title)
        };
        let some = |a: &str, t: &str| (Some(a.to_owned()), Some(t.to_owned()));
        assert_eq!(
            named(
                (Some("wf"), Some("from the folder")),
                (Some("mine"), Some("Plan a trip\nin May"))
            ),
            some("mine", "Plan a trip"),
            "the studio's own word, one line"
        );
        assert_eq!(
            named((Some("wf"), Some("folder prompt")), (None, None)),
            some("wf", "folder prompt")
        );
        assert_eq!(named((Some("wf"), None), (None, None)), some("wf", "wf"));
        assert_eq!(named((None, None), (Some("mine"), None)), some("mine", "mine"));
        assert_eq!(
            named((None, None), (None, None)),
            (None, None),
            "the engine alone names nothing"
        );
    }
}
