//! Runs started by the supervisor: real processes (the test agent plays the agent), real session
//! folders, a real SQLite store.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use studio_core::protocol::Stream;
use studio_core::runner::{RunEvent, RunEvents, RunRequest, STOP_FILES};
use studio_core::stop::Stopping;
use studio_core::timeline::StoppedBy;
use studio_core::{SessionId, Status};

use crate::harness::{self, capture, group_members, process_running, wait_for, Bench};

/// Events of one run until it finishes (panics after `limit`).
fn events_until_finished(events: &RunEvents, run_id: &str, limit: Duration) -> Vec<RunEvent> {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = events
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("run {run_id} did not finish in {limit:?}"));
        if event.run_id() != run_id {
            continue;
        }
        let finished = matches!(event, RunEvent::RunFinished { .. });
        seen.push(event);
        if finished {
            return seen;
        }
    }
}

fn bench() -> Bench {
    harness::bench("studio.sqlite", false)
}

fn request(bench: &Bench, args: &[&str]) -> RunRequest {
    RunRequest {
        agent: Some("test-agent".into()),
        ..harness::request(bench, args)
    }
}

fn finished(events: &[RunEvent]) -> (Status, Option<StoppedBy>, Option<i32>, Option<String>, u64) {
    match events.last() {
        Some(RunEvent::RunFinished {
            status,
            stopped_by,
            exit_code,
            error,
            elapsed_ms,
            ..
        }) => (*status, *stopped_by, *exit_code, error.clone(), *elapsed_ms),
        other => panic!("no run_finished event: {other:?}"),
    }
}

fn node_ends(events: &[RunEvent]) -> Vec<(String, Status)> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::NodeEnd { node, status, .. } => Some((node.clone(), *status)),
            _ => None,
        })
        .collect()
}

fn output_lines(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Output { line, .. } => Some(line.clone()),
            _ => None,
        })
        .collect()
}

/// A subscription to the nodes alone (the live trace export's) hears no output line, and hears
/// each node's end with the usage its lines printed (Claude Code's and Codex's formats), the
/// inner graph's node without any; the other subscriber still hears every line.
#[test]
fn a_subscription_to_the_nodes_hears_no_line_and_each_nodes_usage_as_it_ends() {
    let b = bench();
    let nodes = b.supervisor.subscribe_to_nodes();
    let run = b
        .supervisor
        .start(request(
            &b,
            &[
                "--nodes",
                "plan:30,>search:20,write:30",
                "--usage",
                "plan=claude-code,write=codex",
            ],
        ))
        .unwrap();
    let everything = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    let heard = events_until_finished(&nodes, &run.run_id, Duration::from_secs(5));
    assert!(!output_lines(&everything).is_empty());
    assert!(output_lines(&heard).is_empty(), "no line for the nodes' subscriber");
    let usage: Vec<(&str, Option<&studio_core::cost::NodeUsage>)> = heard
        .iter()
        .filter_map(|e| match e {
            RunEvent::NodeEnd { node, usage, .. } => Some((node.as_str(), usage.as_deref())),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = usage.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["search", "plan", "write"]);
    assert_eq!(usage[0].1, None, "search printed no usage");
    let plan = usage[1].1.expect("plan's usage");
    assert!(plan.models[0].starts_with("claude"), "{plan:?}");
    let write = usage[2].1.expect("write's usage (Codex names no model)");
    assert!(write.tokens.as_ref().unwrap().output > 0, "{write:?}");
}

#[test]
fn a_run_reports_its_nodes_live_and_is_recorded() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "plan:150,act:150"]))
        .unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    assert!(
        matches!(&events[0], RunEvent::RunStarted { pid: Some(_), .. }),
        "{:?}",
        events[0]
    );
    let begins: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, RunEvent::NodeBegin { .. }))
        .collect();
    assert_eq!(begins.len(), 2);
    assert_eq!(
        node_ends(&events),
        [("plan".into(), Status::Success), ("act".into(), Status::Success)]
    );
    // Live: the first node ended well before the run did.
    let plan_end = events.iter().find_map(|e| match e {
        RunEvent::NodeEnd { node, t_ms, .. } if node == "plan" => Some(*t_ms),
        _ => None,
    });
    let (status, _, exit_code, _, elapsed_ms) = finished(&events);
    assert_eq!((status, exit_code), (Status::Success, Some(0)));
    assert!(
        plan_end.unwrap() + 100 <= elapsed_ms,
        "plan ended at {plan_end:?} ms, the run at {elapsed_ms} ms"
    );

    let store = b.supervisor.store();
    let session = SessionId::parse(&run.session_id).unwrap();
    let recorded = store.run(&run.run_id).unwrap();
    assert_eq!((recorded.status, recorded.pid), (Status::Success, None));
    let events_logged: Vec<String> = store
        .logs(&b.workspace, &session)
        .unwrap()
        .into_iter()
        .map(|l| l.event)
        .collect();
    assert_eq!(
        events_logged,
        [
            "run.started",
            "node.begin",
            "node.end",
            "node.begin",
            "node.end",
            "run.finished"
        ]
    );
    let spans = store.spans(&run.run_id).unwrap();
    assert_eq!(
        spans.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["run", "plan", "act"]
    );
    assert_eq!(spans[1].parent_id, Some(spans[0].id));
    let lines = store.output_page(&run.run_id, 1, 1000).unwrap();
    assert!(lines
        .iter()
        .any(|l| l.text == "│ plan: working (1/2)" && l.node.as_deref() == Some("plan")));
    // The agent wrote into the folder the studio chose for it.
    assert!(run.session_path.join("plan/raw_stream_output.txt").is_file());
}

