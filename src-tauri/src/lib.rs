//! The desktop shell of Zibby Studio: a thin Tauri adapter over `studio-core`.
//!
//! - [`run`]: reads the command line, opens the workspace, the store and the run supervisor
//!   (`studio`), opens the window, and stops the live runs when the app exits.
//! - `commands`: the IPC commands, each one call into the core.
//! - `events`: the supervisor's run events, forwarded to the window.
//! - `remote`, `forward`: a workspace on another machine (over ssh), and the one place the
//!   commands are sent there by name; `cloud`: a bucket prefix, read-only.
//! - `desktop`: quitting with live runs, opening a workspace by its target (a folder here, on
//!   another machine, a bucket prefix: `studio_args::target::WorkspaceTarget`), the menu's actions.
//! - `window` (a leaf): the window's title, the app menu, `workspace-changed`, the system's
//!   dialogs; `logs` (a leaf): the app's own log file.
//! - `share`: Export…, Import… and drops onto the window, and the session a launch asks for.
//! - `error`: the one `{code, message}` error that crosses IPC.
//! - `ipc_types` (a test), with `ipc_signature` (the commands' signatures `commands` writes, a
//!   leaf): the window's TypeScript types (`ui/src/generated/ipc.ts`), generated
//!   from the Rust types that cross IPC, with the command and event names; it fails when the
//!   checked-in file is stale (`scripts/gen-ipc-types.sh` rewrites it).

/// The types of the arguments the window passes to commands, one list handed to `$then` (a macro
/// implementing a trait for each): `forward`'s `passed!` (their JSON for a remote workspace) and
/// `ipc_signature`'s `arguments!` (their TypeScript). A command taking a new type of argument needs
/// it here.
macro_rules! for_window_argument_types {
    ($then:ident) => {
        $then!(
            String,
            Option<String>,
            bool,
            i64,
            u64,
            usize,
            Option<usize>,
            Option<f64>,
            Vec<String>,
            studio_core::agents::Agent,
            studio_core::store::Filters
        );
    };
}

mod askpass;
mod cloud;
mod commands;
mod consent;
mod desktop;
mod error;
mod events;
mod forward;
#[cfg(test)]
mod ipc_signature;
#[cfg(test)]
mod ipc_types;
mod logs;
mod opening;
mod remote;
mod share;
mod window;

use std::ffi::OsString;
use std::path::PathBuf;

use studio_args::target::WorkspaceTarget;
use studio_core::store::StoreLocation;
use tauri::Manager;

pub use error::CommandError;
pub use studio_core::app::Studio;

use commands::invoke_handler;

/// The app's command line, defined with clap beside `zstudio`'s (`crates/args`).
pub use studio_args::desktop::{parse_args, Invocation};

/// The app's entry point: `zibby-studio [--db PATH | --memory] [WORKSPACE]`.
/// How long watching waits at most for the window's first listing.
const FIRST_LISTING_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

