//! Where traces go and how they are sent: the OpenTelemetry exporter's standard variables, else
//! the workspace's `[otlp]` table in `.zibby/studio.toml`; OTLP over HTTP, as protobuf
//! (`http/protobuf`, the default) or JSON (`http/json`).
//!
//! ```toml
//! [otlp]
//! endpoint = "http://localhost:4318"   # the collector's base; traces go to /v1/traces
//! protocol = "http/json"               # optional
//! headers = { authorization = "Bearer …" }  # optional
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use opentelemetry_proto::tonic::trace::v1::{Span, TracesData};
use prost::bytes::Bytes;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::sessions::agents::{AGENTS_FILE, MAX_AGENTS_FILE_BYTES};
use crate::sessions::untrusted;
use crate::vocabulary::error::{Error, ErrorCode};

/// How spans are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "http/json")]
    HttpJson,
}

impl Protocol {
    pub(super) fn parse(text: &str, from: &str) -> Result<Protocol, Error> {
        match text.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "http/json" => Ok(Protocol::HttpJson),
            other => Err(Error::InvalidRequest {
                reason: format!("{from}: protocol `{other}` is not one the studio sends: http/protobuf or http/json"),
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::HttpJson => "http/json",
        }
    }
}

/// A collector's traces endpoint, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The full URL spans are POSTed to (`…/v1/traces`).
    pub url: String,
    pub protocol: Protocol,
    pub headers: Vec<(String, String)>,
    /// Where it was found: a variable's name or the file.
    pub from: String,
}

#[derive(Debug, Default, Deserialize)]
struct StudioFile {
    otlp: Option<OtlpTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OtlpTable {
    pub(super) endpoint: String,
    pub(super) protocol: Option<String>,
    #[serde(default)]
    pub(super) headers: BTreeMap<String, String>,
}

/// `base` with `/v1/traces` appended, as the exporter's base endpoint variable is read.
pub(super) fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

pub(super) fn check_url(url: &str, from: &str) -> Result<(), Error> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(Error::InvalidRequest {
            reason: format!("{from}: `{url}` is not an http:// or https:// URL"),
        })
    }
}

/// `k1=v1,k2=v2`, values percent-decoded (the exporter's header list).
fn parse_headers(text: &str, from: &str) -> Result<Vec<(String, String)>, Error> {
    text.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').ok_or_else(|| Error::InvalidRequest {
                reason: format!("{from}: `{}` is not KEY=VALUE", pair.trim()),
            })?;
            let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
            Ok((key.trim().to_owned(), value.into_owned()))
        })
        .collect()
}

impl Endpoint {
    /// The endpoint the variables (read through `var`) name, else the workspace's `[otlp]`
    /// table; `None` when neither names one.
    pub fn resolve(var: impl Fn(&str) -> Option<String>, workspace_root: &Path) -> Result<Option<Endpoint>, Error> {
        Endpoint::chosen(var, || studio_table(workspace_root), workspace_root)
    }

    /// The endpoint the variables name, else the one of `table` (the workspace's `[otlp]`,
    /// read only when no variable names one).
    pub(super) fn chosen(
        var: impl Fn(&str) -> Option<String>,
        table: impl FnOnce() -> Result<Option<OtlpTable>, Error>,
        workspace_root: &Path,
    ) -> Result<Option<Endpoint>, Error> {
        match Endpoint::from_variables(var)? {
            Some(endpoint) => Ok(Some(endpoint)),
            None => table()?
                .map(|table| Endpoint::from_table(table, workspace_root))
                .transpose(),
        }
    }

