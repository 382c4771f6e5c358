//! A run's captured output recorded as the studio records a run it follows: for a kept run that
//! ended while no studio followed it ([`reconcile`], from its keeper's files), and for a captured
//! log imported (`share`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::kept_tail::{read_to, KeptTail};
use super::live_run::end_leftovers;
use super::run_files::messages_file;
use super::run_record::record_run_in_folder;
use crate::protocol::{EventKind, Stream, StreamReader};
use crate::runs::keeper::KeptExit;
use crate::runs::stop::Stopping;
use crate::sessions::cost::OutputUsageReader;
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::store::{Level, OutputWriter, Recovered, RunOutcome, RunRecord, SpanKind, Store};
use crate::timeline::{Exit, RunEnd, RunTimeline, StoppedBy, TimelineFold};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// An agent's exit as its keeper recorded it.
pub(super) fn exit_of(kept: KeptExit) -> Exit {
    match kept {
        KeptExit::Code(code) => Exit::Code(code),
        KeptExit::Signal(signal) => Exit::Signal(signal),
    }
}

/// Reconciles runs no studio follows: a kept run whose agent has ended is finished from the
/// keeper's files (its output completed in the store, its status from its exit and output), then
/// [`Store::recover`] settles the rest (interrupted, cancelled, or running detached).
pub fn reconcile(store: &Store, now: SystemTime) -> Result<Vec<Recovered>, Error> {
    let mut recovered = Vec::new();
    for run in store.detached_kept_runs()? {
        let Some(dir) = run.keeper_dir.clone() else { continue };
        let Some(kept) = crate::runs::keeper::read_exit(&dir) else {
            continue;
        };
        // Every studio process settles what it finds: only the one that claims the run does.
        if !store.claim_run(&run.id, run.owner_pid)? {
            continue;
        }
        let status = finish_from_keeper_files(store, &run, &dir, exit_of(kept), now)?;
        recovered.push(Recovered {
            run_id: run.id.clone(),
            session_id: run.session_id.clone(),
            status,
        });
    }
    let dead = store.recover_dead_studios(now)?;
    for run in &dead {
        let _ = std::fs::remove_file(messages_file(&run.run_id));
        // A run settled as ended takes along what it left (a killed keeper's orphans).
        if run.status != Status::Running {
            let keeper_dir = store.run(&run.run_id).ok().and_then(|r| r.keeper_dir);
            end_leftovers(&run.run_id, keeper_dir.as_deref());
            record_run_in_folder(store, &run.run_id);
        }
    }
    recovered.extend(dead);
    Ok(recovered)
}

fn finish_from_keeper_files(
    store: &Store,
    run: &RunRecord,
    dir: &Path,
    exit: Exit,
    now: SystemTime,
) -> Result<Status, Error> {
    let _ = std::fs::remove_file(messages_file(&run.id));
    let end = RunEnd {
        exit,
        signalled_by_studio: run.stop_requested == Some(Stopping::Forced),
    };
    let (start, exit_ms) = crate::runs::keeper::read_start_and_exit(dir);
    // When the agent ended, as its keeper saw it (else when it wrote `exit`), not when the run
    // was settled.
    let ended_at = match (start, exit_ms) {
        (Some(start), Some(ms)) => start + Duration::from_millis(ms),
        _ => std::fs::metadata(dir.join(crate::runs::keeper::EXIT_FILE))
            .and_then(|m| m.modified())
            .unwrap_or(now),
    };
    let mut tail = KeptTail::new(dir);
    let feed = |push: &mut dyn FnMut(Stream, &[u8], u64)| tail.read_rest(push);
    let timeline = record_output(store, &run.id, feed, Some(end), ended_at, start)?;
    let stopped_by = timeline.stopped_by.map(StoppedBy::as_str);
    let started_at = std::time::UNIX_EPOCH + Duration::from_millis(run.started_at.0);
    let elapsed_ms = ended_at.duration_since(started_at).map_or(0, |d| d.as_millis() as u64);
    let (event, level, message) = end_log(timeline.status, timeline.error.as_deref(), stopped_by, elapsed_ms);
    let workspace = Workspace::from_canonical_root(run.workspace.clone());
    let session = SessionId::parse(&run.session_id)?;
    store.log(
        &workspace,
        &session,
        Some(&run.id),
        level,
        event,
        &format!("{message} (while no studio followed it)"),
        serde_json::json!({
            "status": timeline.status,
            "exit_code": timeline.exit_code,
            "elapsed_ms": elapsed_ms,
            "stopped_by": stopped_by,
        }),
        ended_at,
    )?;
    let _ = std::fs::remove_dir_all(dir);
    record_run_in_folder(store, &run.id);
    Ok(timeline.status)
}

