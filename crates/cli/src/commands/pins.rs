//! `zstudio pin`, `unpin` and `pins`.

use std::io::Write;
use std::time::SystemTime;

use studio_core::SessionId;

use crate::cli::{Format, Globals, SessionArg};
use crate::print;

pub fn pin(args: &SessionArg, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store, id) = (
        globals.open_workspace()?,
        globals.open_store()?,
        SessionId::parse(&args.session_id)?,
    );
    crate::open::require_session(&store, &workspace, &id)?;
    store.pin(&workspace, &id, SystemTime::now())?;
    pinned(out, globals.format(), &id, true)
}

pub fn unpin(args: &SessionArg, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store, id) = (
        globals.open_workspace()?,
        globals.open_store()?,
        SessionId::parse(&args.session_id)?,
    );
    store.unpin(&workspace, &id)?;
    pinned(out, globals.format(), &id, false)
}

/// `pinned <id>`, or with `--json` `{"session_id", "pinned"}`.
fn pinned(out: &mut impl Write, format: Format, id: &SessionId, pinned: bool) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json(out, &serde_json::json!({ "session_id": id, "pinned": pinned })),
        Format::Human => {
            writeln!(out, "{}pinned {id}", if pinned { "" } else { "un" })?;
            Ok(())
        }
    }
}

pub fn list(globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let pins = globals.open_store()?.pins(&globals.open_workspace()?)?;
    print::emit(out, globals.format(), &pins, |out, pins| print::pins(out, pins, now))
}