    /// The endpoint the exporter's variables (read through `var`) name, if they name one.
    fn from_variables(var: impl Fn(&str) -> Option<String>) -> Result<Option<Endpoint>, Error> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let from_env = if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some((url.trim().to_owned(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        } else {
            var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| (traces_url(base.trim()), "OTEL_EXPORTER_OTLP_ENDPOINT"))
        };
        if let Some((url, from)) = from_env {
            check_url(&url, from)?;
            let protocol = match ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
                .into_iter()
                .find_map(|name| var(name).map(|v| (v, name)))
            {
                Some((text, name)) => Protocol::parse(&text, name)?,
                None => Protocol::HttpProtobuf,
            };
            let mut headers = Vec::new();
            for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
                if let Some(text) = var(name) {
                    headers.extend(parse_headers(&text, name)?);
                }
            }
            return Ok(Some(Endpoint {
                url,
                protocol,
                headers,
                from: from.to_owned(),
            }));
        }
        Ok(None)
    }

    /// The endpoint of the workspace's `[otlp]` table (as [`studio_table`] read it).
    fn from_table(table: OtlpTable, workspace_root: &Path) -> Result<Endpoint, Error> {
        let from = workspace_root.join(AGENTS_FILE).display().to_string();
        let url = traces_url(table.endpoint.trim());
        check_url(&url, &from)?;
        let protocol = match &table.protocol {
            Some(text) => Protocol::parse(text, &from)?,
            None => Protocol::HttpProtobuf,
        };
        Ok(Endpoint {
            url,
            protocol,
            headers: table.headers.into_iter().collect(),
            from,
        })
    }
}

