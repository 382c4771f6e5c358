//! Everything `zstudio` prints on standard output: the human layout of each command's result,
//! and JSON. The writer is the [`crate::visible::Visible`] standard output, so that control
//! characters of untrusted text (node names, output lines, file names) show as escapes.

use std::io::Write;
use std::time::SystemTime;

use serde::Serialize;
use studio_core::cost::{CostSource, NodeUsage};
use studio_core::runner::{RunEvent, StartedRun};
use studio_core::session::Timestamp;
use studio_core::size::human_bytes;
use studio_core::store::retention::Doomed;
use studio_core::store::{LogLine, Pin, RunRecord, SearchHit, SessionRow};
use studio_core::timeline::RunTimeline;
use studio_core::watcher::Change;
use studio_core::SessionId;

use crate::cli::Format;

/// `value` as JSON with `--json`, else laid out for a person by `print`.
pub fn emit<W: Write, T: Serialize + ?Sized>(
    out: &mut W,
    format: Format,
    value: &T,
    print: impl FnOnce(&mut W, &T) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    match format {
        Format::Json => write_json(out, value),
        Format::Human => print(out, value),
    }
}

/// One JSON document, pretty-printed.
pub fn write_json(out: &mut impl Write, value: &(impl Serialize + ?Sized)) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// `value` pretty-printed as [`write_json`] prints it, each line after the first indented by
/// `indent`: an element of an array written a piece at a time, as the whole array would be.
pub fn write_json_indented(out: &mut Vec<u8>, value: &impl Serialize, indent: &str) {
    let text = serde_json::to_string_pretty(value).expect("rows serialise");
    // Pretty JSON has no newline but between its tokens (a string's own are escaped).
    out.extend_from_slice(text.replace('\n', &format!("\n{indent}")).as_bytes());
}

/// One JSON object on a line of its own (what streams: run events, changes, output lines).
pub fn write_json_line(out: &mut impl Write, value: &(impl Serialize + ?Sized)) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

pub fn sessions(out: &mut impl Write, sessions: &[SessionRow], now: SystemTime) -> anyhow::Result<()> {
    if sessions.is_empty() {
        writeln!(
            out,
            "No sessions yet. Run an agent in this folder, or start one with the studio."
        )?;
        return Ok(());
    }
    let title = title_width(terminal_columns());
    writeln!(
        out,
        "  {:<11} {:<28} {:<16} {:<20} {:<12} {:<11} {} UPDATED",
        "STATUS",
        "SESSION",
        "AGENT",
        "CURRENT NODE",
        "NODES",
        "COST",
        cell("TITLE", title)
    )?;
    for row in sessions {
        let session = &row.summary;
        let (ended, begun) = session.nodes_progress();
        writeln!(
            out,
            "{} {:<11} {:<28} {} {} {:<12} {:<11} {} {}",
            if row.pinned { "*" } else { " " },
            session.status,
            session.id,
            cell(session.agent.as_deref().unwrap_or("-"), 16),
            cell(session.current_node.as_deref().unwrap_or("-"), 20),
            format!("{ended}/{begun}"),
            session
                .usage
                .as_ref()
                .map_or_else(|| "–".to_owned(), |u| u.short_label.clone()),
            cell(session.title.as_deref().unwrap_or("-"), title),
            ago(session.updated_at, now)
        )?;
        if !row.tags.is_empty() {
            writeln!(out, "  {:<11} tags: {}", "", row.tags.join(", "))?;
        }
    }
    Ok(())
}

