//! `zstudio --remote HOST:PATH mcp`: the host's own `zstudio mcp` on its workspace, reached
//! through the system's `ssh` as every `--remote` command is (one ControlMaster, the same build
//! put on the host when missing), with this process's standard input and output as its own.
//! The host's studio answers every call from its own folders and store, so its tools are the
//! local ones, result for result; with `--allow-runs` it runs the agents trusted there.

use std::process::Stdio;

use anyhow::Context;
use studio_core::remote::ssh::{Connection, RemoteTarget};

use crate::cli::{Globals, McpArgs};

/// Serves `target`'s workspace until the client closes standard input (the host's server then
/// ends, and ssh with it); the connection is closed (or kept, `--keep-connection`) after.
pub fn serve_host(target: &str, args: &McpArgs, globals: &Globals) -> anyhow::Result<()> {
    // Ended by a signal, the master (a process group of its own) is ended too.
    studio_core::remote::ssh::end_masters_on_signals(true).context("cannot watch for signals")?;
    let connection = Connection::open(&RemoteTarget::parse(target)?, &crate::remote::connect_options(globals))?;
    let local = std::env::current_exe().context("the running zstudio's path")?;
    let server = connection.ensure_server(&local)?;
    let mut argv = vec![
        server.program.as_str(),
        "mcp",
        "--workspace",
        connection.workspace_path(),
    ];
    if args.allow_runs {
        argv.push("--allow-runs");
    }
    // Nothing of this process is written between the two: the frames are the host server's.
    let status = connection
        .command(argv)?
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("cannot start ssh to {}", connection.host()))?;
    let host = connection.host();
    connection.close()?;
    anyhow::ensure!(
        status.success(),
        "the MCP server on {host} ended with {status} (its own message, if any, is above)"
    );
    Ok(())
}
