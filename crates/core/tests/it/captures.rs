//! Every shared capture of a real engine run gives the right timeline, however its bytes arrive.

use rand::{Rng, SeedableRng};
use studio_core::protocol::{Stream, StreamReader};
use studio_core::timeline::{read_capture, Exit, RunEnd, RunTimeline, StoppedBy, TimelineFold};
use studio_core::Status;

use crate::harness::{capture, capture_exit_status, captures_dir};

/// What each capture must read as, written by hand from its stdout, stderr and exit status.
/// Nodes are `name:status:depth`, in the order they began.
const EXPECTED: &[(&str, Status, &str)] = &[
    (
        "head-bb10e85-01-hello-world-ci-build-id",
        Status::Success,
        "say_hi:success:0",
    ),
    (
        "head-bb10e85-01-hello-world-markers",
        Status::Success,
        "say_hi:success:0",
    ),
    (
        "head-bb10e85-01-hello-world-markers-color",
        Status::Success,
        "say_hi:success:0",
    ),
    (
        "head-bb10e85-01-hello-world-pinned-session",
        Status::Success,
        "say_hi:success:0",
    ),
    // Without markers: the human timeline tells the nodes.
    ("head-bb10e85-01-hello-world-plain", Status::Success, "say_hi:success:0"),
    (
        "head-bb10e85-02-pipeline-markers",
        Status::Success,
        "plan:success:0 execute:success:0 report:success:0",
    ),
    (
        "head-bb10e85-02-pipeline-plain",
        Status::Success,
        "plan:success:0 execute:success:0 report:success:0",
    ),
    (
        "head-bb10e85-02-pipeline-markers-color",
        Status::Success,
        "plan:success:0 execute:success:0 report:success:0",
    ),
    (
        "head-bb10e85-03-conditional-routing-markers",
        Status::Success,
        "draft:success:0 review:success:0 ship:success:0",
    ),
    (
        "head-bb10e85-05-with-skills-markers",
        Status::Success,
        "with_browser:success:0 without_browser:success:0",
    ),
    (
        "head-bb10e85-90-slow-complete",
        Status::Success,
        "fetch:success:0 process:success:0 publish:success:0",
    ),
    // SIGTERM from the capture harness, not from the studio: the run was interrupted mid-node.
    (
        "head-bb10e85-90-slow-sigterm",
        Status::Interrupted,
        "fetch:success:0 process:interrupted:0",
    ),
    ("head-bb10e85-90-slow-stop-file-preexisting", Status::Cancelled, ""),
    (
        "head-bb10e85-90-slow-stop-pinned-session",
        Status::Cancelled,
        "fetch:success:0",
    ),
    (
        "head-bb10e85-91-throw-custom-throw",
        Status::Error,
        "prepare:success:0 explode:error:0",
    ),
    (
        "head-bb10e85-93-fanout-markers",
        Status::Success,
        "start:success:0 left:success:0 left2:success:0 right:success:0 join:success:0",
    ),
    (
        "v0.1.4-9244367-01-hello-world-markers",
        Status::Success,
        "say_hi:success:0",
    ),
    (
        "v0.2.0-0ff4886-01-hello-world-markers",
        Status::Success,
        "say_hi:success:0",
    ),
    (
        "v0.2.0-0ff4886-90-slow-stop-legacy-filename",
        Status::Cancelled,
        "fetch:success:0",
    ),
    // A legacy retry: three attempts of one execution (each adding a `│ `), then the next node.
    (
        "v0.2.0-0ff4886-92-retries-custom-recovers",
        Status::Success,
        "flaky:success:0 after:success:0",
    ),
];

fn nodes(timeline: &RunTimeline) -> String {
    timeline
        .nodes
        .iter()
        .map(|n| format!("{}:{}:{}", n.name, n.status, n.depth))
        .collect::<Vec<_>>()
        .join(" ")
}

fn end_of(name: &str) -> RunEnd {
    RunEnd {
        exit: Exit::from_shell_status(capture_exit_status(&capture(name))),
        signalled_by_studio: false,
    }
}

fn read_whole(name: &str, end: Option<RunEnd>) -> RunTimeline {
    let dir = capture(name);
    let stdout = std::fs::read(dir.join("stdout.txt")).unwrap();
    let stderr = std::fs::read(dir.join("stderr.txt")).unwrap();
    read_capture(&stdout, &stderr, end)
}

fn session_id_seen_by_harness(name: &str) -> String {
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(capture(name).join("run.json")).unwrap()).unwrap();
    run["session_id_seen_on_stdout"].as_str().unwrap().to_owned()
}

