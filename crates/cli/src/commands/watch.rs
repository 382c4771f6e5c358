//! `zstudio watch`: the change stream of one or more workspaces, until interrupted. It also keeps
//! the store's folder index current (so the next listing reads again only what changed while
//! nothing watched).

use std::io::Write;
use std::sync::Arc;

use studio_core::watcher::{ChangeSink, Watcher, WatcherOptions};

use crate::cli::{Format, Globals};
use crate::print;

pub fn watch(globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let workspaces = globals.open_workspaces()?;
    let several = workspaces.len() > 1;
    let (changes, received) = std::sync::mpsc::channel();
    let sink: ChangeSink = Arc::new(move |change| {
        let _ = changes.send(change);
    });
    let sink = studio_core::index::keeping_current(Arc::new(globals.open_store()?), sink);
    let _watcher = Watcher::start(workspaces, sink, WatcherOptions::default())?;
    for change in received {
        match globals.format() {
            Format::Json => print::write_json_line(out, &change)?,
            Format::Human => print::change(out, &change, several)?,
        }
        out.flush()?;
    }
    Ok(())
}
