//! `zstudio sessions` and `zstudio show`: the sessions of a workspace, as the store lays what it
//! knows over the folders.

use std::collections::HashMap;
use std::io::Write;
use std::time::SystemTime;

use studio_core::cost::UsageTotal;
use studio_core::store::index::{usage_of_sessions, NodeDetail};
use studio_core::store::{Filters, SessionRow, SpanKind, Store};
use studio_core::{Session, SessionId, Workspace};

use crate::cli::{Format, Globals, SessionsArgs, ShowArgs};
use crate::place::Place;
use crate::print;

/// `sessions`: the workspace's sessions, here or on the host of `--remote`, narrowed by the
/// filters given or by a saved view of the workspace's (`--view`), with what they cost. Here the
/// store reads the folders (a first screen from the catalogue's page, `--json` streamed); a host's
/// listing is its server's, narrowed here as the store narrows one (a search text through the
/// host's index).
pub fn list(args: &SessionsArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let (sessions, usage) = match place {
        Place::Here(_) => {
            let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
            let filters = filters_of(&store, &workspace, args)?;
            if filters == Filters::default() {
                if let Some(limit) = args.limit {
                    // The first screen's read: the catalogue's page, the folders outside it not read.
                    let page = store.sessions_page(&workspace, now, NodeDetail::WithUsage, 0, limit as usize)?;
                    return print_listing(globals, &page, now, out);
                }
                if globals.format() == Format::Json {
                    return stream_json(&store, &workspace, now, out);
                }
            }
            // Printed whole (a table, or filtered): the listing in its order, every folder checked.
            let sessions = store.list_sessions(&workspace, now)?;
            let sessions = kept(&store, &workspace, &filters, args.limit, sessions)?;
            let usage = usage_of_sessions(&sessions);
            (sessions, usage)
        }
        Place::Host(remote) => {
            let methods = place.methods()?;
            let filters = match &args.view {
                Some(name) => methods
                    .views_list()?
                    .into_iter()
                    .find(|view| view.name == *name)
                    .map(|view| view.filters)
                    .ok_or_else(|| anyhow::anyhow!("{}: no saved view named {name:?}", remote.target))?,
                None => args.filters.filters(),
            };
            let mut sessions = methods.sessions_list()?.sessions;
            if filters != Filters::default() {
                sessions = filters.apply(sessions, |text, limit| methods.search(text.to_owned(), limit))?;
            }
            if let Some(limit) = args.limit {
                sessions.truncate(limit as usize);
            }
            // The cost of the rows shown, as here.
            let usage = usage_of_sessions(&sessions);
            (sessions, usage)
        }
    };
    print_rows(globals, &sessions, usage.as_ref(), now, out)
}

/// How many rows `sessions --json` checks against their folders and writes at a time.
const STREAM_CHUNK: usize = 256;

/// `sessions --json` without filters: the listing's JSON array (as [`print::write_json`] writes
/// it) written a chunk of rows at a time, as the store checks them against their folders.
fn stream_json(store: &Store, workspace: &Workspace, now: SystemTime, out: &mut impl Write) -> anyhow::Result<()> {
    let mut written = 0usize;
    let mut failed: Option<anyhow::Error> = None;
    out.write_all(b"[")?;
    store
        .stream_sessions(workspace, now, NodeDetail::WithUsage, STREAM_CHUNK, |rows| {
            let mut text = Vec::new();
            for row in &rows {
                text.extend_from_slice(if written == 0 { b"\n  " } else { b",\n  " });
                print::write_json_indented(&mut text, row, "  ");
                written += 1;
            }
            if let Err(error) = out.write_all(&text).and_then(|()| out.flush()) {
                // Stops the listing; the write's own error is what is reported (a closed pipe is
                // not worth a message).
                let stopped = studio_core::Error::io_write("standard output", std::io::Error::from(error.kind()));
                failed = Some(error.into());
                return Err(stopped);
            }
            Ok(())
        })
        .map_err(|error| failed.take().unwrap_or_else(|| error.into()))?;
    out.write_all(if written == 0 { b"]\n" } else { b"\n]\n" })?;
    Ok(())
}

/// The filters `sessions` was given: a saved view's (`--view`), else those given.
fn filters_of(store: &Store, workspace: &Workspace, args: &SessionsArgs) -> anyhow::Result<Filters> {
    Ok(match &args.view {
        Some(name) => store.view(workspace, name)?.filters,
        None => args.filters.filters(),
    })
}