pub fn run() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // Started by ssh to ask the user something (a remote workspace's passphrase).
    if let Some(prompt) = askpass::prompt(&args) {
        askpass::answer(&prompt);
    }
    let from_link = studio_args::desktop::link_in(&args).is_some();
    let (workspace, db, memory, session, elsewhere, ssh_config) = match parse_args(args) {
        Ok(Invocation::Open {
            workspace,
            db,
            memory,
            session,
            remote,
            ssh_config,
            cloud,
        }) => (
            workspace,
            db,
            memory,
            session,
            elsewhere_given(remote, cloud),
            ssh_config,
        ),
        Ok(Invocation::Help) => {
            print!("{}", studio_args::desktop::help());
            return;
        }
        Ok(Invocation::Version) => {
            println!("zibby-studio {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Err(message) => {
            eprintln!("zibby-studio: {message}\n{}", studio_args::desktop::USAGE);
            std::process::exit(2);
        }
    };
    // Before any thread starts.
    let software_rendering = desktop::choose_rendering();
    logs::init();
    if !software_rendering.is_empty() {
        tracing::info!(variables = ?software_rendering, "no GPU render node: the window paints on the CPU");
    }
    if let Err(message) = check_display() {
        eprintln!("zibby-studio: {message}");
        std::process::exit(1);
    }

    let store_location = StoreLocation::resolve(db, memory);
    let instance_id = store_location.as_ref().ok().map(single_instance_id);
    // A link's folder opens once the window can ask about it (a link is written by anyone).
    let (workspace, link_workspace) = if from_link {
        (None, workspace)
    } else {
        (workspace, None)
    };
    let (studio, run_events) = Studio::open(workspace.as_deref(), store_location);
    // A remote workspace opens once the window is up (connecting takes a while).
    let needs_workspace = elsewhere.is_none()
        && studio
            .workspace()
            .is_err_and(|error| error.code() == studio_core::ErrorCode::NoWorkspace);
    if !software_rendering.is_empty() {
        studio.hide_variables_from_agents(&software_rendering);
    }

    let mut builder = tauri::Builder::default();
    // First: a second launch on the same store hands over its arguments and exits.
    if let Some(instance_id) = instance_id {
        builder = builder.plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(instance_id)
                .callback(on_second_launch)
                .build(),
        );
    }
    let app = builder
        // The `zibby-studio://` scheme: its links come as the command line, first or second launch.
        .plugin(tauri_plugin_deep_link::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .manage(studio)
        .manage(remote::SshSettings::new(ssh_config))
        // A remote or cloud workspace opens in the background: its session is shown once it is open.
        .manage(share::RequestedSession::new(
            session.clone().filter(|_| elsewhere.is_none()),
        ))
        .setup(move |app| {
            let studio = app.state::<Studio>();
            // The window's first listing is read while the web view starts.
            let handle = app.handle().clone();
            std::thread::Builder::new().name("read-ahead".into()).spawn(move || {
                let told = events::sessions_read(handle.clone());
                handle.state::<Studio>().read_sessions_ahead(told)
            })?;
            // Sessions from anywhere (a terminal, CI, a download) show up as they happen. Watching
            // starts off the main thread, once the window has its first listing (or after
            // FIRST_LISTING_WAIT): with 10,000 sessions it takes a second or more of CPU, which
            // would slow that listing down. It starts from the folder index that listing left:
            // what changed meanwhile, and only that, it sends to the window as it starts.
            let handle = app.handle().clone();
            std::thread::Builder::new().name("watch-start".into()).spawn(move || {
                let studio = handle.state::<Studio>();
                studio.wait_first_listing(FIRST_LISTING_WAIT);
                let started = std::time::Instant::now();
                match studio.watch(events::sessions_changed(handle.clone())) {
                    Ok(()) => tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, "watching"),
                    Err(error) => tracing::warn!(code = error.code().as_str(), "the workspace is not watched: {error}"),
                }
            })?;
            if let Some((run_events, output_events)) = run_events {
                let handle = app.handle().clone();
                std::thread::Builder::new()
                    .name("run-events".into())
                    .spawn(move || events::forward(run_events, handle))?;
                if let Err(error) = studio.follow_output(output_events, events::run_output(app.handle().clone())) {
                    tracing::warn!(code = error.code().as_str(), "output is not followed live: {error}");
                }
            }
            if let Ok(workspace) = studio.workspace() {
                window::show_workspace_in_title(app.handle(), &workspace);
            }
            window::install_menu(app.handle())?;
            if let Some(target) = elsewhere {
                desktop::open_target(app.handle(), target, session.clone());
            }
            app.on_menu_event(|app, event| desktop::on_menu(app, event.id().as_ref()));
            if let Some(path) = link_workspace {
                let handle = app.handle().clone();
                std::thread::Builder::new()
                    .name("link-workspace".into())
                    .spawn(move || match desktop::switch_workspace_asking(&handle, &path) {
                        Ok(Some(_)) => {}
                        Ok(None) if needs_workspace => desktop::pick_and_switch(&handle),
                        Ok(None) => {}
                        Err(error) => tracing::warn!(code = error.code.as_str(), "{}", error.message),
                    })?;
            } else if needs_workspace {
                desktop::pick_and_switch(app.handle());
            }
            Ok(())
        })
        .on_window_event(|window, event| match event {
            tauri::WindowEvent::CloseRequested { api, .. } if !desktop::may_quit(window.app_handle()) => {
                api.prevent_close();
            }
            // A bundle, a session folder or a log dropped onto the window is imported.
            tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) => {
                share::import_dropped(window.app_handle(), paths.clone());
            }
            tauri::WindowEvent::Focused(true) => cloud::on_focus(window.app_handle()),
            _ => {}
        })
        .invoke_handler(invoke_handler())
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(error) => {
            eprintln!("zibby-studio: cannot start the window: {error}");
            std::process::exit(1);
        }
    };
    exit_on_signals(app.handle().clone());
    app.run(|app, event| {
        // Tauri exits the process without dropping managed state: stop (or leave) the live runs.
        if let tauri::RunEvent::Exit = event {
            // Stopping runs may take their grace: a launch meanwhile starts a new window rather
            // than handing over to this one.
            tauri_plugin_single_instance::destroy(app);
            app.state::<Studio>().shut_down();
        }
    });
}

/// The workspace on another machine or the bucket prefix the command line gave, if it gave one
/// (`studio_args::desktop::parse_args` told them from a folder).
fn elsewhere_given(remote: Option<String>, cloud: Option<String>) -> Option<WorkspaceTarget> {
    remote
        .map(WorkspaceTarget::Remote)
        .or(cloud.map(WorkspaceTarget::Cloud))
}

/// One window per store: the D-Bus name a second launch on the same store finds the first by.
fn single_instance_id(location: &StoreLocation) -> String {
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let hash = location
        .describe()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("dev.zibby.studio.s{hash:016x}")
}

/// A second launch: the running window comes to the front, on the workspace it was given. The
/// second process waits for this call to return, and the window's work waits for the main thread:
/// it is done on a thread of its own, so that neither waits for the other.
fn on_second_launch(app: &tauri::AppHandle, args: Vec<String>, cwd: String) {
    tracing::info!(args = ?studio_args::desktop::loggable(&args), "launched again: focusing the window");
    let app = app.clone();
    let spawned = std::thread::Builder::new()
        .name("second-launch".into())
        .spawn(move || follow_second_launch(&app, args, cwd));
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot follow the second launch");
    }
}

