//! The text of session folders' node output files in the search index (hits of kind `file`):
//! what a run the studio did not start (a terminal, CI, a bucket's mirror) printed, which the
//! store has no record of.
//!
//! Indexed at search time ([`index_workspace`]), not when listing: a launch or a listing reads no
//! output file. Each session folder has a print ([`print_of`]: the times and sizes of the folder,
//! its `nodes/`, and each node's output files) kept in `folder_text`; a folder whose print did not
//! change is not read again, and of one that did only the files whose size or time changed are
//! read (`folder_files`, one row per file, whose FTS rowid is `id * 8 + 4`). Of a file only its
//! last [`TEXT_BYTES`] are indexed (a bucket mirror holds no more of a large output: `bucket`),
//! from the first whole line; a file holding NUL bytes is not text and is left out. Folders are
//! written in transactions of at most [`BATCH_SESSIONS`] sessions and [`BATCH_BYTES`] of text, so
//! memory stays bounded whatever the workspace holds.
//!
//! A workspace watched in this process (the window's, a studio server's: `index::keeping_current`
//! tells [`Watched`](super::watched::Watched) of it and of each change the watcher sees) is not walked again while no change
//! was seen since its last walk, for [`WALKED_AT_MOST_EVERY`](super::watched::WALKED_AT_MOST_EVERY): a search then costs the query
//! alone. The listing's folder index trusts the same watcher. Where nothing watches (the CLI),
//! every search walks the folders.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use super::connection::{write_transaction, QueryResult, Store};
use super::file_text::{read_tail, TEXT_BYTES};
use super::search::{self, Kind};
use super::workspaces;
use crate::sessions::session::{self, node_folders, Workspace, NODES_DIR, RAW_OUTPUT_FILE, RAW_STREAM_FILE};
use crate::vocabulary::error::Error;

/// Sessions written to the index in one transaction at most.
pub const BATCH_SESSIONS: usize = 128;
/// Text read before it is written to the index at most (one session's files may go past it).
const BATCH_BYTES: u64 = 64 * 1024 * 1024;
/// A node's output files, as the engine (`<node>/raw_stream_output.txt`) and the documented
/// layout (`nodes/<node>/raw_output.txt`) write them.
const OUTPUT_FILES: [&str; 2] = [RAW_STREAM_FILE, RAW_OUTPUT_FILE];

/// One output file of a session folder, as its print saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OutputFile {
    /// Relative to the session folder, `/`-separated.
    path: String,
    node: String,
    bytes: u64,
    modified: String,
}

/// A session folder whose print changed since it was indexed (or that never was).
struct Changed {
    session_id: String,
    folder: PathBuf,
    print: String,
    files: Vec<OutputFile>,
}

/// What was read of a changed file: where the text indexed begins, and the text (`None` when
/// the file is not text).
struct ReadText {
    first_byte: u64,
    text: Option<String>,
}