/// Reads a run's captured output files (a missing one is empty) through the reader and the fold,
/// as the studio reads a live run, and records what they hold: each line (after those of its
/// stream the store has already: a run the studio followed for a while), with the node it came
/// in; the node executions as spans; and the run's end by `end` (`None`: it is not known, the
/// output alone tells, else it is `unknown`), at `ended_at`. Used for a run that went on while no
/// studio followed it, and for a captured log imported (`share`). Returns the run's timeline.
pub fn record_captured_output(
    store: &Store,
    run_id: &str,
    files: &[(Stream, PathBuf)],
    end: Option<RunEnd>,
    ended_at: SystemTime,
) -> Result<RunTimeline, Error> {
    let feed = |push: &mut dyn FnMut(Stream, &[u8], u64)| -> Result<u64, Error> {
        for (stream, path) in files {
            // A captured log is the user's file: never read through a link, regular files only.
            let mut file = match crate::sessions::untrusted::open_regular(path) {
                Ok((file, _)) => file,
                Err(e) if crate::sessions::untrusted::is_not_found(&e) => continue,
                Err(e) => return Err(e),
            };
            read_to(&mut file, path, u64::MAX, &mut |bytes| push(*stream, bytes, 0))?;
        }
        Ok(0)
    };
    record_output(store, run_id, feed, end, ended_at, None)
}

/// A run's output read through the protocol reader and the fold as the studio reads a live run,
/// its lines recorded after those of each stream the store has already (the lines a studio that
/// followed the run for a while recorded are not recorded twice), with what its nodes used.
pub(super) struct Unrecorded<'s> {
    pub(super) reader: StreamReader,
    pub(super) lines: UnrecordedLines<'s>,
}

/// What [`Unrecorded`] does with each line the reader reads.
pub(super) struct UnrecordedLines<'s> {
    pub(super) writer: OutputWriter<'s>,
    pub(super) fold: TimelineFold,
    pub(super) usage: OutputUsageReader,
    run_id: String,
    /// The stdout and stderr lines the store had.
    pub(super) stored: (i64, i64),
    /// The stdout and stderr lines read so far.
    pub(super) seen: (i64, i64),
}

impl<'s> Unrecorded<'s> {
    pub(super) fn new(store: &'s Store, run_id: &str) -> Result<Unrecorded<'s>, Error> {
        Ok(Unrecorded {
            reader: StreamReader::new(),
            lines: UnrecordedLines {
                stored: store.output_line_counts(run_id)?,
                writer: store.output_writer(run_id)?,
                fold: TimelineFold::new(),
                usage: OutputUsageReader::new(),
                run_id: run_id.to_owned(),
                seen: (0, 0),
            },
        })
    }

    /// Reads a piece of a stream's output, seen `at_ms` after the run's start.
    pub(super) fn push(&mut self, stream: Stream, bytes: &[u8], at_ms: u64) {
        self.reader
            .push(stream, bytes, at_ms, &mut |event| self.lines.take(event));
    }

    /// The output's end, `last_ms` after the run's start: a last line without its newline.
    pub(super) fn finish(&mut self, last_ms: u64) {
        self.reader.finish(last_ms, &mut |event| self.lines.take(event));
    }
}

impl UnrecordedLines<'_> {
    /// One event of the output: folded, and recorded when it is a line beyond those stored.
    fn take(&mut self, event: crate::protocol::Event<'_>) {
        self.fold.apply(&event);
        if matches!(event.kind, EventKind::NodeBegin { .. } | EventKind::NodeEnd { .. }) {
            return;
        }
        if event.stream == Stream::Stdout {
            self.usage.line(self.fold.current_node(), &event.text);
        }
        // Lines the studio recorded before it let the run go are not recorded twice.
        let (count, stored) = match event.stream {
            Stream::Stdout => (&mut self.seen.0, self.stored.0),
            Stream::Stderr => (&mut self.seen.1, self.stored.1),
        };
        *count += 1;
        if *count > stored {
            let node = self.fold.current_node().map(str::to_owned);
            if let Err(error) = self
                .writer
                .append(event.stream, event.at_ms, node.as_deref(), &event.text)
            {
                tracing::error!(run_id = %self.run_id, %error, "cannot record output");
            }
            // Inside a caller's transaction (an import: all or nothing), written blocks are not
            // kept to be written again: memory stays bounded however long the log.
            self.writer.batch_committed();
        }
    }
}

