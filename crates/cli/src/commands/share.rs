//! `zstudio export` and `zstudio import`: a session as one bundle to share, and a bundle, a
//! session folder or a captured log brought into a workspace (`studio_core::app::share`).

use std::io::Write;
use std::time::SystemTime;

use studio_core::app::share::{self, ImportOptions};
use studio_core::SessionId;

use crate::cli::{ExportArgs, Globals, ImportArgs};
use crate::print;

pub fn export(args: &ExportArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let id = SessionId::parse(&args.session_id)?;
    let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
    let path = match &args.output {
        Some(path) => path.clone(),
        None => std::env::current_dir()?.join(format!("{id}.zip")),
    };
    let exported = share::export_session(&store, &workspace, &id, &path, args.include_config, SystemTime::now())?;
    print::emit(out, globals.format(), &exported, |out, exported| {
        print::exported(out, exported)
    })
}

pub fn import(args: &ImportArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
    let options = ImportOptions {
        as_new: args.as_new,
        stderr: args.stderr.clone(),
        exit_code: args.exit_code,
        ..ImportOptions::default()
    };
    let imported = share::import(&store, &workspace, &args.source, &options, SystemTime::now())?;
    print::emit(out, globals.format(), &imported, |out, imported| {
        print::imported(out, imported)
    })
}