/// `show`: a session in full; `took`, how long each node took, where known (by name).
pub fn session(
    out: &mut impl Write,
    session: &studio_core::Session,
    now: SystemTime,
    took: &std::collections::HashMap<String, u64>,
) -> anyhow::Result<()> {
    writeln!(out, "session   {}", session.id)?;
    writeln!(out, "title     {}", session.title.as_deref().unwrap_or("-"))?;
    writeln!(out, "agent     {}", session.agent.as_deref().unwrap_or("-"))?;
    if !session.tags.is_empty() {
        writeln!(out, "tags      {}", session.tags.join(", "))?;
    }
    if let Some(note) = &session.note {
        for (at, line) in note.lines().enumerate() {
            writeln!(out, "{}{line}", if at == 0 { "note      " } else { "          " })?;
        }
    }
    writeln!(out, "path      {}", session.path.display())?;
    writeln!(out, "status    {}", session.status)?;
    writeln!(out, "current   {}", session.current_node.as_deref().unwrap_or("-"))?;
    if let Some(created) = session.created_at {
        writeln!(out, "created   {}", created.to_rfc3339())?;
    }
    writeln!(
        out,
        "updated   {} ({})",
        session.updated_at.to_rfc3339(),
        ago(session.updated_at, now)
    )?;
    writeln!(out, "nodes")?;
    for node in &session.nodes {
        let files: Vec<String> = [
            ("prompt", &node.artifacts.prompt),
            ("raw_output", &node.artifacts.raw_output),
            ("result", &node.artifacts.result),
            ("raw_stream", &node.artifacts.raw_stream),
        ]
        .iter()
        .filter_map(|(name, file)| file.as_ref().map(|f| format!("{name} {}", human_bytes(f.bytes))))
        .collect();
        let usage = node.usage.as_ref().map(node_usage).unwrap_or_default();
        let duration = took
            .get(&node.name)
            .map(|ms| format!(" ({})", seconds(*ms)))
            .unwrap_or_default();
        // `?`: its place among the nodes is a guess (`order_uncertain`).
        let guessed = if node.order_uncertain { "? " } else { "" };
        writeln!(
            out,
            "  {:<11} {guessed}{}{duration}  {}{usage}",
            node.status,
            node.name,
            files.join(", ")
        )?;
    }
    if session.nodes.iter().any(|n| n.order_uncertain) {
        writeln!(
            out,
            "          (? : nothing recorded which of these ran first; their folders were written in the same instant)"
        )?;
    }
    if let Some(total) = &session.usage {
        writeln!(out, "usage     {}, {}", total.label, total.tokens_label)?;
        if session
            .nodes
            .iter()
            .any(|n| n.usage.as_ref().is_some_and(|u| u.api_equivalent))
        {
            writeln!(
                out,
                "          (Claude Code's reported cost is an API-equivalent estimate, not a bill)"
            )?;
        }
    }
    if let Some(raw) = &session.raw_stream_output {
        writeln!(out, "output    {} ({})", raw.path.display(), human_bytes(raw.bytes))?;
    }
    if !session.events.is_empty() {
        writeln!(out, "events    {}", session.events.len())?;
    }
    for problem in &session.problems {
        writeln!(out, "problem   {}: {}", problem.file, problem.reason)?;
    }
    if let Some(not_known) = &session.not_known {
        writeln!(out, "not known {not_known}")?;
    }
    Ok(())
}

pub fn timeline(out: &mut impl Write, timeline: &RunTimeline) -> anyhow::Result<()> {
    writeln!(out, "status    {}", timeline.status)?;
    writeln!(out, "session   {}", timeline.session_id.as_deref().unwrap_or("-"))?;
    if let Some(code) = timeline.exit_code {
        writeln!(out, "exit      {code}")?;
    }
    if let Some(error) = &timeline.error {
        writeln!(out, "error     {error}")?;
    }
    for node in &timeline.nodes {
        let took = node.took.as_deref().map(|t| format!(" ({t})")).unwrap_or_default();
        writeln!(
            out,
            "  {:<11} {}{}{}",
            node.status,
            "  ".repeat(node.depth),
            node.name,
            took
        )?;
    }
    Ok(())
}

