//! A flood of node ends exported live: `zstudio run -- cat FILE` of 20,000 node executions (a
//! real child printing them as fast as it can) with `OTEL_EXPORTER_OTLP_ENDPOINT` at a collector
//! on 127.0.0.1 that takes every request, each answered after 0.15 s (a backend across a
//! network). Every span reaches it, and nothing is said lost. (A queue of 4,096 spans lost
//! thousands here: the run's spans come faster than requests of 512 go one after another.)

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use tempfile::TempDir;
use test_servers::otlp_collector::Collector;

/// What the collector was sent: each span's id, and how many spans in all (a span sent twice
/// counts twice there, once in the ids).
#[derive(Default)]
struct Received {
    span_ids: HashSet<Vec<u8>>,
    spans: usize,
    names: HashSet<String>,
}

/// A collector of protobuf requests on 127.0.0.1 that answers each after [`AWAY`], and decodes
/// what it was sent with the OpenTelemetry project's own types.
fn collector() -> (Collector, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let shared = received.clone();
    let collector = Collector::start(AWAY, move |body| {
        let request = ExportTraceServiceRequest::decode(body).unwrap();
        let mut received = shared.lock().unwrap();
        let spans = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans);
        for span in spans {
            received.spans += 1;
            received.span_ids.insert(span.span_id.clone());
            received.names.insert(span.name.clone());
        }
    });
    (collector, received)
}

const NODES: usize = 20_000;

/// How long the collector takes to answer a request.
const AWAY: std::time::Duration = std::time::Duration::from_millis(150);

#[test]
fn a_flood_of_node_ends_reaches_a_collector_that_keeps_up_with_no_span_lost() {
    let dir = TempDir::new().unwrap();
    let nodes = dir.path().join("nodes.txt");
    let mut file = String::new();
    for i in 0..NODES {
        file.push_str(&format!(
            "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"n{i}\"}}\n┌ n{i}\n│ work\n└ done 1ms\n\
             __WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_end\",\"node\":\"n{i}\"}}\n"
        ));
    }
    std::fs::write(&nodes, file).unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let (collector, received) = collector();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["run", "-w", workspace.to_str().unwrap()])
        .args(["--db", dir.path().join("studio.sqlite").to_str().unwrap()])
        .args(["--", "cat", nodes.to_str().unwrap()])
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env("XDG_DATA_HOME", super::data_home())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("spans lost"), "no span lost: {stderr}");
    let received = received.lock().unwrap();
    assert_eq!(
        (received.span_ids.len(), received.spans),
        (NODES + 1, NODES + 1),
        "every node's span and the run's, each once"
    );
    let missing: Vec<String> = (0..NODES)
        .map(|i| format!("invoke_agent n{i}"))
        .filter(|name| !received.names.contains(name))
        .take(5)
        .collect();
    assert!(missing.is_empty(), "spans never received: {missing:?}");
}
