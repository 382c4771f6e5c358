//! Runs left running (`zstudio run --detach`): what their keeper kept is recorded with the times
//! it saw it, so their nodes keep their durations and their end its own line, on time.

use std::time::{Duration, Instant, SystemTime};

use studio_core::runner::{RunEvent, StartedRun};
use studio_core::store::SpanKind;
use studio_core::{SessionId, Status};

use crate::harness::{self, request, wait_for, Bench};

/// Starts a kept run of the test agent with `args` and leaves it running at once, as
/// `zstudio run --detach` does.
fn start_detached(b: &Bench, args: &[&str]) -> StartedRun {
    let run = b.supervisor.start(request(b, args)).unwrap();
    wait_for(
        &b.events,
        |event| matches!(event, RunEvent::RunStarted { run_id, .. } if *run_id == run.run_id),
    );
    assert_eq!(b.supervisor.detach(), vec![run.run_id.clone()]);
    run
}

fn millis(at: studio_core::session::Timestamp) -> u64 {
    at.0
}

#[test]
fn a_detached_runs_nodes_keep_their_durations() {
    let b = harness::bench("studio.sqlite", true);
    let run = start_detached(&b, &["--nodes", "first:1200,second:1200"]);
    let store = b.supervisor.store();
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.run(&run.run_id).unwrap().status == Status::Running {
        assert!(Instant::now() < deadline, "the detached run never ended");
        studio_core::runner::reconcile(store, SystemTime::now()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(store.run(&run.run_id).unwrap().status, Status::Success);
    let nodes: Vec<(String, u64)> = store
        .spans(&run.run_id)
        .unwrap()
        .into_iter()
        .filter(|span| span.kind == SpanKind::Node)
        .map(|span| {
            let ended = span.ended_at.map(millis).expect("ended");
            (span.name, ended - millis(span.started_at))
        })
        .collect();
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    for (name, duration) in &nodes {
        assert!(
            (1100..5000).contains(duration),
            "node {name} of a detached run lasted {duration} ms (it slept 1200 ms): {nodes:?}"
        );
    }
}

#[test]
fn a_stopped_detached_run_ends_with_its_cancelled_line_on_time() {
    let b = harness::bench("studio.sqlite", true);
    // The agent honours the stop file after its first node (about 1.5 s in).
    let run = start_detached(&b, &["--nodes", "first:1500,second:30000"]);
    std::thread::sleep(Duration::from_millis(300));
    let store = b.supervisor.store();
    let ended = studio_core::runner::stop_elsewhere_and_wait(
        store,
        &run.run_id,
        &run.session_path,
        false,
        Duration::from_secs(30),
        |_| {},
    )
    .unwrap();
    let returned = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(ended.status, Status::Cancelled, "{ended:?}");
    let session = SessionId::parse(&run.session_id).unwrap();
    let logs = store.logs(&b.workspace, &session).unwrap();
    let last = logs
        .iter()
        .rev()
        .find(|line| line.run_id.as_deref() == Some(run.run_id.as_str()))
        .unwrap();
    assert_eq!(last.event, "run.cancelled", "{logs:#?}");
    let started = millis(ended.started_at);
    let elapsed = last.fields["elapsed_ms"].as_u64().expect("its elapsed time");
    assert!((1400..10_000).contains(&elapsed), "{last:?}");
    assert!(
        millis(last.at).abs_diff(started + elapsed) <= 5,
        "stamped when the run ended: {last:?} (started {started})"
    );
    assert!(millis(last.at) <= returned, "stamped after the stop returned: {last:?}");
    assert_eq!(ended.ended_at.map(millis), Some(millis(last.at)));
}
