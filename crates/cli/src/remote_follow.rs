//! `zstudio --remote HOST:PATH watch` and `… run`: what follows a host's workspace, printed as
//! the local `watch` and `run` print it (the same printers), over a link connected again when it
//! drops (`studio_core::remote::link`). A run started here runs detached on the host: Ctrl-C, a
//! lost link or giving up connecting again end the following here, never the run; the command
//! to follow it again is said.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use studio_core::remote::follow::RunFollower;
use studio_core::remote::link::{Link, LinkEvent, LinkState};
use studio_core::remote::methods::Methods;
use studio_core::remote::protocol::AGENT_TRUST;
use studio_core::runner::{RunEvent, StartedRun};
use studio_core::store::RunRecord;
use studio_core::ErrorCode;

use crate::cli::{Format, Globals, RunArgs};
use crate::commands::run::{ask_trust, exit_code, RunPrinter};
use crate::commands::watch::print_change;
use crate::visible::Visible;

/// A host's workspace as these commands reach it: its link, and `--remote` as given (for the
/// commands they suggest).
pub struct Reached<'a> {
    pub link: &'a Link,
    pub target: &'a str,
}

impl Reached<'_> {
    fn link(&self) -> &Link {
        self.link
    }
}

/// How long a follow waits for an event before it reads what is new all the same.
const TICK: Duration = Duration::from_millis(250);

/// How long a follow waits when lines it was told of are not stored yet (the host records a
/// run's output every 50 ms).
const SOON: Duration = Duration::from_millis(20);

/// How long `run --detach` waits for the run's start to print it.
const START_WAIT: Duration = Duration::from_secs(10);

/// The exit status of a follow ended by Ctrl-C (the run goes on on the host).
const INTERRUPTED: u8 = 130;

/// The host's changes, as `zstudio watch` prints a local workspace's, until interrupted or the
/// link is given up.
pub fn watch(remote: &Reached<'_>, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let link = remote.link();
    let events = link.events().expect("the link's events are taken once");
    link.subscribe_changes()?;
    writeln!(
        Visible::new(std::io::stderr().lock()),
        "zstudio: watching {}",
        remote.target
    )?;
    // What a local watch's first scan says: every session there now, as added (once subscribed,
    // so that none made meanwhile is missed; one may then be said twice, added then updated).
    let listing = link.sessions_list()?;
    let workspace = std::path::PathBuf::from(link.workspace_path());
    for row in listing.sessions {
        let change = studio_core::watcher::Change::SessionAdded {
            workspace: workspace.clone(),
            session_id: row.summary.id.clone(),
            summary: row.summary,
            tags: row.tags,
        };
        print_change(out, globals.format(), &change, false)?;
    }
    for event in events {
        match event {
            LinkEvent::Notification(notification) => {
                if let Some(change) = notification.change() {
                    print_change(out, globals.format(), &change, false)?;
                }
            }
            LinkEvent::State(state) => say_state(remote, &state, None)?,
            LinkEvent::Reconnected => {}
        }
    }
    Ok(())
}

