//! Sharing from the window (`studio_core::share` does the work): Export… with the native
//! save dialog, File > Import… with the native file picker, a bundle, folder or log dropped onto
//! the window, and the session a launch asks for (`--session`, `zstudio open`). The window hears
//! [`SESSION_OPENED`] with the session to show, or [`IMPORT_FAILED`] with why not.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use studio_core::SessionId;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_dialog::DialogExt;

use crate::{CommandError, Studio};

/// The Tauri event that asks the window to show a session (imported, or asked for by a launch);
/// its payload: [`SessionOpened`].
pub const SESSION_OPENED: &str = "session-opened";

/// The Tauri event an import from the menu or a drop failed with; its payload: the
/// [`CommandError`].
pub const IMPORT_FAILED: &str = "import-failed";

/// A session for the window to show.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionOpened {
    pub session_id: String,
}

/// Where an export went and what it redacted, for the window to say.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ExportedBundle {
    pub session_id: String,
    pub path: String,
    /// How many secrets were replaced by `[redacted]` in what the studio recorded of how the
    /// session ran (its commands, errors, log lines, `.session-info.json`); what the agent
    /// printed and wrote is in the bundle as it is.
    pub secrets_redacted: u64,
}

/// The session the command line asked for (`--session`), until the window takes it.
#[derive(Default)]
pub struct RequestedSession(Mutex<Option<String>>);

impl RequestedSession {
    pub fn new(session: Option<String>) -> RequestedSession {
        RequestedSession(Mutex::new(session))
    }

    /// Asks the window to show `session_id` of a workspace opened in the background (a remote or
    /// cloud workspace given with `--session`): kept for a window that asks later
    /// (`session_requested`), and told to one already listening.
    pub fn show_once_opened<R: Runtime>(app: &AppHandle<R>, session_id: String) {
        let requested = app.state::<RequestedSession>();
        *requested.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(session_id.clone());
        show_session(app, &session_id);
    }

    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}

/// Asks where to save (the system's save dialog), then exports there; `None` when cancelled.
/// Blocks: call it off the main thread.
pub fn export_with_dialog<R: Runtime>(
    app: &AppHandle<R>,
    session_id: &str,
) -> Result<Option<ExportedBundle>, CommandError> {
    let id = SessionId::parse(session_id)?;
    let chosen = app
        .dialog()
        .file()
        .set_title("Export session")
        .set_file_name(format!("{id}.zip"))
        .add_filter("Session bundle", &["zip"])
        .blocking_save_file()
        .and_then(|path| path.into_path().ok());
    let Some(path) = chosen else { return Ok(None) };
    let exported = app.state::<Studio>().export_session(&id, &path, false)?;
    Ok(Some(ExportedBundle {
        secrets_redacted: exported.redaction.secrets.iter().map(|s| s.count).sum(),
        session_id: exported.session_id,
        path: exported.path.display().to_string(),
    }))
}

/// Imports `path` into the open workspace and asks the window to show it (or says why not).
pub fn import_and_show<R: Runtime>(app: &AppHandle<R>, path: &Path) {
    match app.state::<Studio>().import(path, false) {
        Ok(imported) => {
            tracing::info!(session_id = %imported.session_id, source = %path.display(), "imported");
            show_session(app, imported.session_id.as_str());
        }
        Err(error) => {
            tracing::warn!(code = error.code().as_str(), "{error}");
            if let Err(error) = app.emit(IMPORT_FAILED, CommandError::from(error)) {
                tracing::warn!(%error, "cannot tell the window the import failed");
            }
        }
    }
}

/// Asks the window to show `session_id`.
pub fn show_session<R: Runtime>(app: &AppHandle<R>, session_id: &str) {
    let opened = SessionOpened {
        session_id: session_id.to_owned(),
    };
    if let Err(error) = app.emit(SESSION_OPENED, &opened) {
        tracing::warn!(%error, "cannot ask the window to show the session");
    }
}

/// File > Import…: the system's file picker, then the import, on a thread of their own.
pub fn pick_and_import<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    let spawned = std::thread::Builder::new().name("import".into()).spawn(move || {
        let chosen = app
            .dialog()
            .file()
            .set_title("Import a session bundle or a captured log")
            .add_filter("Session bundle", &["zip"])
            .add_filter("Captured log", &["log", "txt"])
            .blocking_pick_file()
            .and_then(|path| path.into_path().ok());
        if let Some(path) = chosen {
            import_and_show(&app, &path);
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the import");
    }
}

/// Files or folders dropped onto the window: each imported, on a thread of its own.
pub fn import_dropped<R: Runtime>(app: &AppHandle<R>, paths: Vec<PathBuf>) {
    let app = app.clone();
    let spawned = std::thread::Builder::new().name("import-drop".into()).spawn(move || {
        for path in paths {
            import_and_show(&app, &path);
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the import");
    }
}
