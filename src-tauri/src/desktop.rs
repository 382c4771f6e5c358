//! The desktop around the window: quitting with live runs, opening workspaces (a folder here,
//! one on another machine, a bucket prefix: [`open_target`], [`switch_workspace`]), what the
//! menu's items do, and revealing folders. The title, the menu itself and the system's dialogs are
//! `window`'s.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use studio_args::target::WorkspaceTarget;
use studio_core::app::operations::WorkspaceInfo;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_dialog::DialogExt;

use crate::opening::Opening;
use crate::window::{
    ask_natively, pick_folder, IMPORT_SESSION, OPEN_CLOUD, OPEN_REMOTE, OPEN_WORKSPACE, QUIT, RECENT_PREFIX, RELOAD,
    REVEAL_LOGS, ZOOM_IN, ZOOM_OUT, ZOOM_RESET,
};
use crate::{CommandError, Studio};

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

/// Opens `path` as the workspace and tells the window; the menu's recent list follows. A root
/// the studio recorded for a workspace on another machine or a bucket prefix opens that
/// ([`WorkspaceTarget::parse`]); blocks meanwhile.
pub fn switch_workspace(app: &AppHandle, path: &Path) -> Result<WorkspaceInfo, CommandError> {
    match WorkspaceTarget::parse(path) {
        WorkspaceTarget::Remote(target) => {
            crate::remote::open_remote(app, &target)?;
            crate::forward::remote_answer("workspace_get", &[("studio", &app.state::<Studio>())])
                .unwrap_or_else(|| Err(studio_core::Error::NoWorkspace.into()))
        }
        WorkspaceTarget::Cloud(url) => {
            crate::cloud::open_cloud(app, studio_core::bucket::Source::parse(&url)?, Default::default())
        }
        WorkspaceTarget::Local(path) => {
            let workspace = app.state::<Studio>().open_workspace(&path)?;
            let info = WorkspaceInfo::from(&workspace);
            crate::window::show_workspace(app, Some(&info), &crate::window::folder_name(workspace.root()));
            Ok(info)
        }
    }
}

/// Opens `target` (the command line, a second launch, Open Recent). A workspace on another
/// machine or a bucket prefix opens on a thread of its own (connecting, a first listing take a
/// while): a failure is said in the system's dialog, its message naming the host or source, and
/// once it is open the window shows session `then_show` of it (`--session`, `zstudio open`). A
/// folder here opens now, as [`switch_workspace`] opens it (a failure is logged).
pub fn open_target(app: &AppHandle, target: WorkspaceTarget, then_show: Option<String>) {
    match target {
        WorkspaceTarget::Local(path) => match switch_workspace(app, &path) {
            Ok(_) => {
                if let Some(session) = then_show {
                    crate::share::show_session(app, &session);
                }
            }
            Err(error) => tracing::warn!(code = error.code.as_str(), "{}", error.message),
        },
        WorkspaceTarget::Remote(target) => open_in_background(app, "remote", then_show, move |app| {
            crate::remote::open_remote(app, &target)
        }),
        WorkspaceTarget::Cloud(url) => open_in_background(app, "cloud", then_show, move |app| {
            crate::cloud::open_cloud(app, studio_core::bucket::Source::parse(&url)?, Default::default())
        }),
    }
}

/// Opens a workspace that is not a local folder (`what`: "cloud", "remote") with `open` on a
/// thread of its own; a failure is said in the system's dialog, its message naming the source or
/// host. Once it is open, the window shows session `then_show` of it.
fn open_in_background<T>(
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

/// Whether the user allows `opening`: at once when the studio opened it before (Open Recent
/// has it), else the answer to the native question worded for what it opens (a folder, a host, a
/// bucket and where its credentials go). A link's and the page's workspaces come through here.
pub fn allowed_to_open(app: &AppHandle, opening: &Opening) -> Result<bool, CommandError> {
    if opening.is_known(&app.state::<Studio>().recent_workspaces()?) {
        return Ok(true);
    }
    let question = opening.question();
    let allowed = ask_natively(app, question.title, &question.text, "_Open");
    if !allowed {
        tracing::info!("a workspace not opened before was not opened: the user said no");
    }
    Ok(allowed)
}

/// Opens `path` (a folder, or a host's or a bucket's root as Open Recent records them) as the
/// workspace, as [`switch_workspace`] does, once [`allowed_to_open`]. `None`: the user said no,
/// and nothing changed (the recent list neither).
pub fn switch_workspace_asking(app: &AppHandle, path: &Path) -> Result<Option<WorkspaceInfo>, CommandError> {
    let opening = Opening::read(WorkspaceTarget::parse(path))?;
    if !allowed_to_open(app, &opening)? {
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
            if let Some(dir) = crate::logs::log_dir() {
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
                    open_target(app, WorkspaceTarget::parse(root), None);
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
            .trust_launch(&workspace, &found.launch, std::time::SystemTime::now())
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
}