/// The capture's reads from both pipes, in arrival order: (seconds, stream, bytes).
fn chunks(name: &str) -> Vec<(f64, Stream, Vec<u8>)> {
    let text = std::fs::read_to_string(capture(name).join("stream_chunks.jsonl")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let chunk: serde_json::Value = serde_json::from_str(line).unwrap();
            let stream = match chunk["stream"].as_str().unwrap() {
                "stdout" => Stream::Stdout,
                "stderr" => Stream::Stderr,
                other => panic!("unknown stream {other} in {name}"),
            };
            (
                chunk["t"].as_f64().unwrap(),
                stream,
                chunk["text"].as_str().unwrap().as_bytes().to_vec(),
            )
        })
        .collect()
}

#[test]
fn every_shared_capture_is_covered_by_an_expectation() {
    let mut on_disk: Vec<String> = std::fs::read_dir(captures_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = EXPECTED.iter().map(|(n, _, _)| n.to_string()).collect();
    expected.sort();
    assert_eq!(
        on_disk, expected,
        "a capture without an expectation is a capture nobody checks"
    );
}

#[test]
fn each_capture_read_whole_gives_its_timeline_status_and_session() {
    for &(name, status, expected_nodes) in EXPECTED {
        let timeline = read_whole(name, Some(end_of(name)));
        assert_eq!(timeline.status, status, "{name}");
        assert_eq!(nodes(&timeline), expected_nodes, "{name}");
        assert_eq!(
            timeline.session_id.as_deref(),
            Some(session_id_seen_by_harness(name).as_str()),
            "{name}"
        );
    }
}

#[test]
fn captures_fed_as_they_arrived_give_the_same_timeline_with_arrival_times() {
    for &(name, status, expected_nodes) in EXPECTED {
        let mut reader = StreamReader::new();
        let mut fold = TimelineFold::new();
        let mut last_ms = 0;
        for (t, stream, bytes) in chunks(name) {
            last_ms = (t * 1000.0) as u64;
            reader.push(stream, &bytes, last_ms, &mut |e| {
                fold.apply(&e);
            });
        }
        reader.finish(last_ms, &mut |e| {
            fold.apply(&e);
        });
        let timeline = fold.timeline(Some(end_of(name)));
        assert_eq!(timeline.status, status, "{name}");
        assert_eq!(nodes(&timeline), expected_nodes, "{name}");
    }
    // The slow example runs three nodes of 1.5 s each: their arrival times show it.
    let mut reader = StreamReader::new();
    let mut fold = TimelineFold::new();
    for (t, stream, bytes) in chunks("head-bb10e85-90-slow-complete") {
        reader.push(stream, &bytes, (t * 1000.0) as u64, &mut |e| {
            fold.apply(&e);
        });
    }
    let timeline = fold.timeline(None);
    let fetch = &timeline.nodes[0];
    let gap = timeline.nodes[1].started_at_ms - fetch.started_at_ms;
    assert!((1400..2500).contains(&gap), "fetch took about 1.5 s, not {gap} ms");
    assert!(fetch.ended_at_ms.unwrap() >= fetch.started_at_ms + 1400);
    assert_eq!(fetch.took.as_deref(), Some("1.5s"));
}

#[test]
fn captures_fed_in_random_chunk_sizes_give_the_same_timeline() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    for &(name, status, expected_nodes) in EXPECTED {
        let dir = capture(name);
        let stdout = std::fs::read(dir.join("stdout.txt")).unwrap();
        let stderr = std::fs::read(dir.join("stderr.txt")).unwrap();
        for round in 0..50 {
            let max = if round % 2 == 0 { 4 } else { 200 };
            let mut reader = StreamReader::new();
            let mut fold = TimelineFold::new();
            let (mut out, mut err) = (&stdout[..], &stderr[..]);
            while !out.is_empty() || !err.is_empty() {
                let pick_stdout = err.is_empty() || (!out.is_empty() && rng.random_bool(0.7));
                let rest = if pick_stdout { &mut out } else { &mut err };
                let n = rng.random_range(1..=max).min(rest.len());
                let (chunk, tail) = rest.split_at(n);
                let stream = if pick_stdout { Stream::Stdout } else { Stream::Stderr };
                reader.push(stream, chunk, 0, &mut |e| {
                    fold.apply(&e);
                });
                *rest = tail;
            }
            reader.finish(0, &mut |e| {
                fold.apply(&e);
            });
            let timeline = fold.timeline(Some(end_of(name)));
            assert_eq!(timeline.status, status, "{name}, round {round}");
            assert_eq!(nodes(&timeline), expected_nodes, "{name}, round {round}");
        }
    }
}