/// The `[otlp]` table of the workspace's `.zibby/studio.toml` as written (read as the agents
/// are: a regular file, bounded); `None` when it has none.
pub(super) fn studio_table(workspace_root: &Path) -> Result<Option<OtlpTable>, Error> {
    if untrusted::confined_folder(workspace_root, &[".zibby"])?.is_none() {
        return Ok(None);
    }
    let path = workspace_root.join(AGENTS_FILE);
    let bytes = match untrusted::read_bounded(&path, MAX_AGENTS_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if untrusted::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let file: StudioFile = toml::from_str(&String::from_utf8_lossy(&bytes)).map_err(|e| Error::InvalidRequest {
        reason: format!("{}: [otlp]: {}", path.display(), e.message()),
    })?;
    Ok(file.otlp)
}

/// What a push sent.
#[derive(Debug, Clone, Serialize)]
pub struct Pushed {
    pub url: String,
    pub protocol: &'static str,
    pub traces: usize,
    pub spans: usize,
    /// What the collector said it rejected (OTLP's partial success), when it said.
    pub rejected_spans: i64,
}

/// The body of an export request in the endpoint's encoding. A
/// `TracesData` is encoded as it is: an `ExportTraceServiceRequest` has the same one field
/// (`resource_spans`, number 1, `resourceSpans` in JSON), so its bytes are the request's
/// (a test decodes them as one), and no span is copied.
pub fn encode(traces: &TracesData, protocol: Protocol) -> Vec<u8> {
    let mut body = Vec::new();
    encode_into(traces, protocol, &mut body);
    body
}

/// [`encode`], written into `body` (emptied first; its room used, more made as needed).
fn encode_into(traces: &TracesData, protocol: Protocol, body: &mut Vec<u8>) {
    body.clear();
    match protocol {
        Protocol::HttpProtobuf => {
            body.reserve(traces.encoded_len());
            traces.encode(body).expect("a Vec takes any length");
        }
        Protocol::HttpJson => serde_json::to_writer(body, traces).expect("OTLP messages serialize"),
    }
}

/// The key of a length-delimited field numbered 1 and 2 (protobuf's wire format): where
/// `TracesData` holds its `ResourceSpans`, `ResourceSpans` its `Resource` and `ScopeSpans` its
/// `InstrumentationScope` (1); `ResourceSpans` its `ScopeSpans` and `ScopeSpans` its spans (2).
const FIELD_1: u8 = 1 << 3 | 2;
const FIELD_2: u8 = 2 << 3 | 2;

/// An export request's body gathered a span at a time: in protobuf each span is encoded by
/// prost as it is added, once (encoding the whole message at the end computes each span's
/// length again at every level it is nested in), after room left for the message's framing,
/// which is written there at the end (the spans are not copied behind it): the same bytes as
/// [`encode`] gives of the same spans (a test compares them). In JSON the spans are kept and
/// the message is encoded at the end.
pub(super) struct RequestBody {
    protocol: Protocol,
    spans: usize,
    /// Protobuf: [`framing_room`] bytes, then the spans encoded.
    encoded: Vec<u8>,
    kept: Vec<Span>,
}

impl RequestBody {
    pub(super) fn new(protocol: Protocol) -> RequestBody {
        RequestBody {
            protocol,
            spans: 0,
            encoded: vec![0; framing_room()],
            kept: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, span: &Span) {
        self.spans += 1;
        match self.protocol {
            Protocol::HttpProtobuf => {
                self.encoded.push(FIELD_2);
                span.encode_length_delimited(&mut self.encoded)
                    .expect("a Vec takes any length");
            }
            Protocol::HttpJson => self.kept.push(span.clone()),
        }
    }

    /// Whether spans are encoded as they are added (protobuf), so [`RequestBody::add_encoded`]
    /// may add them.
    pub(super) fn encodes_as_added(&self) -> bool {
        self.protocol == Protocol::HttpProtobuf
    }

    /// Adds a span `encode` appends to the body, length-delimited (protobuf only).
    pub(super) fn add_encoded(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
        debug_assert!(self.encodes_as_added(), "JSON keeps spans, not their bytes");
        self.spans += 1;
        self.encoded.push(FIELD_2);
        encode(&mut self.encoded);
    }

    pub(super) fn spans(&self) -> usize {
        self.spans
    }

    /// The bytes of the spans encoded so far (protobuf; JSON keeps spans, not bytes: 0).
    pub(super) fn encoded_len(&self) -> usize {
        self.encoded.len() - framing_room()
    }

    /// The request's body; the spans added are taken (a buffer a quarter larger made for the
    /// next request, which is likely as large).
    #[cfg(test)]
    pub(super) fn take(&mut self) -> Bytes {
        self.take_with(Vec::new())
    }

    /// [`RequestBody::take`], using `next`, the buffer of a body sent before whose bytes nobody
    /// reads any more (a buffer in use costs no new pages). Protobuf writes the *next* request
    /// into it (this one's spans are already encoded), grown to a quarter larger than this one
    /// when smaller; JSON writes this request into it.
    pub(super) fn take_with(&mut self, mut next: Vec<u8>) -> Bytes {
        self.spans = 0;
        match self.protocol {
            Protocol::HttpProtobuf => {
                let room = framing_room();
                next.clear();
                next.reserve(self.encoded.len() + self.encoded.len() / 4);
                next.resize(room, 0);
                let mut body = std::mem::replace(&mut self.encoded, next);
                // What the queue counts is what the body holds: no more than a quarter unused.
                if body.capacity() > body.len() + body.len() / 4 {
                    body.shrink_to_fit();
                }
                let starts = frame_spans(&mut body, room);
                Bytes::from(body).slice(starts..)
            }
            Protocol::HttpJson => {
                let spans = std::mem::take(&mut self.kept);
                encode_into(&super::map::traces_of_spans(spans), Protocol::HttpJson, &mut next);
                Bytes::from(next)
            }
        }
    }
}

/// The fields of [`super::map::traces_of_spans`]'s message before its spans, each with its
/// key: its resource and its scope.
fn framing_fields() -> &'static (Vec<u8>, Vec<u8>) {
    static FIELDS: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
    FIELDS.get_or_init(|| {
        let empty = super::map::traces_of_spans(Vec::new());
        let resource_spans = &empty.resource_spans[0];
        let field = |message: &dyn Fn(&mut Vec<u8>)| {
            let mut bytes = vec![FIELD_1];
            message(&mut bytes);
            bytes
        };
        let resource = field(&|bytes| {
            let resource = resource_spans.resource.as_ref().expect("a resource");
            resource.encode_length_delimited(bytes).expect("a Vec takes any length");
        });
        let scope = field(&|bytes| {
            let scope = resource_spans.scope_spans[0].scope.as_ref().expect("a scope");
            scope.encode_length_delimited(bytes).expect("a Vec takes any length");
        });
        (resource, scope)
    })
}

/// The most bytes the framing before the spans takes: two keys, two lengths of at most 10
/// bytes (a varint), the resource and the scope.
fn framing_room() -> usize {
    let (resource, scope) = framing_fields();
    2 * (1 + 10) + resource.len() + scope.len()
}

/// Writes `TracesData { resource_spans: [ResourceSpans { resource, scope_spans: [ScopeSpans {
/// scope, spans }] }] }`'s framing at the end of `body`'s first `room` bytes, before the spans
/// that follow them (encoded, each a field 2 of `ScopeSpans`): where the message starts.
fn frame_spans(body: &mut [u8], room: usize) -> usize {
    let (resource, scope) = framing_fields();
    let spans = body.len() - room;
    let scope_spans = scope.len() + spans;
    let resource_spans = resource.len() + 1 + prost::length_delimiter_len(scope_spans) + scope_spans;
    let mut framing = Vec::with_capacity(room);
    for (key, length, field) in [(FIELD_1, resource_spans, resource), (FIELD_2, scope_spans, scope)] {
        framing.push(key);
        prost::encode_length_delimiter(length, &mut framing).expect("a Vec takes any length");
        framing.extend_from_slice(field);
    }
    let starts = room - framing.len();
    body[starts..room].copy_from_slice(&framing);
    starts
}

fn content_type(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::HttpProtobuf => "application/x-protobuf",
        Protocol::HttpJson => "application/json",
    }
}

