//! A run's captured output recorded as the studio records a run it follows: for a kept run that
//! ended while no studio followed it ([`reconcile`], from its keeper's files), and for a captured
//! log imported (`share`).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::live_run::end_leftovers;
use super::run_files::messages_file;
use crate::protocol::{EventKind, Stream, StreamReader};
use crate::runs::keeper::KeptExit;
use crate::runs::stop::Stopping;
use crate::sessions::cost::OutputUsageReader;
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::store::{Level, Recovered, RunOutcome, RunRecord, SpanKind, Store};
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
    let files = [
        (Stream::Stdout, dir.join(crate::runs::keeper::STDOUT_FILE)),
        (Stream::Stderr, dir.join(crate::runs::keeper::STDERR_FILE)),
    ];
    let end = RunEnd {
        exit,
        signalled_by_studio: run.stop_requested == Some(Stopping::Forced),
    };
    // When the agent ended (its keeper wrote `exit` then), not when it was settled.
    let ended_at = std::fs::metadata(dir.join(crate::runs::keeper::EXIT_FILE))
        .and_then(|m| m.modified())
        .unwrap_or(now);
    let timeline = record_captured_output(store, &run.id, &files, Some(end), ended_at)?;
    let stopped_by = timeline.stopped_by.map(StoppedBy::as_str);
    let workspace = Workspace::from_canonical_root(run.workspace.clone());
    let session = SessionId::parse(&run.session_id)?;
    store.log(
        &workspace,
        &session,
        Some(&run.id),
        Level::Info,
        "run.finished",
        &format!(
            "{} while no studio followed it (it had been left running)",
            timeline.status
        ),
        serde_json::json!({ "status": timeline.status, "exit_code": timeline.exit_code, "stopped_by": stopped_by }),
        now,
    )?;
    let _ = std::fs::remove_dir_all(dir);
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
    let (stored_out, stored_err) = store.output_line_counts(run_id)?;
    let mut fold = TimelineFold::new();
    let mut reader = StreamReader::new();
    let mut seen = (0i64, 0i64);
    let mut usage = OutputUsageReader::new();
    {
        let mut writer = store.output_writer(run_id)?;
        let mut on_event = |event: crate::protocol::Event<'_>, fold: &mut TimelineFold| {
            fold.apply(&event);
            if matches!(event.kind, EventKind::NodeBegin { .. } | EventKind::NodeEnd { .. }) {
                return;
            }
            if event.stream == Stream::Stdout {
                usage.line(fold.current_node(), &event.text);
            }
            // Lines the studio recorded before it let the run go are not recorded twice.
            let (count, stored) = match event.stream {
                Stream::Stdout => (&mut seen.0, stored_out),
                Stream::Stderr => (&mut seen.1, stored_err),
            };
            *count += 1;
            if *count > stored {
                let node = fold.current_node().map(str::to_owned);
                if let Err(error) = writer.append(event.stream, event.at_ms, node.as_deref(), &event.text) {
                    tracing::error!(run_id, %error, "cannot record output");
                }
                // Inside a caller's transaction (an import: all or nothing), written blocks are
                // not kept to be written again: memory stays bounded however long the log.
                writer.batch_committed();
            }
        };
        for (stream, path) in files {
            // A captured log is the user's file: never read through a link, regular files only.
            let mut file = match crate::sessions::untrusted::open_regular(path) {
                Ok((file, _)) => file,
                Err(e) if crate::sessions::untrusted::is_not_found(&e) => continue,
                Err(e) => return Err(e),
            };
            let mut buffer = vec![0u8; 256 * 1024];
            loop {
                let n = file.read(&mut buffer).map_err(|e| Error::io(path, e))?;
                if n == 0 {
                    break;
                }
                reader.push(*stream, &buffer[..n], 0, &mut |e| on_event(e, &mut fold));
            }
        }
        reader.finish(0, &mut |e| on_event(e, &mut fold));
        writer.flush()?;
    }
    store.record_output_usage(run_id, &usage.finish())?;
    let mut timeline = fold.timeline(end);
    if end.is_none() && timeline.status == Status::Running {
        // No exit status, and the output does not say it ended: nothing follows it any more, so
        // it is not running, and how it ended is unknown.
        timeline.status = Status::Unknown;
    }
    record_unfollowed_nodes(store, run_id, &fold, &timeline, ended_at)?;
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
/// the nodes after are added. The keeper's files hold no times: a node the studio did not see
/// begin or end is given `at`, the agent's end.
fn record_unfollowed_nodes(
    store: &Store,
    run_id: &str,
    fold: &TimelineFold,
    timeline: &RunTimeline,
    at: SystemTime,
) -> Result<(), Error> {
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
            match node_spans.get(at_position) {
                Some(&(span, false)) if ended => store.span_end(span, node.status, at)?,
                Some(_) => {}
                None => {
                    let parent = fold
                        .parent_of(kept[at_position])
                        .and_then(|p| position.get(&p))
                        .and_then(|&p| node_spans.get(p))
                        .map(|&(span, _)| span)
                        .or(run_span);
                    let span = store.span_start(run_id, parent, &node.name, "node", node.depth, at)?;
                    if ended {
                        store.span_end(span, node.status, at)?;
                    }
                    node_spans.push((span, ended));
                }
            }
        }
        Ok(())
    })?
}