fn follow_second_launch(app: &tauri::AppHandle, args: Vec<String>, cwd: String) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    let args: Vec<OsString> = args.into_iter().skip(1).map(OsString::from).collect();
    let from_link = studio_args::desktop::link_in(&args).is_some();
    let Ok(Invocation::Open {
        workspace,
        session,
        remote,
        cloud,
        ..
    }) = parse_args(args)
    else {
        return;
    };
    // `zibby-studio ssh://host/path` or `s3://bucket/prefix` again: the running window opens it.
    if let Some(target) = elsewhere_given(remote, cloud) {
        desktop::open_target(app, target, session);
        return;
    }
    if let Some(workspace) = workspace {
        let path = match WorkspaceTarget::parse(&workspace) {
            WorkspaceTarget::Local(folder) => PathBuf::from(cwd).join(folder),
            // A host's or a bucket's root, as a link names them.
            WorkspaceTarget::Remote(_) | WorkspaceTarget::Cloud(_) => workspace,
        };
        // A link is written by anyone: a folder the studio has not opened is asked about first.
        let switched = if from_link {
            desktop::switch_workspace_asking(app, &path).map(|info| info.is_some())
        } else {
            desktop::switch_workspace(app, &path).map(|_| true)
        };
        match switched {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => {
                tracing::warn!(code = error.code.as_str(), "{}", error.message);
                return;
            }
        }
    }
    // `zstudio open`: the window shows the session it asks for.
    if let Some(session) = session {
        share::show_session(app, &session);
    }
}

/// SIGTERM (a logout, `kill`), SIGINT (Ctrl-C in the terminal that started it) and SIGHUP (that
/// terminal closing) exit the app the way closing its window does, so its live runs are stopped
/// rather than left without a supervisor. A second signal is not waited for: it ends the process.
fn exit_on_signals(app: tauri::AppHandle) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(signals) => signals,
        Err(error) => {
            tracing::warn!(%error, "cannot handle SIGTERM and SIGINT: they will end the app without stopping its runs");
            return;
        }
    };
    let spawned = std::thread::Builder::new().name("signals".into()).spawn(move || {
        let mut received = signals.forever();
        if let Some(signal) = received.next() {
            tracing::info!(signal, "exiting on a signal: stopping the live runs first");
            app.exit(0);
        }
        if let Some(signal) = received.next() {
            tracing::warn!(signal, "a second signal: exiting now");
            std::process::exit(128 + signal);
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the signal thread");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, String> {
        parse_args(args.iter().map(OsString::from))
    }

    fn open(path: &str) -> Result<Invocation, String> {
        Ok(Invocation::Open {
            workspace: Some(PathBuf::from(path)),
            db: None,
            memory: false,
            session: None,
            remote: None,
            ssh_config: None,
            cloud: None,
        })
    }

    #[test]
    fn without_a_workspace_the_last_one_opens() {
        assert_eq!(
            parse(&[]),
            Ok(Invocation::Open {
                workspace: None,
                db: None,
                memory: false,
                session: None,
                remote: None,
                ssh_config: None,
                cloud: None,
            })
        );
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
    fn the_store_is_a_file_or_in_memory() {
        let with_db = |db: &str, workspace: &str| {
            Ok(Invocation::Open {
                workspace: Some(PathBuf::from(workspace)),
                db: Some(PathBuf::from(db)),
                memory: false,
                session: None,
                remote: None,
                ssh_config: None,
                cloud: None,
            })
        };
        assert_eq!(
            parse(&["--db", "/tmp/s.sqlite", "proj"]),
            with_db("/tmp/s.sqlite", "proj")
        );
        assert_eq!(parse(&["proj", "--db=/tmp/s.sqlite"]), with_db("/tmp/s.sqlite", "proj"));
        assert_eq!(
            parse(&["--memory"]),
            Ok(Invocation::Open {
                workspace: None,
                db: None,
                memory: true,
                session: None,
                remote: None,
                ssh_config: None,
                cloud: None,
            })
        );
        assert!(parse(&["--db"]).unwrap_err().contains("`--db` needs a PATH"));
        assert!(parse(&["--db", "a", "--memory"]).unwrap_err().contains("not both"));
    }

    #[test]
    fn a_session_to_open_is_named() {
        assert_eq!(
            parse(&["--session", "1796000000000_abcd", "proj"]),
            Ok(Invocation::Open {
                workspace: Some(PathBuf::from("proj")),
                db: None,
                memory: false,
                session: Some("1796000000000_abcd".to_owned()),
                remote: None,
                ssh_config: None,
                cloud: None,
            })
        );
    }

    #[test]
    fn a_double_dash_ends_the_options() {
        assert_eq!(parse(&["--", "--help"]), open("--help"));
        assert_eq!(parse(&["-"]), open("-"));
    }
}
