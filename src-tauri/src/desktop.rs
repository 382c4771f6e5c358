//! The desktop around the window: the app menu, quitting with live runs, the folder picker,
//! switching workspaces, revealing folders, and the app's own log file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tauri::menu::{AboutMetadataBuilder, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_dialog::DialogExt;

use crate::commands::WorkspaceInfo;
use crate::{CommandError, Studio};

/// The Tauri event a workspace switch is sent as (menu, second launch, folder picker); its
/// payload: the new [`WorkspaceInfo`].
pub const WORKSPACE_CHANGED: &str = "workspace-changed";

/// The Tauri event that asks the window what to do with live runs before quitting; its payload:
/// [`QuitRequested`]. The window answers with the `app_quit` command.
pub const QUIT_REQUESTED: &str = "quit-requested";

#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QuitRequested {
    pub live_runs: usize,
    /// Whether the runs can be left running (they go through the run keeper).
    pub can_keep: bool,
    /// The host of the open remote workspace, if one is: its runs go on there whatever is chosen
    /// (they are its server's, detached), so they are neither counted nor stopped.
    pub remote_host: Option<String>,
}

/// What quitting asks: nothing without live runs here (a remote workspace's runs are its host's
/// and go on there); else how many, whether they can be left running, and the remote host.
pub fn quit_question(studio: &Studio) -> Option<QuitRequested> {
    let live_runs = studio.live_runs();
    (live_runs > 0).then(|| QuitRequested {
        live_runs,
        can_keep: studio.can_keep_runs(),
        remote_host: studio.remote().map(|remote| remote.status().host),
    })
}

/// Set once the user has said what to do with the live runs: closing then goes ahead.
static QUIT_DECIDED: AtomicBool = AtomicBool::new(false);

/// Quits now; [`Studio::shut_down`] then does what was decided with the live runs.
pub fn quit_now<R: Runtime>(app: &AppHandle<R>) {
    QUIT_DECIDED.store(true, Ordering::SeqCst);
    app.exit(0);
}

/// Quitting (the window's close button, the menu): with live runs, the window first asks whether
/// to stop them or leave them running. Returns whether quitting may go ahead now.
pub fn may_quit<R: Runtime>(app: &AppHandle<R>) -> bool {
    let question = quit_question(&app.state::<Studio>());
    let Some(question) = question.filter(|_| !QUIT_DECIDED.load(Ordering::SeqCst)) else {
        return true;
    };
    let asked = app.emit(QUIT_REQUESTED, question);
    // A window that cannot be asked must not keep the app from quitting: the runs are stopped.
    asked.is_err()
}

/// Opens `path` as the workspace and tells the window; the menu's recent list follows.
pub fn switch_workspace(app: &AppHandle, path: &Path) -> Result<WorkspaceInfo, CommandError> {
    if let Some(target) = path.to_str().filter(|root| crate::remote::is_remote(root)) {
        crate::remote::open_remote(app, target)?;
        return crate::forward::remote_answer("workspace_get", &[("studio", &app.state::<Studio>())])
            .unwrap_or_else(|| Err(studio_core::Error::NoWorkspace.into()));
    }
    if let Some(url) = path.to_str().filter(|root| crate::cloud::is_cloud(root)) {
        return crate::cloud::open_cloud(app, url, None, None, Default::default());
    }
    let workspace = app.state::<Studio>().open_workspace(path)?;
    let info = WorkspaceInfo::from(&workspace);
    match app.emit(WORKSPACE_CHANGED, &info) {
        Ok(()) => tracing::info!(root = info.root, "the window switches workspace"),
        Err(error) => tracing::warn!(%error, "cannot tell the window of the workspace switch"),
    }
    if let Err(error) = install_menu(app) {
        tracing::warn!(%error, "cannot update the menu");
    }
    show_workspace_in_title(app, &workspace);
    Ok(info)
}

