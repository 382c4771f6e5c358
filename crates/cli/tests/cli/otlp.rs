//! `zstudio export ID --otlp FILE`: a real run of the test agent (nested nodes, usage, a failed
//! node) written as OTLP/JSON, decoded with the OpenTelemetry project's own types, its spans'
//! parents and statuses checked against the timeline `zstudio parse` folds from the run's own
//! output, and its ids the same on a second export.

use std::collections::HashMap;

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{Span, TracesData};
use serde_json::Value;
use tempfile::TempDir;

use super::{agent_binary, json_lines, json_of, zstudio};
use std::time::Instant;

/// A workspace, its store, and one failed run of the test agent in it.
pub struct TracedRun {
    pub dir: TempDir,
    pub session: String,
    /// The run's stdout lines, as `zstudio run --json` reported them.
    pub stdout: String,
    /// What `zstudio run` wrote on stderr.
    pub stderr: String,
    /// The run's own time, as its `run_finished` said.
    pub elapsed_ms: u64,
}

impl TracedRun {
    pub fn root(&self) -> String {
        self.dir.path().join("ws").to_str().unwrap().to_owned()
    }

    pub fn db(&self) -> String {
        self.dir.path().join("studio.sqlite").to_str().unwrap().to_owned()
    }

    /// `plan` runs `search` and `read` in an inner graph; `write` fails; `plan` and `write`
    /// print their usage (Claude Code's and Codex's formats).
    pub fn new() -> TracedRun {
        TracedRun::with_env(&[])
    }

    /// [`TracedRun::new`], `zstudio run` given `env` (an OTLP endpoint: exported live).
    pub fn with_env(env: &[(&str, &str)]) -> TracedRun {
        let dir = TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let mut run = TracedRun {
            dir,
            session: String::new(),
            stdout: String::new(),
            stderr: String::new(),
            elapsed_ms: 0,
        };
        let (root, db, agent) = (run.root(), run.db(), agent_binary());
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args([
                "run",
                "--json",
                "-w",
                &root,
                "--db",
                &db,
                "--",
                &agent,
                "--nodes",
                "plan:30,>search:20,>read:20,write:30",
                "--usage",
                "plan=claude-code,write=codex",
                "--fail",
                "write",
            ])
            .env_remove("ZIBBY_STUDIO_DB")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env("XDG_DATA_HOME", super::data_home())
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        run.stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        run.elapsed_ms = json_lines(&output).last().unwrap()["elapsed_ms"].as_u64().unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let events = json_lines(&output);
        run.session = events[0]["session_id"].as_str().unwrap().to_owned();
        for event in events
            .iter()
            .filter(|e| e["type"] == "output" && e["stream"] == "stdout")
        {
            run.stdout.push_str(event["line"].as_str().unwrap());
            run.stdout.push('\n');
        }
        run
    }

