//! What the shell shows around the window's page: its title, the app menu, the
//! `workspace-changed` event, and the system's own dialogs (the folder picker, a yes-or-no
//! question). A leaf: it opens nothing itself, and every way of opening a workspace (a folder
//! here, one on another machine, a bucket prefix) ends with [`show_workspace`].

use std::path::{Path, PathBuf};

use studio_core::app::operations::WorkspaceInfo;
use tauri::menu::{AboutMetadataBuilder, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_dialog::DialogExt;

use crate::Studio;

/// The Tauri event a workspace switch is sent as (menu, second launch, folder picker); its
/// payload: the new [`WorkspaceInfo`].
pub const WORKSPACE_CHANGED: &str = "workspace-changed";

/// A workspace was opened: the window hears [`WORKSPACE_CHANGED`] with `info` (when there is one
/// to tell), the menu is made again (its Open Recent list follows) and the title names it, `name`.
pub fn show_workspace(app: &AppHandle, info: Option<&WorkspaceInfo>, name: &str) {
    if let Some(info) = info {
        match app.emit(WORKSPACE_CHANGED, info) {
            Ok(()) => tracing::info!(root = info.root, "the window switches workspace"),
            Err(error) => tracing::warn!(%error, "cannot tell the window of the workspace switch"),
        }
    }
    if let Err(error) = install_menu(app) {
        tracing::warn!(%error, "cannot update the menu");
    }
    set_title(app, name);
}

/// The window's title names the workspace: `<folder> - Zibby Studio` (ASCII: it is also the X window name).
pub fn show_workspace_in_title<R: Runtime>(app: &AppHandle<R>, workspace: &studio_core::Workspace) {
    set_title(app, &folder_name(workspace.root()));
}

/// The window's title: `<name> - Zibby Studio`.
pub fn set_title<R: Runtime>(app: &AppHandle<R>, name: &str) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.set_title(&format!("{name} - Zibby Studio"));
    }
}

/// A folder's name, as the title shows it.
pub fn folder_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// The system's folder picker; `None` when cancelled. Blocks: call it off the main thread.
pub fn pick_folder<R: Runtime>(app: &AppHandle<R>) -> Option<PathBuf> {
    app.dialog()
        .file()
        .set_title("Open a project folder")
        .blocking_pick_folder()
        .and_then(|path| path.into_path().ok())
}

/// Asks the user a yes-or-no question in the system's own dialog (GTK's), which the web page can
/// neither draw nor answer: `true` only when `ok` was pressed (closing the dialog says no). Blocks
/// until answered: call it off the main thread.
pub fn ask_natively<R: Runtime>(app: &AppHandle<R>, title: &str, message: &str, ok: &str) -> bool {
    use tauri_plugin_dialog::{MessageDialogButtons, MessageDialogKind};
    app.dialog()
        .message(message)
        .title(title)
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom(
            ok.to_owned(),
            "_Cancel".to_owned(),
        ))
        .blocking_show()
}

/// Menu item ids.
pub const OPEN_WORKSPACE: &str = "open-workspace";
pub const OPEN_REMOTE: &str = "open-remote";
pub const OPEN_CLOUD: &str = "open-cloud";
pub const RECENT_PREFIX: &str = "recent:";
pub const REVEAL_LOGS: &str = "reveal-logs";
pub const IMPORT_SESSION: &str = "import-session";
pub const QUIT: &str = "quit";
pub const RELOAD: &str = "reload";
pub const ZOOM_IN: &str = "zoom-in";
pub const ZOOM_OUT: &str = "zoom-out";
pub const ZOOM_RESET: &str = "zoom-reset";

/// The app menu: File (open workspace, recent workspaces, reveal the log folder, quit), View
/// (reload, zoom), Help (about: version, store and log folder).
pub fn install_menu(app: &AppHandle) -> tauri::Result<()> {
    let studio = app.state::<Studio>();
    let recent = studio.recent_workspaces().unwrap_or_default();
    let recent_items = recent
        .iter()
        .enumerate()
        .map(|(index, root)| {
            MenuItem::with_id(
                app,
                format!("{RECENT_PREFIX}{index}"),
                root.display().to_string(),
                true,
                None::<&str>,
            )
        })
        .collect::<tauri::Result<Vec<_>>>()?;
    let recent_refs: Vec<&dyn tauri::menu::IsMenuItem<tauri::Wry>> =
        recent_items.iter().map(|item| item as _).collect();
    let recent_menu = Submenu::with_items(app, "Open Recent", !recent_refs.is_empty(), &recent_refs)?;

    let store = studio
        .store()
        .map(|store| store.location().describe())
        .unwrap_or_else(|error| error.to_string());
    let logs = crate::logs::log_dir().map_or_else(|| "none".to_owned(), |dir| dir.display().to_string());
    let about = AboutMetadataBuilder::new()
        .name(Some("Zibby Studio"))
        .version(Some(env!("CARGO_PKG_VERSION")))
        .comments(Some(format!(
            "Watch, start and stop Zibby agent runs.\nStore: {store}\nLogs: {logs}"
        )))
        .license(Some("MIT"))
        .build();

    let file = Submenu::with_items(
        app,
        "File",
        true,
        &[
            &MenuItem::with_id(app, OPEN_WORKSPACE, "Open Workspace…", true, Some("CmdOrCtrl+O"))?,
            &MenuItem::with_id(app, OPEN_REMOTE, "Open Remote Workspace…", true, None::<&str>)?,
            &MenuItem::with_id(app, OPEN_CLOUD, "Open Cloud Workspace…", true, None::<&str>)?,
            &recent_menu,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, IMPORT_SESSION, "Import Session…", true, Some("CmdOrCtrl+I"))?,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, REVEAL_LOGS, "Reveal Log Folder", true, None::<&str>)?,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, QUIT, "Quit", true, Some("CmdOrCtrl+Q"))?,
        ],
    )?;
    let view = Submenu::with_items(
        app,
        "View",
        true,
        &[
            &MenuItem::with_id(app, RELOAD, "Reload", true, Some("CmdOrCtrl+R"))?,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, ZOOM_IN, "Zoom In", true, Some("CmdOrCtrl+="))?,
            &MenuItem::with_id(app, ZOOM_OUT, "Zoom Out", true, Some("CmdOrCtrl+-"))?,
            &MenuItem::with_id(app, ZOOM_RESET, "Actual Size", true, Some("CmdOrCtrl+0"))?,
        ],
    )?;
    let help = Submenu::with_items(
        app,
        "Help",
        true,
        &[&PredefinedMenuItem::about(
            app,
            Some("About Zibby Studio"),
            Some(about),
        )?],
    )?;
    app.set_menu(Menu::with_items(app, &[&file, &view, &help])?)?;
    Ok(())
}