#[test]
fn a_failing_run_is_an_error_with_the_message_from_stderr() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "plan:20,act:20", "--fail", "act"]))
        .unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    let (status, _, exit_code, error, _) = finished(&events);
    assert_eq!((status, exit_code), (Status::Error, Some(1)));
    assert_eq!(
        error.as_deref(),
        Some("Error: Node 'act' failed after 1 attempt(s): boom: simulated failure")
    );
    assert_eq!(
        node_ends(&events),
        [("plan".into(), Status::Success), ("act".into(), Status::Error)]
    );
    let logs = b
        .supervisor
        .store()
        .logs(&b.workspace, &SessionId::parse(&run.session_id).unwrap())
        .unwrap();
    assert_eq!(logs.last().unwrap().event, "run.failed");
}

#[test]
fn a_graceful_stop_lands_after_the_current_node() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "first:700,second:700,third:700"]))
        .unwrap();
    wait_for(
        &b.events,
        |e| matches!(e, RunEvent::NodeBegin { node, .. } if node == "first"),
    );
    let pressed = Instant::now();
    let how = b.supervisor.stop(&run.run_id, false).unwrap();
    let on_disk = pressed.elapsed();
    assert_eq!(how, Stopping::Graceful, "the current node finishes first");
    for name in STOP_FILES {
        assert!(
            run.session_path.join(name).exists(),
            "{name} is on disk when stop returns"
        );
    }
    assert!(on_disk < Duration::from_secs(1), "stop files took {on_disk:?}");
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    let (status, stopped_by, exit_code, _, elapsed_ms) = finished(&events);
    assert_eq!(
        (status, stopped_by, exit_code),
        (Status::Cancelled, Some(StoppedBy::Graceful), Some(0))
    );
    assert_eq!(
        node_ends(&events),
        [("first".into(), Status::Success)],
        "the node finished, no other began"
    );
    for name in STOP_FILES {
        assert!(
            !run.session_path.join(name).exists(),
            "leftover {name} removed after exit"
        );
    }
    let logs = b
        .supervisor
        .store()
        .logs(&b.workspace, &SessionId::parse(&run.session_id).unwrap())
        .unwrap();
    let cancelled = logs
        .iter()
        .find(|l| l.event == "run.cancelled")
        .expect("a run.cancelled log line");
    assert_eq!(cancelled.fields["elapsed_ms"], elapsed_ms);
    assert_eq!(cancelled.fields["stopped_by"], "graceful");
    // The partial output is kept.
    assert!(!b.supervisor.store().output_page(&run.run_id, 1, 10).unwrap().is_empty());
}

