//! `zstudio logs`: a session's log, as the store keeps it.

use std::io::Write;

use studio_core::SessionId;

use crate::cli::{Globals, SessionArg};
use crate::print;

pub fn logs(args: &SessionArg, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let id = SessionId::parse(&args.session_id)?;
    let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
    crate::open::require_session(&store, &workspace, &id)?;
    let logs = store.logs(&workspace, &id)?;
    print::emit(out, globals.format(), &logs, |out, logs| print::logs(out, logs))
}