pub fn pins(out: &mut impl Write, pins: &[Pin], now: SystemTime) -> anyhow::Result<()> {
    for pin in pins {
        writeln!(out, "{}  pinned {}", pin.session_id, ago(pin.pinned_at, now))?;
    }
    Ok(())
}

pub fn runs(out: &mut impl Write, runs: &[RunRecord], now: SystemTime) -> anyhow::Result<()> {
    if runs.is_empty() {
        writeln!(out, "No runs yet.")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<18} {:<36}  {:<20}  {:<9}  {:<9}  {:<11}  {:<6}  COMMAND",
        "STATUS", "RUN", "SESSION", "STARTED", "ELAPSED", "COST", "ORIGIN"
    )?;
    for run in runs {
        let status = if run.detached {
            "running (detached)".to_owned()
        } else {
            run.status.to_string()
        };
        // A live run's time so far; an ended one's from its start to its end.
        let until = run.ended_at.map_or(now, Timestamp::to_system_time);
        let elapsed = until
            .duration_since(run.started_at.to_system_time())
            .map_or(0, |d| d.as_millis() as u64);
        writeln!(
            out,
            "{:<18} {:<36}  {:<20}  {:<9}  {:<9}  {:<11}  {:<6}  {}",
            status,
            run.id,
            run.session_id,
            ago(run.started_at, now),
            seconds(elapsed),
            run.usage.as_ref().map_or_else(|| "–".to_owned(), |u| u.label.clone()),
            run.origin.as_deref().unwrap_or("–"),
            run.command.join(" ")
        )?;
    }
    Ok(())
}

pub fn logs(out: &mut impl Write, logs: &[LogLine]) -> anyhow::Result<()> {
    for log in logs {
        let fields = if log.fields.is_null() {
            String::new()
        } else {
            format!("  {}", log.fields)
        };
        writeln!(
            out,
            "{}  {:<5}  {:<16} {}{fields}",
            log.at.to_rfc3339(),
            format!("{:?}", log.level).to_lowercase(),
            log.event,
            log.message
        )?;
    }
    Ok(())
}