/// Sends `traces` to `endpoint` in one request that gives up after `timeout`. Spans sent again
/// keep their ids (the backend decides what a duplicate is).
pub fn push(endpoint: &Endpoint, traces: &TracesData, timeout: Duration) -> Result<Pushed, Error> {
    let body = encode(traces, endpoint.protocol);
    let rejected_spans = post(endpoint, body.into(), timeout)?;
    let (traces_count, spans) = super::map::counts(traces);
    Ok(Pushed {
        url: endpoint.url.clone(),
        protocol: endpoint.protocol.as_str(),
        traces: traces_count,
        spans,
        rejected_spans,
    })
}

/// Sends `body` (traces [`encode`]d in the endpoint's protocol) to `endpoint` in one request
/// that gives up after `timeout`: the spans the collector said it rejected. (A body tried again
/// is the same bytes, shared: not copied for each try.)
pub(super) fn post(endpoint: &Endpoint, body: Bytes, timeout: Duration) -> Result<i64, Error> {
    let failed = |what: String| Error::Unavailable {
        code: ErrorCode::Io,
        message: format!("OTLP endpoint {} ({}): {what}", endpoint.url, endpoint.from),
    };
    let send = |client: &reqwest::blocking::Client| {
        let mut request = client
            .post(&endpoint.url)
            .timeout(timeout)
            .header("content-type", content_type(endpoint.protocol))
            .body(body.clone());
        for (key, value) in &endpoint.headers {
            request = request.header(key.as_str(), value.as_str());
        }
        request.send().map_err(|e| failed(error_chain(&e)))
    };
    let plain = speaks_plain_http(&endpoint.url);
    let mut response = send(client(plain).map_err(&failed)?)?;
    if plain && response.status().is_redirection() {
        // Followed as every other endpoint's are: the redirect may lead to `https://`.
        response = send(client(false).map_err(&failed)?)?;
    }
    let status = response.status();
    let reply = response.bytes().map_err(|e| failed(error_chain(&e)))?;
    if !status.is_success() {
        let said = String::from_utf8_lossy(&reply[..reply.len().min(300)]).into_owned();
        return Err(failed(format!("HTTP {status}: {}", said.trim())));
    }
    Ok(rejected_spans(&reply, endpoint.protocol))
}

/// Whether a request to `url` goes in plain HTTP all the way: an `http://` URL and no proxy
/// from the environment (one may be reached over TLS). Its client need not load the platform's
/// certificates.
fn speaks_plain_http(url: &str) -> bool {
    let http = url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let proxy = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    http && !proxy
}

