//! `zstudio keep` (hidden): the run keeper the studio starts each run through.

use std::process::ExitCode;

use crate::cli::KeepArgs;

/// Runs the command, copying its output to the run folder and to this process's own output; its
/// threads write to standard output themselves, so nothing here locks it.
pub fn keep(args: &KeepArgs) -> ExitCode {
    let status = studio_core::keeper::keep(&args.run_dir, &args.command);
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}
