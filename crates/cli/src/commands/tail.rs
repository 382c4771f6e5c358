//! `zstudio tail`: the last lines of a session's output, then (with `--follow`) what comes after.
//! The output is the session's folder files, else (a session the studio ran whose folder has no
//! output file) its last run's output as the store recorded it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, SystemTime};

use studio_core::store::Store;
use studio_core::tail::{last_lines, FileTail};
use studio_core::watcher::{Change, ChangeSink, Watcher, WatcherOptions};
use studio_core::{SessionId, Workspace};

use crate::cli::{Format, Globals, TailArgs};
use crate::print;

pub fn tail(args: &TailArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let format = globals.format();
    let id = SessionId::parse(&args.session_id)?;
    let workspace = globals.open_workspace()?;
    let (own_file, mut files) = session_output_files(&workspace, &id)?;
    if files.is_empty() {
        // No output file in the folder: a session the studio ran has its output in the store.
        let store = globals.open_store()?;
        if let Some(run) = store.runs(&workspace, Some(&id))?.into_iter().next() {
            return tail_stored_output(&store, &run.id, args, format, out);
        }
    }
    // Tails are placed before the last lines are read: a line is never missed, at worst printed twice.
    let mut tails: Vec<FileTail> = files.iter().map(FileTail::from_end).collect::<Result<_, _>>()?;
    for (file, line) in &last_lines_of(&files, args.lines, args.follow)? {
        output_line(out, format, file, line)?;
    }
    out.flush()?;
    if !args.follow {
        return Ok(());
    }
    let (sink, woken) = wake_on_changes_of(&id);
    let _watcher = Watcher::start(vec![workspace.clone()], sink, WatcherOptions::default())?;
    loop {
        if !own_file {
            // Nodes that started since: their files are followed from their first line.
            if let Ok((false, now_files)) = session_output_files(&workspace, &id) {
                for file in now_files {
                    if !files.contains(&file) {
                        tails.push(FileTail::from_start(&file));
                        files.push(file);
                    }
                }
            }
        }
        for tail in &mut tails {
            print_new_lines(tail, format, out)?;
        }
        out.flush()?;
        if !woken.wait() {
            return Ok(());
        }
    }
}

/// The last `count` lines over `files` in order. When following, a last line not ended yet is
/// left for the tail to print once complete.
fn last_lines_of(files: &[PathBuf], count: usize, follow: bool) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let mut last: Vec<(PathBuf, String)> = Vec::new();
    for file in files.iter().rev() {
        if last.len() >= count {
            break;
        }
        let page = last_lines(file, count - last.len())?;
        let mut lines = page.lines;
        if follow && page.last_line_partial && Some(file) == files.last() {
            lines.pop();
        }
        last.splice(0..0, lines.into_iter().map(|l| (file.clone(), l)));
    }
    Ok(last)
}

fn print_new_lines(tail: &mut FileTail, format: Format, out: &mut impl Write) -> anyhow::Result<()> {
    loop {
        let new = tail.read_new_lines(studio_core::watcher::MAX_APPENDED_BYTES)?;
        for line in &new.lines {
            output_line(out, format, tail.path(), line)?;
        }
        if !new.more {
            return Ok(());
        }
    }
}

/// Woken by every change of one session that the sink is given.
struct Wake {
    woken: Receiver<()>,
}

fn wake_on_changes_of(id: &SessionId) -> (ChangeSink, Wake) {
    let (wake, woken) = std::sync::mpsc::channel();
    let watched = id.clone();
    let sink: ChangeSink = std::sync::Arc::new(move |change: Change| {
        if change.session_id() == Some(&watched) {
            let _ = wake.send(());
        }
    });
    (sink, Wake { woken })
}

impl Wake {
    /// Waits for a change of the session; the timeout is a safety net, not the pace. False once
    /// the watcher is gone.
    fn wait(&self) -> bool {
        match self.woken.recv_timeout(Duration::from_secs(2)) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return false,
        }
        while self.woken.try_recv().is_ok() {}
        true
    }
}

/// A session's output files: its own raw_stream_output.txt when it has one (true), else its
/// nodes' in node order (false).
fn session_output_files(workspace: &Workspace, id: &SessionId) -> anyhow::Result<(bool, Vec<PathBuf>)> {
    let session = workspace.read_session(id, SystemTime::now())?;
    if let Some(file) = session.raw_stream_output {
        return Ok((true, vec![file.path]));
    }
    let nodes = session
        .nodes
        .into_iter()
        .filter_map(|n| n.artifacts.raw_stream.map(|f| f.path));
    Ok((false, nodes.collect()))
}

/// The last lines of a run's stored output, then (with `--follow`) its new lines as they are
/// stored. `--json` names the run instead of a file: `{"run_id", "line"}`.
fn tail_stored_output(
    store: &Store,
    run_id: &str,
    args: &TailArgs,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut next = (store.output_line_count(run_id)? - args.lines as i64).max(0) + 1;
    loop {
        let lines = store.output_page(run_id, next, 5_000)?;
        for line in &lines {
            match format {
                Format::Json => {
                    print::write_json_line(out, &serde_json::json!({ "run_id": run_id, "line": line.text }))?
                }
                Format::Human => writeln!(out, "{}", line.text)?,
            }
            next = line.seq + 1;
        }
        out.flush()?;
        let caught_up = lines.len() < 5_000;
        if !args.follow && caught_up {
            return Ok(());
        }
        if lines.is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// One line of a file; `--json`: `{"file", "line"}`.
fn output_line(out: &mut impl Write, format: Format, file: &Path, line: &str) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json_line(out, &serde_json::json!({ "file": file, "line": line })),
        Format::Human => {
            writeln!(out, "{line}")?;
            Ok(())
        }
    }
}
