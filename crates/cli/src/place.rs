//! Where a command runs: this machine's workspace and store (those of the global options), or a
//! host's workspace through its studio server (`--remote HOST:PATH`, [`Remote`]). A command that
//! takes `--remote` is one function over a [`Place`]: what it asks goes through the app
//! service's methods ([`Place::methods`]: the app service here, or the host's server answering
//! the same calls), a file it moves through [`Place::export_session`] and [`Place::import`]
//! (over the host's stream there). Where the two truly differ (a stop's signals here, the host's
//! server asked and polled there) the command matches on the place itself.

use std::cell::OnceCell;
use std::path::Path;
use std::time::SystemTime;

use anyhow::Context;
use studio_core::app::Studio;
use studio_core::remote::import::{import_file, RemoteImport};
use studio_core::remote::methods::Methods;
use studio_core::share::{self, Exported, ImportOptions, ImportedSession};
use studio_core::SessionId;

use crate::cli::{Globals, StudioCommand};
use crate::remote::Remote;

/// Where a command runs.
pub enum Place<'g> {
    /// This machine: the workspace and store of the global options, opened as the command needs
    /// them.
    Here(Here<'g>),
    /// A host's workspace, through its studio server.
    Host(Remote),
}

/// This machine's workspace and store, as the global options name them.
pub struct Here<'g> {
    globals: &'g Globals,
    /// The app service over them, opened once a command asks for its methods.
    studio: OnceCell<Box<Studio>>,
}

impl<'g> Place<'g> {
    /// Where `command` runs: the workspace of `--remote` (connected, its server started there),
    /// else this machine's (nothing opened yet).
    pub fn of(command: &StudioCommand, globals: &'g Globals) -> anyhow::Result<Place<'g>> {
        let Some(target) = globals.remote.as_deref() else {
            return Ok(Place::here(globals));
        };
        // `Cli::check` refused `--remote` for the commands that do not take a place.
        debug_assert!(crate::cli::REMOTE_COMMANDS.contains(&command.name()));
        // A command ended by a signal never drops its connection: its ssh master (a process group
        // of its own) would outlive it, an idle login on the host. `run` follows with Ctrl-C as
        // its own (the run goes on on the host; the master is closed as the command returns).
        let takes_ctrl_c = matches!(command, StudioCommand::Run(_));
        studio_core::remote::ssh::end_masters_on_signals(!takes_ctrl_c).context("cannot watch for signals")?;
        // `watch` and `run` follow their runs' events: a server of their own, as before.
        let follows = matches!(command, StudioCommand::Run(_) | StudioCommand::Watch);
        Ok(Place::Host(Remote::open(target, globals, !follows)?))
    }

    /// This machine's workspace and store, as `globals` name them (nothing opened yet).
    pub fn here(globals: &'g Globals) -> Place<'g> {
        Place::Here(Here {
            globals,
            studio: OnceCell::new(),
        })
    }

    /// The app service's methods where the command runs: the app service here
    /// (`Studio::for_command`: the workspace, then the store, opened on the first call), or the
    /// host's server.
    pub fn methods(&self) -> anyhow::Result<&dyn Methods> {
        match self {
            Place::Here(here) => {
                if here.studio.get().is_none() {
                    let _ = here.studio.set(Box::new(here.globals.open_studio()?));
                }
                Ok(here.studio.get().expect("opened above").as_ref())
            }
            Place::Host(remote) => Ok(remote.link()),
        }
    }

    /// Session `id` written as a bundle at `path` (here; a host's written there and streamed
    /// back to `path`).
    pub fn export_session(&self, id: &SessionId, include_config: bool, path: &Path) -> anyhow::Result<Exported> {
        match self {
            Place::Here(here) => {
                let (store, workspace) = (here.globals.open_store()?, here.globals.open_workspace()?);
                Ok(share::export_session(
                    &store,
                    &workspace,
                    id,
                    path,
                    include_config,
                    SystemTime::now(),
                )?)
            }
            Place::Host(remote) => Ok(remote.export_session(id, include_config, path)?),
        }
    }

    /// A bundle, a session folder or a captured log here imported into the workspace and store
    /// (a host's: uploaded and imported there; a session folder is refused, a bundle of it is
    /// uploaded).
    pub fn import(&self, source: &Path, request: &RemoteImport) -> anyhow::Result<ImportedSession> {
        match self {
            Place::Here(here) => {
                let (store, workspace) = (here.globals.open_store()?, here.globals.open_workspace()?);
                let mut options = ImportOptions {
                    as_new: request.as_new,
                    stderr: request.stderr.clone(),
                    exit_code: request.exit_code,
                    ..ImportOptions::default()
                };
                if let Some(max_bytes) = request.max_bytes {
                    options.limits.max_bytes = max_bytes;
                }
                Ok(share::import(&store, &workspace, source, &options, SystemTime::now())?)
            }
            Place::Host(remote) => Ok(remote
                .link()
                .with_client(|client| import_file(client, source, request))?),
        }
    }
}
