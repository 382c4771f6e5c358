//! Run events to the window: the supervisor's events, as the Tauri event `run-event`.

use std::sync::mpsc::Receiver;

use studio_core::runner::RunEvent;
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