#[test]
fn a_stop_before_the_first_node_runs_no_node_and_stale_stop_files_are_cleared() {
    let b = bench();
    // A stale stop file from an earlier run must not end this one.
    let session = SessionId::parse("1795952600000_stal").unwrap();
    let folder = b.workspace.session_path(&session);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(".zibby-stop"), "old").unwrap();
    let mut stale = request(&b, &["--nodes", "only:10"]);
    stale.session = Some(session);
    let run = b.supervisor.start(stale).unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    assert_eq!(
        finished(&events).0,
        Status::Success,
        "the stale stop file was removed first"
    );

    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "a:10", "--wait-before-ms", "600"]))
        .unwrap();
    b.supervisor.stop(&run.run_id, false).unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    assert_eq!(finished(&events).0, Status::Cancelled);
    assert!(node_ends(&events).is_empty());
}

#[test]
fn a_forced_stop_ends_an_agent_that_ignores_the_stop_file() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "stubborn:20000", "--ignore-stop"]))
        .unwrap();
    wait_for(&b.events, |e| matches!(e, RunEvent::NodeBegin { .. }));
    b.supervisor.stop(&run.run_id, false).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        b.supervisor.live_runs().contains(&run.run_id),
        "still in its node after a graceful stop"
    );
    let how = b.supervisor.stop(&run.run_id, false).unwrap();
    assert_eq!(how, Stopping::Forced, "a second stop is forced");
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(15));
    let (status, stopped_by, exit_code, _, elapsed_ms) = finished(&events);
    assert_eq!((status, stopped_by), (Status::Cancelled, Some(StoppedBy::Forced)));
    assert_eq!(exit_code, Some(128 + 15));
    assert!(elapsed_ms < 10_000, "did not wait for the 20 s node: {elapsed_ms} ms");
}

#[test]
fn the_grace_period_escalates_to_signals_by_itself() {
    let b = bench();
    let mut slow = request(&b, &["--nodes", "stubborn:20000", "--ignore-stop"]);
    slow.grace = Duration::from_millis(400);
    let run = b.supervisor.start(slow).unwrap();
    wait_for(&b.events, |e| matches!(e, RunEvent::NodeBegin { .. }));
    b.supervisor.stop(&run.run_id, false).unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(15));
    assert_eq!(finished(&events).1, Some(StoppedBy::Forced));
    let logs = b
        .supervisor
        .store()
        .logs(&b.workspace, &SessionId::parse(&run.session_id).unwrap())
        .unwrap();
    assert!(logs.iter().any(|l| l.event == "run.signalled"), "{logs:?}");
}

#[test]
fn no_process_of_a_stopped_run_survives_not_even_one_that_ignores_sigterm() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(
            &b,
            &["--nodes", "tools:20000", "--ignore-stop", "--spawn-grandchild"],
        ))
        .unwrap();
    let grandchild = match wait_for(
        &b.events,
        |e| matches!(e, RunEvent::Output { line, .. } if line.contains("grandchild pid")),
    ) {
        RunEvent::Output { line, .. } => line.rsplit(' ').next().unwrap().parse::<u32>().unwrap(),
        _ => unreachable!(),
    };
    assert!(process_running(grandchild));
    b.supervisor.stop(&run.run_id, true).unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(20));
    assert_eq!(finished(&events).0, Status::Cancelled);
    let deadline = Instant::now() + Duration::from_secs(5);
    while process_running(grandchild) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !process_running(grandchild),
        "the grandchild that ignored SIGTERM is gone"
    );
    assert!(
        group_members(run.pid.unwrap()).is_empty(),
        "nothing is left of the run's process group"
    );
}

