//! `zstudio tag`, `untag`, `note` and `view`: what a user gives sessions, kept in the store
//! (checked by the core's `label` rules). Written once over the app service's methods
//! ([`Methods`]): the app service here over the local workspace and store
//! (`Studio::for_command`), or a remote workspace's server (`--remote`), which answers them with
//! the same calls.

use std::io::{Read, Write};

use serde_json::json;
use studio_core::label::MAX_NOTE_BYTES;
use studio_core::remote::methods::Methods;
use studio_core::store::SavedView;
use studio_core::SessionId;

use crate::cli::{Format, NoteArgs, StudioCommand, TagArgs, ViewAction, ViewArgs};
use crate::print;

/// Runs `tag`, `untag`, `note` or `view` on the workspace whose app service `methods` reaches:
/// this machine's or a host's (`Place::methods`).
pub(crate) fn run(
    command: &StudioCommand,
    methods: &dyn Methods,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match command {
        StudioCommand::Tag(args) => tag(methods, args, true, format, out),
        StudioCommand::Untag(args) => tag(methods, args, false, format, out),
        StudioCommand::Note(args) => note(methods, args, format, out),
        StudioCommand::View(args) => view(methods, args, format, out),
        _ => unreachable!("tags::run is given tag, untag, note and view only"),
    }
}

/// `tag` (`adding`) or `untag`: a session's tags after the change (tagging needs a session the
/// workspace has).
fn tag(
    methods: &dyn Methods,
    args: &TagArgs,
    adding: bool,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let id = SessionId::parse(&args.session_id)?;
    let (session, tags) = (id.to_string(), args.tags.clone());
    let tags = if adding {
        methods.tags_add(session, tags)?
    } else {
        methods.tags_remove(session, tags)?
    };
    tagged(out, format, &id, &tags)
}

/// `tags of <id>: a, b` (or `<id> has no tags`), or with `--json` `{"session_id", "tags"}`.
fn tagged(out: &mut impl Write, format: Format, id: &SessionId, tags: &[String]) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json(out, &json!({ "session_id": id, "tags": tags })),
        Format::Human if tags.is_empty() => Ok(writeln!(out, "{id} has no tags")?),
        Format::Human => Ok(writeln!(out, "tags of {id}: {}", tags.join(", "))?),
    }
}

/// Without text, prints the note; with TEXT (or `-`: standard input, read once the session is
/// known) sets it; `""` removes it.
fn note(methods: &dyn Methods, args: &NoteArgs, format: Format, out: &mut impl Write) -> anyhow::Result<()> {
    let id = SessionId::parse(&args.session_id)?;
    let text = match args.text.as_deref() {
        None => return print_note(out, format, &id, methods.note_get(id.to_string())?.as_deref()),
        Some("-") => {
            // An unknown session is said before standard input is waited for.
            methods.note_get(id.to_string())?;
            read_note(std::io::stdin().lock(), &id)?
        }
        Some(text) => text.to_owned(),
    };
    let note = (!text.is_empty()).then_some(text);
    methods.note_set(id.to_string(), note.clone())?;
    noted(out, format, &id, note.as_deref())
}

/// A session's note as `note ID` prints it.
fn print_note(out: &mut impl Write, format: Format, id: &SessionId, note: Option<&str>) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json(out, &json!({ "session_id": id, "note": note })),
        Format::Human => match note {
            Some(note) => Ok(writeln!(out, "{note}")?),
            None => Ok(writeln!(out, "{id} has no note")?),
        },
    }
}

/// What `note ID TEXT` says once the note is set (`None`: removed).
fn noted(out: &mut impl Write, format: Format, id: &SessionId, note: Option<&str>) -> anyhow::Result<()> {
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

/// `view save NAME`, `view delete NAME` or `view list`: what it did, with the views after.
fn view(methods: &dyn Methods, args: &ViewArgs, format: Format, out: &mut impl Write) -> anyhow::Result<()> {
    let views = match &args.action {
        ViewAction::Save { name, filters } => methods.view_save(name.clone(), filters.filters())?,
        ViewAction::Delete { name } => methods.view_delete(name.clone())?,
        ViewAction::List => methods.views_list()?,
    };
    viewed(out, format, &args.action, &views)
}

/// What `view` prints once its action is done, `views` the workspace's views after it.
fn viewed(out: &mut impl Write, format: Format, action: &ViewAction, views: &[SavedView]) -> anyhow::Result<()> {
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
