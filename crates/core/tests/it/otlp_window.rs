//! The window's runs as traces (issue 45): the app service (`Studio`, as the window opens it)
//! sends each run it starts, live, to the endpoint its workspace's `[otlp]` table names; a real
//! Arize Phoenix on 127.0.0.1 (`test_servers::phoenix`) receives the run's span and each node's,
//! with the ids `otlp push` gives them and the usage the nodes printed.

use std::time::{Duration, Instant, SystemTime};

use studio_core::app::Studio;
use studio_core::runner::RunEvent;
use studio_core::share::otlp;
use studio_core::store::StoreLocation;
use test_servers::phoenix::Phoenix;

use crate::harness;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_windows_runs_go_live_to_their_workspaces_endpoint() {
    let phoenix = Phoenix::start();
    let root = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join(".zibby")).unwrap();
    std::fs::write(
        root.path().join(".zibby/studio.toml"),
        format!("[otlp]\nendpoint = \"{}\"\n", phoenix.endpoint()),
    )
    .unwrap();
    let (studio, events) = Studio::open(
        Some(root.path()),
        Ok(StoreLocation::File(db.path().join("studio.sqlite"))),
    );
    let (events, _notices) = events.expect("the supervisor's subscriptions");
    let request = harness::request_in(
        &studio.workspace().unwrap(),
        &["--nodes", "plan:30,>search:20,write:30", "--usage", "plan=claude-code"],
    );
    let run = studio.supervisor().unwrap().start(request).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let event = events.recv_timeout(deadline - Instant::now()).expect("the run ends");
        if matches!(&event, RunEvent::RunFinished { run_id, .. } if *run_id == run.run_id) {
            break;
        }
    }
    // What a push would send of it: its ids, for the spans the window sent live.
    let id = studio_core::SessionId::parse(&run.session_id).unwrap();
    let pushed = otlp::session_traces(
        studio.store().unwrap(),
        &studio.workspace().unwrap(),
        &id,
        otlp::TraceOptions::default(),
        SystemTime::now(),
    )
    .unwrap();
    let spans: Vec<_> = pushed.resource_spans[0].scope_spans[0].spans.clone();
    assert_eq!(spans.len(), 4, "the run and its three node executions");
    let trace = hex(&otlp::trace_id(&run.run_id));
    let live = loop {
        let live = phoenix.spans(&trace);
        if live.len() >= spans.len() {
            break live;
        }
        assert!(
            Instant::now() < deadline,
            "Phoenix has {} spans: {}",
            live.len(),
            phoenix.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut live_ids: Vec<String> = live
        .iter()
        .map(|s| s["context"]["span_id"].as_str().unwrap().to_owned())
        .collect();
    let mut pushed_ids: Vec<String> = spans.iter().map(|s| hex(&s.span_id)).collect();
    live_ids.sort();
    pushed_ids.sort();
    assert_eq!(live_ids, pushed_ids, "the window's live spans have a push's ids");
    let plan = live
        .iter()
        .find(|s| s["attributes"]["gen_ai.agent.name"] == "plan")
        .unwrap();
    assert!(
        plan["attributes"]["gen_ai.request.model"]
            .as_str()
            .unwrap()
            .starts_with("claude"),
        "{plan}"
    );
    studio.shut_down();
}
