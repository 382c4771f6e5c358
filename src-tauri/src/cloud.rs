//! Cloud workspaces in the window: a bucket prefix (`s3://bucket/prefix`) opened from the menu's
//! form, the command line or Open Recent (`desktop::open_target`), read-only, through the core's
//! `app::cloud::CloudWorkspace` (its mirror's folder opened as the workspace, kept current by a
//! poller, which the window's focus wakes). A change of its status (a refresh failed, or works
//! again) reaches the window as [`CLOUD_STATUS`]; a cloud session is copied into a local
//! workspace by [`import_session`].

use studio_core::app::cloud::{CloudImported, CloudWorkspace};
use studio_core::app::operations::WorkspaceInfo;
use studio_core::bucket::{cache, MirrorOptions, Source};
use tauri::{AppHandle, Emitter, Manager};

use crate::{CommandError, Studio};

/// The Tauri event the menu's "Open Cloud Workspace…" asks the window to show its form with.
pub const CLOUD_OPEN_REQUESTED: &str = "cloud-open-requested";

/// The Tauri event the shell tells the window of a change of the cloud workspace's status with:
/// the first refresh of a warm open is done (`checking` false), a refresh failed (`error` says
/// why, naming the source), or one worked again (`error` null).
pub const CLOUD_STATUS: &str = "cloud-status";

/// What the Open Cloud Workspace form asks of the cache as it opens a bucket: a new limit for
/// every source's folder (kept: `cache::save_limit`, as a size such as `500M` or `2G`), and this
/// source's folder emptied first (everything fetched again).
#[derive(Debug, Default)]
pub struct CacheChoice {
    pub limit: Option<String>,
    pub clear: bool,
}

/// Bucket prefix `url` (which may carry `?endpoint=…&profile=…`, as Open Recent keeps it) at
/// `endpoint` and with `profile` when given (the Open Cloud Workspace form's fields, blank ones
/// not given); else the provider's variables'.
pub fn source_of(url: &str, endpoint: Option<String>, profile: Option<String>) -> Result<Source, CommandError> {
    let given = |field: Option<String>| field.map(|f| f.trim().to_owned()).filter(|f| !f.is_empty());
    let mut source = Source::parse(url.trim())?;
    if let Some(endpoint) = given(endpoint) {
        source = source.with_endpoint(endpoint);
    }
    if let Some(profile) = given(profile) {
        source = source.with_profile(&profile)?;
    }
    Ok(source)
}

/// Opens bucket prefix `source` as the workspace, read-only, and tells the window as a local
/// switch does. A mirror fetched before opens as it is, checked by the poller at once
/// (`CloudStatus::checking`, then its `error` if the bucket cannot be reached); a cold one lists
/// the prefix first (an error, such as access refused, names the source): call it off the main
/// thread.
pub fn open_cloud(app: &AppHandle, source: Source, choice: CacheChoice) -> Result<WorkspaceInfo, CommandError> {
    let given = |field: Option<String>| field.map(|f| f.trim().to_owned()).filter(|f| !f.is_empty());
    let root = cache::default_cache_root()
        .ok_or_else(|| source.error("", "no cache folder for the mirror: set XDG_CACHE_HOME or HOME"))?;
    if let Some(limit) = given(choice.limit) {
        let bytes =
            studio_args::parse_size(&limit).map_err(|why| source.error("", format!("the cache limit: {why}")))?;
        cache::save_limit(&root, bytes)?;
    }
    if choice.clear {
        let folder = cache::source_folder(&root, &source);
        let studio = app.state::<Studio>();
        // The open workspace's poller ends its chunk first (the clear waits for its lock).
        if let Some(open) = studio
            .cloud()
            .filter(|open| cache::source_folder(&root, open.source()) == folder)
        {
            open.close();
        }
        cache::clear(&root, Some(&source))?;
    }
    let told = app.clone();
    let on_status = Box::new(move |status| {
        if let Err(error) = told.emit(CLOUD_STATUS, &status) {
            tracing::warn!(%error, "cannot tell the window of the cloud workspace's status");
        }
    });
    let cloud = CloudWorkspace::open(&source, MirrorOptions::new(root), on_status)?;
    let studio = app.state::<Studio>();
    let workspace = studio.open_cloud(cloud)?;
    let info = WorkspaceInfo::from(&workspace);
    crate::window::show_workspace(app, Some(&info), &format!("{source} (read-only)"));
    Ok(info)
}

/// The window gained focus: the open cloud workspace is refreshed now.
pub fn on_focus(app: &AppHandle) {
    if let Some(cloud) = app.state::<Studio>().cloud() {
        cloud.refresh_soon();
    }
}

/// Copies session `session_id` of the open cloud workspace into the local workspace opened last,
/// else one asked for with the folder picker (`None`: cancelled), and into the store.
pub fn import_session(app: &AppHandle, session_id: &str) -> Result<Option<CloudImported>, CommandError> {
    let studio = app.state::<Studio>();
    let local = match studio.last_local_workspace()? {
        Some(local) => local,
        None => match crate::window::pick_folder(app) {
            Some(path) => studio_core::Workspace::open(&path)?,
            None => return Ok(None),
        },
    };
    Ok(Some(studio.cloud_import(session_id, &local)?))
}
