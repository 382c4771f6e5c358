//! The ids a call names, checked and looked up: a session, a run (a run id, or a session id for
//! its last run), a node of a run.

use studio_core::app::Studio;
use studio_core::store::RunRecord;
use studio_core::SessionId;

use super::answer::{Failure, ToolError};

/// The run `id` names: a run of this workspace by its id, or a session's last run; `None` for
/// a session without a recorded run.
pub fn resolve_run(studio: &Studio, id: &str) -> Result<Option<RunRecord>, Failure> {
    no_dots(id, "id")?;
    let (store, workspace) = (studio.store()?, studio.workspace()?);
    if let Ok(run) = store.run(id) {
        if run.workspace == workspace.root() {
            return Ok(Some(run));
        }
    }
    let session = session_id(id)?;
    if let Some(last) = store.runs(&workspace, Some(&session))?.into_iter().next() {
        return Ok(Some(last));
    }
    if session_known(studio, &session)? {
        Ok(None)
    } else {
        Err(ToolError::new(
            "session_not_found",
            format!("no run and no session `{id}` in this workspace"),
        )
        .into())
    }
}

/// The run `id` names; a session the studio never ran is an error saying so.
pub fn require_run(studio: &Studio, id: &str) -> Result<RunRecord, Failure> {
    resolve_run(studio, id)?.ok_or_else(|| {
        ToolError::new(
            "run_not_found",
            format!("session {id} has no run recorded by the studio (it ran elsewhere): get_session reads its folder"),
        )
        .into()
    })
}

/// An error unless run `run_id` has a node named `node` (by its spans).
pub fn require_node(studio: &Studio, run_id: &str, node: &str) -> Result<(), Failure> {
    let spans = studio.run_spans(run_id)?;
    if spans
        .iter()
        .any(|span| span.kind == studio_core::store::SpanKind::Node && span.name == node)
    {
        Ok(())
    } else {
        Err(ToolError::new(
            "invalid_node_name",
            format!("run {run_id} has no node `{}`", studio_core::visible::shown(node)),
        )
        .into())
    }
}

/// An id refused before it is looked up when it holds `..` (never a path).
pub fn no_dots(id: &str, field: &str) -> Result<(), ToolError> {
    if id.contains("..") {
        Err(ToolError::new(
            "invalid_session_id",
            format!("{field} holds `..`: an id never does"),
        ))
    } else {
        Ok(())
    }
}

pub fn session_id(id: &str) -> Result<SessionId, ToolError> {
    no_dots(id, "id")?;
    Ok(SessionId::parse(id)?)
}

/// Whether the store or the folder knows session `id` (in a bucket's workspace, a session listed
/// and not fetched yet is fetched: its folder is then there).
pub fn session_known(studio: &Studio, id: &SessionId) -> Result<bool, Failure> {
    let (store, workspace) = (studio.store()?, studio.workspace()?);
    Ok(store.session_exists(&workspace, id)? || studio.session_folder(id.as_str()).is_ok())
}
