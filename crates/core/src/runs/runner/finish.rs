//! The end of a run its thread followed: how its agent exited (from its keeper when it has one),
//! its status from that and its output, the nodes it left open ended, the end recorded, logged and
//! announced, its record written into its session folder (`run_record`), and its files (stop
//! files, conversation, keeper folder) removed.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::SystemTime;

use super::captured::{end_log, exit_of, kept_indices};
use super::events::RunEvent;
use super::followed::FollowedRun;
use super::run_files::remove_stop_files;
use super::run_record::record_run_in_folder;
use crate::runs::stop::Stopping;
use crate::status::Status;
use crate::store::RunOutcome;
use crate::timeline::{Exit, RunEnd, RunTimeline, StoppedBy, TimelineFold};

impl FollowedRun {
    /// Records the run's end: `status` is its process's exit as waited for (`None`: the studio
    /// lost it), `run_span` and `node_spans` what `follow` opened.
    pub(super) fn finish(
        self,
        fold: TimelineFold,
        status: Option<ExitStatus>,
        elapsed_ms: u64,
        run_span: Option<i64>,
        node_spans: &HashMap<usize, i64>,
    ) {
        let store = &self.shared.store;
        remove_stop_files(&self.live.session_path);
        let _ = std::fs::remove_file(&self.messages_file);
        let stop = std::mem::take(&mut *self.live.stop.lock().expect("stop lock"));
        // A stop asked for by another studio process (`zstudio stop`) is recorded.
        let asked_elsewhere = store.run(&self.run_id).ok().and_then(|r| r.stop_requested);
        let forced_elsewhere = asked_elsewhere == Some(Stopping::Forced);
        let exit = self.how_it_exited(status);
        if let Some(dir) = &self.live.keeper_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let timeline = fold.timeline(exit.map(|exit| RunEnd {
            exit,
            signalled_by_studio: stop.signalled() || forced_elsewhere,
        }));
        // The studio lost the process (no exit status; an adopted run's keeper killed before it
        // wrote the agent's): cancelled when a stop was asked for, as recovery settles such a
        // run, else interrupted.
        let stopped_unseen = if exit.is_some() {
            None
        } else if stop.signalled() || forced_elsewhere {
            Some(StoppedBy::Forced)
        } else if stop.is_requested() {
            Some(StoppedBy::Graceful)
        } else {
            asked_elsewhere
        };
        let run_status = match (exit, stopped_unseen) {
            (Some(_), _) => timeline.status,
            (None, Some(_)) => Status::Cancelled,
            (None, None) => Status::Interrupted,
        };
        let stopped_by = timeline.stopped_by.or(stopped_unseen);
        // The budget asked the stop (a graceful one, escalated past the grace as any).
        let stopped_by = match stopped_by {
            Some(_) if self.live.stopped_by_budget.load(std::sync::atomic::Ordering::SeqCst) => Some(StoppedBy::Budget),
            other => other,
        };
        self.end_open_nodes(&fold, &timeline, node_spans, elapsed_ms);
        if let Some(span) = run_span {
            let _ = store.span_end(span, run_status, SystemTime::now());
        }
        let recorded = store.run_finish(
            &self.run_id,
            &RunOutcome {
                status: run_status,
                exit_code: timeline.exit_code,
                error: timeline.error.as_deref(),
                stopped_by: stopped_by.map(StoppedBy::as_str),
                ended_at: SystemTime::now(),
            },
        );
        match recorded {
            Ok(()) => record_run_in_folder(store, &self.run_id),
            Err(error) => tracing::error!(run_id = %self.run_id, %error, "cannot record the end of a run"),
        }
        self.log_end(run_status, &timeline, stopped_by.map(StoppedBy::as_str), elapsed_ms);
        self.shared.live.lock().expect("live lock").remove(&self.run_id);
        self.shared.publish(RunEvent::RunFinished {
            run_id: self.run_id.clone(),
            session_id: self.session_id.to_string(),
            status: run_status,
            exit_code: timeline.exit_code,
            elapsed_ms,
            stopped_by,
            error: timeline.error,
        });
    }

    /// How the agent ended: as its keeper recorded it (the keeper knows how the agent itself
    /// ended), else as its process's `status` says.
    fn how_it_exited(&self, status: Option<ExitStatus>) -> Option<Exit> {
        let kept = self.live.keeper_dir.as_deref().and_then(crate::runs::keeper::read_exit);
        match kept {
            Some(kept) => Some(exit_of(kept)),
            None => status.map(|s| match (s.code(), s.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(signal)) => Exit::Signal(signal),
                (None, None) => Exit::Code(-1),
            }),
        }
    }

    /// The nodes the run's end left open end with it, in the trace and in the live stream.
    /// (The timeline leaves out discarded `┌ title` lines; the spans are by the fold's index.)
    fn end_open_nodes(
        &self,
        fold: &TimelineFold,
        timeline: &RunTimeline,
        node_spans: &HashMap<usize, i64>,
        elapsed_ms: u64,
    ) {
        for (index, node) in kept_indices(fold).into_iter().zip(&timeline.nodes) {
            if node.ended_at_ms.is_some() {
                continue;
            }
            if let Some(span) = node_spans.get(&index) {
                let _ = self.shared.store.span_end(*span, node.status, SystemTime::now());
            }
            self.shared.publish(RunEvent::NodeEnd {
                run_id: self.run_id.clone(),
                node: node.name.clone(),
                execution: index,
                status: node.status,
                t_ms: elapsed_ms,
                usage: None,
            });
        }
    }

    /// The run's last log line: cancelled, failed, interrupted or finished.
    fn log_end(&self, run_status: Status, timeline: &RunTimeline, stopped_by: Option<&str>, elapsed_ms: u64) {
        let (event, level, message) = end_log(run_status, timeline.error.as_deref(), stopped_by, elapsed_ms);
        self.log(
            level,
            event,
            &message,
            serde_json::json!({
                "status": run_status,
                "exit_code": timeline.exit_code,
                "elapsed_ms": elapsed_ms,
                "stopped_by": stopped_by,
            }),
        );
    }
}