    /// The timeline `zstudio parse` folds from the run's stdout: (name, status, depth) each.
    pub fn timeline(&self) -> Vec<(String, String, u64)> {
        let file = self.dir.path().join("stdout.txt");
        std::fs::write(&file, &self.stdout).unwrap();
        let timeline = json_of(&zstudio(&["parse", "--json", "--exit-code", "1"], Some(&file)));
        timeline["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["name"].as_str().unwrap().to_owned(),
                    n["status"].as_str().unwrap().to_owned(),
                    n["depth"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    pub fn export(&self, name: &str) -> (Value, TracesData) {
        let file = self.dir.path().join(name);
        let (root, db) = (self.root(), self.db());
        let said = json_of(&zstudio(
            &[
                "export",
                &self.session,
                "--otlp",
                file.to_str().unwrap(),
                "--json",
                "-w",
                &root,
                "--db",
                &db,
            ],
            None,
        ));
        let text = std::fs::read_to_string(&file).unwrap();
        let traces: TracesData = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not OTLP/JSON: {e}\n{text}"));
        (said, traces)
    }
}

pub fn spans_of(traces: &TracesData) -> Vec<Span> {
    traces
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| s.spans.clone())
        .collect()
}

/// A span's attributes, each as text (numbers written as they are).
pub fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .filter_map(|kv| {
            let value = match kv.value.as_ref()?.value.as_ref()? {
                Any::StringValue(s) => s.clone(),
                Any::IntValue(i) => i.to_string(),
                Any::DoubleValue(d) => d.to_string(),
                Any::BoolValue(b) => b.to_string(),
                other => format!("{other:?}"),
            };
            Some((kv.key.clone(), value))
        })
        .collect()
}

/// The parent each execution of the timeline has: the latest one before it a level up.
pub fn timeline_parents(timeline: &[(String, String, u64)]) -> Vec<Option<usize>> {
    timeline
        .iter()
        .enumerate()
        .map(|(i, (_, _, depth))| {
            (*depth > 0)
                .then(|| (0..i).rev().find(|&j| timeline[j].2 + 1 == *depth))
                .flatten()
        })
        .collect()
}

/// The spans of one run's trace against its timeline: a root span, one child per execution in
/// the timeline's order, its parent the timeline's, its status the node's; model, tokens and
/// cost where the agent printed them.
pub fn check_against_timeline(spans: &[Span], timeline: &[(String, String, u64)]) {
    assert_eq!(spans.len(), timeline.len() + 1, "a root span and one per execution");
    let root = &spans[0];
    assert!(root.parent_span_id.is_empty(), "the run's span is the root");
    assert_eq!(root.status.as_ref().unwrap().code, StatusCode::Error as i32);
    assert!(
        root.status
            .as_ref()
            .unwrap()
            .message
            .contains("boom: simulated failure"),
        "{:?}",
        root.status
    );
    let parents = timeline_parents(timeline);
    for (i, ((name, status, depth), span)) in timeline.iter().zip(&spans[1..]).enumerate() {
        let attributes = attributes(span);
        assert_eq!(attributes["gen_ai.agent.name"], *name);
        assert_eq!(attributes["zibby.node.status"], *status);
        assert_eq!(attributes["zibby.node.depth"], depth.to_string());
        assert_eq!(span.trace_id, root.trace_id, "{name} is in the run's trace");
        let parent = match parents[i] {
            Some(p) => &spans[p + 1].span_id,
            None => &root.span_id,
        };
        assert_eq!(&span.parent_span_id, parent, "{name}'s parent is the timeline's");
        let code = span.status.as_ref().unwrap().code;
        assert_eq!(
            code == StatusCode::Error as i32,
            status == "error",
            "{name}: {:?}",
            span.status
        );
    }
    let plan = attributes(&spans[1]);
    assert_eq!(plan["gen_ai.operation.name"], "invoke_agent");
    assert!(plan["gen_ai.request.model"].starts_with("claude"), "{plan:?}");
    assert!(
        plan["gen_ai.usage.input_tokens"].parse::<u64>().unwrap() > 0,
        "{plan:?}"
    );
    assert!(
        plan["gen_ai.usage.output_tokens"].parse::<u64>().unwrap() > 0,
        "{plan:?}"
    );
    assert!(plan["zibby.cost_usd"].parse::<f64>().unwrap() > 0.0, "{plan:?}");
    assert_eq!(plan["zibby.cost.priced"], "true");
    let write = spans[1..]
        .iter()
        .find(|s| attributes(s)["gen_ai.agent.name"] == "write")
        .unwrap();
    assert!(
        write.status.as_ref().unwrap().message.contains("node write failed"),
        "{:?}",
        write.status
    );
    let search = attributes(&spans[2]);
    assert!(
        !search.contains_key("gen_ai.usage.input_tokens"),
        "search printed no usage: {search:?}"
    );
}

#[test]
fn export_otlp_writes_the_runs_trace_as_the_timeline_nests_it_with_the_same_ids_twice() {
    let run = TracedRun::new();
    let timeline = run.timeline();
    assert_eq!(
        timeline.iter().map(|(n, _, d)| (n.as_str(), *d)).collect::<Vec<_>>(),
        [("plan", 0), ("search", 1), ("read", 1), ("write", 0)],
        "the agent's graph, as the timeline folds it"
    );
    let (said, traces) = run.export("first.json");
    assert_eq!(
        (said["traces"].as_u64(), said["spans"].as_u64()),
        (Some(1), Some(5)),
        "{said}"
    );
    let spans = spans_of(&traces);
    check_against_timeline(&spans, &timeline);
    let events: Vec<&str> = spans[0].events.iter().map(|e| e.name.as_str()).collect();
    assert!(
        events.contains(&"run.started"),
        "the run's log lines are its span's events: {events:?}"
    );
    assert!(
        !serde_json::to_string(&traces).unwrap().contains("--usage"),
        "no command line without --include-output"
    );

    let (_, again) = run.export("second.json");
    let ids = |traces: &TracesData| -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
        spans_of(traces)
            .into_iter()
            .map(|s| (s.trace_id, s.span_id, s.parent_span_id))
            .collect()
    };
    assert_eq!(ids(&traces), ids(&again), "a second export gives the same ids");
}