/// Brings the index of `workspace`'s session folders' output files up to date: the folders that
/// changed since they were indexed are read (only their files that changed), the sessions gone
/// are dropped. Returns how many sessions were indexed again.
pub(super) fn index_workspace(store: &Store, workspace: &Workspace) -> Result<usize, Error> {
    let started = std::time::Instant::now();
    let walked_at = match store.watched.to_walk(workspace.root()) {
        Ok(()) => return Ok(0),
        Err(at) => at,
    };
    let (workspace_key, mut known) = store.with_conn(|conn| {
        let key = workspaces::key(conn, workspace)?;
        let mut statement = conn.prepare_cached("SELECT session_id, print FROM folder_text WHERE workspace_id = ?1")?;
        let known: HashMap<String, String> = statement
            .query_map([key], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok((key, known))
    })?;
    let folders = session::session_folders(workspace)?;
    let looked = session::in_parallel(&folders, |(folder, id)| {
        let previous = known.get(id.as_str());
        Ok(print_of(folder).and_then(|(print, files)| {
            (previous != Some(&print)).then(|| Changed {
                session_id: id.as_str().to_owned(),
                folder: folder.clone(),
                print,
                files,
            })
        }))
    })?;
    for (_, id) in &folders {
        known.remove(id.as_str());
    }
    let gone: Vec<String> = known.into_keys().collect();
    let changed: Vec<Changed> = looked.into_iter().flatten().collect();
    let count = changed.len();
    for batch in batches(changed) {
        let read = session::in_parallel(&batch, |changed| Ok(read_changed(store, workspace_key, changed)))?;
        store.with_conn(|conn| {
            let tx = write_transaction(conn)?;
            for (changed, texts) in batch.iter().zip(read) {
                write_session(&tx, workspace_key, changed, texts?)?;
            }
            Ok(tx.commit()?)
        })?;
    }
    if !gone.is_empty() {
        store.with_conn(|conn| {
            let tx = write_transaction(conn)?;
            for session_id in &gone {
                forget(&tx, workspace_key, session_id)?;
            }
            Ok(tx.commit()?)
        })?;
    }
    if let Some(at) = walked_at {
        store.watched.walked(workspace.root(), at, started);
    }
    Ok(count)
}

/// The changed folders in groups of at most [`BATCH_SESSIONS`] whose text read is at most
/// [`BATCH_BYTES`] (a folder over it alone).
fn batches(changed: Vec<Changed>) -> Vec<Vec<Changed>> {
    let mut batches: Vec<Vec<Changed>> = Vec::new();
    let mut bytes = 0;
    for folder in changed {
        let size: u64 = folder.files.iter().map(|f| f.bytes.min(TEXT_BYTES)).sum();
        match batches.last_mut() {
            Some(batch) if batch.len() < BATCH_SESSIONS && bytes + size <= BATCH_BYTES => {
                bytes += size;
                batch.push(folder);
            }
            _ => {
                bytes = size;
                batches.push(vec![folder]);
            }
        }
    }
    batches
}

/// The files of a changed folder that changed since they were indexed, read.
fn read_changed(store: &Store, workspace_key: i64, changed: &Changed) -> Result<HashMap<String, ReadText>, Error> {
    let indexed: HashMap<String, (u64, String)> = store.with_conn(|conn| {
        let mut statement = conn.prepare_cached(
            "SELECT path, bytes, modified FROM folder_files WHERE workspace_id = ?1 AND session_id = ?2",
        )?;
        let rows = statement.query_map(params![workspace_key, changed.session_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                (r.get::<_, i64>(1)? as u64, r.get::<_, String>(2)?),
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    })?;
    let mut read = HashMap::new();
    for file in &changed.files {
        if indexed.get(&file.path) == Some(&(file.bytes, file.modified.clone())) {
            continue;
        }
        let (first_byte, text) = match read_tail(&changed.folder.join(&file.path), file.bytes) {
            Some((first_byte, text)) => (first_byte, text),
            // Gone or replaced by a link since the print: the next search looks again.
            None => continue,
        };
        read.insert(file.path.clone(), ReadText { first_byte, text });
    }
    Ok(read)
}

/// Writes one changed folder: its files gone or read again leave the index, those read enter it,
/// and its print is kept.
fn write_session(
    tx: &Connection,
    workspace_key: i64,
    changed: &Changed,
    mut read: HashMap<String, ReadText>,
) -> QueryResult<()> {
    let mut existing =
        tx.prepare_cached("SELECT id, path FROM folder_files WHERE workspace_id = ?1 AND session_id = ?2")?;
    let rows: Vec<(i64, String)> = existing
        .query_map(params![workspace_key, changed.session_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    for (id, path) in rows {
        let still = changed.files.iter().any(|file| file.path == path);
        if !still || read.contains_key(&path) {
            drop_file(tx, id)?;
        }
    }
    let mut insert = tx.prepare_cached(
        "INSERT INTO folder_files (workspace_id, session_id, path, node, bytes, modified, first_byte)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for file in &changed.files {
        let Some(text) = read.remove(&file.path) else { continue };
        insert.execute(params![
            workspace_key,
            changed.session_id,
            file.path,
            file.node,
            file.bytes as i64,
            file.modified,
            text.first_byte as i64
        ])?;
        if let Some(text) = text.text {
            search::index(tx, Kind::File, tx.last_insert_rowid(), &text)?;
        }
    }
    tx.prepare_cached(
        "INSERT INTO folder_text (workspace_id, session_id, print) VALUES (?1, ?2, ?3)
         ON CONFLICT (workspace_id, session_id) DO UPDATE SET print = ?3",
    )?
    .execute(params![workspace_key, changed.session_id, changed.print])?;
    Ok(())
}

/// Drops one file from the index (its FTS row too; a file that was not text has none, and
/// deleting an absent row is nothing).
fn drop_file(tx: &Connection, id: i64) -> QueryResult<()> {
    tx.prepare_cached("DELETE FROM search_text WHERE rowid = ?1")?
        .execute([search::rowid(Kind::File, id)])?;
    tx.prepare_cached("DELETE FROM folder_files WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Drops a session folder's files from the index (its folder is gone, or deleted).
pub(super) fn forget(tx: &Connection, workspace_key: i64, session_id: &str) -> QueryResult<()> {
    let ids: Vec<i64> = tx
        .prepare_cached("SELECT id FROM folder_files WHERE workspace_id = ?1 AND session_id = ?2")?
        .query_map(params![workspace_key, session_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in ids {
        drop_file(tx, id)?;
    }
    tx.prepare_cached("DELETE FROM folder_text WHERE workspace_id = ?1 AND session_id = ?2")?
        .execute(params![workspace_key, session_id])?;
    Ok(())
}

/// The print of a session folder and its node output files: the times and sizes of the folder,
/// its `nodes/`, and each output file of each node folder (`<node>/` and `nodes/<node>/`). Links
/// are neither followed nor indexed (a session folder's files are untrusted). `None` when the
/// folder is gone.
fn print_of(folder: &Path) -> Option<(String, Vec<OutputFile>)> {
    let stamp = |m: &fs::Metadata| format!("{}.{}:{}", m.mtime(), m.mtime_nsec(), m.len());
    let dir = fs::symlink_metadata(folder).ok()?;
    if !dir.is_dir() {
        return Some(("link".to_owned(), Vec::new()));
    }
    let mut print = stamp(&dir);
    if let Ok(meta) = fs::symlink_metadata(folder.join(NODES_DIR)) {
        print.push('|');
        print.push_str(&stamp(&meta));
    }
    let mut files = Vec::new();
    for node in node_folders(folder) {
        for name in OUTPUT_FILES {
            let path = format!("{}/{name}", node.relative_path());
            let Ok(meta) = fs::symlink_metadata(folder.join(&path)) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let modified = format!("{}.{}", meta.mtime(), meta.mtime_nsec());
            print.push_str(&format!("|{path}:{modified}:{}", meta.len()));
            files.push(OutputFile {
                path,
                node: node.name.clone(),
                bytes: meta.len(),
                modified,
            });
        }
    }
    Some((print, files))
}

/// Drops what the index holds of one session folder (it is being deleted).
pub(super) fn forget_session(conn: &Connection, workspace: &Workspace, session_id: &str) -> QueryResult<()> {
    match workspaces::known_key(conn, workspace)? {
        Some(key) => forget(conn, key, session_id),
        None => Ok(()),
    }
}
