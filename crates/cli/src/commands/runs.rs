//! `zstudio runs`: the runs the studio recorded.

use std::io::Write;
use std::time::SystemTime;

use studio_core::SessionId;

use crate::cli::{Globals, RunsArgs};
use crate::print;

pub fn list(args: &RunsArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let session = args.session.as_deref().map(SessionId::parse).transpose()?;
    let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
    if let Some(id) = &session {
        crate::open::require_session(&store, &workspace, id)?;
    }
    let mut runs = store.runs(&workspace, session.as_ref())?;
    store.with_runs_usage(&workspace, &mut runs, now)?;
    print::emit(out, globals.format(), &runs, |out, runs| print::runs(out, runs, now))
}
