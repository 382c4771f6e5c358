//! A captured log imported: a run's stdout (and stderr) recorded as one run of a session whose
//! folder is empty.

use std::path::Path;
use std::time::SystemTime;

use super::staging::{commit_import, create_private_dir, refuse_existing, Staging};
use crate::protocol::Stream;
use crate::runs::runner::{new_session_id, record_captured_output};
use crate::sessions::session::Workspace;
use crate::sessions::untrusted;
use crate::share::options::{ImportKind, ImportOptions, ImportedSession};
use crate::store::{Level, NewRun, SessionRecord, Store};
use crate::timeline::{Exit, RunEnd};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// A captured run: its stdout `source` (and `options.stderr`), read as `zstudio parse` reads a
/// log (markers, else the human timeline), recorded as one run of a session whose folder is
/// empty. Its id is the `◆ Session <id>` line's, else (or with `as_new`) a new one.
pub(super) fn import_log(
    store: &Store,
    workspace: &Workspace,
    source: &Path,
    options: &ImportOptions,
    now: SystemTime,
) -> Result<ImportedSession, Error> {
    let mut files = vec![(Stream::Stdout, source.to_owned())];
    if let Some(stderr) = &options.stderr {
        files.push((Stream::Stderr, stderr.clone()));
    }
    // Every line is stored (and indexed for search): the logs together are bounded as a bundle's
    // entries are, before anything is read.
    let mut size = 0u64;
    for (stream, path) in &files {
        let (_, len) = untrusted::open_regular(path)?;
        size = size.saturating_add(len);
        if size > options.limits.max_bytes {
            return Err(options.limits.bytes_exceeded(path, stream.as_str()));
        }
    }
    let end = options.exit_code.map(|status| RunEnd {
        exit: Exit::from_shell_status(status),
        signalled_by_studio: false,
    });
    let staging = Staging::new(workspace)?;
    let root = staging.session();
    create_private_dir(&root)?;
    // Recorded under a provisional id first: the log names its session only as it is read.
    let provisional = new_session_id();
    let (session_id, path) = commit_import(store, &staging, Some(now), || {
        store
            .import_begin(
                workspace,
                &provisional,
                &SessionRecord::default(),
                options.recorded_from(source),
                now,
            )?
            .finish()?;
        let run_id = store.run_insert(
            workspace,
            &NewRun {
                session: &provisional,
                agent: None,
                command: &[],
                replayed_node: None,
                prompt: None,
                started_at: now,
            },
        )?;
        let run_span = store.span_start(&run_id, None, "run", "run", 0, now)?;
        let timeline = record_captured_output(store, &run_id, &files, end, now)?;
        store.span_end(run_span, timeline.status, now)?;
        store.run_log(
            &run_id,
            Level::Info,
            "run.imported",
            &format!(
                "imported from the captured log {}",
                options.recorded_from(source).display()
            ),
            serde_json::json!({ "status": timeline.status, "exit_code": timeline.exit_code }),
            now,
        )?;
        let named = timeline.session_id.as_deref().and_then(|id| SessionId::parse(id).ok());
        match named {
            Some(named) if !options.as_new => {
                refuse_existing(store, workspace, &named)?;
                store.imported_session_rename(workspace, &provisional, &named)?;
                Ok(named)
            }
            _ => Ok(provisional.clone()),
        }
    })?;
    Ok(ImportedSession {
        session_id,
        kind: ImportKind::Log,
        path,
    })
}
