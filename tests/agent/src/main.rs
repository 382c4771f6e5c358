//! zibby-test-agent: a stand-in for a Zibby agent run, for tests and the demo.
//!
//! It behaves like the engine as PROTOCOL.md describes it: the session folder from the
//! environment (pinned) or its own, the human timeline and (when gated on) the node markers on
//! stdout, `.session-info.json` rewritten before every node, `<node>/raw_stream_output.txt` after
//! each successful node, both stop files honoured between nodes, and the engine's doubled
//! `node_end` when a node fails.
//!
//! ```text
//! zibby-test-agent [run] [--nodes SPEC] [--fail NODE] [--stop-after NODE] [--ignore-stop]
//!                  [--linger-ms N] [--lines N] [--prompt TEXT] [--layout engine|documented]
//! zibby-test-agent replay CAPTURE_DIR [--speed F]
//! zibby-test-agent fill-demo WORKSPACE
//! ```
//!
//! `--nodes` is a comma-separated list of `name:milliseconds`; a leading `>` per level runs the
//! node in an inner graph of the node before it (`research:50,>search:20,>read:20,write:30`).

mod demo;
mod replay;
mod run;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("replay") => replay::main(&args[1..]),
        Some("fill-demo") => demo::main(&args[1..]),
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
