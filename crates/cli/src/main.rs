//! `zstudio`: Zibby Studio without a window, over the same core as the app.
//!
//! Every command takes `--json` for machine-readable output; the field names are documented in
//! `docs/cli.md` and stable. Errors are one line on stderr naming the path or id, and exit 1.
//!
//! - `cli`: the command line (clap): the global options, defined once, and each command's own.
//! - `open`: what the global options name, opened (workspaces, the store).
//! - `commands`: one module per command or group.
//! - `print`: all that is printed on standard output, human and JSON.
//! - `visible`: control characters of untrusted text shown as escapes.
//! - `ask`: questions on the terminal.
//! - `mcp`: `zstudio mcp`, the studio as an MCP server (its SDK in `mcp::sdk` alone).
//! - `place`: where a command runs: this machine's workspace, or a remote one (`--remote
//!   HOST:PATH`) through its server.
//! - `remote`: a remote workspace's server, reached (`--remote HOST:PATH`).

// Standard output goes through `print` and the `visible` writer (untrusted text shown as
// escapes), never `println!`; the exit status is `main`'s to return.
#![deny(clippy::print_stdout, clippy::exit)]

mod ask;
mod cli;
mod commands;
mod filter_args;
mod mcp;
mod open;
mod otlp_args;
mod place;
mod print;
mod remote;
mod visible;

use std::io::Write;
use std::process::ExitCode;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let code = run_command_line();
    studio_core::remote::ssh::wait_while_a_signal_ends_this_process();
    code
}

fn run_command_line() -> ExitCode {
    let cli = Cli::parse_args();
    if let Err(refused) = cli.check() {
        refused.exit();
    }
    let command = match cli.command {
        Command::Keep(args) => return commands::keep::keep(&args),
        Command::BuildInfo => return commands::build_info::build_info(),
        // The server writes its frames from a thread of its own: standard output stays unlocked.
        Command::Studio(cli::StudioCommand::Serve(args)) => {
            return match commands::serve::serve(&args, &cli.globals) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => report(&error, ExitCode::FAILURE),
            }
        }
        // The MCP server speaks on standard output itself.
        Command::Studio(cli::StudioCommand::Mcp(args)) => {
            return match mcp::mcp(&args, &cli.globals) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => report(&error, ExitCode::FAILURE),
            }
        }
        Command::Studio(command) => command,
    };
    // Untrusted text (node names, output lines, file names) is printed: control characters as escapes.
    // Buffered: a run flushes when no event is waiting, everything else at exit.
    let mut out = visible::Visible::new(std::io::BufWriter::new(std::io::stdout().lock()));
    // `diff` exits as diff(1) does: 1 says the runs differ, so its trouble is 2.
    let trouble = match command {
        cli::StudioCommand::Diff(_) => ExitCode::from(commands::diff::TROUBLE),
        _ => ExitCode::FAILURE,
    };
    match commands::run(command, &cli.globals, &mut out) {
        Ok(code) => code,
        Err(error) if cli.globals.format() == cli::Format::Json => {
            drop(out);
            report_json(&error, trouble)
        }
        Err(error) => report(&error, trouble),
    }
}

/// An error of the command line's own making that has a code of the core's list (the trust
/// refused without a terminal to ask on: `agents_untrusted`).
#[derive(Debug)]
pub(crate) struct CodedError {
    pub code: studio_core::ErrorCode,
    pub message: String,
}

impl std::fmt::Display for CodedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodedError {}

/// With `--json`, the error as one JSON line on stderr, `{"error": {"code", "message"}}`: the
/// code of the core's error list (docs/cli.md), `invalid_request` for a mistake of the command
/// line itself.
fn report_json(error: &anyhow::Error, trouble: ExitCode) -> ExitCode {
    // A link broken by a signal ending this process is the signal's to report.
    studio_core::remote::ssh::wait_while_a_signal_ends_this_process();
    if error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    {
        return ExitCode::SUCCESS;
    }
    let code = error
        .chain()
        .find_map(|cause| {
            cause
                .downcast_ref::<studio_core::Error>()
                .map(studio_core::Error::code)
                .or_else(|| {
                    cause
                        .downcast_ref::<studio_core::remote::ssh::SshError>()
                        .map(studio_core::remote::ssh::SshError::code)
                })
                .or_else(|| cause.downcast_ref::<CodedError>().map(|coded| coded.code))
        })
        .unwrap_or(studio_core::ErrorCode::InvalidRequest);
    let line = serde_json::json!({ "error": { "code": code, "message": message(error) } });
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    trouble
}

/// One line on stderr, exit `trouble` (1, but 2 for `diff`); a closed pipe (`zstudio sessions | head`) is not an error worth a
/// message.
fn report(error: &anyhow::Error, trouble: ExitCode) -> ExitCode {
    // A link broken by a signal ending this process is the signal's to report.
    studio_core::remote::ssh::wait_while_a_signal_ends_this_process();
    if error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    {
        return ExitCode::SUCCESS;
    }
    let _ = writeln!(
        visible::Visible::new(std::io::stderr().lock()),
        "zstudio: {}",
        message(error)
    );
    trouble
}

/// `error` and its causes, each once: the core's errors say their cause in their own message
/// (`cannot read X: No such file or directory (os error 2)`) and give it as their source too, so
/// a cause the message before it already says is left out.
fn message(error: &anyhow::Error) -> String {
    let mut said = String::new();
    let mut previous = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !previous.contains(&text) {
            if !said.is_empty() {
                said.push_str(": ");
            }
            said.push_str(&text);
        }
        previous = text;
    }
    said
}
