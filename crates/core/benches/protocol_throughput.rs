//! Protocol reader throughput on a synthetic 200 MB run output, against `grep -c` on the same
//! bytes in the same run (the target: at least 300 MB/s, and within 3x of grep's time).
//!
//! `cargo bench -p studio-core --bench protocol_throughput` (set `BENCH_MB` for another size).

use std::io::Write;
use std::process::Command;

mod common;

use common::best_of;
use studio_core::protocol::{EventKind, Stream, StreamReader};
use studio_core::timeline::TimelineFold;

/// A run's output as agents print it: prose, JSON, ANSI-coloured tool lines, nested `│ ` output,
/// a long line now and then, and a node every ~200 lines.
fn synthetic_stream(target_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target_bytes + 4096);
    let mut node = 0u64;
    let mut line = 0u64;
    while out.len() < target_bytes {
        if line.is_multiple_of(200) {
            if node > 0 {
                writeln!(out, "└ done 1.{}s", node % 10).unwrap();
                writeln!(
                    out,
                    "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_end\",\"node\":\"node_{}\"}}",
                    node - 1
                )
                .unwrap();
            }
            writeln!(
                out,
                "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"node_{node}\"}}"
            )
            .unwrap();
            writeln!(out, "┌ node_{node}").unwrap();
            node += 1;
        }
        match line % 7 {
            0 => writeln!(
                out,
                "│ The agent considered {line} options and chose the one that best fits the plan so far."
            )
            .unwrap(),
            1 => writeln!(
                out,
                "│ {{\"tool\":\"search\",\"query\":\"item {line}\",\"results\":[1,2,3],\"ok\":true,\"elapsed_ms\":{}}}",
                line % 977
            )
            .unwrap(),
            2 => writeln!(
                out,
                "\x1b[90m│\x1b[39m \x1b[32m◆\x1b[39m tool call {line}: read_file(\"src/module_{}.rs\")",
                line % 50
            )
            .unwrap(),
            3 => writeln!(
                out,
                "│ │ inner step {line}: tokens=1532 cost=$0.0041 latency=812ms model=some-model-name"
            )
            .unwrap(),
            4 => writeln!(
                out,
                "│ Résumé des étapes — 完成了第 {line} 步 — ✓ all checks passed for this chunk of work"
            )
            .unwrap(),
            5 if line % 1000 == 5 => writeln!(out, "│ {}", "x".repeat(5000)).unwrap(),
            _ => writeln!(
                out,
                "│ plain progress line number {line} with a little more text to look realistic"
            )
            .unwrap(),
        }
        line += 1;
    }
    out
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for a list; nothing to list.
    }
    let megabytes: usize = std::env::var("BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let bytes = synthetic_stream(megabytes * 1_000_000);
    let size_mb = bytes.len() as f64 / 1e6;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream.txt");
    std::fs::write(&file, &bytes).unwrap();

    let (grep_time, grep_count) = best_of(5, || {
        let output = Command::new("grep")
            .arg("-c")
            .arg("__WORKFLOW_GRAPH_LOG__")
            .arg(&file)
            .output()
            .unwrap();
        String::from_utf8(output.stdout)
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap()
    });

    let (reader_time, (markers, lines, nodes)) = best_of(5, || {
        let mut reader = StreamReader::new();
        let mut fold = TimelineFold::new();
        let (mut markers, mut lines) = (0usize, 0usize);
        let mut sink = |event: studio_core::protocol::Event<'_>| {
            lines += 1;
            if matches!(event.kind, EventKind::NodeBegin { .. } | EventKind::NodeEnd { .. }) {
                markers += 1;
            }
            fold.apply(&event);
        };
        for chunk in bytes.chunks(64 * 1024) {
            reader.push(Stream::Stdout, chunk, 0, &mut sink);
        }
        reader.finish(0, &mut sink);
        (markers, lines, fold.timeline(None).nodes.len())
    });
    assert_eq!(markers, grep_count, "the reader and grep count the same markers");

    let throughput = size_mb / reader_time.as_secs_f64();
    println!("protocol_throughput: {size_mb:.0} MB, {lines} lines, {markers} markers, {nodes} nodes");
    println!(
        "  reader (events + timeline fold): {:>8.1} ms  {throughput:>7.0} MB/s",
        reader_time.as_secs_f64() * 1e3
    );
    println!(
        "  grep -c __WORKFLOW_GRAPH_LOG__:  {:>8.1} ms  {:>7.0} MB/s",
        grep_time.as_secs_f64() * 1e3,
        size_mb / grep_time.as_secs_f64()
    );
    println!(
        "  reader / grep time: {:.2}x   (targets: >= 300 MB/s, <= 3x)",
        reader_time.as_secs_f64() / grep_time.as_secs_f64()
    );
}