/// One client for the process of each kind: `plain` for [`speaks_plain_http`]'s requests, else
/// the one that speaks TLS. Building that one loads the platform's certificates, which cost far
/// more than a request (a few ms: a live export sends a batch every few thousand node ends), so
/// it is built only once an endpoint needs it. The plain one verifies no certificate (it has
/// none to) and follows no redirect (one is followed by the other client).
fn client(plain: bool) -> Result<&'static reqwest::blocking::Client, String> {
    type Client = std::sync::OnceLock<Result<reqwest::blocking::Client, String>>;
    static TLS: std::sync::Once = std::sync::Once::new();
    TLS.call_once(|| {
        // reqwest is built without a crypto provider of its own: ring is the process's.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    static PLAIN: Client = std::sync::OnceLock::new();
    static WITH_TLS: Client = std::sync::OnceLock::new();
    let built = if plain {
        PLAIN.get_or_init(|| {
            reqwest::blocking::Client::builder()
                .tls_certs_only(std::iter::empty())
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())
        })
    } else {
        WITH_TLS.get_or_init(|| reqwest::blocking::Client::builder().build().map_err(|e| e.to_string()))
    };
    built.as_ref().map_err(String::clone)
}

/// The partial success a collector may answer with.
fn rejected_spans(reply: &[u8], protocol: Protocol) -> i64 {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    let response = match protocol {
        Protocol::HttpProtobuf => ExportTraceServiceResponse::decode(reply).ok(),
        Protocol::HttpJson => serde_json::from_slice::<ExportTraceServiceResponse>(reply).ok(),
    };
    response.and_then(|r| r.partial_success).map_or(0, |p| p.rejected_spans)
}

