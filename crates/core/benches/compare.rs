//! `compare` on two large runs that differ in ten places (issue 16: the first hunks of two
//! 100 MB outputs in under a second, with bounded memory): as two captured logs, and as two runs
//! recorded in a store file. Beside it, the same run's baseline: both logs read by the protocol
//! reader and fold alone (what `zstudio parse` does), which the comparison reads them with.
//!
//! `cargo bench -p studio-core --bench compare` (set `BENCH_MB` for another size per side).

use std::io::Write;
use std::time::SystemTime;

use studio_core::compare::sides::{CapturedLog, Source};
use studio_core::compare::{compare, Change, Options};
use studio_core::protocol::{Stream, StreamReader};
use studio_core::share::{self, ImportOptions};
use studio_core::store::{Store, StoreLocation};
use studio_core::timeline::TimelineFold;
use studio_core::Workspace;

const NODE_LINES: usize = 2_000;

/// The line of a run's output at `index`: ~78 bytes, one in five coloured.
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
    let sample: usize = (0..1000).map(|i| line(i, false).len() + 1).sum();
    let total_lines = bytes * 1000 / sample;
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

/// The process's peak resident memory so far, in MB (`VmHWM`).
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// One case, in a process of its own (so its peak memory is its own): prints `ms peak_mb`.
fn run_case(case: &str, dir: &std::path::Path) {
    let (a_log, b_log) = (dir.join("a.log"), dir.join("b.log"));
    let started = std::time::Instant::now();
    match case {
        "baseline" => {
            for path in [&a_log, &b_log] {
                let mut file = std::fs::File::open(path).unwrap();
                let mut reader = StreamReader::new();
                let mut fold = TimelineFold::new();
                let mut buffer = vec![0u8; 256 * 1024];
                loop {
                    let n = std::io::Read::read(&mut file, &mut buffer).unwrap();
                    if n == 0 {
                        break;
                    }
                    reader.push(Stream::Stdout, &buffer[..n], 0, &mut |e| {
                        fold.apply(&e);
                    });
                }
                assert!(!fold.timeline(None).nodes.is_empty());
            }
        }
        "logs" => check(
            compare(
                None,
                &Source::Log(CapturedLog::stdout(a_log)),
                &Source::Log(CapturedLog::stdout(b_log)),
                &Options::default(),
            )
            .unwrap(),
        ),
        "logs-node" => {
            let diff = compare(
                None,
                &Source::Log(CapturedLog::stdout(a_log)),
                &Source::Log(CapturedLog::stdout(b_log)),
                &first_changed(),
            )
            .unwrap();
            assert!(diff.nodes[0].output.changed);
        }
        "stored" | "stored-node" => {
            let store = Store::open(&StoreLocation::File(dir.join("studio.sqlite"))).unwrap();
            let workspace = Workspace::open(dir).unwrap();
            let ids = std::fs::read_to_string(dir.join("runs")).unwrap();
            let (a, b) = ids.split_once(' ').unwrap();
            let (a, b) = (
                Source::resolve(&store, &workspace, a).unwrap(),
                Source::resolve(&store, &workspace, b).unwrap(),
            );
            if case == "stored" {
                check(compare(Some(&store), &a, &b, &Options::default()).unwrap());
            } else {
                assert!(
                    compare(Some(&store), &a, &b, &first_changed()).unwrap().nodes[0]
                        .output
                        .changed
                );
            }
        }
        other => panic!("no case {other}"),
    }
    println!("{} {}", started.elapsed().as_secs_f64() * 1e3, peak_mb());
}

/// The node with the first change, alone (the window's "more" of one node).
fn first_changed() -> Options {
    Options {
        node: Some("node_0".to_owned()),
        occurrence: Some(0),
        ..Options::default()
    }
}

fn check(diff: studio_core::compare::RunDiff) {
    let changed: Vec<_> = diff.nodes.iter().filter(|n| n.change == Change::Changed).collect();
    assert_eq!(changed.len(), 10, "ten nodes changed");
    assert!(changed[0].output.hunks[0]
        .lines
        .iter()
        .any(|l| l.text.contains("CHANGED")));
}

/// Runs a case three times, each in a process of its own: the best time, and the peak memory.
fn measure(what: &str, case: &str, dir: &std::path::Path) {
    let mut best = f64::MAX;
    let mut peak: f64 = 0.0;
    for _ in 0..3 {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--case", case])
            .arg(dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8_lossy(&output.stdout);
        let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().unwrap());
        best = best.min(fields.next().unwrap());
        peak = peak.max(fields.next().unwrap());
    }
    println!("  {what:<52} {best:>8.1} ms   peak {peak:>6.1} MB (the whole process)");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for a list; nothing to list.
    }
    if let Some(at) = args.iter().position(|a| a == "--case") {
        return run_case(&args[at + 1], std::path::Path::new(&args[at + 2]));
    }
    let megabytes: usize = std::env::var("BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let bytes = megabytes * 1_000_000;
    let (a, b) = (script(bytes, 0), script(bytes, 10));
    let size = write_log(&dir.path().join("a.log"), &a);
    write_log(&dir.path().join("b.log"), &b);
    println!(
        "compare: two outputs of {:.0} MB, {} nodes of {NODE_LINES} lines each, ten lines changed",
        size as f64 / 1e6,
        a.len()
    );
    {
        // The same logs recorded as runs, as `zstudio import LOG` records a CI log: each line with
        // its node, the node executions as spans.
        let workspace = Workspace::open(dir.path()).unwrap();
        let store = Store::open(&StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap();
        let options = ImportOptions {
            exit_code: Some(0),
            ..ImportOptions::default()
        };
        let run_of = |log: &str| {
            let imported =
                share::import(&store, &workspace, &dir.path().join(log), &options, SystemTime::now()).unwrap();
            store.runs(&workspace, Some(&imported.session_id)).unwrap()[0]
                .id
                .clone()
        };
        let (a_run, b_run) = (run_of("a.log"), run_of("b.log"));
        std::fs::write(dir.path().join("runs"), format!("{a_run} {b_run}")).unwrap();
    }
    drop((a, b));
    measure("baseline: reader + fold of both logs", "baseline", dir.path());
    measure("two logs: the first hunks of every node", "logs", dir.path());
    measure("two logs: one node (\"more\")", "logs-node", dir.path());
    measure("two recorded runs: the first hunks of every node", "stored", dir.path());
    measure("two recorded runs: one node (\"more\")", "stored-node", dir.path());
    println!("  (target: the first hunk < 1 s; memory: sixteen bytes a line, never the text)");
}
