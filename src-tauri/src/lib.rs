//! The desktop shell of Zibby Studio: a thin Tauri adapter over `studio-core`.
//!
//! - [`run`]: reads the command line, opens the workspace, opens the window.
//! - `commands`: the IPC commands, each one call into the core.
//! - `error`: the one `{code, message}` error that crosses IPC.

mod commands;
mod error;

use std::ffi::OsString;
use std::path::PathBuf;

use studio_core::Workspace;

pub use error::CommandError;

const USAGE: &str = "usage: zibby-studio [WORKSPACE]";

const HELP: &str = "\
Zibby Studio: watch Zibby agent runs on your own machine.

usage: zibby-studio [WORKSPACE]

arguments:
  WORKSPACE      the project folder whose runs to show (sessions live in
                 WORKSPACE/.zibby/output/sessions/); default: the current folder

options:
  -h, --help     print this help and exit
  -V, --version  print the version and exit

environment:
  RUST_LOG       log filter for stderr, e.g. RUST_LOG=debug (default: info)
";

/// What the window works on: the workspace, or why it could not be opened (shown in the window).
pub struct Studio {
    workspace: Result<Workspace, CommandError>,
}

impl Studio {
    pub fn workspace(&self) -> Result<&Workspace, CommandError> {
        self.workspace.as_ref().map_err(Clone::clone)
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    Open { workspace: PathBuf },
    Help,
    Version,
}

/// Parses the arguments after the program name.
pub fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, String> {
    let mut workspace: Option<PathBuf> = None;
    let mut options_done = false;
    for arg in args {
        match arg.to_str() {
            Some("-h" | "--help") if !options_done => return Ok(Invocation::Help),
            Some("-V" | "--version") if !options_done => return Ok(Invocation::Version),
            // WebKitWebDriver starts the browser binary with this flag when it drives the app.
            Some("--automation") if !options_done => {}
            Some("--") if !options_done => options_done = true,
            Some(option) if option.starts_with('-') && option.len() > 1 && !options_done => {
                return Err(format!("unknown option `{option}`"));
            }
            _ if workspace.is_some() => {
                return Err(format!(
                    "unexpected argument `{}`: give one WORKSPACE",
                    arg.to_string_lossy()
                ));
            }
            _ => workspace = Some(PathBuf::from(arg)),
        }
    }
    Ok(Invocation::Open {
        workspace: workspace.unwrap_or_else(|| PathBuf::from(".")),
    })
}

/// The app's entry point: `zibby-studio [WORKSPACE]`.
pub fn run() {
    let workspace = match parse_args(std::env::args_os().skip(1)) {
        Ok(Invocation::Open { workspace }) => workspace,
        Ok(Invocation::Help) => {
            print!("{HELP}");
            return;
        }
        Ok(Invocation::Version) => {
            println!("zibby-studio {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Err(message) => {
            eprintln!("zibby-studio: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    init_tracing();
    if let Err(message) = check_display() {
        eprintln!("zibby-studio: {message}");
        std::process::exit(1);
    }

    let workspace = Workspace::open(&workspace).map_err(CommandError::from);
    match &workspace {
        Ok(workspace) => tracing::info!(root = %workspace.root().display(), "workspace opened"),
        Err(error) => tracing::warn!(code = error.code, "{}", error.message),
    }

    let result = tauri::Builder::default()
        .manage(Studio { workspace })
        .invoke_handler(tauri::generate_handler![
            commands::workspace_get,
            commands::sessions_list
        ])
        .run(tauri::generate_context!());
    if let Err(error) = result {
        eprintln!("zibby-studio: cannot start the window: {error}");
        std::process::exit(1);
    }
}

/// GTK aborts with a panic and a backtrace when there is no display; say so plainly instead.
fn check_display() -> Result<(), &'static str> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if cfg!(all(unix, not(target_os = "macos"))) && !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
        return Err(
            "no display (DISPLAY and WAYLAND_DISPLAY are unset): run it from a desktop session \
             or under xvfb-run; `zstudio` shows the same sessions in a terminal",
        );
    }
    Ok(())
}

fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, String> {
        parse_args(args.iter().map(OsString::from))
    }

    fn open(path: &str) -> Result<Invocation, String> {
        Ok(Invocation::Open {
            workspace: PathBuf::from(path),
        })
    }

    #[test]
    fn the_workspace_defaults_to_the_current_folder() {
        assert_eq!(parse(&[]), open("."));
        assert_eq!(parse(&["/some/project"]), open("/some/project"));
    }

    #[test]
    fn help_and_version_win_over_everything_else() {
        assert_eq!(parse(&["--help"]), Ok(Invocation::Help));
        assert_eq!(parse(&["proj", "-h"]), Ok(Invocation::Help));
        assert_eq!(parse(&["--version"]), Ok(Invocation::Version));
        assert_eq!(parse(&["-V"]), Ok(Invocation::Version));
    }

    #[test]
    fn the_flag_webkitwebdriver_adds_is_ignored() {
        assert_eq!(parse(&["--automation", "/tmp/ws"]), open("/tmp/ws"));
    }

    #[test]
    fn mistakes_are_reported_not_guessed() {
        assert!(parse(&["--verbose"])
            .unwrap_err()
            .contains("unknown option `--verbose`"));
        assert!(parse(&["a", "b"]).unwrap_err().contains("unexpected argument `b`"));
    }

    #[test]
    fn a_double_dash_ends_the_options() {
        assert_eq!(parse(&["--", "--help"]), open("--help"));
        assert_eq!(parse(&["-"]), open("-"));
    }
}
