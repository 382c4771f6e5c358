//! `compare` on two large runs that differ in ten places (issue 16: the first hunks of two
//! 100 MB outputs in under a second, with bounded memory): as two captured logs, and as two runs
//! recorded in a store file. Beside it, the same run's baseline: both logs read by the protocol
//! reader and fold alone (what `zstudio parse` does), which the comparison reads them with.
//!
//! `cargo bench -p studio-core --bench compare` (set `BENCH_MB` for another size per side).

mod common;

use std::io::Write;
use std::time::{Duration, SystemTime};

use common::best_of;
use studio_core::compare::sides::Source;
use studio_core::compare::{compare, Change, Options};
use studio_core::protocol::{Stream, StreamReader};
use studio_core::store::{NewRun, RunOutcome, Store, StoreLocation};
use studio_core::timeline::TimelineFold;
use studio_core::{SessionId, Status, Workspace};

const NODE_LINES: usize = 2_000;

/// The line of a run's output at `index`: ~100 bytes, a few of them coloured.
fn line(index: usize, changed: bool) -> String {
    let mark = if changed { "CHANGED " } else { "" };
    match index % 5 {
        0 => format!("│ {mark}The agent considered {index} options and chose the one that fits the plan so far."),
        1 => format!("│ {mark}{{\"tool\":\"search\",\"query\":\"item {index}\",\"results\":[1,2,3],\"ok\":true}}"),
        2 => format!(
            "\x1b[90m│\x1b[39m {mark}\x1b[32m◆\x1b[39m tool call {index}: read_file(\"src/module_{}.rs\")",
            index % 50
        ),
        _ => format!("│ {mark}plain progress line number {index} with a little more text to look realistic"),
    }
}

/// The lines of each node of a run of about `bytes`, with `changes` lines changed (spread
/// evenly, the first early).
fn script(bytes: usize, changes: usize) -> Vec<(String, Vec<String>)> {
    let total_lines = bytes / 90;
    let changed: Vec<usize> = (0..changes)
        .map(|k| 1_000 + k * (total_lines / changes.max(1)))
        .collect();
    let mut nodes = Vec::new();
    let mut index = 0;
    while index < total_lines {
        let name = format!("node_{}", nodes.len());
        let lines = (index..(index + NODE_LINES).min(total_lines))
            .map(|i| line(i, changed.contains(&i)))
            .collect();
        nodes.push((name, lines));
        index += NODE_LINES;
    }
    nodes
}

fn write_log(path: &std::path::Path, script: &[(String, Vec<String>)]) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (name, lines) in script {
        writeln!(
            out,
            "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"{name}\"}}"
        )
        .unwrap();
        writeln!(out, "┌ {name}").unwrap();
        for line in lines {
            writeln!(out, "{line}").unwrap();
        }
        writeln!(out, "└ done 1.2s").unwrap();
        writeln!(
            out,
            "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_end\",\"node\":\"{name}\"}}"
        )
        .unwrap();
    }
    out.flush().unwrap();
    std::fs::metadata(path).unwrap().len() as usize
}

fn record_run(store: &Store, workspace: &Workspace, session: &SessionId, script: &[(String, Vec<String>)]) -> String {
    let start = SystemTime::now();
    let run = store
        .run_insert(
            workspace,
            &NewRun {
                session,
                agent: None,
                command: &["agent".to_owned()],
                replayed_node: None,
                prompt: None,
                started_at: start,
            },
        )
        .unwrap();
    let run_span = store.span_start(&run, None, "run", "run", 0, start).unwrap();
    let mut writer = store.output_writer(&run).unwrap();
    for (name, lines) in script {
        let span = store.span_start(&run, Some(run_span), name, "node", 0, start).unwrap();
        writer
            .append(Stream::Stdout, 0, Some(name), &format!("┌ {name}"))
            .unwrap();
        for line in lines {
            writer.append(Stream::Stdout, 0, Some(name), line).unwrap();
        }
        writer.append(Stream::Stdout, 0, Some(name), "└ done 1.2s").unwrap();
        store.span_end(span, Status::Success, start).unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    let outcome = RunOutcome {
        status: Status::Success,
        exit_code: Some(0),
        error: None,
        stopped_by: None,
        ended_at: start + Duration::from_secs(60),
    };
    store.run_finish(&run, &outcome).unwrap();
    run
}

/// Resets the process's peak resident memory (Linux: `clear_refs` 5), so the next reading of
/// `VmHWM` is the peak since.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Runs `f` (best of 3) and says its time and the peak memory it added above what was resident.
fn measure<T>(what: &str, f: impl Fn() -> T) -> T {
    let before = rss_mb();
    reset_peak();
    let (time, value) = best_of(3, f);
    println!(
        "  {what:<44} {:>8.1} ms   peak +{:.0} MB (resident before {before:.0} MB)",
        time.as_secs_f64() * 1e3,
        peak_mb() - before
    );
    value
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for a list; nothing to list.
    }
    let megabytes: usize = std::env::var("BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let (a_log, b_log) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let size = {
        let a = script(megabytes * 1_000_000, 0);
        let b = script(megabytes * 1_000_000, 10);
        let size = write_log(&a_log, &a);
        write_log(&b_log, &b);
        size
    };
    let nodes = script(megabytes * 1_000_000, 0).len();
    println!(
        "compare: two outputs of {:.0} MB, {nodes} nodes each, ten lines changed",
        size as f64 / 1e6
    );

    let options = Options::default();
    let check = |diff: studio_core::compare::RunDiff| {
        let changed: Vec<_> = diff.nodes.iter().filter(|n| n.change == Change::Changed).collect();
        assert_eq!(changed.len(), 10, "ten nodes changed");
        assert!(changed[0].output.hunks[0]
            .lines
            .iter()
            .any(|l| l.text.contains("CHANGED")));
    };
    measure("reader + fold of both logs (baseline)", || {
        for path in [&a_log, &b_log] {
            let bytes = std::fs::read(path).unwrap();
            let mut reader = StreamReader::new();
            let mut fold = TimelineFold::new();
            for chunk in bytes.chunks(256 * 1024) {
                reader.push(Stream::Stdout, chunk, 0, &mut |e| {
                    fold.apply(&e);
                });
            }
            assert_eq!(fold.timeline(None).nodes.len(), nodes);
        }
    });
    measure("compare two logs: first hunks of every node", || {
        check(compare(None, &Source::Log(a_log.clone()), &Source::Log(b_log.clone()), &options).unwrap())
    });

    let workspace = Workspace::open(dir.path()).unwrap();
    let store = Store::open(&StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap();
    let session = SessionId::parse("1795952466311_bnch").unwrap();
    let a_run = record_run(&store, &workspace, &session, &script(megabytes * 1_000_000, 0));
    let b_run = record_run(&store, &workspace, &session, &script(megabytes * 1_000_000, 10));
    let (a, b) = (
        Source::resolve(&store, &workspace, &a_run).unwrap(),
        Source::resolve(&store, &workspace, &b_run).unwrap(),
    );
    measure("compare two recorded runs: first hunks", || {
        check(compare(Some(&store), &a, &b, &options).unwrap())
    });
    let one_node = Options {
        node: Some("node_0".to_owned()),
        occurrence: Some(0),
        ..Options::default()
    };
    measure("two recorded runs, one node (\"more\")", || {
        compare(Some(&store), &a, &b, &one_node).unwrap()
    });
    println!("  (target: first hunk < 1 s, memory bounded: not proportional to the outputs)");
}
