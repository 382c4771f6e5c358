//! `zstudio build-info` (hidden): this binary's version, build id and platform as one JSON line,
//! which a remote workspace's bootstrap compares with its own (`studio_core::remote::ssh`).

use std::io::Write;
use std::process::ExitCode;

use studio_core::remote::ssh::BuildInfo;

/// Prints `{"version":…,"build":…,"platform":…}`; exit 1 when the binary cannot be read.
pub fn build_info() -> ExitCode {
    let build = std::env::current_exe()
        .map_err(|e| e.to_string())
        .and_then(|exe| BuildInfo::of_binary(&exe).map_err(|e| e.to_string()));
    match build {
        Ok(build) => {
            let line = serde_json::to_string(&build).expect("a BuildInfo is JSON");
            match writeln!(std::io::stdout().lock(), "{line}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Err(error) => {
            let _ = writeln!(std::io::stderr().lock(), "zstudio: build-info: {error}");
            ExitCode::FAILURE
        }
    }
}