#[test]
fn a_command_that_cannot_start_is_a_run_with_an_error_that_says_why() {
    let b = bench();
    let not_executable = b.workspace.root().join("agent.sh");
    std::fs::write(&not_executable, "#!/bin/sh\necho hi\n").unwrap();
    let cases: [(Vec<String>, Option<PathBuf>, &str); 4] = [
        (vec![String::new()], None, "the command is empty"),
        (vec!["zibby-no-such-agent".into()], None, "command not found"),
        (
            vec![not_executable.to_string_lossy().into_owned()],
            None,
            "not executable",
        ),
        (
            vec!["true".into()],
            Some(b.workspace.root().join("missing")),
            "does not exist",
        ),
    ];
    for (command, cwd, says) in cases {
        let mut req = request(&b, &[]);
        req.command = command.clone();
        req.cwd = cwd;
        let run = b.supervisor.start(req).unwrap();
        assert_eq!(run.pid, None);
        let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(5));
        let (status, _, _, error, _) = finished(&events);
        assert_eq!(status, Status::Error, "{command:?}");
        let error = error.unwrap();
        assert!(
            error.contains(says) && error.contains(&command[0]),
            "{command:?}: {error}"
        );
        assert_eq!(
            b.supervisor.store().run(&run.run_id).unwrap().error.as_deref(),
            Some(error.as_str())
        );
    }
}

#[test]
fn a_flood_of_100_mb_is_recorded_whole() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "flood:10", "--flood-mb", "100"]))
        .unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(300));
    assert_eq!(finished(&events).0, Status::Success);
    let done = output_lines(&events)
        .into_iter()
        .find(|l| l.starts_with("│ flood done:"))
        .expect("the flood ended");
    let flooded: i64 = done
        .trim_start_matches("│ flood done: ")
        .trim_end_matches(" lines")
        .parse()
        .unwrap();
    let store = b.supervisor.store();
    let all = store.output_page(&run.run_id, 1, 2_000_000).unwrap();
    assert_eq!(
        all.iter().filter(|l| l.text.starts_with("│ flood flood")).count() as i64,
        flooded,
        "no line lost"
    );
    assert!(
        all.windows(2).all(|w| w[1].seq == w[0].seq + 1),
        "lines in order, none missing"
    );
}

#[test]
fn hostile_output_is_kept_as_text() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(
            &b,
            &[
                "--nodes",
                "odd:10",
                "--long-line-mb",
                "50",
                "--binary",
                "--no-final-newline",
            ],
        ))
        .unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(120));
    assert_eq!(finished(&events).0, Status::Success);
    let lines = b.supervisor.store().output_page(&run.run_id, 1, 1000).unwrap();
    // Issue 14: one line, cut to the bound, saying how much was cut.
    let cut = format!(
        "{}{}",
        "L".repeat(studio_core::protocol::MAX_LINE_BYTES),
        studio_core::protocol::cut_marker((50_000_000 - studio_core::protocol::MAX_LINE_BYTES) as u64)
    );
    assert!(
        lines.iter().any(|l| l.text == cut),
        "the 50 MB line is one line, cut to the bound"
    );
    let binary = lines.iter().find(|l| l.text.contains("binary")).unwrap();
    assert!(binary.text.contains('\u{fffd}'), "{:?}", binary.text);
    assert!(
        lines.last().unwrap().text.starts_with("RESULT"),
        "the last line had no newline and is kept"
    );
    assert_eq!(lines.last().unwrap().stream, Stream::Stdout);
}

#[test]
fn twenty_runs_at_once_each_finish_in_their_own_session() {
    let b = bench();
    let runs: Vec<_> = (0..20)
        .map(|_| b.supervisor.start(request(&b, &["--nodes", "a:200,b:200"])).unwrap())
        .collect();
    let mut finished_runs = std::collections::HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while finished_runs.len() < runs.len() {
        let event = b
            .events
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("all finish");
        if let RunEvent::RunFinished { run_id, status, .. } = event {
            finished_runs.insert(run_id, status);
        }
    }
    assert!(
        finished_runs.values().all(|s| *s == Status::Success),
        "{finished_runs:?}"
    );
    let sessions: std::collections::HashSet<_> = runs.iter().map(|r| r.session_id.clone()).collect();
    assert_eq!(sessions.len(), 20);
}