#[test]
fn without_an_exit_a_capture_is_running_unless_it_says_it_stopped() {
    for &(name, status, _) in EXPECTED {
        let timeline = read_whole(name, None);
        let expected = if status == Status::Cancelled {
            Status::Cancelled
        } else {
            Status::Running
        };
        assert_eq!(timeline.status, expected, "{name}");
    }
    let sigterm = read_whole("head-bb10e85-90-slow-sigterm", None);
    assert_eq!(nodes(&sigterm), "fetch:success:0 process:running:0");
}

#[test]
fn a_signal_the_studio_sent_is_a_forced_cancel() {
    let timeline = read_whole(
        "head-bb10e85-90-slow-sigterm",
        Some(RunEnd {
            exit: Exit::Signal(15),
            signalled_by_studio: true,
        }),
    );
    assert_eq!(timeline.status, Status::Cancelled);
    assert_eq!(timeline.stopped_by, Some(StoppedBy::Forced));
    assert_eq!(nodes(&timeline), "fetch:success:0 process:cancelled:0");
}

#[test]
fn a_crash_reports_the_error_line_of_stderr() {
    let timeline = read_whole(
        "head-bb10e85-91-throw-custom-throw",
        Some(end_of("head-bb10e85-91-throw-custom-throw")),
    );
    assert_eq!(
        timeline.error.as_deref(),
        Some("Error: Node 'explode' failed after 1 attempt(s): boom: simulated failure")
    );
    assert_eq!(timeline.exit_code, Some(1));
}

#[test]
fn graceful_stops_of_every_era_say_how_they_stopped() {
    for name in [
        "head-bb10e85-90-slow-stop-pinned-session",
        "v0.2.0-0ff4886-90-slow-stop-legacy-filename",
        "head-bb10e85-90-slow-stop-file-preexisting",
    ] {
        let timeline = read_whole(name, Some(end_of(name)));
        assert_eq!(timeline.stopped_by, Some(StoppedBy::Graceful), "{name}");
    }
}

/// `bytes` without its marker lines, as a run without the marker variable prints it.
fn without_markers(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        let plain = line.trim_start_matches(['│', ' ']);
        if !plain.starts_with(studio_core::protocol::MARKER_PREFIX) {
            kept.push_str(line);
        }
    }
    kept.into_bytes()
}

#[test]
fn every_capture_without_its_marker_lines_gives_the_same_nodes() {
    let describe = |timeline: &RunTimeline| {
        timeline
            .nodes
            .iter()
            .map(|n| format!("{}:{}:{}x{}", n.name, n.status, n.depth, n.attempts))
            .collect::<Vec<_>>()
    };
    for &(name, status, _) in EXPECTED {
        let dir = capture(name);
        let stdout = std::fs::read(dir.join("stdout.txt")).unwrap();
        let stderr = std::fs::read(dir.join("stderr.txt")).unwrap();
        let with = read_capture(&stdout, &stderr, Some(end_of(name)));
        let plain = read_capture(&without_markers(&stdout), &stderr, Some(end_of(name)));
        let mut expected = describe(&with);
        if name == "head-bb10e85-90-slow-sigterm" {
            // docs/protocol.md §2's ambiguous case: killed between `process`'s marker and its `┌` line,
            // so without markers nothing says `process` began.
            assert_eq!(expected.pop().as_deref(), Some("process:interrupted:0x1"));
        }
        assert_eq!(describe(&plain), expected, "{name}");
        assert_eq!(plain.status, status, "{name}");
    }
}

#[test]
fn plain_and_marker_runs_of_the_same_script_read_the_same() {
    for (plain, markers) in [
        (
            "head-bb10e85-01-hello-world-plain",
            "head-bb10e85-01-hello-world-markers",
        ),
        ("head-bb10e85-02-pipeline-plain", "head-bb10e85-02-pipeline-markers"),
    ] {
        let (a, b) = (
            read_whole(plain, Some(end_of(plain))),
            read_whole(markers, Some(end_of(markers))),
        );
        assert_eq!(nodes(&a), nodes(&b), "{plain} against {markers}");
        assert_eq!(a.status, b.status);
    }
}

#[test]
fn a_legacy_retry_is_one_execution_with_its_attempts() {
    let timeline = read_whole(
        "v0.2.0-0ff4886-92-retries-custom-recovers",
        Some(end_of("v0.2.0-0ff4886-92-retries-custom-recovers")),
    );
    let attempts: Vec<(&str, u32)> = timeline.nodes.iter().map(|n| (n.name.as_str(), n.attempts)).collect();
    assert_eq!(attempts, [("flaky", 3), ("after", 1)]);
}
