//! `zstudio otlp push` into a real backend: Arize Phoenix on 127.0.0.1 (crates/test-servers)
//! receives a run of the test agent, and its own REST API gives back the trace: the spans and
//! their parents as the timeline nests them, model, tokens and cost, the failed node an error
//! span, and no duplicate when the same run is pushed again; a run followed by `zstudio run`
//! with the endpoint set arrives live, with the same ids. Without `.venv/phoenix` it fails.

use std::collections::HashMap;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use test_servers::phoenix::Phoenix;

use super::otlp::{spans_of, timeline_parents, TracedRun};

/// `zstudio otlp push ARGS --json` on the run's workspace and store, with `env`.
fn push(run: &TracedRun, args: &[&str], env: &[(&str, &str)]) -> Output {
    let (root, db) = (run.root(), run.db());
    Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["otlp", "push"])
        .args(args)
        .args(["--json", "-w", &root, "--db", &db])
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("XDG_DATA_HOME", super::data_home())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Phoenix's spans of `trace_id` once it holds at least `count` (it stores what it receives
/// from a queue, a moment later), oldest first.
fn spans_in_phoenix(phoenix: &Phoenix, trace_id: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut spans = phoenix.spans(trace_id);
        if spans.len() >= count {
            spans.sort_by(|a, b| a["start_time"].as_str().cmp(&b["start_time"].as_str()));
            return spans;
        }
        assert!(
            Instant::now() < deadline,
            "Phoenix holds {} of trace {trace_id}'s {count} spans after 30 s:\n{}",
            spans.len(),
            phoenix.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn otlp_push_sends_a_run_to_phoenix_as_its_timeline_once_however_often_it_is_pushed() {
    let phoenix = Phoenix::start();
    let run = TracedRun::new();
    let timeline = run.timeline();
    let (_, exported) = run.export("trace.json");
    let trace_id = hex(&spans_of(&exported)[0].trace_id);
    let endpoint = phoenix.endpoint();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];

    let pushed = push(&run, &[&run.session], &env);
    assert!(pushed.status.success(), "{}", String::from_utf8_lossy(&pushed.stderr));
    let said: Value = serde_json::from_slice(&pushed.stdout).unwrap();
    assert_eq!(said["protocol"], "http/protobuf");
    assert_eq!(said["sessions"][0]["spans"], 5, "{said}");
    let spans = spans_in_phoenix(&phoenix, &trace_id, timeline.len() + 1);

    check_in_phoenix(&spans, &timeline, false);

    // Pushed again, then another run (from its workspace's `[otlp]` table) behind it: once that
    // one is in, the first was taken in again, and Phoenix still holds each span once.
    let again = push(&run, &[&run.session], &env);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let other = TracedRun::new();
    let zibby = std::path::Path::new(&other.root()).join(".zibby");
    std::fs::create_dir_all(&zibby).unwrap();
    std::fs::write(
        zibby.join("studio.toml"),
        format!("[otlp]\nendpoint = \"{endpoint}\"\n"),
    )
    .unwrap();
    let (_, other_exported) = other.export("other.json");
    let marker = push(&other, &["--since", "1h"], &[]);
    assert!(marker.status.success(), "{}", String::from_utf8_lossy(&marker.stderr));
    spans_in_phoenix(&phoenix, &hex(&spans_of(&other_exported)[0].trace_id), 5);
    let after = phoenix.spans(&trace_id);
    assert_eq!(after.len(), spans.len(), "re-pushing added no duplicate span");

    // Live: `zstudio run` with the endpoint set sends each node's span as it ends and the run's
    // at its end, with the ids an export (and so a push) gives them.
    let live = TracedRun::with_env(&env);
    assert!(!live.stderr.contains("spans lost"), "{}", live.stderr);
    let (_, live_exported) = live.export("live.json");
    let exported_ids: std::collections::BTreeSet<String> =
        spans_of(&live_exported).iter().map(|s| hex(&s.span_id)).collect();
    let live_trace = hex(&spans_of(&live_exported)[0].trace_id);
    let live_spans = spans_in_phoenix(&phoenix, &live_trace, timeline.len() + 1);
    check_in_phoenix(&live_spans, &live.timeline(), true);
    let live_ids: std::collections::BTreeSet<String> = live_spans
        .iter()
        .map(|s| s["context"]["span_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(live_ids, exported_ids, "live spans have the ids a push gives them");
}

/// Phoenix's spans of a run of [`TracedRun`] against its timeline: the root, then the
/// executions in the order they began, parents as the timeline nests them, the failed node an
/// error span; with `live` false, model, tokens and cost where the agent printed them (the live
/// export sends no usage: the folder holds it once the node ended).
fn check_in_phoenix(spans: &[Value], timeline: &[(String, String, u64)], live: bool) {
    // The root, then the executions in the order they began: parents as the timeline nests them.
    let root = &spans[0];
    assert_eq!(root["parent_id"], Value::Null, "{root}");
    assert_eq!(root["status_code"], "ERROR");
    assert!(root["status_message"]
        .as_str()
        .unwrap()
        .contains("boom: simulated failure"));
    let parents = timeline_parents(timeline);
    for (i, (name, status, _)) in timeline.iter().enumerate() {
        let span = &spans[i + 1];
        assert_eq!(span["attributes"]["gen_ai.agent.name"], name.as_str(), "{span}");
        let parent = match parents[i] {
            Some(p) => &spans[p + 1]["context"]["span_id"],
            None => &root["context"]["span_id"],
        };
        assert_eq!(
            &span["parent_id"], parent,
            "{name}'s parent in Phoenix is the timeline's"
        );
        let code = if status == "error" { "ERROR" } else { "OK" };
        assert_eq!(span["status_code"], code, "{span}");
    }
    let by_name: HashMap<&str, &Value> = spans[1..]
        .iter()
        .map(|s| (s["attributes"]["gen_ai.agent.name"].as_str().unwrap(), &s["attributes"]))
        .collect();
    if live {
        return;
    }
    let plan = by_name["plan"];
    assert!(
        plan["gen_ai.request.model"].as_str().unwrap().starts_with("claude"),
        "{plan}"
    );
    assert!(plan["gen_ai.usage.input_tokens"].as_u64().unwrap() > 0, "{plan}");
    assert!(plan["gen_ai.usage.output_tokens"].as_u64().unwrap() > 0, "{plan}");
    assert!(plan["zibby.cost_usd"].as_f64().unwrap() > 0.0, "{plan}");
    let write = spans
        .iter()
        .find(|s| s["attributes"]["gen_ai.agent.name"] == "write")
        .unwrap();
    assert!(
        write["status_message"].as_str().unwrap().contains("node write failed"),
        "{write}"
    );
}