#[test]
fn continue_passes_the_conversation_and_replay_fills_the_node() {
    let b = bench();
    let mut first = request(&b, &["--nodes", "answer:10"]);
    first.prompt = Some("Plan a trip to Kyoto".into());
    let run = b.supervisor.start(first).unwrap();
    events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    let session = SessionId::parse(&run.session_id).unwrap();

    let mut next = request(&b, &["--nodes", "answer:10"]);
    next.session = Some(session.clone());
    next.prompt = Some("Now make it four days".into());
    let second = b.supervisor.start(next).unwrap();
    assert_eq!(second.session_id, run.session_id, "the same session");
    let events = events_until_finished(&b.events, &second.run_id, Duration::from_secs(30));
    let lines = output_lines(&events);
    assert!(
        lines.contains(&"│ prompt: Now make it four days".to_owned()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"│ earlier messages: 1 (last: Plan a trip to Kyoto)".to_owned()),
        "{lines:?}"
    );
    let messages = b.supervisor.store().messages(&b.workspace, &session).unwrap();
    assert_eq!(messages.len(), 2);

    let mut replay = request(&b, &["--nodes", "{node}:10"]);
    replay.session = Some(session.clone());
    replay.node = Some("answer".into());
    let third = b.supervisor.start(replay).unwrap();
    let events = events_until_finished(&b.events, &third.run_id, Duration::from_secs(30));
    assert_eq!(node_ends(&events), [("answer".into(), Status::Success)]);
    let runs = b.supervisor.store().runs(&b.workspace, Some(&session)).unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].replayed_node.as_deref(), Some("answer"));
}

#[test]
fn a_capture_replayed_through_the_runner_gives_the_capture_timeline() {
    let b = bench();
    for name in [
        "head-bb10e85-02-pipeline-markers",
        // Without markers: the nodes come from the human timeline, live too.
        "head-bb10e85-02-pipeline-plain",
        "head-bb10e85-91-throw-custom-throw",
        "head-bb10e85-90-slow-sigterm",
        "v0.2.0-0ff4886-92-retries-custom-recovers",
    ] {
        let dir = capture(name);
        let run = b
            .supervisor
            .start(request(&b, &["replay", dir.to_str().unwrap(), "--speed", "20"]))
            .unwrap();
        let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
        let status: i32 = std::fs::read_to_string(dir.join("exit_code.txt"))
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let expected = studio_core::timeline::read_capture(
            &std::fs::read(dir.join("stdout.txt")).unwrap(),
            &std::fs::read(dir.join("stderr.txt")).unwrap(),
            Some(studio_core::timeline::RunEnd {
                exit: studio_core::timeline::Exit::from_shell_status(status),
                signalled_by_studio: false,
            }),
        );
        assert_eq!(finished(&events).0, expected.status, "{name}");
        // Every node ends in the live stream: those the run's end left open (a SIGTERM inside a
        // node) with the status the timeline gives them, as the listing shows them.
        let ended: Vec<_> = expected.nodes.iter().map(|n| (n.name.clone(), n.status)).collect();
        assert_eq!(node_ends(&events), ended, "{name}");
        let spans = node_span_names(&b, &run.run_id);
        let began: Vec<String> = expected.nodes.iter().map(|n| n.name.clone()).collect();
        assert_eq!(spans, began, "{name}: one span per node execution");
    }
}

#[test]
fn variables_the_studio_hides_do_not_reach_the_agents() {
    let b = bench();
    let env_lines = |run_id: &str| -> Vec<String> {
        output_lines(&events_until_finished(&b.events, run_id, Duration::from_secs(30)))
            .into_iter()
            .filter(|line| line.contains("env PATH"))
            .collect()
    };
    let args = ["--nodes", "plan:10", "--print-env", "PATH"];
    let seen = env_lines(&b.supervisor.start(request(&b, &args)).unwrap().run_id);
    assert!(
        seen.len() == 1 && seen[0].contains("env PATH=/"),
        "an agent gets the studio's environment: {seen:?}"
    );

    b.supervisor.hide_variables(&["PATH"]);
    let seen = env_lines(&b.supervisor.start(request(&b, &args)).unwrap().run_id);
    assert!(
        seen.len() == 1 && seen[0].contains("env PATH unset"),
        "a hidden variable is not passed on: {seen:?}"
    );
}

