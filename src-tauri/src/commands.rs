//! The IPC commands, named noun_verb. Each is one call into `studio-core`.

use std::time::SystemTime;

use serde::Serialize;
use studio_core::SessionSummary;
use tauri::State;

use crate::{CommandError, Studio};

/// The open workspace, as the window's header shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceInfo {
    pub root: String,
    pub sessions_dir: String,
}

#[tauri::command]
pub fn workspace_get(studio: State<'_, Studio>) -> Result<WorkspaceInfo, CommandError> {
    let workspace = studio.workspace()?;
    Ok(WorkspaceInfo {
        root: workspace.root().display().to_string(),
        sessions_dir: workspace.sessions_dir().display().to_string(),
    })
}

/// Reads every session folder, so it runs off the main thread (`async`).
#[tauri::command(async)]
pub fn sessions_list(studio: State<'_, Studio>) -> Result<Vec<SessionSummary>, CommandError> {
    Ok(studio.workspace()?.list_sessions(SystemTime::now())?)
}
