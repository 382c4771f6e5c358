//! Runs adopted (`Supervisor::adopt`): a kept run whose studio process was killed is followed on
//! by another studio process, live, from the lines the store already has, to its end.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use studio_core::protocol::Stream;
use studio_core::runner::RunEvent;
use studio_core::stop::Stopping;
use studio_core::store::{SpanKind, Store};
use studio_core::Status;

use crate::harness::{self, agent_binary, keeper_binary, request, wait_for};

const AGENT_ARGS: [&str; 4] = ["--nodes", "plan:1500,write:3000,report:1500", "--lines", "6"];

/// A run's stored lines, in order: their stream and text (its session's id said as `SESSION`).
fn stored_lines(store: &Store, run_id: &str) -> Vec<(Stream, String)> {
    let session = store.run(run_id).unwrap().session_id;
    store
        .output_page(run_id, 1, 100_000)
        .unwrap()
        .into_iter()
        .map(|line| (line.stream, line.text.replace(&session, "SESSION")))
        .collect()
}

#[test]
fn a_run_whose_studio_was_killed_is_adopted_and_its_lines_come_live_each_once() {
    let b = harness::bench("studio.sqlite", true);
    let store = b.supervisor.store().clone();

    // What the run records when one studio follows it from its start to its end.
    let whole = b.supervisor.start(request(&b, &AGENT_ARGS)).unwrap();
    wait_for(
        &b.events,
        |event| matches!(event, RunEvent::RunFinished { run_id, .. } if *run_id == whole.run_id),
    );
    let expected = stored_lines(&store, &whole.run_id);
    assert!(expected.len() > 10, "{expected:?}");

    let run_id = started_by_a_killed_studio(&b, &AGENT_ARGS, &whole.run_id);
    let recorded_by_a = store.output_line_count(&run_id).unwrap();
    assert_eq!(store.run(&run_id).unwrap().status, Status::Running);

    // Studio process B (this one) adopts it, once.
    assert_eq!(
        b.supervisor.adopt(Some(b.workspace.root())).unwrap(),
        vec![run_id.clone()]
    );
    assert_eq!(b.supervisor.adopt(None).unwrap(), Vec::<String>::new(), "adopted once");

    // A line the agent prints after that is heard, and stored, while the run still goes on.
    let heard = wait_for(
        &b.events,
        |event| matches!(event, RunEvent::Output { run_id: id, .. } if *id == run_id),
    );
    let RunEvent::Output { line, .. } = heard else {
        unreachable!()
    };
    eventually_stored(&store, &run_id, &line);
    let run = store.run(&run_id).unwrap();
    assert_eq!(run.status, Status::Running, "heard only at the run's end: {line}");

    // It ends once, with every line exactly once, in order.
    let mut ends = 0;
    loop {
        let event = b.events.recv_timeout(Duration::from_secs(30)).expect("the run's end");
        if let RunEvent::RunFinished { run_id: id, status, .. } = &event {
            if *id == run_id {
                ends += 1;
                assert_eq!(*status, Status::Success, "{event:?}");
                break;
            }
        }
    }
    let stored = stored_lines(&store, &run_id);
    assert!(stored.len() as i64 > recorded_by_a, "{stored:?}");
    assert_eq!(stored, expected, "every line once, in order");
    let run = store.run(&run_id).unwrap();
    assert_eq!((run.status, run.exit_code), (Status::Success, Some(0)));
    let nodes = |run_id: &str| -> Vec<(String, Option<Status>)> {
        store
            .spans(run_id)
            .unwrap()
            .into_iter()
            .filter(|span| span.kind == SpanKind::Node)
            .map(|span| (span.name, span.ended_at.map(|_| span.status)))
            .collect()
    };
    assert_eq!(nodes(&run_id), nodes(&whole.run_id), "each node once, ended");
    // Nothing more is said of it.
    while let Ok(event) = b.events.recv_timeout(Duration::from_millis(500)) {
        assert!(
            !matches!(&event, RunEvent::RunFinished { run_id: id, .. } if *id == run_id),
            "its end said twice"
        );
    }
    assert_eq!(ends, 1);
}

