//! zibby-test-agent: a stand-in for a Zibby agent run, for tests and the demo.
//!
//! It behaves like the engine as docs/protocol.md describes it: the session folder from the
//! environment (pinned) or its own, the human timeline and (when gated on) the node markers on
//! stdout, `.session-info.json` rewritten before every node, `<node>/raw_stream_output.txt` after
//! each successful node, both stop files honoured between nodes, and the engine's doubled
//! `node_end` when a node fails.
//!
//! ```text
//! zibby-test-agent [run] [--nodes SPEC] [--fail NODE] [--stop-after NODE] [--ignore-stop]
//!                  [--linger-ms N] [--lines N] [--prompt TEXT] [--print-env NAME]
//!                  [--layout engine|documented] [--usage NODE=FORMAT,...] [--say NODE=TEXT]
//!                  [--fail-reason TEXT] [--custom NODE,...]
//! zibby-test-agent replay CAPTURE_DIR [--speed F]
//! zibby-test-agent demo [--prompt TEXT] [RUN OPTIONS]
//! zibby-test-agent fill-demo WORKSPACE [--db PATH] [--zstudio PATH]
//! ```
//!
//! `--nodes` is a comma-separated list of `name:milliseconds`; a leading `>` per level runs the
//! node in an inner graph of the node before it (`research:50,>search:20,>read:20,write:30`).

mod demo;
mod replay;
mod run;
mod usage;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("replay") => replay::main(&args[1..]),
        Some("fill-demo") => demo::main(&args[1..]),
        Some("demo") => demo::agent(&args[1..]),
        Some("markers") => markers(&args[1..]),
        Some("run") => run::main(&args[1..]),
        Some("--help" | "-h") => {
            println!("{}", include_str!("usage.txt"));
            Ok(0)
        }
        _ => run::main(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("zibby-test-agent: {message}");
            ExitCode::from(64)
        }
    }
}

/// The value after a flag, or an error naming the flag.
fn value_of<'a>(args: &'a [String], i: &mut usize, flag: &str) -> Result<&'a str, String> {
    *i += 1;
    args.get(*i)
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} needs a value"))
}

/// `markers N [INTERVAL_US]`: N node_begin/node_end pairs, each node named `m<send time in ns>`,
/// for the runner's latency benchmark.
fn markers(args: &[String]) -> Result<u8, String> {
    use std::io::Write;
    let count: u64 = args
        .first()
        .and_then(|n| n.parse().ok())
        .ok_or("markers needs a count")?;
    let interval: u64 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let mut out = std::io::stdout().lock();
    for _ in 0..count {
        let sent = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let written = writeln!(
            out,
            "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_begin\",\"node\":\"m{sent}\"}}"
        )
        .and_then(|_| writeln!(out, "└ done 0ms"))
        .and_then(|_| {
            writeln!(
                out,
                "__WORKFLOW_GRAPH_LOG__{{\"phase\":\"node_end\",\"node\":\"m{sent}\"}}"
            )
        })
        .and_then(|_| out.flush());
        if written.is_err() {
            return Ok(141);
        }
        std::thread::sleep(std::time::Duration::from_micros(interval));
    }
    Ok(0)
}
