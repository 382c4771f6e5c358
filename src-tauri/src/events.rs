//! Events to the window: the supervisor's run events (`run-event`), and the watcher's session
//! changes (`sessions-changed`).

use std::sync::mpsc::Receiver;

use studio_core::runner::RunEvent;
use studio_core::watcher::{Change, ChangeSink};
use tauri::{AppHandle, Emitter};

/// The Tauri event every [`RunEvent`] but `output` is sent as (its payload: the event, tagged by
/// `type`).
pub const RUN_EVENT: &str = "run-event";

/// Sends each event to the window until the supervisor is gone. Output lines stay in the store:
/// the window asks for them when it shows them. A run that finishes while the window is not
/// focused is also a desktop notification.
pub fn forward(events: Receiver<RunEvent>, app: AppHandle) {
    for event in events.iter().filter(|event| !matches!(event, RunEvent::Output { .. })) {
        if let Err(error) = app.emit(RUN_EVENT, &event) {
            tracing::warn!(%error, run_id = event.run_id(), "cannot send a run event to the window");
        }
        if let RunEvent::RunFinished {
            session_id,
            status,
            elapsed_ms,
            ..
        } = &event
        {
            notify_unless_focused(&app, session_id, status.as_str(), *elapsed_ms);
        }
    }
}

fn notify_unless_focused(app: &AppHandle, session_id: &str, status: &str, elapsed_ms: u64) {
    use tauri::Manager;
    use tauri_plugin_notification::NotificationExt;
    let focused = app
        .get_webview_window("main")
        .and_then(|window| window.is_focused().ok())
        .unwrap_or(false);
    if focused {
        return;
    }
    let shown = app
        .notification()
        .builder()
        .title(format!("Run {status}"))
        .body(format!(
            "Session {session_id}, after {:.1} s",
            elapsed_ms as f64 / 1000.0
        ))
        .show();
    if let Err(error) = shown {
        tracing::debug!(%error, "no desktop notification");
    }
}

/// The Tauri event a run's new output is announced as, at most about ten times a second per run
/// (its payload: `{run_id, session_id, lines}`, how many lines the run has printed so far; the
/// window reads them from the store).
pub const RUN_OUTPUT: &str = "run-output";

#[derive(serde::Serialize, Clone)]
struct RunOutput<'a> {
    run_id: &'a str,
    session_id: &'a str,
    lines: u64,
}

/// The sink of the runs' output changes: notices to the window.
pub fn run_output(app: AppHandle) -> ChangeSink {
    let printed: std::sync::Mutex<std::collections::HashMap<String, u64>> = Default::default();
    std::sync::Arc::new(move |change: Change| {
        if let Change::RunOutputAppended {
            session_id,
            run_id,
            lines,
            skipped,
            ..
        } = &change
        {
            let mut printed = printed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let total = printed.entry(run_id.clone()).or_default();
            *total += lines.len() as u64 + skipped;
            let payload = RunOutput {
                run_id,
                session_id: session_id.as_str(),
                lines: *total,
            };
            if let Err(error) = app.emit(RUN_OUTPUT, payload) {
                tracing::warn!(%error, "cannot send an output notice to the window");
            }
        }
    })
}

/// The Tauri event a session folder appearing, changing or going is sent as (its payload:
/// `{type, session_id}`; the window lists the sessions again).
pub const SESSIONS_CHANGED: &str = "sessions-changed";

#[derive(serde::Serialize, Clone)]
struct SessionsChanged<'a> {
    r#type: &'static str,
    session_id: &'a str,
}

/// The watcher's sink: session changes to the window (output lines stay on disk until shown).
pub fn sessions_changed(app: AppHandle) -> ChangeSink {
    std::sync::Arc::new(move |change: Change| {
        let kind = match &change {
            Change::SessionAdded { .. } => "session_added",
            Change::SessionUpdated { .. } => "session_updated",
            Change::SessionRemoved { .. } => "session_removed",
            _ => return,
        };
        let payload = SessionsChanged {
            r#type: kind,
            session_id: change.session_id().as_str(),
        };
        if let Err(error) = app.emit(SESSIONS_CHANGED, payload) {
            tracing::warn!(%error, "cannot send a session change to the window");
        }
    })
}
