//! The IPC commands, named noun_verb. Each is one call into `studio-core`.
//!
//! Arguments are snake_case on both sides (`{session_id}`), like the shapes the commands return.
//! Commands that touch the disk or the store run off the main thread (`async`).

use std::time::SystemTime;

use serde::Serialize;
use studio_core::agents::{self, Agent};
use studio_core::runner::StartedRun;
use studio_core::store::{RunRecord, SessionRow};
use studio_core::SessionId;
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

/// The sessions of the workspace, pinned first, with what the store knows of them.
#[tauri::command(async)]
pub fn sessions_list(studio: State<'_, Studio>) -> Result<Vec<SessionRow>, CommandError> {
    studio.sessions(SystemTime::now())
}

#[tauri::command(async, rename_all = "snake_case")]
pub fn pin_add(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
    Ok(studio
        .store()?
        .pin(studio.workspace()?, &SessionId::parse(&session_id)?, SystemTime::now())?)
}

#[tauri::command(async, rename_all = "snake_case")]
pub fn pin_remove(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
    Ok(studio
        .store()?
        .unpin(studio.workspace()?, &SessionId::parse(&session_id)?)?)
}

/// The agents of the workspace's `.zibby/studio.toml` (none without the file).
#[tauri::command(async)]
pub fn agents_list(studio: State<'_, Studio>) -> Result<Vec<Agent>, CommandError> {
    Ok(agents::load(studio.workspace()?.root())?)
}

/// Runs an agent of `.zibby/studio.toml` on a prompt, in a new session or in `session_id`.
#[tauri::command(async, rename_all = "snake_case")]
pub fn run_start(
    studio: State<'_, Studio>,
    agent: String,
    prompt: String,
    session_id: Option<String>,
) -> Result<StartedRun, CommandError> {
    let session = session_id.as_deref().map(SessionId::parse).transpose()?;
    Ok(studio
        .supervisor()?
        .start(studio.agent_run_request(&agent, prompt, session)?)?)
}

/// Stops a live run: gracefully (the current node finishes first), or by force. Returns what
/// the supervisor is doing about it.
#[tauri::command(async, rename_all = "snake_case")]
pub fn run_stop(studio: State<'_, Studio>, run_id: String, force: bool) -> Result<String, CommandError> {
    Ok(studio.supervisor()?.stop(&run_id, force)?)
}

/// The runs of the workspace (or of one session), newest first.
#[tauri::command(async, rename_all = "snake_case")]
pub fn runs_list(studio: State<'_, Studio>, session_id: Option<String>) -> Result<Vec<RunRecord>, CommandError> {
    let session = session_id.as_deref().map(SessionId::parse).transpose()?;
    Ok(studio.store()?.runs(studio.workspace()?, session.as_ref())?)
}

/// Deletes a session: the store's records of it, and its folder (to the system trash). Refused
/// while one of its runs is live (code `session_live`).
#[tauri::command(async, rename_all = "snake_case")]
pub fn session_delete(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
    let id = SessionId::parse(&session_id)?;
    Ok(studio
        .store()?
        .session_delete(studio.workspace()?, &id, studio_core::process::move_to_trash)?)
}
