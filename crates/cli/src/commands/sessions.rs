//! `zstudio sessions` and `zstudio show`: the sessions of a workspace, as the store lays what it
//! knows over the folders.

use std::io::Write;
use std::time::SystemTime;

use studio_core::SessionId;

use crate::cli::{Globals, ShowArgs};
use crate::print;

pub fn list(globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let sessions = globals.open_store()?.list_sessions(&globals.open_workspace()?, now)?;
    print::emit(out, globals.format(), &sessions, |out, sessions| {
        print::sessions(out, sessions, now)
    })
}

pub fn show(args: &ShowArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let id = SessionId::parse(&args.session_id)?;
    // What the store knows is laid over the folder, as `sessions` lays it.
    let mut session = globals
        .open_store()?
        .read_session(&globals.open_workspace()?, &id, now)?;
    if !args.with_config {
        session = session.without_config();
    }
    print::emit(out, globals.format(), &session, |out, session| {
        print::session(out, session, now)
    })
}
