//! `zstudio tag`, `untag`, `note` and `view`: what a user gives sessions, kept in the store
//! (checked by the core's `label` rules).

use std::io::{Read, Write};
use std::time::SystemTime;

use serde_json::json;
use studio_core::label::MAX_NOTE_BYTES;
use studio_core::store::SavedView;
use studio_core::SessionId;

use crate::cli::{Format, Globals, NoteArgs, TagArgs, ViewAction, ViewArgs};
use crate::print;

pub fn tag(args: &TagArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store, id) = (
        globals.open_workspace()?,
        globals.open_store()?,
        SessionId::parse(&args.session_id)?,
    );
    crate::open::require_session(&store, &workspace, &id)?;
    let tags = store.tag(&workspace, &id, &args.tags, SystemTime::now())?;
    tagged(out, globals.format(), &id, &tags)
}

pub fn untag(args: &TagArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store, id) = (
        globals.open_workspace()?,
        globals.open_store()?,
        SessionId::parse(&args.session_id)?,
    );
    let tags = store.untag(&workspace, &id, &args.tags)?;
    tagged(out, globals.format(), &id, &tags)
}

/// `tags of <id>: a, b` (or `<id> has no tags`), or with `--json` `{"session_id", "tags"}`.
pub(crate) fn tagged(out: &mut impl Write, format: Format, id: &SessionId, tags: &[String]) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json(out, &json!({ "session_id": id, "tags": tags })),
        Format::Human if tags.is_empty() => Ok(writeln!(out, "{id} has no tags")?),
        Format::Human => Ok(writeln!(out, "tags of {id}: {}", tags.join(", "))?),
    }
}

/// Without text, prints the note; with TEXT (or `-`: standard input) sets it; `""` removes it.
pub fn note(args: &NoteArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store, id) = (
        globals.open_workspace()?,
        globals.open_store()?,
        SessionId::parse(&args.session_id)?,
    );
    crate::open::require_session(&store, &workspace, &id)?;
    let Some(text) = note_given(args, &id)? else {
        return print_note(out, globals.format(), &id, store.note(&workspace, &id)?.as_deref());
    };
    let note = (!text.is_empty()).then_some(text.as_str());
    store.set_note(&workspace, &id, note, SystemTime::now())?;
    noted(out, globals.format(), &id, note)
}

/// The note `note ID TEXT` sets (`-`: read from standard input), `None` when it only asks.
pub(crate) fn note_given(args: &NoteArgs, id: &SessionId) -> anyhow::Result<Option<String>> {
    Ok(match args.text.as_deref() {
        None => None,
        Some("-") => Some(read_note(std::io::stdin().lock(), id)?),
        Some(text) => Some(text.to_owned()),
    })
}

/// A session's note as `note ID` prints it.
pub(crate) fn print_note(
    out: &mut impl Write,
    format: Format,
    id: &SessionId,
    note: Option<&str>,
) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json(out, &json!({ "session_id": id, "note": note })),
        Format::Human => match note {
            Some(note) => Ok(writeln!(out, "{note}")?),
            None => Ok(writeln!(out, "{id} has no note")?),
        },
    }
}

/// What `note ID TEXT` says once the note is set (`None`: removed).
pub(crate) fn noted(out: &mut impl Write, format: Format, id: &SessionId, note: Option<&str>) -> anyhow::Result<()> {
    match (format, note) {
        (Format::Json, _) => print::write_json(out, &json!({ "session_id": id, "note": note })),
        (Format::Human, None) => Ok(writeln!(out, "removed the note of {id}")?),
        (Format::Human, Some(note)) => Ok(writeln!(out, "saved the note of {id} ({} bytes)", note.len())?),
    }
}

/// A note from standard input: at most one byte past the limit is read (the core refuses it
/// then, naming the rule), and it must be UTF-8 text.
fn read_note(input: impl Read, id: &SessionId) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    input.take(MAX_NOTE_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "the note of {id} on standard input is not UTF-8 text (at byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    studio_core::label::check_note(id.as_str(), &text)?;
    Ok(text)
}

pub fn view(args: &ViewArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store) = (globals.open_workspace()?, globals.open_store()?);
    match &args.action {
        ViewAction::Save { name, filters } => {
            store.view_save(&workspace, name, &filters.filters(), SystemTime::now())?
        }
        ViewAction::Delete { name } => store.view_delete(&workspace, name)?,
        ViewAction::List => {}
    }
    viewed(out, globals.format(), &args.action, &store.views(&workspace)?)
}

/// What `view` prints once its action is done, `views` the workspace's views after it (here, or
/// on the host of `--remote`).
pub fn viewed(out: &mut impl Write, format: Format, action: &ViewAction, views: &[SavedView]) -> anyhow::Result<()> {
    match action {
        ViewAction::Save { name, .. } => {
            let filters = views
                .iter()
                .find(|view| view.name == *name)
                .map(|view| view.filters.clone())
                .ok_or_else(|| anyhow::anyhow!("the view {name:?} was not saved"))?;
            match format {
                Format::Json => print::write_json(out, &json!({ "name": name, "filters": filters })),
                Format::Human => Ok(writeln!(out, "saved view {name}: {}", describe(&filters))?),
            }
        }
        ViewAction::List => print::emit(out, format, &views.to_vec(), |out, views: &Vec<SavedView>| {
            if views.is_empty() {
                writeln!(out, "No saved views: `zstudio view save NAME --tag T …` saves one.")?;
            }
            for view in views {
                writeln!(out, "{}  {}", view.name, describe(&view.filters))?;
            }
            Ok(())
        }),
        ViewAction::Delete { name } => match format {
            Format::Json => print::write_json(out, &json!({ "name": name, "deleted": true })),
            Format::Human => Ok(writeln!(out, "deleted view {name}")?),
        },
    }
}

/// A view's filters as the options that give them (`--status error --tag bug`), `all sessions`
/// when none.
fn describe(filters: &studio_core::store::Filters) -> String {
    let mut said = Vec::new();
    if let Some(status) = filters.status {
        said.push(format!("--status {status}"));
    }
    if let Some(agent) = &filters.agent {
        said.push(format!("--agent {agent:?}"));
    }
    for tag in &filters.tags {
        said.push(format!("--tag {:?}", tag.as_str()));
    }
    if filters.pinned {
        said.push("--pinned".to_owned());
    }
    if let Some(search) = &filters.search {
        said.push(format!("--search {search:?}"));
    }
    if said.is_empty() {
        "all sessions".to_owned()
    } else {
        said.join(" ")
    }
}
