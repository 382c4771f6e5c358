//! `zstudio delete` and `zstudio prune`: a session's records and folder (to the trash), one by
//! its id or several by a retention rule. Both ask first unless `--yes`.

use std::io::Write;
use std::time::SystemTime;

use studio_core::store::retention;
use studio_core::SessionId;

use crate::ask::confirm;
use crate::cli::{DeleteArgs, Format, Globals, PruneArgs};
use crate::print;

pub fn delete(args: &DeleteArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let (workspace, store, id) = (
        globals.open_workspace()?,
        globals.open_store()?,
        SessionId::parse(&args.session_id)?,
    );
    crate::open::require_session(&store, &workspace, &id)?;
    let folder = workspace.session_path(&id);
    if !args.yes
        && !confirm(&format!(
            "Delete session {id} ({})? Its folder goes to the trash.",
            folder.display()
        ))?
    {
        anyhow::bail!("not deleted: {id}");
    }
    store.session_delete(&workspace, &id, studio_core::process::move_to_trash)?;
    match globals.format() {
        Format::Json => print::write_json(out, &serde_json::json!({ "session_id": id, "deleted": true })),
        Format::Human => {
            writeln!(out, "deleted {id} (folder moved to the trash)")?;
            Ok(())
        }
    }
}

pub fn prune(args: &PruneArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let (workspace, store) = (globals.open_workspace()?, globals.open_store()?);
    let listed = store.list_sessions_as(&workspace, now, studio_core::store::index::NodeDetail::TotalsOnly)?;
    let plan = retention::plan(&listed, args.rule.0, now, args.include_tagged);
    let doomed = plan.doomed;
    print::emit(out, globals.format(), &doomed, |out, doomed| {
        print::doomed(out, doomed, now)
    })?;
    // Said on standard error, beside what is deleted: `--json` stays the list of the doomed.
    if plan.kept_pinned + plan.kept_tagged > 0 {
        eprintln!(
            "kept {} pinned and {} tagged or annotated session(s) the rule reached{}",
            plan.kept_pinned,
            plan.kept_tagged,
            if plan.kept_tagged > 0 {
                " (--include-tagged deletes the tagged and annotated ones)"
            } else {
                ""
            }
        );
    }
    if args.dry_run || doomed.is_empty() {
        return Ok(());
    }
    out.flush()?;
    if !args.yes && !confirm(&format!("Delete these {} session(s)?", doomed.len()))? {
        anyhow::bail!("nothing deleted");
    }
    for session in &doomed {
        let id = SessionId::parse(&session.session_id)?;
        match store.session_delete(&workspace, &id, studio_core::process::move_to_trash) {
            Ok(()) => eprintln!("deleted {id}"),
            // A session whose run is live is skipped, not a reason to stop.
            Err(e @ (studio_core::Error::SessionLive { .. } | studio_core::Error::SessionRunningOutside { .. })) => {
                eprintln!("zstudio: skipped: {e}")
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