/// `run --agent NAME` on the host (detached there), followed here; or `run --attach RUN_ID`.
pub fn run(remote: &Reached<'_>, args: &RunArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let format = globals.format();
    let link = remote.link();
    let events = link.events().expect("the link's events are taken once");
    if let Some(run_id) = &args.attach {
        let run = run_record(remote, run_id)?;
        let started = StartedRun {
            run_id: run.id.clone(),
            session_id: run.session_id.clone(),
            session_path: run.workspace.join(".zibby/output/sessions").join(&run.session_id),
            pid: run.pid.and_then(|pid| u32::try_from(pid).ok()),
        };
        if format == Format::Human {
            writeln!(
                out,
                "run {} in session {} on {}, from its first line",
                started.run_id,
                started.session_id,
                link.host()
            )?;
        }
        let follower = RunFollower::from_line(&run.id, &run.session_id, 1, true);
        return follow(remote, &events, follower, &started, format, out);
    }
    if args.max_cost.is_some() || args.max_tokens.is_some() || args.over_budget {
        anyhow::bail!(
            "--max-cost, --max-tokens and --over-budget do not reach a host yet: its studio holds the run to \
             the budgets of its .zibby/studio.toml"
        );
    }
    let started = start(remote, args)?;
    if args.detach {
        print_start(&events, &started, format, out)?;
        if format == Format::Human {
            writeln!(
                out,
                "left running on {}; {}",
                link.host(),
                hints(remote, &started.run_id)
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    follow(remote, &events, RunFollower::new(&started), &started, format, out)
}

/// Starts the agent on the host (a replay with `--session` and `--node`); an agent the host's
/// studio does not trust yet is shown and asked about first (or trusted by `--trust`), and
/// trusted there.
fn start(remote: &Reached<'_>, args: &RunArgs) -> anyhow::Result<StartedRun> {
    let link = remote.link();
    let agent = args.agent.as_deref().expect("clap asks for --agent or --attach");
    let node = args.session.as_ref().and(args.node.as_ref());
    let call = || -> Result<StartedRun, studio_core::Error> {
        match (&args.session, node) {
            (Some(session), Some(node)) => link.run_replay(session.clone(), node.clone(), agent.to_owned()),
            // The budget flags were refused before this (the host's studio.toml holds its runs).
            (session, _) => link.run_start(
                agent.to_owned(),
                args.prompt.clone().unwrap_or_default(),
                session.clone(),
                None,
            ),
        }
    };
    match call() {
        Err(refused) if refused.code() == ErrorCode::AgentsUntrusted => {
            let Some((digest, shown)) = refused.untrusted_launch() else {
                return Err(refused.into());
            };
            ask_trust(&shown, args.trust, &refused, &format!(" on {}", link.host()))?;
            link.call::<bool>(AGENT_TRUST, &json!({ "agent": agent, "node": node, "digest": digest }))?;
            Ok(call()?)
        }
        started => Ok(started?),
    }
}

/// The run `run_id` as the host records it.
fn run_record(remote: &Reached<'_>, run_id: &str) -> anyhow::Result<RunRecord> {
    let runs = remote.link().runs_list(None)?;
    runs.into_iter()
        .find(|run| run.id == run_id)
        .ok_or_else(|| anyhow::anyhow!("{}: no run `{run_id}` in the host's store", remote.link().host()))
}

/// The run's start, printed as `run` prints it, once the host says it (at most [`START_WAIT`]).
fn print_start(
    events: &Receiver<LinkEvent>,
    started: &StartedRun,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_WAIT;
    while let Ok(event) = events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let LinkEvent::Notification(notification) = event else {
            continue;
        };
        if let Some(event @ RunEvent::RunStarted { .. }) = notification.run_event() {
            if event.run_id() == started.run_id {
                return RunPrinter::new(started, format).print(out, &event);
            }
        }
    }
    Ok(())
}

/// What stops the run on the host and what follows it again.
fn hints(remote: &Reached<'_>, run_id: &str) -> String {
    format!(
        "`zstudio --remote {target} stop {run_id}` stops it, `zstudio --remote {target} run --attach {run_id}` follows it again",
        target = remote.target
    )
}

/// Prints the run's events until it ends (exiting with its outcome, as `run` does), Ctrl-C is
/// pressed, or the link is given up; neither stops the run on the host.
fn follow(
    remote: &Reached<'_>,
    events: &Receiver<LinkEvent>,
    mut follower: RunFollower,
    started: &StartedRun,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let link = remote.link();
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))?;
    let mut printer = RunPrinter::new(started, format);
    loop {
        if interrupted.load(Ordering::SeqCst) {
            out.flush()?;
            let mut err = Visible::new(std::io::stderr().lock());
            writeln!(
                err,
                "\nno longer following; the run goes on on {}: {}",
                link.host(),
                hints(remote, &started.run_id)
            )?;
            return Ok(ExitCode::from(INTERRUPTED));
        }
        let wait = if follower.behind() { SOON } else { TICK };
        let event = match events.recv_timeout(wait) {
            Ok(event) => Some(event),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => anyhow::bail!(
                "{}: the link was closed; {}",
                link.host(),
                hints(remote, &started.run_id)
            ),
        };
        if let Some(LinkEvent::State(state)) = &event {
            say_state(remote, state, Some(&started.run_id))?;
        }
        let shown = match follower.on(link, event.as_ref()) {
            Ok(shown) => shown,
            // Read again once connected: the follower holds the line it is at.
            Err(error) if link.dropped(&error) => continue,
            Err(error) => {
                // Given up: said with how to follow again.
                if let state @ LinkState::Failed { .. } = link.state() {
                    say_state(remote, &state, Some(&started.run_id))?;
                }
                return Err(error.into());
            }
        };
        for event in &shown {
            printer.print(out, event)?;
            if let RunEvent::RunFinished { status, .. } = event {
                out.flush()?;
                return Ok(exit_code(*status));
            }
        }
        out.flush()?;
    }
}

/// Says on stderr that the link dropped (once), is back, or was given up (an error, with how to
/// follow the run again when one is followed).
fn say_state(remote: &Reached<'_>, state: &LinkState, run_id: Option<&str>) -> anyhow::Result<()> {
    let host = remote.link().host();
    let mut err = Visible::new(std::io::stderr().lock());
    match state {
        LinkState::Reconnecting {
            reason, attempts: 0, ..
        } => writeln!(err, "zstudio: {reason}; connecting again")?,
        LinkState::Reconnecting { .. } => {}
        LinkState::Connected => writeln!(err, "zstudio: {host}: connected again")?,
        LinkState::Failed { reason } => {
            let hint = run_id.map(|run_id| format!("; the run goes on there: {}", hints(remote, run_id)));
            anyhow::bail!("{host}: {reason}{}", hint.unwrap_or_default());
        }
    }
    Ok(())
}
