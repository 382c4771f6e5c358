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
/// the window asks for them when it shows them.
pub fn forward(events: Receiver<RunEvent>, app: AppHandle) {
    for event in events.iter().filter(|event| !matches!(event, RunEvent::Output { .. })) {
        if let Err(error) = app.emit(RUN_EVENT, &event) {
            tracing::warn!(%error, run_id = event.run_id(), "cannot send a run event to the window");
        }
    }
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
