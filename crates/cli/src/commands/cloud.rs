//! `--source URL`: a bucket prefix (`s3://`, `gs://`, `az://`) read as the workspace, read-only.
//!
//! The prefix is mirrored into the cache (`studio_core::bucket::Mirror`), then the command runs
//! on the mirror as on any workspace: `sessions`, `show`, `logs`, `search` (which indexes the
//! mirror's node output files: `store::folder_text`), `export`; `diff`
//! looks an id up in the bucket, then in the local workspace (`--workspace`, else the current
//! folder); `import ID` copies a cloud session into the local workspace and store. Every other
//! command is refused by `Cli::check`: nothing is ever written to the bucket. (`mcp` opens the
//! bucket itself, as the window does: `crate::mcp`.)
//!
//! `sessions` and `show` read a large output of the mirror only from its end, which the listing
//! fetched; `export`, `diff` and `import` read sessions whole, so the cloud sessions they name
//! are fetched whole first (`Mirror::fetch_session`: within the cache's limit, onto the disk).

use std::io::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use studio_core::bucket::{cache, Listing, Mirror, MirrorOptions, Source, UploadState};
use studio_core::SessionId;

use crate::cli::{Globals, ImportArgs, SessionsArgs, SourceArgs, StudioCommand, READING};

/// Runs `command` on the bucket prefix `url`.
pub fn run(command: StudioCommand, globals: &Globals, url: &str, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    // `Cli::check` refused every other command before this.
    debug_assert!(READING.contains(&command.name()));
    let source = Source::parse(url)?;
    let mirror = open(&source, &globals.source)?;
    let mut cloud = globals.clone();
    cloud.workspace = vec![mirror.workspace_root()];
    cloud.source = SourceArgs::default();
    let mut local = globals.clone();
    local.source = SourceArgs::default();
    if let StudioCommand::Sessions(args) = &command {
        return list_sessions(&mirror, args, &cloud, out).map(|()| ExitCode::SUCCESS);
    }
    let named = named_sessions(&command);
    // The sessions a command names are opened: the refresh's bound keeps them first.
    for id in named.iter().flatten().filter_map(|id| SessionId::parse(id).ok()) {
        mirror.record_opened(&id, SystemTime::now());
    }
    let listing = mirror.refresh(SystemTime::now())?;
    say(&source, &listing, named.as_deref())?;
    match command {
        StudioCommand::Diff(args) => {
            for run in &args.runs {
                fetch_whole(&mirror, run)?;
            }
            super::diff::diff_in(&args, &cloud, Some(&local), out)
        }
        StudioCommand::Import(args) => import(&mirror, &args, &local, out).map(|()| ExitCode::SUCCESS),
        StudioCommand::Export(args) => {
            fetch_whole(&mirror, &args.session_id)?;
            super::run(StudioCommand::Export(args), &cloud, out)
        }
        // The app opens the bucket itself (read-only), not the mirror's folder.
        StudioCommand::Open(args) => {
            let id = SessionId::parse(&args.session_id)?;
            let workspace = cloud.open_workspace()?;
            crate::open::require_session(&cloud.open_store()?, &workspace, &id)?;
            super::share::launch_app(&id, std::ffi::OsStr::new(url), &local, out).map(|()| ExitCode::SUCCESS)
        }
        command => super::run(command, &cloud, out),
    }
}

/// `sessions`: the mirror's folder listed (through the store, as any workspace's) while the
/// bucket is asked, and again only when the refresh changed the folder.
fn list_sessions(mirror: &Mirror, args: &SessionsArgs, cloud: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let (store, workspace) = (cloud.open_store()?, cloud.open_workspace()?);
    let (listing, sessions) = mirror.refresh_reading(now, || store.list_sessions(&workspace, now))?;
    say(mirror.source(), &listing, None)?;
    let sessions = super::sessions::filtered(&store, &workspace, args, sessions?)?;
    super::sessions::print_listing(cloud, &sessions, now, out)
}

/// The mirror of `source` (its cache cleared first when asked), not yet refreshed.
fn open(source: &Source, args: &SourceArgs) -> anyhow::Result<Mirror> {
    let root = cache::default_cache_root()
        .ok_or_else(|| anyhow::anyhow!("no cache folder for {source}: set XDG_CACHE_HOME or HOME"))?;
    if args.clear_cache {
        cache::clear(&root, Some(source))?;
    }
    let mut options = MirrorOptions::new(root);
    if let Some(limit) = args.cache_limit {
        options.max_bytes = limit;
    }
    Ok(Mirror::open(source, options)?)
}

/// The sessions a command names (`show ID`, `diff A B`, ...); `None` for one about them all
/// (`search`).
fn named_sessions(command: &StudioCommand) -> Option<Vec<String>> {
    match command {
        StudioCommand::Show(args) => Some(vec![args.session_id.clone()]),
        StudioCommand::Logs(args) | StudioCommand::Open(args) => Some(vec![args.session_id.clone()]),
        StudioCommand::Export(args) => Some(vec![args.session_id.clone()]),
        StudioCommand::Import(args) => Some(vec![args.source.to_string_lossy().into_owned()]),
        StudioCommand::Diff(args) => Some(args.runs.clone()),
        _ => None,
    }
}

/// What a refresh refused, the sessions still being uploaded (of those `about`, when the command
/// names its sessions) and those left out, said on standard error.
fn say(source: &Source, listing: &Listing, about: Option<&[String]>) -> anyhow::Result<()> {
    let mut err = crate::visible::Visible::new(std::io::stderr().lock());
    for refused in &listing.refused {
        writeln!(err, "zstudio: {refused}")?;
    }
    let named = |id: &SessionId| about.is_none_or(|ids| ids.iter().any(|named| named == id.as_str()));
    for session in listing
        .sessions
        .iter()
        .filter(|s| s.state == UploadState::Uploading && named(&s.id))
    {
        writeln!(
            err,
            "zstudio: {source}: session `{}` is still being uploaded ({} objects so far): shown as far as it got",
            session.id, session.objects
        )?;
    }
    if listing.left_out > 0 {
        writeln!(
            err,
            "zstudio: {source}: {} older sessions left out to keep the cache within its limit (--cache-limit)",
            listing.left_out
        )?;
    }
    Ok(())
}

/// Fetches whole the cloud session `id` names, when it names one the bucket holds (else it is a
/// local session or a run id, which the command looks up itself).
fn fetch_whole(mirror: &Mirror, id: &str) -> anyhow::Result<()> {
    if let Ok(id) = SessionId::parse(id) {
        if mirror.holds(&id) {
            mirror.fetch_session(&id, u64::MAX)?;
        }
    }
    Ok(())
}

/// `import ID`: the cloud session fetched whole into the mirror (at most `--max-bytes`), then
/// imported from the mirror's folder as a session folder into the local workspace and store:
/// one copy, the import's.
fn import(mirror: &Mirror, args: &ImportArgs, local: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let id = args.source.to_str().unwrap_or_default();
    let id = SessionId::parse(id)?;
    let limit = args.max_bytes.unwrap_or(studio_core::share::DEFAULT_MAX_BYTES);
    let folder = mirror.fetch_session(&id, limit)?;
    let mut args = args.clone();
    args.source = folder;
    super::share::import(&args, &crate::place::Place::here(local), local, out)
}