#[test]
fn export_otlp_of_a_session_the_studio_did_not_run_reads_its_folder_with_stable_ids() {
    let run = TracedRun::new();
    // The same folder in a workspace whose store never saw the run.
    let other = TempDir::new().unwrap();
    let sessions = other.path().join("ws/.zibby/output/sessions");
    super::copy_dir(
        &std::path::Path::new(&run.root()).join(".zibby/output/sessions"),
        &sessions,
    );
    let file = other.path().join("t.json");
    let (root, db) = (
        other.path().join("ws").to_str().unwrap().to_owned(),
        other.path().join("db.sqlite").to_str().unwrap().to_owned(),
    );
    let export = || {
        json_of(&zstudio(
            &[
                "export",
                &run.session,
                "--otlp",
                file.to_str().unwrap(),
                "--json",
                "-w",
                &root,
                "--db",
                &db,
            ],
            None,
        ));
        spans_of(&serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap())
    };
    let spans = export();
    let names: Vec<String> = spans[1..]
        .iter()
        .map(|s| attributes(s)["gen_ai.agent.name"].clone())
        .collect();
    for node in ["plan", "write"] {
        assert!(names.contains(&node.to_owned()), "{node} from the folder: {names:?}");
    }
    assert!(spans[1..].iter().all(|s| s.parent_span_id == spans[0].span_id));
    assert_eq!(attributes(&spans[0])["zibby.session.id"], run.session);
    assert_eq!(export(), spans, "the same spans, ids included, every time");
}

/// A dead endpoint (a port nothing listens on) does not hold the run up: it ends as it would,
/// `zstudio run` waits a bounded time for the retries and says in one line what was lost.
#[test]
fn a_dead_endpoint_neither_delays_the_run_nor_loses_spans_unsaid() {
    let dead = format!("http://127.0.0.1:{}", test_servers::process::free_port());
    let began = Instant::now();
    let run = TracedRun::with_env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &dead)]);
    let took = began.elapsed();
    assert!(run.elapsed_ms < 2_000, "the run itself took {} ms", run.elapsed_ms);
    assert!(
        took.as_secs() < 8,
        "zstudio run took {took:?}: its wait for the export is bounded"
    );
    let lost: Vec<&str> = run.stderr.lines().filter(|l| l.contains("spans lost")).collect();
    assert_eq!(lost.len(), 1, "one line says what was lost: {}", run.stderr);
    assert!(lost[0].contains("5 spans lost (0 sent)"), "{}", lost[0]);
    assert!(lost[0].contains("Connection refused"), "{}", lost[0]);
}