pub fn search_hits(out: &mut impl Write, hits: &[SearchHit]) -> anyhow::Result<()> {
    for hit in hits {
        let place = match (&hit.run_id, &hit.node, &hit.path) {
            (_, _, Some(file)) => file.clone(),
            (Some(run), Some(node), None) => format!("run {run} node {node}"),
            (Some(run), None, None) => format!("run {run}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "{}  {} {} {}  {}",
            hit.session_id,
            hit.kind,
            hit.line,
            place,
            shorten(&hit.text, 160)
        )?;
    }
    Ok(())
}

/// What `prune` would delete, before it deletes anything.
pub fn doomed(out: &mut impl Write, doomed: &[Doomed], now: SystemTime) -> anyhow::Result<()> {
    for session in doomed {
        writeln!(
            out,
            "would delete {}  (updated {})",
            session.session_id,
            ago(session.updated_at, now)
        )?;
    }
    writeln!(out, "{} session(s) to delete; pinned sessions are kept", doomed.len())?;
    Ok(())
}

/// The run `stop` ended, and how.
pub fn stopped(out: &mut impl Write, ended: &RunRecord) -> anyhow::Result<()> {
    let how = ended.stopped_by.as_ref().map(|s| format!(" ({s})")).unwrap_or_default();
    writeln!(
        out,
        "run {} of session {}: {}{how}",
        ended.id, ended.session_id, ended.status
    )?;
    Ok(())
}

/// What `zstudio stop` did to a run the studio did not start, and what it cannot do.
pub fn outside_stop(out: &mut impl Write, asked: &studio_core::runner::OutsideStop) -> anyhow::Result<()> {
    writeln!(
        out,
        "session {}: asked its run to stop before its next node (stop files written); the current node finishes first",
        asked.session_id
    )?;
    writeln!(
        out,
        "the studio did not start this run: it cannot force it or wait for its process; \
         interrupt it where it was started (Ctrl-C in its terminal) to end it at once"
    )?;
    Ok(())
}

/// One change of `watch`, prefixed with its workspace when several are watched.
pub fn change(out: &mut impl Write, change: &Change, with_workspace: bool) -> anyhow::Result<()> {
    let id = change.session_id().map(SessionId::as_str).unwrap_or("-");
    let prefix = if with_workspace {
        format!("{} ", change.workspace().display())
    } else {
        String::new()
    };
    let describe = |summary: &studio_core::SessionSummary| match &summary.current_node {
        Some(node) => format!("{} (node {node})", summary.status),
        None => summary.status.to_string(),
    };
    match change {
        Change::SessionAdded { summary, .. } => writeln!(out, "{prefix}+ {id}  {}", describe(summary))?,
        Change::SessionUpdated { summary, .. } => writeln!(out, "{prefix}~ {id}  {}", describe(summary))?,
        Change::SessionRemoved { .. } => writeln!(out, "{prefix}- {id}")?,
        Change::OutputAppended { lines, .. } => {
            for line in lines {
                writeln!(out, "{prefix}{id} | {line}")?;
            }
        }
        Change::NodeChanged { node, status, .. } => writeln!(out, "{prefix}~ {id}  node {node}: {status}")?,
        Change::RunStatusChanged { status, stopping, .. } => {
            let stopping = if *stopping { " (stopping)" } else { "" };
            writeln!(out, "{prefix}~ {id}  run {status}{stopping}")?
        }
        Change::RunOutputAppended { lines, .. } => {
            for line in lines {
                writeln!(out, "{prefix}{id} | {}", line.line)?;
            }
        }
        Change::WatchPolling { reason, .. } => writeln!(out, "{prefix}! not watched live: {reason}")?,
        Change::AgentsChanged { .. } => writeln!(out, "{prefix}! agents changed: .zibby/studio.toml")?,
    }
    Ok(())
}

/// One event of a run `zstudio run` follows.
/// What a stop is called in the CLI's output.
pub fn stopping_words(forced: bool, elsewhere: bool) -> String {
    let what = if forced {
        "force stopping: SIGTERM sent to the run's processes (SIGKILL in 5 s)"
    } else {
        "stopping: the current node finishes first"
    };
    if elsewhere {
        format!("{what} (asked from another process)")
    } else {
        what.to_owned()
    }
}

/// What `zstudio stop` says as the stop goes on.
pub fn stop_progress_words(progress: studio_core::stop::StopProgress) -> String {
    use studio_core::stop::{KillBecause, StopProgress, StopSignal, Stopping, TermBecause};
    match progress {
        StopProgress::Asked(how) => stopping_words(how == Stopping::Forced, false),
        StopProgress::Sent(StopSignal::Sigterm(TermBecause::GraceOver)) => {
            "grace period over: SIGTERM sent to the run's processes".into()
        }
        StopProgress::Sent(StopSignal::Sigterm(TermBecause::Forced)) => "SIGTERM sent to the run's processes".into(),
        StopProgress::Sent(StopSignal::Sigkill(KillBecause::StillRunning)) => {
            "still running 5 s after SIGTERM: SIGKILL sent".into()
        }
        StopProgress::Sent(StopSignal::Sigkill(KillBecause::LeaderExited)) => {
            "SIGKILL sent to what the run left behind".into()
        }
    }
}

pub fn run_event(out: &mut impl Write, event: &RunEvent, started: &StartedRun) -> anyhow::Result<()> {
    match event {
        RunEvent::RunStarted { pid, .. } => writeln!(
            out,
            "run {} in session {} (pid {})\n  folder {}",
            started.run_id,
            started.session_id,
            pid.map_or("-".to_owned(), |p| p.to_string()),
            started.session_path.display()
        )?,
        RunEvent::NodeBegin { node, depth, t_ms, .. } => {
            writeln!(out, "{:>8}  {}┌ {node}", seconds(*t_ms), "  ".repeat(*depth))?
        }
        RunEvent::NodeEnd { node, status, t_ms, .. } => writeln!(out, "{:>8}  └ {node}: {status}", seconds(*t_ms))?,
        RunEvent::NodeDiscarded { node, .. } => writeln!(out, "          ({node} was a title, not a node)")?,
        // The engine's own `┌ node` line: the node's start is said once, by the line above with its time.
        RunEvent::Output { stream, line, .. }
            if *stream == studio_core::protocol::Stream::Stdout && opens_a_node(line) => {}
        RunEvent::Output { stream, line, .. } => {
            let mark = if *stream == studio_core::protocol::Stream::Stderr {
                "!"
            } else {
                " "
            };
            writeln!(out, "          {mark} {line}")?
        }
        RunEvent::Stopping { forced, elsewhere, .. } => {
            writeln!(out, "          {}", stopping_words(*forced, *elsewhere))?
        }
        RunEvent::BudgetWarning { spend, .. } => {
            writeln!(out, "          budget: {} spent, 80 % of the run's budget", spend.label)?
        }
        RunEvent::BudgetReached { spend, .. } => writeln!(
            out,
            "          budget reached: {} spent; stopping after the current node",
            spend.label
        )?,
        RunEvent::BudgetUnpriced {
            nodes_priced,
            nodes_with_usage,
            ..
        } => writeln!(
            out,
            "          budget not enforced in dollars: {nodes_priced} of {nodes_with_usage} nodes priced"
        )?,
        RunEvent::RunFinished {
            status,
            exit_code,
            elapsed_ms,
            stopped_by,
            error,
            ..
        } => {
            let how = stopped_by
                .map(|s| format!(" ({s:?})").to_lowercase())
                .unwrap_or_default();
            let exit = exit_code.map(|c| format!(", exit {c}")).unwrap_or_default();
            writeln!(out, "{:>8}  {status}{how}{exit}", seconds(*elapsed_ms))?;
            if let Some(error) = error {
                writeln!(out, "          {error}")?;
            }
        }
    }
    Ok(())
}

/// Whether an output line is the engine's human timeline opening a node (`┌ name`, after the
/// `│ ` of nesting), which [`RunEvent::NodeBegin`] stands for.
fn opens_a_node(line: &str) -> bool {
    let plain = studio_core::protocol::strip_ansi(line.as_bytes());
    let plain = String::from_utf8_lossy(&plain);
    plain
        .trim_start_matches(['│', ' '])
        .strip_prefix("┌ ")
        .is_some_and(|name| !name.trim().is_empty())
}

/// A node's usage on its `show` line: `  · 1,234 tokens (…) · $0.0123 reported`.
fn node_usage(usage: &NodeUsage) -> String {
    let tokens = &usage.tokens_label;
    let source = match usage.cost_source {
        CostSource::Reported if usage.api_equivalent => " reported (API-equivalent)",
        CostSource::Reported => " reported",
        CostSource::Estimated => " estimated",
        CostSource::Unknown => "",
    };
    let models = if usage.models.is_empty() {
        String::new()
    } else {
        format!(" · {}", usage.models.join(", "))
    };
    let last = if usage.last_attempt_only {
        " · last attempt only"
    } else {
        ""
    };
    format!("  · {tokens} · {}{source}{models}{last}", usage.cost_label)
}

/// `text` in at most `max` columns of a terminal (wide characters take two, combining ones
/// none), cut with `…` when longer.
fn shorten(text: &str, max: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if text.width() <= max {
        return text.to_owned();
    }
    let mut kept = String::new();
    let mut width = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if width + w > max.saturating_sub(1) {
            break;
        }
        kept.push(c);
        width += w;
    }
    kept.push('…');
    kept
}