/// What [`record_captured_output`] does, over the output `feed` hands on (each piece with its
/// time in ms; it returns the last); `base`: when those times count from, if known (the nodes'
/// spans are then given their own times rather than `ended_at`).
fn record_output(
    store: &Store,
    run_id: &str,
    feed: impl FnOnce(&mut dyn FnMut(Stream, &[u8], u64)) -> Result<u64, Error>,
    end: Option<RunEnd>,
    ended_at: SystemTime,
    base: Option<SystemTime>,
) -> Result<RunTimeline, Error> {
    let mut unrecorded = Unrecorded::new(store, run_id)?;
    let last_ms = feed(&mut |stream, bytes, at_ms| unrecorded.push(stream, bytes, at_ms))?;
    unrecorded.finish(last_ms);
    unrecorded.lines.writer.flush()?;
    let UnrecordedLines { fold, usage, .. } = unrecorded.lines;
    store.record_output_usage(run_id, &usage.finish())?;
    // No exit status, and the output does not say it ended: nothing follows it any more, so it
    // is not running, and how it ended is unknown.
    let timeline = fold.captured_timeline(end);
    record_unfollowed_nodes(store, run_id, &fold, &timeline, ended_at, base)?;
    let stopped_by = timeline.stopped_by.map(StoppedBy::as_str);
    store.run_finish(
        run_id,
        &RunOutcome {
            status: timeline.status,
            exit_code: timeline.exit_code,
            error: timeline.error.as_deref(),
            stopped_by,
            ended_at,
        },
    )?;
    Ok(timeline)
}

/// The fold's index of each node of its timeline, in order: the fold counts the `┌ title` lines
/// it discarded, the timeline does not.
pub(super) fn kept_indices(fold: &TimelineFold) -> Vec<usize> {
    (0..)
        .map_while(|i| fold.node(i).map(|n| (i, n)))
        .filter(|(_, n)| !n.is_discarded())
        .map(|(i, _)| i)
        .collect()
}

/// The node executions of a run no studio followed to its end, as spans (its log's `node.begin`
/// / `node.end` lines and the listing read them): the spans recorded while a studio followed it
/// are the timeline's first nodes, in order; those still open are ended with their status, and
/// the nodes after are added. A node the studio did not see begin or end is given its own time
/// when the output's times count from a known `base` (a keeper's `times` file), else `at`, the
/// agent's end. Also for a run a studio adopts, before it follows it (`adopted`): its
/// timeline so far leaves the nodes still running open. Returns the span of each node, by its
/// index in the fold.
pub(super) fn record_unfollowed_nodes(
    store: &Store,
    run_id: &str,
    fold: &TimelineFold,
    timeline: &RunTimeline,
    at: SystemTime,
    base: Option<SystemTime>,
) -> Result<HashMap<usize, i64>, Error> {
    let when = |ms: Option<u64>| match (base, ms) {
        (Some(base), Some(ms)) => (base + std::time::Duration::from_millis(ms)).min(at),
        _ => at,
    };
    let spans = store.spans(run_id)?;
    let run_span = spans.iter().find(|s| s.kind == SpanKind::Run).map(|s| s.id);
    let mut node_spans: Vec<(i64, bool)> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Node)
        .map(|s| (s.id, s.ended_at.is_some()))
        .collect();
    let kept = kept_indices(fold);
    let position: HashMap<usize, usize> = kept.iter().enumerate().map(|(at, &index)| (index, at)).collect();
    store.batch(|| -> Result<(), Error> {
        for (at_position, node) in timeline.nodes.iter().enumerate() {
            let ended = node.ended_at_ms.is_some() || node.status != Status::Running;
            let (began_at, ended_at) = (when(Some(node.started_at_ms)), when(node.ended_at_ms));
            match node_spans.get(at_position) {
                Some(&(span, false)) if ended => store.span_end(span, node.status, ended_at)?,
                Some(_) => {}
                None => {
                    let parent = fold
                        .parent_of(kept[at_position])
                        .and_then(|p| position.get(&p))
                        .and_then(|&p| node_spans.get(p))
                        .map(|&(span, _)| span)
                        .or(run_span);
                    let span = store.span_start(run_id, parent, &node.name, "node", node.depth, began_at)?;
                    if ended {
                        store.span_end(span, node.status, ended_at)?;
                    }
                    node_spans.push((span, ended));
                }
            }
        }
        Ok(())
    })??;
    Ok(kept
        .into_iter()
        .zip(node_spans)
        .map(|(index, (span, _))| (index, span))
        .collect())
}

/// A run's last log line (its event, level and message): cancelled, failed, interrupted or
/// finished, with how long it ran; for a followed run and a run settled from its keeper's files.
pub(super) fn end_log(
    run_status: Status,
    error: Option<&str>,
    stopped_by: Option<&str>,
    elapsed_ms: u64,
) -> (&'static str, Level, String) {
    match run_status {
        Status::Cancelled => (
            "run.cancelled",
            Level::Warn,
            format!("cancelled ({}) after {elapsed_ms} ms", stopped_by.unwrap_or("graceful")),
        ),
        Status::Error => ("run.failed", Level::Error, error.unwrap_or_default().to_owned()),
        Status::Interrupted => (
            "run.interrupted",
            Level::Warn,
            "the run ended by a signal the studio did not send".into(),
        ),
        _ => (
            "run.finished",
            Level::Info,
            format!("{run_status} after {elapsed_ms} ms"),
        ),
    }
}
