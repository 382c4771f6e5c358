//! An OTLP/HTTP collector on 127.0.0.1, in the test's own process (its CPU is not the studio's):
//! it takes every `POST`, hands its body to the test, and answers 200 after a delay the test
//! chooses (none, or a backend across a network). HTTP/1.1, connections kept alive, a thread a
//! connection. It listens until the process ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// What a collector does with each request's body (an `ExportTraceServiceRequest`, encoded as the
/// request's content type says).
type Take = dyn Fn(&[u8]) + Send + Sync;

/// A collector listening on [`Collector::port`] of 127.0.0.1.
pub struct Collector {
    port: u16,
}

impl Collector {
    /// Starts a collector that gives each request's body to `take`, then answers it after
    /// `answer_after`.
    pub fn start(answer_after: Duration, take: impl Fn(&[u8]) + Send + Sync + 'static) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen on 127.0.0.1");
        let port = listener.local_addr().expect("the listener's address").port();
        let take: Arc<Take> = Arc::new(take);
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { continue };
                let take = take.clone();
                std::thread::spawn(move || serve(connection, answer_after, &*take));
            }
        });
        Collector { port }
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(connection: TcpStream, answer_after: Duration, take: &Take) {
    let mut reader = BufReader::new(connection.try_clone().expect("a second handle on the connection"));
    let mut writer = connection;
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(
            line.starts_with("POST /v1/traces "),
            "not an OTLP traces request: {line}"
        );
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).expect("a request's headers");
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().expect("a content-length");
                }
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).expect("a request's body");
        take(&body);
        std::thread::sleep(answer_after);
        let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
