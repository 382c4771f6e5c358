//! `zstudio watch`: the change stream of one or more workspaces, until interrupted. It also keeps
//! the store's folder index current (so the next listing reads again only what changed while
//! nothing watched).

use std::io::Write;
use std::sync::Arc;

use studio_core::share::otlp;
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
    // One watcher for every workspace: the shortest `[watch] sweep_bound` of theirs.
    let bounds = workspaces.iter().map(|w| studio_core::agents::sweep_bound(w.root()));
    let sweep_bound = bounds.collect::<Result<Vec<_>, _>>()?.into_iter().flatten().min();
    // A run's end recorded in the store, by any process, is a change of its session.
    let mut options = WatcherOptions {
        store: Some(store.clone()),
        ..WatcherOptions::default()
    };
    if let Some(bound) = sweep_bound {
        options = options.with_sweep_bound(bound);
    }
    let mut traces = live_traces(&store, &workspaces)?;
    let _watcher = Watcher::start(workspaces, sink, options)?;
    for mut change in received {
        // A session the studio ran reads as `sessions` and `show` read it, with its tags.
        store.as_recorded_change(&mut change)?;
        if let Some((watched, export)) = &mut traces {
            watched.change(&change, export);
        }
        print_change(out, globals.format(), &change, several)?;
    }
    Ok(())
}

/// The live trace export of the sessions the studio did not start, when a workspace has an
/// OTLP endpoint (the variables, or its `[otlp]` table).
fn live_traces(
    store: &Arc<studio_core::store::Store>,
    workspaces: &[studio_core::Workspace],
) -> anyhow::Result<Option<(otlp::WatchedExport, otlp::LiveExport)>> {
    let mut routed = Vec::new();
    for workspace in workspaces {
        let endpoint = otlp::Endpoint::resolve(|name| std::env::var(name).ok(), workspace.root())?;
        routed.push((workspace.clone(), endpoint.map(Arc::new)));
    }
    let watched = otlp::WatchedExport::new(store.clone(), routed);
    Ok(watched
        .exports_anything()
        .then(|| (watched, otlp::LiveExport::start(otlp::LiveOptions::default()))))
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
