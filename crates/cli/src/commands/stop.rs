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
    let run = match find_run(&store, globals, &args.id)? {
        Found::Recorded(run) => run,
        Found::Outside(workspace, session) => return stop_outside(args, globals, &workspace, &session, out),
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
    if args.force {
        anyhow::bail!(
            "the run of session `{session}` was not started by the studio: it knows none of its processes and \
             cannot force it. `zstudio stop {session}` without --force asks it to stop before its next node; \
             to end it at once, interrupt it where it was started (Ctrl-C in its terminal)"
        );
    }
    let asked = studio_core::runner::stop_outside(workspace, session, SystemTime::now())?;
    print::emit(out, globals.format(), &asked, print::outside_stop)
}

enum Found {
    /// A run the store recorded.
    Recorded(Box<RunRecord>),
    /// No run of the session in the store is going, but its folder says one is: a run the
    /// studio did not start.
    Outside(Workspace, SessionId),
}

/// A run by its id, or the live (else latest) run of a session; a session whose folder says a
/// run is going that the store does not know is a run the studio did not start.
fn find_run(store: &Store, globals: &Globals, id: &str) -> anyhow::Result<Found> {
    if uuid_like(id) {
        return Ok(Found::Recorded(Box::new(store.run(id)?)));
    }
    let session = SessionId::parse(id)?;
    let workspace = globals.open_workspace()?;
    let runs = store.runs(&workspace, Some(&session))?;
    if let Some(live) = runs.iter().find(|r| r.status == Status::Running) {
        return Ok(Found::Recorded(Box::new(live.clone())));
    }
    let folder = workspace.session_folder(&session);
    let summary = folder
        .as_ref()
        .ok()
        .and_then(|path| studio_core::session::read_summary(path, &session, SystemTime::now()));
    let going = summary.as_ref().is_some_and(|s| s.status == Status::Running);
    match (runs.into_iter().next(), summary) {
        (_, Some(_)) if going => Ok(Found::Outside(workspace, session)),
        (Some(last), _) => Ok(Found::Recorded(Box::new(last))),
        (None, Some(ended)) => Err(studio_core::Error::SessionNotLive {
            id: id.to_owned(),
            status: ended.status.to_string(),
        }
        .into()),
        (None, None) => Err(folder
            .err()
            .map_or_else(|| anyhow::anyhow!("no run of session `{id}` in the store"), Into::into)),
    }
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}
