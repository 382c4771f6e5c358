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

    check_in_phoenix(&spans, &timeline);

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
    check_in_phoenix(&live_spans, &live.timeline());
    let live_ids: std::collections::BTreeSet<String> = live_spans
        .iter()
        .map(|s| s["context"]["span_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(live_ids, exported_ids, "live spans have the ids a push gives them");
}

/// Phoenix's spans of a run of [`TracedRun`] against its timeline: the root, then the
/// executions in the order they began, parents as the timeline nests them, the failed node an
/// error span; model, tokens and cost where the agent printed them (live: read from the run's
/// output as the node ended).
fn check_in_phoenix(spans: &[Value], timeline: &[(String, String, u64)]) {
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

/// `(sent, lost)` as `zstudio run`'s one line about lost spans says them; `None`: no line.
fn lost_counts(stderr: &str) -> Option<(u64, u64)> {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("spans lost")).collect();
    assert!(lines.len() <= 1, "one line at most says what was lost: {stderr}");
    let line = lines.first()?;
    let number_before = |word: &str| -> u64 {
        let before = &line[..line.find(word).unwrap()];
        before
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches('(')
            .parse()
            .unwrap()
    };
    Some((number_before(" sent)"), number_before(" spans lost")))
}

/// A relay in front of Phoenix that stalls (frozen: it takes the connection and passes nothing,
/// never answers): the run ends as it would, long before a request gives up (5 s), and `zstudio
/// run` says that all 5 spans were lost. Then the relay stalls for 3 s while a run goes, and
/// comes back: the run is not held up either, and Phoenix holds at least every span the line
/// does not count lost.
#[test]
fn a_stalled_or_slow_endpoint_never_holds_up_the_run_and_loses_at_most_what_it_says() {
    let phoenix = Phoenix::start();
    let port: u16 = phoenix.endpoint().rsplit(':').next().unwrap().parse().unwrap();
    let relay = test_servers::relay::Relay::start(port);
    let endpoint = format!("http://127.0.0.1:{}", relay.port());
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];

    relay.freeze();
    let stalled = TracedRun::with_env(&env);
    assert!(
        stalled.elapsed_ms < 5_000,
        "the run took {} ms: it waited for a request that never had an answer",
        stalled.elapsed_ms
    );
    assert_eq!(lost_counts(&stalled.stderr), Some((0, 5)), "{}", stalled.stderr);

    let thaw = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        relay.resume();
        relay
    });
    let slow = TracedRun::with_env(&env);
    let _relay = thaw.join().unwrap();
    assert!(
        slow.elapsed_ms < 3_000,
        "the run took {} ms: it waited for the stalled endpoint",
        slow.elapsed_ms
    );
    let (sent, lost) = lost_counts(&slow.stderr).unwrap_or((5, 0));
    assert_eq!(sent + lost, 5, "{}", slow.stderr);
    assert!(
        sent > 0,
        "an endpoint that answers late still takes spans: {}",
        slow.stderr
    );
    let (_, exported) = slow.export("slow.json");
    let trace_id = hex(&spans_of(&exported)[0].trace_id);
    let arrived = spans_in_phoenix(&phoenix, &trace_id, (5 - lost) as usize);
    assert!(arrived.len() as u64 >= 5 - lost, "{arrived:?}");
}

/// `zstudio watch` with an endpoint set sends the sessions the studio did not start as they go
/// (a terminal's run of the test agent): Phoenix gets each node's span and the session's, with
/// the ids, parents and usage `otlp push` gives them, and a push after adds no duplicate.
#[test]
fn zstudio_watch_sends_a_session_it_did_not_start_live_with_the_ids_a_push_gives() {
    use std::io::BufRead;
    let phoenix = Phoenix::start();
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let db = dir.path().join("studio.sqlite");
    let (root, db) = (root.to_str().unwrap(), db.to_str().unwrap());
    let endpoint = phoenix.endpoint();
    let mut watch = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["watch", "--json", "-w", root, "--db", db])
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", super::data_home())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let (sender, changes) = std::sync::mpsc::channel::<Value>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    // Its first scan of the (missing) sessions folder done, a terminal runs the agent.
    std::thread::sleep(Duration::from_millis(500));
    let ran = Command::new(super::agent_binary())
        .args(["--nodes", "plan:400,write:400", "--usage", "plan=claude-code"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let session = loop {
        let change = changes
            .recv_timeout(Duration::from_secs(15))
            .expect("watch saw the session");
        if change["type"] == "session_added" {
            break change["session_id"].as_str().unwrap().to_owned();
        }
    };
    let file = dir.path().join("t.json");
    let exported = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args([
            "export",
            &session,
            "--otlp",
            file.to_str().unwrap(),
            "-w",
            root,
            "--db",
            db,
        ])
        .env("XDG_DATA_HOME", super::data_home())
        .output()
        .unwrap();
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let exported = spans_of(&serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap());
    assert_eq!(exported.len(), 3, "the session's span and its two nodes'");
    let trace_id = hex(&exported[0].trace_id);
    let live = spans_in_phoenix(&phoenix, &trace_id, 3);
    let ids = |spans: &[Value]| -> std::collections::BTreeSet<(String, Option<String>)> {
        spans
            .iter()
            .map(|s| {
                let id = s["context"]["span_id"].as_str().unwrap().to_owned();
                (id, s["parent_id"].as_str().map(str::to_owned))
            })
            .collect()
    };
    let pushed_ids: std::collections::BTreeSet<(String, Option<String>)> = exported
        .iter()
        .map(|s| {
            let parent = (!s.parent_span_id.is_empty()).then(|| hex(&s.parent_span_id));
            (hex(&s.span_id), parent)
        })
        .collect();
    assert_eq!(ids(&live), pushed_ids, "live spans have a push's ids and parents");
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
    watch.kill().unwrap();
    watch.wait().unwrap();

    // Pushed after, the session adds no span (the same ids): once a later session is in, the
    // first still has its three.
    let pushed = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["otlp", "push", &session, "-w", root, "--db", db])
        .env("XDG_DATA_HOME", super::data_home())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", String::from_utf8_lossy(&pushed.stderr));
    let other = TracedRun::new();
    let (_, other_exported) = other.export("other.json");
    let marker = push(&other, &[&other.session], &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    assert!(marker.status.success(), "{}", String::from_utf8_lossy(&marker.stderr));
    spans_in_phoenix(&phoenix, &hex(&spans_of(&other_exported)[0].trace_id), 5);
    assert_eq!(phoenix.spans(&trace_id).len(), 3, "no duplicate after a push");
}
