//! `zstudio stop`: stops a run another studio process follows (or a detached one) and waits for
//! it to end, saying what it did on the way (the words are `print`'s). A run the studio did not
//! start (from a terminal, CI) is asked to stop before its next node, by its stop files alone.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use studio_core::remote::methods::Methods;
use studio_core::stop::{StopProgress, Stopping};
use studio_core::store::{RunRecord, Store};
use studio_core::{SessionId, Status, Workspace};

use crate::cli::{Globals, StopArgs};
use crate::place::Place;
use crate::print;
use crate::remote::Remote;

/// `zstudio stop ID`: a run id or a session id, here or on the host of `--remote` (one [`aim`]
/// for both); waits for the run to end and prints its record. Here the run is signalled through
/// the store (the process that follows it, or its keeper); on a host its server is asked, and
/// asked again (forced there) once `--grace` is over, the run stopping there whatever becomes of
/// this connection. A run the studio did not start: a graceful stop only, and no waiting for a
/// process it does not know.
pub fn stop(args: &StopArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    // Here: the store opened, the workspace once a session id is looked up (a run id needs none).
    let here = match place {
        Place::Here(_) => Some(RunsHere {
            store: globals.open_store()?,
            globals,
            workspace: std::cell::OnceCell::new(),
        }),
        Place::Host(_) => None,
    };
    let runs: &dyn Runs = match (place, &here) {
        (Place::Host(remote), _) => remote,
        (Place::Here(_), here) => here.as_ref().expect("opened above"),
    };
    let run = match aim(&args.id, runs)? {
        Target::Recorded(run) => run,
        Target::Outside(session) => {
            refuse_forcing_outside(args, &session)?;
            let asked = match &here {
                Some(here) => studio_core::runner::stop_outside(here.workspace()?, &session, SystemTime::now())?,
                None => place.methods()?.session_stop_outside(session.to_string())?,
            };
            return print::emit(out, globals.format(), &asked, print::outside_stop);
        }
    };
    let ended = match (place, &here) {
        (Place::Host(remote), _) => stop_on_host_and_wait(remote, &run, args)?,
        (Place::Here(_), here) => {
            let session_path = studio_core::app::session_path_of(&run)?;
            studio_core::runner::stop_elsewhere_and_wait(
                &here.as_ref().expect("opened above").store,
                &run.id,
                &session_path,
                args.force,
                Duration::from_secs(args.grace),
                |progress| eprintln!("{}", print::stop_progress_words(progress)),
            )?
        }
    };
    print::emit(out, globals.format(), &ended, print::stopped)
}

/// Asks the host's server to stop `run` (forced there once `--grace` is over) and reads its
/// runs until it has ended, saying on stderr what was asked.
fn stop_on_host_and_wait(remote: &Remote, run: &RunRecord, args: &StopArgs) -> anyhow::Result<RunRecord> {
    let ask = |force: bool| -> anyhow::Result<Stopping> { Ok(remote.link().run_stop(run.id.clone(), force)?) };
    let say = |how| {
        eprintln!(
            "{} (on {})",
            print::stop_progress_words(StopProgress::Asked(how)),
            remote.target
        )
    };
    let how = ask(args.force)?;
    say(how);
    let session = SessionId::parse(&run.session_id)?;
    let grace_over = Instant::now() + Duration::from_secs(args.grace);
    let mut forced = how == Stopping::Forced;
    let mut give_up = None;
    loop {
        let now = remote
            .runs_of(&session)?
            .into_iter()
            .find(|r| r.id == run.id)
            .ok_or_else(|| studio_core::Error::RunNotFound { id: run.id.clone() })?;
        if now.status != Status::Running || give_up.is_some_and(|at| Instant::now() >= at) {
            return Ok(now);
        }
        if !forced && Instant::now() >= grace_over {
            forced = ask(true)? == Stopping::Forced;
            say(Stopping::Forced);
        }
        if forced && give_up.is_none() {
            // SIGKILL follows SIGTERM 5 s after on the host; its end is recorded then.
            give_up = Some(Instant::now() + Duration::from_secs(15));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `--force` of a run the studio did not start: refused, saying what to do instead.
fn refuse_forcing_outside(args: &StopArgs, session: &SessionId) -> anyhow::Result<()> {
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
enum Target {
    /// A run the store recorded.
    Recorded(Box<RunRecord>),
    /// No run of the session in the store is going, but its folder says one is: a run the
    /// studio did not start.
    Outside(SessionId),
}

/// Where [`aim`] reads the runs and the session folders: this machine's store and workspace, or
/// a remote workspace's server, so `stop` means one thing wherever it runs.
trait Runs {
    /// The run `id` (a run id).
    fn run(&self, id: &str) -> anyhow::Result<RunRecord>;
    /// The runs of `session`, newest first.
    fn runs_of(&self, session: &SessionId) -> anyhow::Result<Vec<RunRecord>>;
    /// The status the session's folder says (`None`: it has no summary); an error when there is
    /// no such session.
    fn folder_status(&self, session: &SessionId) -> anyhow::Result<Option<Status>>;
}

/// This machine's runs and session folders: its store, and the workspace of the global options.
struct RunsHere<'a> {
    store: Store,
    globals: &'a Globals,
    /// Opened once, when a session id is looked up (a run id needs no workspace).
    workspace: std::cell::OnceCell<Workspace>,
}

impl RunsHere<'_> {
    fn workspace(&self) -> anyhow::Result<&Workspace> {
        if self.workspace.get().is_none() {
            let _ = self.workspace.set(self.globals.open_workspace()?);
        }
        Ok(self.workspace.get().expect("opened above"))
    }
}

impl Runs for RunsHere<'_> {
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
fn aim(id: &str, runs: &dyn Runs) -> anyhow::Result<Target> {
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

/// A host's runs and sessions, as its server answers them.
impl Runs for Remote {
    fn run(&self, id: &str) -> anyhow::Result<RunRecord> {
        let runs = self.link().runs_list(None)?;
        runs.into_iter()
            .find(|r| r.id == id)
            .ok_or_else(|| studio_core::Error::RunNotFound { id: id.to_owned() }.into())
    }

    fn runs_of(&self, session: &SessionId) -> anyhow::Result<Vec<RunRecord>> {
        Ok(self.link().runs_list(Some(session.to_string()))?)
    }

    fn folder_status(&self, session: &SessionId) -> anyhow::Result<Option<Status>> {
        let found = self.link().session_get(session.to_string())?;
        Ok(Some(found.status))
    }
}