/// An error and its causes, one sentence (reqwest's own says only "error sending request").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_variables_name_the_endpoint_as_the_exporter_reads_them() {
        let root = tempfile::tempdir().unwrap();
        let base = Endpoint::resolve(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]), root.path())
            .unwrap()
            .unwrap();
        assert_eq!(base.url, "http://c:4318/v1/traces");
        assert_eq!(base.protocol, Protocol::HttpProtobuf);
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:1"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c/custom"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1"),
        ];
        let traces = Endpoint::resolve(env(&vars), root.path()).unwrap().unwrap();
        assert_eq!(traces.url, "https://c/custom");
        assert_eq!(traces.protocol, Protocol::HttpJson);
        assert_eq!(
            traces.headers,
            vec![
                ("api-key".to_owned(), "a b".to_owned()),
                ("x".to_owned(), "1".to_owned())
            ]
        );
        let grpc = Endpoint::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ]),
            root.path(),
        )
        .unwrap_err();
        assert!(
            grpc.to_string()
                .contains("OTEL_EXPORTER_OTLP_PROTOCOL: protocol `grpc`"),
            "{grpc}"
        );
    }

    /// What `encode` sends decodes as the collector's request, in both encodings.
    #[test]
    fn a_traces_message_is_sent_as_an_export_request() {
        let span = opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: "invoke_agent plan".into(),
            ..Default::default()
        };
        let traces = super::super::map::traces_of_spans(vec![span]);
        let bytes = encode(&traces, Protocol::HttpProtobuf);
        let request = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(request.resource_spans, traces.resource_spans);
        let json = encode(&traces, Protocol::HttpJson);
        let request: ExportTraceServiceRequest = serde_json::from_slice(&json).unwrap();
        assert_eq!(request.resource_spans, traces.resource_spans);
    }

    /// A plain `http://` endpoint is sent to by the client that loads no certificate, which
    /// follows no redirect: one is followed as before, by the client that speaks TLS too.
    #[test]
    fn a_plain_endpoint_that_redirects_is_followed() {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        // Each request on a connection of its own (`connection: close`): its path and body.
        let collector = std::thread::spawn(move || {
            let mut received = Vec::new();
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line.split_whitespace().nth(1).unwrap().to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    if header.trim().is_empty() {
                        break;
                    }
                    if let Some(value) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let moved = path == "/moved";
                received.push((path, body));
                let reply = if moved {
                    "200 OK".to_owned()
                } else {
                    format!("307 Temporary Redirect\r\nlocation: http://{address}/moved")
                };
                write!(
                    stream,
                    "HTTP/1.1 {reply}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                )
                .unwrap();
                if moved {
                    return received;
                }
            }
            received
        });
        let traces = super::super::map::traces_of_spans(vec![opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: "invoke_agent plan".into(),
            ..Default::default()
        }]);
        let endpoint = Endpoint {
            url: format!("http://{address}/v1/traces"),
            protocol: Protocol::HttpProtobuf,
            headers: Vec::new(),
            from: "test".into(),
        };
        let pushed = push(&endpoint, &traces, Duration::from_secs(10)).unwrap();
        assert_eq!((pushed.traces, pushed.spans), (1, 1));
        let received = collector.join().unwrap();
        let (path, body) = received.last().unwrap();
        assert_eq!(path, "/moved");
        assert_eq!(*body, encode(&traces, Protocol::HttpProtobuf));
    }

    /// A request gathered a span at a time is, byte for byte, the message of its spans as prost
    /// encodes it whole, in both encodings.
    #[test]
    fn a_request_gathered_a_span_at_a_time_is_the_message_encoded_whole() {
        let span = |n: u8| opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: vec![1; 16],
            span_id: vec![n; 8],
            name: "invoke_agent plan".repeat(usize::from(n) * 3),
            ..Default::default()
        };
        // 1 and 3 spans; 40 spans of up to 2 KB: lengths past one byte's varint at each level.
        for spans in [
            vec![span(1)],
            (1..4).map(span).collect(),
            (1..41).map(span).collect::<Vec<_>>(),
        ] {
            let whole = super::super::map::traces_of_spans(spans.clone());
            for protocol in [Protocol::HttpProtobuf, Protocol::HttpJson] {
                let mut body = RequestBody::new(protocol);
                spans.iter().for_each(|s| body.add(s));
                assert_eq!(body.spans(), spans.len());
                assert_eq!(body.take(), encode(&whole, protocol), "{protocol:?}");
                assert_eq!(body.spans(), 0);
                spans.iter().for_each(|s| body.add(s));
                assert_eq!(body.take(), encode(&whole, protocol), "a body taken is gathered anew");
                // Written into a buffer a request sent before left (JSON: this request;
                // protobuf: the next), its old bytes not among the new.
                for _ in 0..2 {
                    spans.iter().for_each(|s| body.add(s));
                    let taken = body.take_with(vec![0xee; 3_000]);
                    assert_eq!(taken, encode(&whole, protocol), "{protocol:?}, into a used buffer");
                }
            }
        }
    }

    #[test]
    fn the_workspace_file_names_one_when_no_variable_does() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(Endpoint::resolve(env(&[]), root.path()).unwrap(), None);
        std::fs::create_dir(root.path().join(".zibby")).unwrap();
        let file = root.path().join(AGENTS_FILE);
        std::fs::write(
            &file,
            "[otlp]\nendpoint = \"http://p:6006\"\nprotocol = \"http/json\"\n",
        )
        .unwrap();
        let found = Endpoint::resolve(env(&[]), root.path()).unwrap().unwrap();
        assert_eq!(
            (found.url.as_str(), found.protocol),
            ("http://p:6006/v1/traces", Protocol::HttpJson)
        );
        std::fs::write(&file, "[otlp]\nendpoint = \"p:6006\"\n").unwrap();
        let refused = Endpoint::resolve(env(&[]), root.path()).unwrap_err().to_string();
        assert!(
            refused.contains("`p:6006/v1/traces` is not an http:// or https:// URL"),
            "{refused}"
        );
    }

    /// The agents file takes the `[otlp]` table, and the app's agent form keeps it on save.
    #[test]
    fn the_agents_file_reads_and_keeps_the_otlp_table() {
        use crate::sessions::agents;
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".zibby")).unwrap();
        std::fs::write(
            root.path().join(AGENTS_FILE),
            "[[agent]]\nname = \"a\"\nrun = [\"true\"]\n\n[otlp]\nendpoint = \"http://p:6006\"\n",
        )
        .unwrap();
        assert_eq!(agents::load(root.path()).unwrap().len(), 1);
        let added = agents::Agent {
            name: "b".into(),
            run: vec!["true".into()],
            replay: None,
            cwd: None,
            env: Default::default(),
            inherit_env: None,
            max_cost_usd: None,
            max_tokens: None,
        };
        assert_eq!(agents::save_one(root.path(), added, None).unwrap().len(), 2);
        let kept = Endpoint::resolve(env(&[]), root.path()).unwrap().unwrap();
        assert_eq!(kept.url, "http://p:6006/v1/traces");
    }
}
