//! `zstudio watch`: the change stream of one or more workspaces, until interrupted. It also keeps
//! the store's folder index current (so the next listing reads again only what changed while
//! nothing watched).

use std::io::Write;
use std::sync::Arc;

use studio_core::watcher::{Change, ChangeSink, Watcher, WatcherOptions};

use crate::cli::{Format, Globals};
use crate::print;

pub fn watch(globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let workspaces = globals.open_workspaces()?;
    let several = workspaces.len() > 1;
    let (changes, received) = std::sync::mpsc::channel();
    let sink: ChangeSink = Arc::new(move |change| {
        let _ = changes.send(change);
    });
    let store = Arc::new(globals.open_store()?);
    let sink = studio_core::store::index::keeping_current(store.clone(), &[], sink);
    // A run's end recorded in the store, by any process, is a change of its session.
    let options = WatcherOptions {
        store: Some(store.clone()),
        ..WatcherOptions::default()
    };
    let _watcher = Watcher::start(workspaces, sink, options)?;
    for mut change in received {
        // A session the studio ran reads as `sessions` and `show` read it, with its tags.
        store.as_recorded_change(&mut change)?;
        print_change(out, globals.format(), &change, several)?;
    }
    Ok(())
}

/// One change as `watch` prints it (of a local workspace or a host's), flushed.
pub fn print_change(out: &mut impl Write, format: Format, change: &Change, several: bool) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json_line(out, change)?,
        Format::Human => print::change(out, change, several)?,
    }
    out.flush()?;
    Ok(())
}