/// Issue 12's "stable facts": what a listing says of a session the studio ran does not change with
/// time passing, nor with equal folder times, and includes nodes that wrote no folder.
#[test]
fn a_recorded_runs_nodes_are_listed_the_same_an_hour_later_folder_or_not() {
    let b = bench();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "prep:10,boom:10,last:10", "--fail", "boom"]))
        .unwrap();
    events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    let session = run.session_path.clone();
    // `prep` is a node that writes no folder (a custom code node); the others share one time.
    let _ = std::fs::remove_dir_all(session.join("prep"));
    let at = SystemTime::now() - Duration::from_secs(5);
    for entry in std::fs::read_dir(&session).unwrap().flatten() {
        let times = std::fs::FileTimes::new().set_modified(at);
        let _ = std::fs::File::open(entry.path()).and_then(|f| f.set_times(times));
    }
    let listed = |now: SystemTime| {
        let rows = b.supervisor.store().list_sessions(&b.workspace, now).unwrap();
        let row = rows.iter().find(|r| r.summary.id.as_str() == run.session_id).unwrap();
        let nodes: Vec<(String, Status)> = row.summary.nodes.iter().map(|n| (n.name.clone(), n.status)).collect();
        (row.summary.status, nodes)
    };
    let now = listed(SystemTime::now());
    assert_eq!(now.0, Status::Error);
    assert_eq!(
        now.1,
        [("prep".to_owned(), Status::Success), ("boom".to_owned(), Status::Error)],
        "the run's nodes in the order they ran, the one without a folder too"
    );
    assert_eq!(
        listed(SystemTime::now() + Duration::from_secs(3600)),
        now,
        "an hour later"
    );
    // `show` and the window's session view read the same.
    for at in [SystemTime::now(), SystemTime::now() + Duration::from_secs(3600)] {
        let id = SessionId::parse(&run.session_id).unwrap();
        let shown = b.supervisor.store().read_session(&b.workspace, &id, at).unwrap();
        let nodes: Vec<(String, Status)> = shown.nodes.iter().map(|n| (n.name.clone(), n.status)).collect();
        assert_eq!((shown.status, nodes), now, "show says what sessions says");
    }
}

/// A `┌ title` line an agent prints before the graph's first marker (a prompt library's intro)
/// looks like a node until the first marker: no span of it is left behind.
#[test]
fn a_title_line_before_the_first_marker_leaves_no_node() {
    let b = bench();
    let script = "printf '┌  my agent\\n'; \
                  printf '__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"plan\"}\\n┌ plan\\n└ done 1ms\\n'; \
                  printf '__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_end\",\"node\":\"plan\"}\\n'";
    let run = b
        .supervisor
        .start(RunRequest {
            command: vec!["sh".into(), "-c".into(), script.into()],
            ..harness::request(&b, &[])
        })
        .unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));
    assert_eq!(finished(&events).0, Status::Success);
    let spans = node_span_names(&b, &run.run_id);
    assert_eq!(spans, ["plan"]);
}

/// The names of a run's node spans, in the order they began.
fn node_span_names(b: &Bench, run_id: &str) -> Vec<String> {
    let spans = b.supervisor.store().spans(run_id).unwrap();
    spans
        .into_iter()
        .filter(|span| span.kind == "node")
        .map(|span| span.name)
        .collect()
}

