//! A flood of node ends exported live: `zstudio run -- cat FILE` of 20,000 node executions (a
//! real child printing them as fast as it can) with `OTEL_EXPORTER_OTLP_ENDPOINT` at a collector
//! on 127.0.0.1 that takes every request, each answered after 0.15 s (a backend across a
//! network). Every span reaches it, and nothing is said lost. (A queue of 4,096 spans lost
//! thousands here: the run's spans come faster than requests of 512 go one after another.)

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use tempfile::TempDir;

/// What the collector was sent: each span's id, and how many spans in all (a span sent twice
/// counts twice there, once in the ids).
#[derive(Default)]
struct Received {
    span_ids: HashSet<Vec<u8>>,
    spans: usize,
    names: HashSet<String>,
}

/// An OTLP/HTTP collector of protobuf requests on 127.0.0.1 that answers each after [`AWAY`]
/// (HTTP/1.1, connections kept alive), a thread per connection, and decodes what it was sent
/// with the OpenTelemetry project's own types.
struct Collector {
    port: u16,
    received: Arc<Mutex<Received>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Received::default()));
        let shared = received.clone();
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let received = shared.clone();
                std::thread::spawn(move || serve(connection.unwrap(), &received));
            }
        });
        Collector { port, received }
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(connection: TcpStream, received: &Mutex<Received>) {
    let mut reader = BufReader::new(connection.try_clone().unwrap());
    let mut writer = connection;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(line.starts_with("POST /v1/traces "), "{line}");
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        {
            let mut received = received.lock().unwrap();
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
        }
        std::thread::sleep(AWAY);
        let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
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
    let collector = Collector::start();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["run", "-w", workspace.to_str().unwrap()])
        .args(["--db", dir.path().join("studio.sqlite").to_str().unwrap()])
        .args(["--", "cat", nodes.to_str().unwrap()])
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", collector.port),
        )
        .env("XDG_DATA_HOME", super::data_home())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("spans lost"), "no span lost: {stderr}");
    let received = collector.received.lock().unwrap();
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
