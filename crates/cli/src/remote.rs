//! `--remote HOST:PATH`: a workspace of another machine, reached. The host is reached with the
//! system's `ssh` (`studio_core::remote::ssh`: one ControlMaster, the same `zstudio` build put on
//! the host when missing), and `zstudio serve --stdio --workspace PATH` is started there through
//! it (`studio_core::remote::link`: connected again when the link drops). The commands are the
//! local ones, run over a `Place::Host` (the `place` module): they call the server through the app
//! service's methods and print what they get with the same printers as for a local workspace.

use std::time::Duration;

use anyhow::Context;
use studio_core::remote::link::{Link, LinkOptions};
use studio_core::remote::ssh::{ConnectOptions, RemoteTarget};
use studio_core::SessionId;

use crate::cli::Globals;

/// A remote workspace's server, through its link (connected again when it drops, for the
/// commands that follow: `watch`, `run`); closed when dropped (the server first, then the ssh
/// master).
pub struct Remote {
    link: Link,
    /// `--remote` as given, for the commands this one suggests.
    pub target: String,
}

impl Remote {
    /// Connects to `target` (`--remote`), makes sure the server is there, and starts it on the
    /// target's workspace; with `kept`, the workspace's kept server, kept as long as the
    /// connection (`--keep-connection`) for the next command.
    pub fn open(target: &str, globals: &Globals, kept: bool) -> anyhow::Result<Remote> {
        let parsed = RemoteTarget::parse(target)?;
        let local = std::env::current_exe().context("the running zstudio's path")?;
        let mut options = LinkOptions::new(local);
        options.connect = connect_options(globals);
        options.give_up_after = Some(Duration::from_secs(globals.reconnect_for.unwrap_or(RECONNECT_FOR)));
        // `ZIBBY_STUDIO_KEEP_SERVER=0`: the connection kept, a server started for each command.
        let server_kept = kept && std::env::var_os(KEEP_SERVER_ENV).is_none_or(|value| value != "0");
        options.kept_server = options.connect.keep_for.filter(|_| server_kept);
        Ok(Remote {
            link: Link::open(&parsed, options)?,
            target: target.to_owned(),
        })
    }

    /// The link to the host's server.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// Session `id` of the host written there as a bundle and streamed back to `path`.
    pub fn export_session(
        &self,
        id: &SessionId,
        include_config: bool,
        path: &std::path::Path,
    ) -> Result<studio_core::share::Exported, studio_core::Error> {
        self.link
            .with_client(|client| client.export_session(id.as_str(), include_config, path))
    }
}

/// How the host of `--remote` is reached: `--ssh-config`, and the connection kept for
/// `--keep-connection` seconds after the command (60 by default; 0 closes it at once).
pub fn connect_options(globals: &Globals) -> ConnectOptions {
    ConnectOptions {
        ssh_config: globals.ssh_config.clone(),
        keep_for: Some(globals.keep_connection.unwrap_or(KEEP_CONNECTION))
            .filter(|&seconds| seconds > 0)
            .map(Duration::from_secs),
        ..ConnectOptions::default()
    }
}

/// How long `watch` and `run` try to connect again by default (`--reconnect-for`).
const RECONNECT_FOR: u64 = 300;
/// The variable that, set to `0`, keeps no server on the host between commands (the connection
/// is kept all the same).
const KEEP_SERVER_ENV: &str = "ZIBBY_STUDIO_KEEP_SERVER";
/// How long the ssh connection is kept after a command by default (`--keep-connection`).
const KEEP_CONNECTION: u64 = 60;