/// A lossless subscriber (a terminal, a `--json` stream) that reads slower than the run prints
/// gets every line: the run waits for it rather than drop its events.
#[test]
fn a_lossless_subscriber_that_reads_slowly_misses_no_line() {
    let b = bench();
    let lossless = b.supervisor.subscribe_lossless();
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "plan:0", "--flood-mb", "24"]))
        .unwrap();
    let mut heard = 0i64;
    loop {
        let event = lossless
            .recv_timeout(Duration::from_secs(60))
            .expect("the run goes on while its subscriber reads");
        match event {
            RunEvent::Output { .. } => {
                heard += 1;
                // 20 µs a line, slower than the flood: a lossy subscriber falls 65,536 events behind.
                if heard % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            RunEvent::RunFinished { run_id, status, .. } if run_id == run.run_id => {
                assert_eq!(status, Status::Success);
                break;
            }
            _ => {}
        }
    }
    let (stdout, stderr) = b.supervisor.store().output_line_counts(&run.run_id).unwrap();
    assert!(stdout > 100_000, "a flood of lines: {stdout}");
    assert_eq!(heard, stdout + stderr, "every stored line was heard");
}

/// A node the run's end leaves open ends with the run, in the trace and in the live stream, also
/// when a `┌ title` line before the first marker was discarded (the timeline and the fold then
/// count nodes differently); the title's `node_begin` is taken back (`node_discarded`).
#[test]
fn a_node_left_open_by_the_runs_end_ends_with_it_after_a_discarded_title() {
    let b = bench();
    let script = r#"printf '┌ banner\n'; printf '__WORKFLOW_GRAPH_LOG__{"phase":"node_begin","node":"a"}\n'; exit 3"#;
    let run = b
        .supervisor
        .start(RunRequest {
            command: vec!["sh".into(), "-c".into(), script.into()],
            ..request(&b, &[])
        })
        .unwrap();
    let events = events_until_finished(&b.events, &run.run_id, Duration::from_secs(15));
    assert_eq!(finished(&events).0, Status::Error);
    assert_eq!(node_ends(&events), [("a".to_owned(), Status::Error)], "{events:?}");
    // The banner was heard as a node until the first marker; then it was taken back.
    let taken_back: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::NodeDiscarded { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(taken_back, ["banner"]);
    let spans = b.supervisor.store().spans(&run.run_id).unwrap();
    let nodes: Vec<(&str, Status, bool)> = spans
        .iter()
        .filter(|s| s.kind == studio_core::store::SpanKind::Node)
        .map(|s| (s.name.as_str(), s.status, s.ended_at.is_some()))
        .collect();
    assert_eq!(nodes, [("a", Status::Error, true)]);
}

#[test]
fn what_a_node_prints_it_used_on_stdout_is_its_usage_when_it_has_no_raw_stream() {
    let b = bench();
    // A run whose node prints its agent's stream on stdout, wrapped by the engine, and writes no
    // raw stream (as a failed agent node does).
    let stdout = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/usage/stdout-wrapped.txt"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let chunk = serde_json::json!({ "t": 0.0, "stream": "stdout", "text": stdout });
    std::fs::write(dir.path().join("stream_chunks.jsonl"), format!("{chunk}\n")).unwrap();
    std::fs::write(dir.path().join("exit_code.txt"), "0\n").unwrap();
    let run = b
        .supervisor
        .start(request(&b, &["replay", dir.path().to_str().unwrap()]))
        .unwrap();
    events_until_finished(&b.events, &run.run_id, Duration::from_secs(30));

    let store = b.supervisor.store();
    let printed = store.output_usage(&run.run_id).unwrap();
    let expected = studio_core::cost::read_node_usage(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/usage/claude-code-stream-json.jsonl"),
    )
    .unwrap();
    assert_eq!(printed.get("plan"), Some(&expected), "{printed:?}");
    assert!(!printed.contains_key("write"), "a node that printed no usage has none");
    let mut runs = store.runs(&b.workspace, None).unwrap();
    store
        .with_runs_usage(&b.workspace, &mut runs, SystemTime::now())
        .unwrap();
    let total = runs[0].usage.clone().expect("the run's total");
    assert_eq!((total.nodes, total.nodes_with_usage), (2, 1));
    assert_eq!(total.cost_usd, expected.cost_usd);
    assert_eq!(total.label, format!("≥ {} (1 of 2 nodes priced)", expected.cost_label));
}
