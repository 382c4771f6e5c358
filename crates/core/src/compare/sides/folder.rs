//! A session folder as a side: its nodes, each with its raw stream.

use std::time::SystemTime;

use crate::sessions::session::Workspace;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

use super::{artifacts_by_name, Execution, Hashes, Lines, RunSummary, Side};

impl Side {
    pub(super) fn open_folder(workspace: &Workspace, id: &SessionId) -> Result<Side, Error> {
        let session = workspace.read_session(id, SystemTime::now())?;
        let executions = session
            .nodes
            .iter()
            .map(|node| Execution {
                name: node.name.clone(),
                status: node.status,
                started_ms: None,
                elapsed_ms: None,
                discarded: false,
                usage: node.usage.clone(),
            })
            .collect();
        let nodes = session
            .nodes
            .iter()
            .map(|node| node.artifacts.raw_stream.as_ref().map(|f| f.path.clone()))
            .collect();
        let mut side = Side {
            summary: RunSummary {
                session_id: Some(id.to_string()),
                run_id: None,
                status: session.status,
                elapsed_ms: None,
                usage: session.usage.clone(),
            },
            executions,
            artifacts: artifacts_by_name(session.nodes),
            has_files: true,
            hashes: Hashes::default(),
            lines: Lines::Files {
                nodes,
                whole: session.raw_stream_output.map(|f| f.path),
            },
        };
        let mut hashes = Hashes::default();
        side.each_line(None, &mut |target, at, text| {
            hashes.push(target, at, text);
            true
        })?;
        side.hashes = hashes;
        Ok(side)
    }
}
