//! `zstudio watch`: the change stream of one or more workspaces, until interrupted. It also keeps
//! the store's folder index current (so the next listing reads again only what changed while
//! nothing watched).

use std::io::Write;
use std::sync::Arc;

use studio_core::remote::link::LinkEvent;
use studio_core::remote::methods::Methods;
use studio_core::share::otlp;
use studio_core::watcher::{Change, ChangeSink, Watcher, WatcherOptions};

use crate::cli::{Format, Globals};
use crate::place::Place;
use crate::print;
use crate::remote::Remote;
use crate::visible::Visible;

/// `watch`: the workspaces' changes here (a watcher of their folders and the store), or the
/// host's as its server says them, until interrupted.
pub fn watch(place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    if let Place::Host(remote) = place {
        return watch_on_host(remote, globals, out);
    }
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
fn print_change(out: &mut impl Write, format: Format, change: &Change, several: bool) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json_line(out, change)?,
        Format::Human => print::change(out, change, several)?,
    }
    out.flush()?;
    Ok(())
}

/// The host's changes, as `zstudio watch` prints a local workspace's, until interrupted or the
/// link is given up.
fn watch_on_host(remote: &Remote, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let link = remote.link();
    let events = link.events().expect("the link's events are taken once");
    link.subscribe_changes()?;
    writeln!(
        Visible::new(std::io::stderr().lock()),
        "zstudio: watching {}",
        remote.target
    )?;
    // What a local watch's first scan says: every session there now, as added (once subscribed,
    // so that none made meanwhile is missed; one may then be said twice, added then updated).
    let listing = link.sessions_list()?;
    let workspace = std::path::PathBuf::from(link.workspace_path());
    for row in listing.sessions {
        let change = studio_core::watcher::Change::SessionAdded {
            workspace: workspace.clone(),
            session_id: row.summary.id.clone(),
            summary: row.summary,
            tags: row.tags,
        };
        print_change(out, globals.format(), &change, false)?;
    }
    for event in events {
        match event {
            LinkEvent::Notification(notification) => {
                if let Some(change) = notification.change() {
                    print_change(out, globals.format(), &change, false)?;
                }
            }
            LinkEvent::State(state) => super::run::say_state(remote, &state, None)?,
            LinkEvent::Reconnected => {}
        }
    }
    Ok(())
}
