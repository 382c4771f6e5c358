//! Remote workspaces in the window: opened from the menu's form, the command line or Open Recent
//! (`ssh://host/path`; `desktop::open_target`), through the core's `remote::window::RemoteWorkspace`; the window's
//! commands then go there (`forward`), and its news comes through `events::remote_sinks`.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use studio_core::app::elsewhere::RemoteStatus;
use studio_core::app::operations::WorkspaceInfo;
use studio_core::remote::link::LinkOptions;
use studio_core::remote::ssh::ConnectOptions;
use studio_core::remote::window::{parse_target, RemoteWorkspace};
use tauri::{AppHandle, Emitter, Manager};

use crate::{CommandError, Studio};

/// The Tauri event the menu's "Open Remote Workspace…" asks the window to show its form with.
pub const REMOTE_OPEN_REQUESTED: &str = "remote-open-requested";

/// The Tauri event a remote workspace's connecting is sent as (its payload: the target being
/// connected to, `null` once done either way).
pub const REMOTE_CONNECTING: &str = "remote-connecting";

/// Seconds between ssh's keep-alives (`ServerAliveInterval`; three unanswered mean the link is
/// down), when not ssh's default for the studio (15).
pub const KEEPALIVE_ENV: &str = "ZIBBY_STUDIO_SSH_KEEPALIVE";

/// Seconds a dropped link is retried before the workspace is marked lost; unset: for ever.
pub const RECONNECT_FOR_ENV: &str = "ZIBBY_STUDIO_RECONNECT_FOR";

/// A whole number of seconds from the environment variable `name` (a bad one is said and left
/// out).
fn seconds_of(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse::<u64>() {
        Ok(seconds) => Some(seconds),
        Err(error) => {
            tracing::warn!(%error, "{name} is not a number of seconds: {text:?}; left out");
            None
        }
    }
}

/// How the app reaches remote workspaces: the ssh config file of `--ssh-config` (or
/// `ZIBBY_STUDIO_SSH_CONFIG`), else ssh's own; and the one it is connecting to now.
#[derive(Debug, Default)]
pub struct SshSettings {
    pub ssh_config: Option<PathBuf>,
    pub connecting: Mutex<Option<String>>,
}

impl SshSettings {
    pub fn new(ssh_config: Option<PathBuf>) -> SshSettings {
        SshSettings {
            ssh_config,
            connecting: Mutex::new(None),
        }
    }

    /// The target being connected to, if one is.
    pub fn connecting(&self) -> Option<String> {
        self.connecting.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Says (to the window too) which target is being connected to, or that none is.
fn set_connecting(app: &AppHandle, target: Option<&str>) {
    *app.state::<SshSettings>()
        .connecting
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = target.map(str::to_owned);
    if let Err(error) = app.emit(REMOTE_CONNECTING, target) {
        tracing::warn!(%error, "cannot tell the window of the connection");
    }
}

/// Opens `target` (`HOST:PATH`, `ssh://HOST/PATH`) as the workspace and tells the window, as a
/// local switch does. Blocks while ssh connects: call it off the main thread.
pub fn open_remote(app: &AppHandle, target: &str) -> Result<RemoteStatus, CommandError> {
    set_connecting(app, Some(target));
    let opened = connect(app, target);
    set_connecting(app, None);
    opened
}

fn connect(app: &AppHandle, target: &str) -> Result<RemoteStatus, CommandError> {
    let target = parse_target(target)?;
    let settings = app.state::<SshSettings>();
    let server = studio_core::app::find_program("ZIBBY_STUDIO_SERVER", "zstudio").ok_or_else(|| {
        studio_core::Error::RemoteLink {
            host: target.label(),
            what: "no zstudio here to put on the host (set ZIBBY_STUDIO_SERVER, or install zstudio beside the app)"
                .to_owned(),
        }
    })?;
    let mut options = LinkOptions::new(server);
    options.connect = ConnectOptions {
        ssh_config: settings.ssh_config.clone(),
        // ssh's questions (a key's passphrase, an unknown host key) come to this app's own
        // dialog (`askpass`); without it ssh would run in batch mode.
        askpass: std::env::current_exe().ok(),
        ..ConnectOptions::default()
    };
    if let Some(seconds) = seconds_of(KEEPALIVE_ENV) {
        options.connect.alive_interval = Duration::from_secs(seconds);
    }
    // The window reconnects for ever unless told otherwise (a laptop closed for the night).
    options.give_up_after = seconds_of(RECONNECT_FOR_ENV).map(Duration::from_secs);
    let remote = RemoteWorkspace::open(&target, options, crate::events::remote_sinks(app))?;
    let studio = app.state::<Studio>();
    let status = studio.open_elsewhere(remote)?;
    let info: Result<WorkspaceInfo, CommandError> =
        crate::forward::remote_answer("workspace_get", &[("studio", &studio)])
            .unwrap_or_else(|| Err(studio_core::Error::NoWorkspace.into()));
    let info = match info {
        Ok(info) => Some(info),
        Err(error) => {
            tracing::warn!(code = error.code.as_str(), "{}", error.message);
            None
        }
    };
    let name = format!("{}:{}", status.host, folder_name(&status.path));
    crate::window::show_workspace(app, info.as_ref(), &name);
    Ok(status)
}

fn folder_name(path: &str) -> &str {
    path.trim_end_matches('/').rsplit('/').next().unwrap_or(path)
}