/// How run `run_id` ended, as its end was announced: its status and how it was stopped.
fn ended(b: &harness::Bench, run_id: &str) -> (Status, Option<Stopping>) {
    let end = wait_for(
        &b.events,
        |event| matches!(event, RunEvent::RunFinished { run_id: id, .. } if *id == run_id),
    );
    let RunEvent::RunFinished { status, stopped_by, .. } = end else {
        unreachable!()
    };
    (status, stopped_by)
}

/// Waits until `line` is among the run's stored lines.
fn eventually_stored(store: &Store, run_id: &str, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = line.replace(&store.run(run_id).unwrap().session_id, "SESSION");
    while !stored_lines(store, run_id).iter().any(|(_, text)| *text == line) {
        assert!(Instant::now() < deadline, "`{line}` was heard, never stored");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The id of a run of the test agent with `args` that studio process A (`zstudio run`) started
/// through its keeper, on the bench's store, and was killed (SIGKILL) once it recorded a few
/// lines; `other` is a run of the workspace already there.
fn started_by_a_killed_studio(b: &harness::Bench, args: &[&str], other: &str) -> String {
    started_by_a_killed_studio_with(b, &[], args, other)
}

/// [`started_by_a_killed_studio`] with `options` given to `zstudio run` (`--max-tokens N`).
fn started_by_a_killed_studio_with(b: &harness::Bench, options: &[&str], args: &[&str], other: &str) -> String {
    let store = b.supervisor.store();
    let agent = agent_binary();
    let mut a = Command::new(keeper_binary())
        .args(["run", "--json", "-w"])
        .arg(b.workspace.root())
        .args(options)
        .arg("--")
        .arg(&agent)
        .args(args)
        .env("ZIBBY_STUDIO_DB", &b.db)
        .env("XDG_DATA_HOME", b.dir.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let run_id = loop {
        let runs = store.runs(&b.workspace, None).unwrap();
        if let Some(run) = runs.into_iter().find(|run| run.id != other) {
            break run.id;
        }
        assert!(Instant::now() < deadline, "studio A never started its run");
        std::thread::sleep(Duration::from_millis(20));
    };
    while store.output_line_count(&run_id).unwrap() < 3 {
        assert!(Instant::now() < deadline, "studio A never recorded a line");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.kill().unwrap();
    a.wait().unwrap();
    run_id
}

/// Once adopted, the adopter owns the run: its Stop (the stop files, the node finishes first)
/// ends it, recorded `cancelled` once; the store's owner is this process.
#[test]
fn an_adopted_run_is_stopped_by_its_adopter() {
    let b = harness::bench("studio.sqlite", true);
    let store = b.supervisor.store().clone();
    let run_id = started_by_a_killed_studio(&b, &["--nodes", "plan:1500,write:30000"], "");
    assert_eq!(b.supervisor.adopt(None).unwrap(), vec![run_id.clone()]);
    assert_eq!(
        store.run(&run_id).unwrap().owner_pid,
        Some(i64::from(std::process::id())),
        "owned here"
    );
    assert_eq!(b.supervisor.live_runs(), vec![run_id.clone()]);
    assert_eq!(b.supervisor.stop(&run_id, false).unwrap(), Stopping::Graceful);
    assert_eq!(ended(&b, &run_id).0, Status::Cancelled);
    let run = store.run(&run_id).unwrap();
    assert_eq!(run.status, Status::Cancelled, "{run:?}");
    assert!(b.supervisor.live_runs().is_empty());
}

/// An adopted run its adopter leaves running again (a remote workspace's server whose link
/// dropped) goes on unowned, still `running` in the store: never recorded as ended while its
/// agent runs, whether it is let go at once (before its files are read) or while followed.
#[test]
fn an_adopted_run_left_running_again_stays_running() {
    let b = harness::bench("studio.sqlite", true);
    let store = b.supervisor.store().clone();
    let run_id = started_by_a_killed_studio(&b, &["--nodes", "plan:60000"], "");
    for round in 0..6 {
        assert_eq!(b.supervisor.adopt(None).unwrap(), vec![run_id.clone()], "round {round}");
        std::thread::sleep(Duration::from_millis(round * 60));
        assert_eq!(b.supervisor.detach(), vec![run_id.clone()]);
        let deadline = Instant::now() + Duration::from_secs(10);
        let run = loop {
            let run = store.run(&run_id).unwrap();
            if run.owner_pid.is_none() || run.status != Status::Running {
                break run;
            }
            assert!(Instant::now() < deadline, "never let go: {run:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(run.status, Status::Running, "round {round}: {run:?}");
    }
    // Adopted once more and stopped by force: `cancelled`, by force.
    assert_eq!(b.supervisor.adopt(None).unwrap(), vec![run_id.clone()]);
    assert_eq!(b.supervisor.stop(&run_id, true).unwrap(), Stopping::Forced);
    assert_eq!(ended(&b, &run_id).0, Status::Cancelled);
    assert_eq!(store.run(&run_id).unwrap().stopped_by, Some(Stopping::Forced));
}

/// An adopted run asked to stop whose keeper is then killed (so nothing records how its agent
/// ended) is `cancelled`, stopped gracefully, as recovery settles such a run: not `interrupted`.
#[test]
fn an_adopted_run_asked_to_stop_whose_keeper_is_killed_is_cancelled() {
    let b = harness::bench("studio.sqlite", true);
    let store = b.supervisor.store().clone();
    let run_id = started_by_a_killed_studio(&b, &["--nodes", "plan:60000"], "");
    assert_eq!(b.supervisor.adopt(None).unwrap(), vec![run_id.clone()]);
    assert_eq!(b.supervisor.stop(&run_id, false).unwrap(), Stopping::Graceful);
    let keeper = store.run(&run_id).unwrap().process_identity.expect("its keeper");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(keeper.pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(ended(&b, &run_id), (Status::Cancelled, Some(Stopping::Graceful)));
    let run = store.run(&run_id).unwrap();
    assert_eq!(
        (run.status, run.stopped_by),
        (Status::Cancelled, Some(Stopping::Graceful))
    );
}

/// A run started with a budget whose studio died before the budget was reached is held to it by
/// its adopter: the node whose usage reaches it finishes, no later node starts, and the run ends
/// `cancelled`, stopped by its budget.
#[test]
fn an_adopted_run_is_held_to_the_budget_it_was_started_with() {
    let b = harness::bench("studio.sqlite", true);
    let store = b.supervisor.store().clone();
    let run_id = started_by_a_killed_studio_with(
        &b,
        &["--max-tokens", "1"],
        &[
            "--nodes",
            "plan:1500,write:1500,report:1500",
            "--lines",
            "0",
            "--usage",
            "write=claude-code",
        ],
        "",
    );
    let budget = store.run(&run_id).unwrap().budget.expect("the run's budget is kept");
    assert_eq!((budget.max_tokens, budget.max_cost_usd), (Some(1), None));
    assert_eq!(b.supervisor.adopt(None).unwrap(), vec![run_id.clone()]);
    assert_eq!(ended(&b, &run_id).0, Status::Cancelled);
    let run = store.run(&run_id).unwrap();
    assert_eq!(
        run.stopped_by,
        Some(studio_core::timeline::StoppedBy::Budget),
        "{run:?}"
    );
    let spans = store.spans(&run_id).unwrap();
    let nodes: Vec<&str> = spans
        .iter()
        .filter(|span| span.kind == SpanKind::Node)
        .map(|span| span.name.as_str())
        .collect();
    assert_eq!(nodes, ["plan", "write"], "no node starts past the budget");
    let session = studio_core::SessionId::parse(&run.session_id).unwrap();
    let events: Vec<String> = store
        .logs(&b.workspace, &session)
        .unwrap()
        .into_iter()
        .map(|line| line.event)
        .collect();
    assert!(events.contains(&"budget.reached".to_owned()), "{events:?}");
}
