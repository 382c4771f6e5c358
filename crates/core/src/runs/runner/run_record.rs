//! The studio's record of a run written into its session folder once the run's end is recorded
//! (`sessions::session`'s `run_record` owns the file: its shape, its writer and its reader): from
//! what the store holds of the run, by every path that settles one (a followed or adopted run's
//! end, a kept run finished from its keeper's files, a run recovered after its studio died). A
//! run that ran no node and left its folder empty (a command that could not start) gets none.

use crate::sessions::session::{
    one_line, write_run_record, FolderAtEnd, RecordedNode, RunRecordFile, Workspace, MAX_RECORD_NODES,
    RUN_RECORD_FORMAT, RUN_RECORD_VERSION,
};
use crate::status::Status;
use crate::store::{SpanKind, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Writes the record of the ended run `run_id` into its session folder; a run still `running`
/// gets none. What cannot be written is logged: the run's record in the store stands.
pub(super) fn record_run_in_folder(store: &Store, run_id: &str) {
    if let Err(error) = write_record(store, run_id) {
        tracing::warn!(run_id, %error, "cannot write the run's record into its session folder");
    }
}

fn write_record(store: &Store, run_id: &str) -> Result<(), Error> {
    let run = store.run(run_id)?;
    let Some(ended_at) = run.ended_at.filter(|_| run.status != Status::Running) else {
        return Ok(());
    };
    let workspace = Workspace::from_canonical_root(run.workspace.clone());
    let session = SessionId::parse(&run.session_id)?;
    let path = workspace.session_path(&session);
    let (title, agent) = store.session_names(&workspace, &session)?;
    let nodes = store
        .spans(run_id)?
        .into_iter()
        .filter(|span| span.kind == SpanKind::Node)
        .take(MAX_RECORD_NODES)
        .map(|span| RecordedNode {
            // A node the run's end left open ended with it (as the session model reads it).
            status: match span.status {
                Status::Running => run.status,
                status => status,
            },
            name: span.name,
            started_at: span.started_at,
            ended_at: span.ended_at,
        })
        .collect::<Vec<_>>();
    if nodes.is_empty() && folder_is_empty(&path) {
        // Nothing ran and nothing was written (a command that could not start): nothing to
        // describe, and the empty folder may go (`zstudio run` removes it).
        return Ok(());
    }
    let record = RunRecordFile {
        format: RUN_RECORD_FORMAT.to_owned(),
        version: RUN_RECORD_VERSION,
        run_id: run.id.clone(),
        agent: agent.as_deref().and_then(one_line),
        title: title.as_deref().and_then(one_line),
        status: run.status,
        stopped_by: run.stopped_by,
        exit_code: run.exit_code,
        started_at: run.started_at,
        ended_at,
        nodes,
        folder_at_end: FolderAtEnd::read(&path),
    };
    write_run_record(&path, &record)
}

/// Whether the session folder has nothing in it (or is not there).
fn folder_is_empty(path: &std::path::Path) -> bool {
    std::fs::read_dir(path).map_or(true, |mut entries| entries.next().is_none())
}