/// A table cell: `text` cut to `width` columns ([`shorten`]) and padded to them with spaces.
fn cell(text: &str, width: usize) -> String {
    let shown = shorten(text, width);
    let padding = width.saturating_sub(unicode_width::UnicodeWidthStr::width(shown.as_str()));
    format!("{shown}{}", " ".repeat(padding))
}

/// The columns of the terminal standard output is, if it is one.
fn terminal_columns() -> Option<usize> {
    terminal_size::terminal_size_of(std::io::stdout()).map(|(width, _)| usize::from(width.0))
}

/// How wide the sessions table's TITLE column is: 32 columns, or in a terminal what its width
/// leaves after the other columns (at least 16, at most 80).
fn title_width(columns: Option<usize>) -> usize {
    // The columns before TITLE and after it ("  5m ago"), with their separating spaces.
    const OTHERS: usize = 2 + 12 + 29 + 17 + 21 + 13 + 12 + 9;
    columns.map_or(32, |columns| columns.saturating_sub(OTHERS).clamp(16, 80))
}

fn ago(time: Timestamp, now: SystemTime) -> String {
    let seconds = now.duration_since(time.to_system_time()).map_or(0, |d| d.as_secs());
    match seconds {
        0..60 => format!("{seconds}s ago"),
        60..3600 => format!("{}m ago", seconds / 60),
        3600..86400 => format!("{}h ago", seconds / 3600),
        _ => format!("{}d ago", seconds / 86400),
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

pub fn exported(out: &mut impl Write, exported: &studio_core::share::Exported) -> anyhow::Result<()> {
    writeln!(
        out,
        "exported session {} to {} ({} files, {} bytes{})",
        exported.session_id,
        exported.path.display(),
        exported.members,
        exported.bytes,
        if exported.config_included {
            "; .session-info.json's config included"
        } else {
            ""
        }
    )?;
    let redaction = &exported.redaction;
    let secrets: u64 = redaction.secrets.iter().map(|s| s.count).sum();
    writeln!(
        out,
        "redacted: {secrets} secret{}{}",
        if secrets == 1 { "" } else { "s" },
        if redaction.home_as_tilde {
            "; the home folder written as ~"
        } else {
            ""
        }
    )?;
    // What a bundle carries as it is (issue 40, point 9): whoever gets it reads it.
    writeln!(
        out,
        "included as they are: the prompts, what the agent printed and wrote (its output, messages \
         and the session's files, any token in them too); redaction covers only what the studio \
         recorded of how it ran (commands, errors, log lines, .session-info.json)"
    )?;
    Ok(())
}

pub fn imported(out: &mut impl Write, imported: &studio_core::share::ImportedSession) -> anyhow::Result<()> {
    writeln!(
        out,
        "imported session {} (a {}) into {}",
        imported.session_id,
        match imported.kind {
            studio_core::share::ImportKind::Bundle => "bundle",
            studio_core::share::ImportKind::Folder => "session folder",
            studio_core::share::ImportKind::Log => "captured log",
        },
        imported.path.display()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{cell, shorten, title_width};
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn cells_are_measured_in_terminal_columns() {
        // Eight wide characters take 16 columns: padded to 20, the next column lines up.
        let title = "日本語のタイトル";
        assert_eq!(cell(title, 20).width(), 20);
        assert_eq!(cell(title, 20), format!("{title}    "));
        // Cut to 9 columns: four wide characters and the ellipsis.
        assert_eq!(shorten(title, 9), "日本語の…");
        assert_eq!(cell(title, 9).width(), 9);
        // Combining marks take none.
        assert_eq!(cell("e\u{301}", 3), "e\u{301}  ");
        assert_eq!(cell("plan", 6), "plan  ");
    }

    #[test]
    fn the_title_column_takes_what_the_terminal_leaves() {
        assert_eq!(title_width(None), 32);
        assert_eq!(title_width(Some(80)), 16);
        assert_eq!(title_width(Some(160)), 160 - 115);
        assert_eq!(title_width(Some(400)), 80);
    }
}