/// The rows the filters of `sessions` keep: a saved view's (`--view`), else those given; the
/// first `--limit` of them.
pub fn filtered(
    store: &Store,
    workspace: &Workspace,
    args: &SessionsArgs,
    sessions: Vec<SessionRow>,
) -> anyhow::Result<Vec<SessionRow>> {
    kept(
        store,
        workspace,
        &filters_of(store, workspace, args)?,
        args.limit,
        sessions,
    )
}

/// The rows `filters` keep, the first `limit` of them.
fn kept(
    store: &Store,
    workspace: &Workspace,
    filters: &Filters,
    limit: Option<u32>,
    sessions: Vec<SessionRow>,
) -> anyhow::Result<Vec<SessionRow>> {
    let mut kept = if *filters == Filters::default() {
        sessions
    } else {
        store.filter_sessions(workspace, sessions, filters)?
    };
    if let Some(limit) = limit {
        kept.truncate(limit as usize);
    }
    Ok(kept)
}

/// The listing as `sessions` prints it (a table and the total cost, or JSON).
pub fn print_listing(
    globals: &Globals,
    sessions: &[SessionRow],
    now: SystemTime,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    print_rows(globals, sessions, usage_of_sessions(sessions).as_ref(), now, out)
}

/// `sessions` printed (a table and `usage`, the total cost, or JSON).
fn print_rows(
    globals: &Globals,
    sessions: &[SessionRow],
    usage: Option<&UsageTotal>,
    now: SystemTime,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    print::emit(out, globals.format(), sessions, |out, sessions| {
        print::sessions(out, sessions, now)?;
        if let Some(total) = usage {
            writeln!(out, "\ncost of all sessions: {}, {}", total.label, total.tokens_label)?;
        }
        Ok(())
    })
}

/// `show`: one session of the workspace, here or on the host of `--remote` (never with its
/// config there: the server never sends it; its nodes' durations, read from the spans here, are
/// left out there).
pub fn show(args: &ShowArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let id = SessionId::parse(&args.session_id)?;
    let here = match place {
        Place::Here(_) => Some((globals.open_store()?, globals.open_workspace()?)),
        Place::Host(_) if args.with_config => {
            anyhow::bail!("--with-config is not taken with --remote: the server never sends a session's config")
        }
        Place::Host(_) => None,
    };
    let session = match &here {
        // What the store knows is laid over the folder, as `sessions` lays it.
        Some((store, workspace)) => {
            let session = store.read_session(workspace, &id, now)?;
            match args.with_config {
                true => session,
                false => session.without_config(),
            }
        }
        None => place.methods()?.session_get(id.to_string())?,
    };
    print_session(out, globals.format(), &session, now, || match &here {
        Some((store, workspace)) => node_durations(store, workspace, &id, now),
        None => Ok(HashMap::new()),
    })
}

/// A session as `show` prints it (here, or on the host of `--remote`): its nodes with how long
/// each took (`took`, asked for the table only), and where it was imported from.
pub(crate) fn print_session(
    out: &mut impl Write,
    format: Format,
    session: &Session,
    now: SystemTime,
    took: impl FnOnce() -> anyhow::Result<HashMap<String, u64>>,
) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json(out, session),
        Format::Human => {
            print::session(out, session, now, &took()?)?;
            if let Some(imported) = &session.imported {
                writeln!(out, "imported from {} at {}", imported.from, imported.at.to_rfc3339())?;
            }
            Ok(())
        }
    }
}

/// How long each node of the session's last recorded run took (its last execution, from its
/// span; a node still going: so far), by name. A session the studio did not run has none: its
/// folder's times do not say when a node began.
fn node_durations(
    store: &Store,
    workspace: &Workspace,
    id: &SessionId,
    now: SystemTime,
) -> anyhow::Result<HashMap<String, u64>> {
    let Some(last) = store.runs(workspace, Some(id))?.into_iter().next() else {
        return Ok(HashMap::new());
    };
    let now = studio_core::session::Timestamp::from_system_time(now);
    Ok(store
        .spans(&last.id)?
        .into_iter()
        .filter(|span| span.kind == SpanKind::Node)
        .map(|span| {
            let end = span.ended_at.unwrap_or(now);
            (span.name, end.0.saturating_sub(span.started_at.0))
        })
        .collect())
}
