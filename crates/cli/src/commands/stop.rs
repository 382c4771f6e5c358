//! `zstudio stop`: stops a run another studio process follows (or a detached one) and waits for
//! it to end, saying what it did on the way (the words are `print`'s). A run the studio did not
//! start (from a terminal, CI) is asked to stop before its next node, by its stop files alone.

use std::io::Write;
use std::time::{Duration, SystemTime};

use studio_core::store::{RunRecord, Store};
use studio_core::{SessionId, Status, Workspace};

use crate::cli::{Globals, StopArgs};
use crate::print;

pub fn stop(args: &StopArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let store = globals.open_store()?;
    let here = Here {
        store: &store,
        globals,
        workspace: std::cell::OnceCell::new(),
    };
    let run = match aim(&args.id, &here)? {
        Target::Recorded(run) => run,
        Target::Outside(session) => return stop_outside(args, globals, here.workspace()?, &session, out),
    };
    let session_path = studio_core::app::session_path_of(&run)?;
    let ended = studio_core::runner::stop_elsewhere_and_wait(
        &store,
        &run.id,
        &session_path,
        args.force,
        Duration::from_secs(args.grace),
        |progress| eprintln!("{}", print::stop_progress_words(progress)),
    )?;
    print::emit(out, globals.format(), &ended, print::stopped)
}

/// A run the studio did not start: a graceful stop only, and no waiting for a process it does
/// not know.
fn stop_outside(
    args: &StopArgs,
    globals: &Globals,
    workspace: &Workspace,
    session: &SessionId,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    refuse_forcing_outside(args, session)?;
    let asked = studio_core::runner::stop_outside(workspace, session, SystemTime::now())?;
    print::emit(out, globals.format(), &asked, print::outside_stop)
}

/// `--force` of a run the studio did not start: refused, saying what to do instead.
pub(crate) fn refuse_forcing_outside(args: &StopArgs, session: &SessionId) -> anyhow::Result<()> {
    if args.force {
        anyhow::bail!(
            "the run of session `{session}` was not started by the studio: it knows none of its processes and \
             cannot force it. `zstudio stop {session}` without --force asks it to stop before its next node; \
             to end it at once, interrupt it where it was started (Ctrl-C in its terminal)"
        );
    }
    Ok(())
}

/// What `zstudio stop ID` is aimed at.
pub(crate) enum Target {
    /// A run the store recorded.
    Recorded(Box<RunRecord>),
    /// No run of the session in the store is going, but its folder says one is: a run the
    /// studio did not start.
    Outside(SessionId),
}

/// Where [`aim`] reads the runs and the session folders: this machine's store and workspace, or
/// a remote workspace's server (`remote::stop`), so `stop` means one thing wherever it runs.
pub(crate) trait Runs {
    /// The run `id` (a run id).
    fn run(&self, id: &str) -> anyhow::Result<RunRecord>;
    /// The runs of `session`, newest first.
    fn runs_of(&self, session: &SessionId) -> anyhow::Result<Vec<RunRecord>>;
    /// The status the session's folder says (`None`: it has no summary); an error when there is
    /// no such session.
    fn folder_status(&self, session: &SessionId) -> anyhow::Result<Option<Status>>;
}

struct Here<'a> {
    store: &'a Store,
    globals: &'a Globals,
    /// Opened once, when a session id is looked up (a run id needs no workspace).
    workspace: std::cell::OnceCell<Workspace>,
}

impl Here<'_> {
    fn workspace(&self) -> anyhow::Result<&Workspace> {
        if self.workspace.get().is_none() {
            let _ = self.workspace.set(self.globals.open_workspace()?);
        }
        Ok(self.workspace.get().expect("opened above"))
    }
}

impl Runs for Here<'_> {
    fn run(&self, id: &str) -> anyhow::Result<RunRecord> {
        Ok(self.store.run(id)?)
    }

    fn runs_of(&self, session: &SessionId) -> anyhow::Result<Vec<RunRecord>> {
        Ok(self.store.runs(self.workspace()?, Some(session))?)
    }

    fn folder_status(&self, session: &SessionId) -> anyhow::Result<Option<Status>> {
        let path = self.workspace()?.session_folder(session)?;
        Ok(studio_core::session::read_summary(&path, session, SystemTime::now()).map(|s| s.status))
    }
}

/// A run by its id, or the live (else latest) run of a session; a session whose folder says a
/// run is going that the store does not know is a run the studio did not start.
pub(crate) fn aim(id: &str, runs: &dyn Runs) -> anyhow::Result<Target> {
    if uuid_like(id) {
        return Ok(Target::Recorded(Box::new(runs.run(id)?)));
    }
    let session = SessionId::parse(id)?;
    let recorded = runs.runs_of(&session)?;
    if let Some(live) = recorded.iter().find(|r| r.status == Status::Running) {
        return Ok(Target::Recorded(Box::new(live.clone())));
    }
    let folder = runs.folder_status(&session);
    let going = folder.as_ref().is_ok_and(|status| *status == Some(Status::Running));
    match (recorded.into_iter().next(), folder) {
        (_, _) if going => Ok(Target::Outside(session)),
        (Some(last), _) => Ok(Target::Recorded(Box::new(last))),
        (None, Ok(Some(ended))) => Err(studio_core::Error::SessionNotLive {
            id: id.to_owned(),
            status: ended.to_string(),
        }
        .into()),
        (None, Ok(None)) => Err(anyhow::anyhow!("no run of session `{id}` in the store")),
        (None, Err(error)) => Err(error),
    }
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}
