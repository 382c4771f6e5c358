//! `--remote HOST:PATH`: a command on a workspace of another machine. The host is reached with
//! the system's `ssh` (`studio_core::remote::ssh`: one ControlMaster, the same `zstudio` build put
//! on the host when missing), `zstudio serve --stdio --workspace PATH` is started there through
//! it (`studio_core::remote::link`: connected again when the link drops), and the command calls
//! the server, printing what it gets with the same printers as for a local workspace. `watch`
//! and `run` are in `remote_follow`; `tag`, `untag`, `note` and `view` are the local commands
//! themselves (`commands::tags`, written over the server's methods), given the link.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde_json::json;
use studio_core::remote::link::{Link, LinkOptions};
use studio_core::remote::methods::Methods;
use studio_core::remote::ssh::{ConnectOptions, RemoteTarget};
use studio_core::SessionId;

use crate::cli::{Globals, StudioCommand};

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

    fn call<T: DeserializeOwned + Send + 'static>(&self, method: &str, params: serde_json::Value) -> anyhow::Result<T> {
        Ok(self.link.call(method, &params)?)
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

    /// The link and the target, for `watch` and `run`.
    fn reached(&self) -> crate::remote_follow::Reached<'_> {
        crate::remote_follow::Reached {
            link: &self.link,
            target: &self.target,
        }
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

/// A host's sessions' traces, read by its studio server (`otlp_traces`).
impl crate::commands::otlp::TraceSource for Remote {
    fn traces(
        &self,
        id: &SessionId,
        options: studio_core::share::otlp::TraceOptions,
    ) -> anyhow::Result<studio_core::share::otlp::TracesData> {
        let params = json!({ "session_id": id, "include_output": options.include_output });
        self.call(studio_core::remote::protocol::OTLP_TRACES, params)
    }

    fn updated_since(&self, from: studio_core::session::Timestamp) -> anyhow::Result<Vec<SessionId>> {
        let listing = self.link.sessions_list()?;
        Ok(listing
            .sessions
            .into_iter()
            .filter(|row| row.summary.updated_at >= from)
            .map(|row| row.summary.id)
            .collect())
    }
}

/// How long `watch` and `run` try to connect again by default (`--reconnect-for`).
const RECONNECT_FOR: u64 = 300;
/// The variable that, set to `0`, keeps no server on the host between commands (the connection
/// is kept all the same).
const KEEP_SERVER_ENV: &str = "ZIBBY_STUDIO_KEEP_SERVER";
/// How long the ssh connection is kept after a command by default (`--keep-connection`).
const KEEP_CONNECTION: u64 = 60;

/// Runs `command` on the workspace of `--remote`, reached through `remote` (one of
/// `cli::REMOTE_COMMANDS` the commands do not run over a `Place` themselves yet).
pub fn run(
    command: &StudioCommand,
    remote: &Remote,
    globals: &Globals,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let done = match command {
        StudioCommand::Watch => crate::remote_follow::watch(&remote.reached(), globals, out),
        StudioCommand::Run(args) => return crate::remote_follow::run(&remote.reached(), args, globals, out),
        _ => unreachable!("Cli::check refuses --remote for the other commands"),
    };
    done.map(|()| ExitCode::SUCCESS)
}