/// Opens a workspace that is not a local folder (`what`: "cloud", "remote") with `open` on a
/// thread of its own (the command line, Open Recent); a failure is said in the system's dialog,
/// its message naming the source or host. Once it is open, the window shows session `then_show`
/// of it (`--session`, `zstudio open`).
pub fn open_in_background<T>(
    app: &AppHandle,
    what: &'static str,
    then_show: Option<String>,
    open: impl FnOnce(&AppHandle) -> Result<T, CommandError> + Send + 'static,
) {
    let app = app.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("{what}-open"))
        .spawn(move || match open(&app) {
            Ok(_) => {
                if let Some(session) = then_show {
                    crate::share::RequestedSession::show_once_opened(&app, session);
                }
            }
            Err(error) => {
                tracing::warn!(code = error.code.as_str(), "{}", error.message);
                app.dialog()
                    .message(&error.message)
                    .title(format!("The {what} workspace could not be opened"))
                    .kind(tauri_plugin_dialog::MessageDialogKind::Error)
                    .blocking_show();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot open the {what} workspace");
    }
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

/// The title of the question before a folder opens as a workspace.
pub const OPEN_FOLDER_TITLE: &str = "Open this folder as a workspace?";

/// Opens `path` as the workspace, as [`switch_workspace`], when it is one the studio opened
/// before; any other folder (a link's, a page's request) is asked natively first. `None`: the
/// user said no, and nothing changed (the recent list neither).
pub fn switch_workspace_asking(app: &AppHandle, path: &Path) -> Result<Option<WorkspaceInfo>, CommandError> {
    let recent = app.state::<Studio>().recent_workspaces()?;
    if !crate::consent::is_known_workspace(&recent, path)
        && !ask_natively(
            app,
            OPEN_FOLDER_TITLE,
            &format!(
                "{}\n\nThe studio will list its sessions, and its .zibby/studio.toml may declare agents \
                 (each asks before it first runs).",
                studio_core::visible::shown(&path.display().to_string())
            ),
            "_Open",
        )
    {
        tracing::info!("a folder not opened before was not opened: the user said no");
        return Ok(None);
    }
    switch_workspace(app, path).map(Some)
}

/// WebKit's switch (WebKitGTK 2.46 and later) to rasterise pages on the CPU.
pub const CPU_RENDERING_VARIABLE: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// WebKit's switch to paint the page into the window without compositing it in OpenGL.
pub const NO_COMPOSITING_VARIABLE: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// Without a GPU (no DRM render node, so OpenGL is Mesa's software rasteriser) the window
/// rasterises on the CPU and paints without compositing: WebKit's defaults there, rasterising and
/// then compositing every frame in software OpenGL, made the web process hold 80 to 180 MiB more
/// for no speed, and cost 150 ms of CPU for one changed label in the table against 9 ms
/// (docs/benchmarks.md). With a GPU, WebKit's choice stands; a variable the user set holds. Must
/// run before any thread starts (it sets variables of the process's environment, which the web
/// process inherits). Returns the variables it set: the agents the app starts are not given them.
pub fn choose_rendering() -> Vec<&'static str> {
    if has_render_node() {
        return Vec::new();
    }
    let set: Vec<&'static str> = [CPU_RENDERING_VARIABLE, NO_COMPOSITING_VARIABLE]
        .into_iter()
        .filter(|name| std::env::var_os(name).is_none())
        .collect();
    for name in &set {
        std::env::set_var(name, "1");
    }
    set
}

fn has_render_node() -> bool {
    std::fs::read_dir("/dev/dri").is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with("renderD"))
    })
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

fn folder_name(path: &Path) -> String {
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

/// Asks for a folder and opens it, on a thread of its own (menu, first launch).
pub fn pick_and_switch(app: &AppHandle) {
    let app = app.clone();
    let spawned = std::thread::Builder::new().name("folder-picker".into()).spawn(move || {
        if let Some(path) = pick_folder(&app) {
            if let Err(error) = switch_workspace(&app, &path) {
                tracing::warn!(code = error.code.as_str(), "{}", error.message);
            }
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot open the folder picker");
    }
}

/// Opens a folder in the file manager (`xdg-open`).
pub fn reveal(folder: &Path) -> Result<(), CommandError> {
    std::process::Command::new("xdg-open")
        .arg(folder)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|error| {
            studio_core::Error::Reveal {
                path: folder.to_owned(),
                reason: format!("xdg-open: {error}"),
            }
            .into()
        })
}

/// Where the app writes its log: the platform log folder (`$XDG_DATA_HOME/dev.zibby.studio/logs`,
/// as Tauri's `app_log_dir`).
pub fn log_dir() -> Option<PathBuf> {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))?;
    Some(data_home.join("dev.zibby.studio").join("logs"))
}

