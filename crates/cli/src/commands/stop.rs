//! `zstudio stop`: stops a run another studio process follows (or a detached one) and waits for
//! it to end, saying what it did on the way (the words are `print`'s).

use std::io::Write;
use std::time::Duration;

use studio_core::store::{RunRecord, Store};
use studio_core::SessionId;

use crate::cli::{Globals, StopArgs};
use crate::print;

pub fn stop(args: &StopArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let store = globals.open_store()?;
    let run = find_run(&store, globals, &args.id)?;
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

/// A run by its id, or the live (else latest) run of a session.
fn find_run(store: &Store, globals: &Globals, id: &str) -> anyhow::Result<RunRecord> {
    if uuid_like(id) {
        return Ok(store.run(id)?);
    }
    let session = SessionId::parse(id)?;
    let runs = store.runs(&globals.open_workspace()?, Some(&session))?;
    runs.iter()
        .find(|r| r.status == studio_core::Status::Running)
        .or(runs.first())
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no run of session `{id}` in the store"))
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}