/// Makes the log folder private, before any file is written there: the folder `0700` (made so,
/// or changed to it), the files already there `0600`. A log holds paths, session ids and errors;
/// new files the appender makes later sit in the private folder.
pub fn make_log_dir_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_file()) {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Menu item ids.
const OPEN_WORKSPACE: &str = "open-workspace";
const OPEN_REMOTE: &str = "open-remote";
const OPEN_CLOUD: &str = "open-cloud";
const RECENT_PREFIX: &str = "recent:";
const REVEAL_LOGS: &str = "reveal-logs";
const IMPORT_SESSION: &str = "import-session";
const QUIT: &str = "quit";
const RELOAD: &str = "reload";
const ZOOM_IN: &str = "zoom-in";
const ZOOM_OUT: &str = "zoom-out";
const ZOOM_RESET: &str = "zoom-reset";

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
    let logs = log_dir().map_or_else(|| "none".to_owned(), |dir| dir.display().to_string());
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

/// What a menu item does.
pub fn on_menu(app: &AppHandle, id: &str) {
    let window = app.get_webview_window("main");
    match id {
        OPEN_WORKSPACE => pick_and_switch(app),
        // The window shows its form (host:path); its `workspace_open_remote` opens it.
        OPEN_REMOTE => {
            if let Err(error) = app.emit(crate::remote::REMOTE_OPEN_REQUESTED, ()) {
                tracing::warn!(%error, "cannot ask the window for a remote workspace");
            }
        }
        // The window shows its form (URL, endpoint); its `workspace_open_cloud` opens it.
        OPEN_CLOUD => {
            if let Err(error) = app.emit(crate::cloud::CLOUD_OPEN_REQUESTED, ()) {
                tracing::warn!(%error, "cannot ask the window for a cloud workspace");
            }
        }
        IMPORT_SESSION => crate::share::pick_and_import(app),
        REVEAL_LOGS => {
            if let Some(dir) = log_dir() {
                if let Err(error) = reveal(&dir) {
                    tracing::warn!("{}", error.message);
                }
            }
        }
        QUIT => {
            if may_quit(app) {
                quit_now(app);
            }
        }
        RELOAD => {
            if let Some(window) = window {
                let _ = window.reload();
            }
        }
        ZOOM_IN | ZOOM_OUT | ZOOM_RESET => {
            let zoom = ZOOM.with_step(id);
            if let Some(window) = window {
                let _ = window.set_zoom(zoom);
            }
        }
        _ => {
            if let Some(index) = id.strip_prefix(RECENT_PREFIX).and_then(|i| i.parse::<usize>().ok()) {
                let recent = app.state::<Studio>().recent_workspaces().unwrap_or_default();
                if let Some(root) = recent.get(index) {
                    if let Some(target) = root.to_str().filter(|root| crate::remote::is_remote(root)) {
                        crate::remote::open_remote_in_background(app, target.to_owned(), None);
                    } else if let Some(url) = root.to_str().filter(|root| crate::cloud::is_cloud(root)) {
                        crate::cloud::open_cloud_in_background(app, url.to_owned(), None);
                    } else if let Err(error) = switch_workspace(app, root) {
                        tracing::warn!(code = error.code.as_str(), "{}", error.message);
                    }
                }
            }
        }
    }
}

/// The window's zoom, in steps of 10 %, from 50 % to 200 %.
struct Zoom(std::sync::atomic::AtomicU32);

static ZOOM: Zoom = Zoom(std::sync::atomic::AtomicU32::new(10));

impl Zoom {
    fn with_step(&self, id: &str) -> f64 {
        let tenths = match id {
            ZOOM_IN => self.0.load(Ordering::SeqCst).saturating_add(1).min(20),
            ZOOM_OUT => self.0.load(Ordering::SeqCst).saturating_sub(1).max(5),
            _ => 10,
        };
        self.0.store(tenths, Ordering::SeqCst);
        f64::from(tenths) / 10.0
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    use studio_core::app::elsewhere::{Elsewhere, LinkState, RemoteStatus};

    /// A remote workspace that answers nothing (an import sent there: `NoWorkspace`): where its
    /// runs are is its host's business.
    struct Host;

    impl Elsewhere for Host {
        fn forward(&self, _: &str, _: serde_json::Value) -> Option<Result<serde_json::Value, studio_core::Error>> {
            None
        }

        fn export_session(
            &self,
            _: &str,
            _: bool,
            _: &std::path::Path,
        ) -> Result<studio_core::share::Exported, studio_core::Error> {
            Err(studio_core::Error::NoWorkspace)
        }

        fn import_file(
            &self,
            _: &std::path::Path,
            _: bool,
        ) -> Result<studio_core::share::ImportedSession, studio_core::Error> {
            Err(studio_core::Error::NoWorkspace)
        }

        fn status(&self) -> RemoteStatus {
            RemoteStatus {
                host: "build-box".to_owned(),
                path: "/srv/w".to_owned(),
                target: "ssh://build-box/srv/w".to_owned(),
                link: LinkState::Connected,
                lost: None,
            }
        }

        fn close(&self) {}
    }

    /// Issue 27, point 4: a remote workspace's runs are its host's (detached there): quitting
    /// neither counts nor asks about them; runs here are still asked about, and the question
    /// says the host's go on.
    #[test]
    fn quitting_asks_about_the_runs_here_only_and_says_the_hosts_go_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".zibby")).unwrap();
        std::fs::write(
            dir.path().join(".zibby/studio.toml"),
            "[[agent]]\nname = \"sleeper\"\nrun = [\"sleep\", \"30\"]\n",
        )
        .unwrap();
        let location = studio_core::store::StoreLocation::File(dir.path().join("studio.sqlite"));
        let (studio, _events) = studio_core::app::Studio::open(Some(dir.path()), Ok(location));
        let workspace = studio.workspace().unwrap();
        let found = studio_core::agents::find(dir.path(), "sleeper", false).unwrap();
        let store = studio.store().unwrap();
        store
            .trust_launch(&workspace, &found.launch.digest, std::time::SystemTime::now())
            .unwrap();

        studio.open_elsewhere(Arc::new(Host)).unwrap();
        assert!(
            super::quit_question(&studio).is_none(),
            "a remote workspace open, no run here: quitting asks nothing"
        );
        // Import… goes to the host (whose fake answers `NoWorkspace`), never into the folder here.
        let sent = studio.import(dir.path(), false).unwrap_err();
        assert_eq!(sent.code(), studio_core::ErrorCode::NoWorkspace);

        studio.open_workspace(dir.path()).unwrap();
        let started = studio.run_agent("sleeper", Some("p".to_owned()), None, None).unwrap();
        studio.open_elsewhere(Arc::new(Host)).unwrap();
        let asked = super::quit_question(&studio).expect("a run here is asked about");
        assert_eq!(asked.live_runs, 1);
        assert_eq!(asked.remote_host.as_deref(), Some("build-box"));

        studio.open_workspace(dir.path()).unwrap();
        studio.stop(&started.run_id, true).unwrap();
        studio.shut_down();
    }

    /// Issue 26, point 8: the log was world-readable (0644 in 0755).
    #[test]
    fn the_log_folder_and_its_files_are_private() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("dev.zibby.studio/logs");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = dir.join("zibby-studio.2026-01-01.log");
        std::fs::write(&old, "zibby-studio://open?workspace=/home/me\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        super::make_log_dir_private(&dir).unwrap();
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&old), 0o600);

        let fresh = home.path().join("fresh/logs");
        super::make_log_dir_private(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
