//! `zstudio run`: starts a run through the keeper, prints it live, stops it on Ctrl-C, and exits
//! with its outcome; or with `--detach` leaves it running.
//!
//! The steps, in order: [`open`] the workspace and the store, [`resolve`] what to run (an agent
//! once trusted, or the user's command), [`start`] it under a supervisor, then either
//! [`leave_running`] or [`stop_on_ctrl_c`] and [`follow`] it to its end.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use studio_core::agents::Budget;
use studio_core::remote::follow::RunFollower;
use studio_core::remote::link::{LinkEvent, LinkState};
use studio_core::remote::methods::Methods;
use studio_core::remote::protocol::AGENT_TRUST;
use studio_core::runner::{Keeper, RunEvent, RunEvents, RunRequest, StartedRun, Supervisor};
use studio_core::stop::Stopping;
use studio_core::store::{RunRecord, Store, StoreLocation};
use studio_core::{ErrorCode, SessionId, Workspace};

use crate::ask::confirm;
use crate::cli::{Format, Globals, RunArgs, Target};
use crate::open::{open_store, TempFolder};
use crate::place::Place;
use crate::print;
use crate::remote::Remote;
use crate::visible::Visible;

pub fn run(args: &RunArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    // A host's run: started detached there by its server and followed here.
    if let Place::Host(remote) = place {
        return run_on_host(remote, args, globals, out);
    }
    let format = globals.format();
    let opened = open(args, globals)?;
    let request = resolve(args, &opened)?;
    let (supervisor, events) = supervise(&opened)?;
    let live = super::otlp::live(&supervisor, &opened.workspace)?;
    let started = supervisor.start(request)?;
    if args.detach {
        leave_running(&supervisor, &events, &started, format, out)?;
        return Ok(ExitCode::SUCCESS);
    }
    stop_on_ctrl_c(&supervisor, &started.run_id)?;
    let new_session = args.session.is_none();
    let followed = follow(&events, &started, format, out)?;
    super::otlp::finish_live(live);
    if new_session && followed.could_not_start() {
        forget_unstarted(&opened, &started);
        if format == Format::Human {
            writeln!(out, "          nothing kept: the command could not start")?;
        }
    }
    Ok(followed.exit)
}

/// A run whose command could not start (the keeper's 127 or 126, as a shell's: not found, not
/// executable) left nothing but an empty session: it is not kept (its error was said).
fn forget_unstarted(opened: &Opened, started: &StartedRun) {
    let Ok(id) = SessionId::parse(&started.session_id) else {
        return;
    };
    // Only an empty folder goes: the session was made for this run and nothing wrote in it.
    let discard = |folder: &std::path::Path| match std::fs::remove_dir(folder) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(studio_core::Error::io_write(folder, e)),
    };
    if let Err(error) = opened.store.session_delete(&opened.workspace, &id, discard) {
        eprintln!("zstudio: the empty session of the run that could not start is left: {error}");
    }
}

/// What a run needs opened: its workspace, and its store at the one location the keeper's
/// folders are placed beside.
struct Opened {
    workspace: Workspace,
    location: StoreLocation,
    store: Arc<Store>,
    /// A throwaway store's keeper folders live in the system's temp folder: gone with the command.
    _scratch: Option<TempFolder>,
}

fn open(args: &RunArgs, globals: &Globals) -> anyhow::Result<Opened> {
    let workspace = globals.open_workspace()?;
    if args.detach && globals.store.memory {
        anyhow::bail!("--detach with --memory: nothing would be left to record how the run ends; use a store (--db)");
    }
    let location = globals.store_location()?;
    let scratch = globals.store.memory.then(|| TempFolder(location.runs_dir()));
    let store = Arc::new(open_store(&location)?);
    Ok(Opened {
        workspace,
        location,
        store,
        _scratch: scratch,
    })
}

/// The run request: an agent of `.zibby/studio.toml` as the window runs it, once trusted (asked
/// on the terminal, or `--trust`), or the command given.
fn resolve(args: &RunArgs, opened: &Opened) -> anyhow::Result<RunRequest> {
    let request = resolve_target(args, opened)?;
    let budget = budget_of_this_run(args, request.budget)?;
    Ok(RunRequest {
        budget,
        over_budget: args.over_budget,
        ..request
    })
}

/// The budget of this run: the agent's (the workspace's daily one for a command), each of its
/// limits replaced by `--max-cost` and `--max-tokens` when given.
fn budget_of_this_run(args: &RunArgs, agents: Budget) -> anyhow::Result<Budget> {
    if let Some(problem) = args.max_cost.and_then(studio_core::budget::usd_problem) {
        anyhow::bail!("--max-cost: {problem}");
    }
    if args.max_tokens == Some(0) {
        anyhow::bail!("--max-tokens: a budget of tokens is above 0");
    }
    Ok(Budget {
        max_cost_usd: args.max_cost.or(agents.max_cost_usd),
        max_tokens: args.max_tokens.or(agents.max_tokens),
        daily_usd: agents.daily_usd,
    })
}

fn resolve_target(args: &RunArgs, opened: &Opened) -> anyhow::Result<RunRequest> {
    let session = args.session.as_deref().map(SessionId::parse).transpose()?;
    let grace = Duration::from_secs(args.grace);
    Ok(match args.target() {
        Target::Agent { name, trust } => {
            let request = || {
                studio_core::app::agent_run_request(
                    &opened.store,
                    &opened.workspace,
                    name,
                    args.prompt.clone(),
                    session.clone(),
                    args.node.clone(),
                )
            };
            let request = match request() {
                Err(studio_core::Error::AgentsUntrusted { launch }) => {
                    trust_on_terminal(&opened.store, &opened.workspace, &launch, trust)?;
                    request()?
                }
                request => request?,
            };
            RunRequest { grace, ..request }
        }
        Target::Command(command) => RunRequest {
            workspace: opened.workspace.clone(),
            agent: None,
            command: command.to_vec(),
            cwd: None,
            env: Vec::new(),
            inherit_env: Default::default(),
            session,
            prompt: args.prompt.clone(),
            node: args.node.clone(),
            grace,
            budget: Budget {
                daily_usd: studio_core::agents::daily_usd(opened.workspace.root())?,
                ..Budget::default()
            },
            over_budget: false,
        },
    })
}

/// A supervisor that runs through the keeper (this very program), so that a run can be left
/// running, and its events.
fn supervise(opened: &Opened) -> anyhow::Result<(Arc<Supervisor>, RunEvents)> {
    let supervisor = Arc::new(Supervisor::with_keeper(
        opened.store.clone(),
        Keeper {
            program: std::env::current_exe()?,
            runs_dir: opened.location.runs_dir(),
        },
    ));
    // Every line reaches the terminal (or the `--json` stream), however slow it reads.
    let events = supervisor.subscribe_lossless();
    Ok((supervisor, events))
}

/// `--detach`: prints the run's start and lets the keeper carry it on alone.
fn leave_running(
    supervisor: &Supervisor,
    events: &RunEvents,
    started: &StartedRun,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    if let Some(event) = events.iter().find(|e| e.run_id() == started.run_id) {
        print_event(out, format, &event, started)?;
    }
    supervisor.detach();
    if format == Format::Human {
        writeln!(out, "left running; `zstudio stop {}` stops it", started.session_id)?;
    }
    Ok(())
}

/// Ctrl-C stops the run gracefully; a second one by force.
fn stop_on_ctrl_c(supervisor: &Arc<Supervisor>, run_id: &str) -> anyhow::Result<()> {
    let supervisor = supervisor.clone();
    let run_id = run_id.to_owned();
    ctrlc::set_handler(move || match supervisor.stop(&run_id, false) {
        Ok(Stopping::Graceful | Stopping::Budget) => {
            eprintln!("\n{} (Ctrl-C again to force)", print::stopping_words(false, false))
        }
        Ok(Stopping::Forced) => eprintln!("\n{}", print::stopping_words(true, false)),
        Err(error) => eprintln!("\n{error}"),
    })?;
    Ok(())
}

/// How a followed run ended, as far as `run` needs.
struct Followed {
    exit: ExitCode,
    /// It ended with 127 or 126 (not found, not executable) before it printed a line on stdout.
    never_started: bool,
}

impl Followed {
    fn could_not_start(&self) -> bool {
        self.never_started
    }
}

/// Prints the run's events until it finishes; the exit status says how it ended.
fn follow(events: &RunEvents, started: &StartedRun, format: Format, out: &mut impl Write) -> anyhow::Result<Followed> {
    let mut printer = RunPrinter::new(started, format);
    let ended = |exit| Followed {
        exit,
        never_started: false,
    };
    loop {
        // Flushed when no event is waiting: a flood is written in large pieces, not line by line.
        // Read as shared: a live export hears the same events, and nothing is copied for this.
        let heard = match events.try_recv_heard() {
            Ok(heard) => heard,
            Err(TryRecvError::Empty) => {
                out.flush()?;
                match events.recv_heard() {
                    Ok(heard) => heard,
                    Err(_) => return Ok(ended(ExitCode::FAILURE)),
                }
            }
            Err(TryRecvError::Disconnected) => return Ok(ended(ExitCode::FAILURE)),
        };
        for event in heard.iter() {
            if event.run_id() != started.run_id {
                continue;
            }
            printer.print(out, event)?;
            if let RunEvent::RunFinished {
                status,
                exit_code: code,
                ..
            } = event
            {
                out.flush()?;
                return Ok(Followed {
                    exit: exit_code(*status),
                    never_started: !printer.printed_stdout && matches!(code, Some(126 | 127)),
                });
            }
        }
    }
}

/// How `run` prints a run's events (of a local run, or of a host's): its error said once, not
/// again at the end when it was the last line of its stderr.
struct RunPrinter<'a> {
    started: &'a StartedRun,
    format: Format,
    last_stderr: Option<String>,
    /// A line on stdout or a node was printed.
    printed_stdout: bool,
}

impl<'a> RunPrinter<'a> {
    fn new(started: &'a StartedRun, format: Format) -> RunPrinter<'a> {
        RunPrinter {
            started,
            format,
            last_stderr: None,
            printed_stdout: false,
        }
    }

    /// Prints one event of the run.
    fn print(&mut self, out: &mut impl Write, event: &RunEvent) -> anyhow::Result<()> {
        match event {
            RunEvent::Output { stream, line, .. } if *stream == studio_core::protocol::Stream::Stderr => {
                self.last_stderr = Some(line.clone());
            }
            RunEvent::Output { .. } | RunEvent::NodeBegin { .. } => self.printed_stdout = true,
            _ => {}
        }
        let mut shown = event.clone();
        if let RunEvent::RunFinished { error, .. } = &mut shown {
            if self.format == Format::Human && error.is_some() && *error == self.last_stderr {
                *error = None;
            }
        }
        print_event(out, self.format, &shown, self.started)
    }
}

/// 0 success, 2 cancelled, 3 interrupted, 1 anything else.
fn exit_code(status: studio_core::Status) -> ExitCode {
    ExitCode::from(match status {
        studio_core::Status::Success => 0,
        studio_core::Status::Cancelled => 2,
        studio_core::Status::Interrupted => 3,
        _ => 1,
    })
}

fn print_event(out: &mut impl Write, format: Format, event: &RunEvent, started: &StartedRun) -> anyhow::Result<()> {
    match format {
        Format::Json => print::write_json_line(out, event),
        Format::Human => print::run_event(out, event, started),
    }
}

/// An agent from a workspace's `.zibby/studio.toml` runs only once the user trusted that content
/// of the file: with `--trust`, or on a terminal after reading what it would run. Without a
/// terminal and `--trust`, it is refused with what it would run.
fn trust_on_terminal(
    store: &Store,
    workspace: &Workspace,
    launch: &studio_core::agents::Launch,
    trust: bool,
) -> anyhow::Result<()> {
    let refused = studio_core::Error::AgentsUntrusted {
        launch: Box::new(launch.clone()),
    };
    ask_trust(&launch.shown, trust, &refused, "")?;
    store.trust_launch(workspace, launch, SystemTime::now())?;
    Ok(())
}

/// Whether the user trusts `shown` (of a workspace `place` names: "" here, " on HOST"): yes with
/// `--trust`, else asked on the terminal after reading what it would run; an error (`refused`,
/// with what to do) when not, or with no terminal to ask on.
fn ask_trust(
    shown: &studio_core::agents::ShownLaunch,
    trust: bool,
    refused: &dyn std::fmt::Display,
    place: &str,
) -> anyhow::Result<()> {
    if trust {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(crate::CodedError {
            code: studio_core::ErrorCode::AgentsUntrusted,
            message: format!("{refused}: pass --trust to run it (no terminal to ask on)"),
        }
        .into());
    }
    // Every value is escaped and folded by the core (`shown`): nothing the agents file says can
    // draw a line of its own here.
    let mut err = Visible::new(std::io::stderr().lock());
    writeln!(
        err,
        "Agent `{}` of {}{place} is not trusted yet. It would run:",
        shown.agent, shown.agents_file
    )?;
    for (what, line) in shown.describe_lines() {
        writeln!(err, "  {what:<9} {line}")?;
    }
    drop(err);
    if !confirm("Trust this and run it?")? {
        anyhow::bail!("not run: agent `{}` is not trusted", shown.agent);
    }
    Ok(())
}

// A host's run (`--remote`): started detached there by its server, its events followed here.

/// How long a follow waits for an event before it reads what is new all the same.
const TICK: Duration = Duration::from_millis(250);

/// How long a follow waits when lines it was told of are not stored yet (the host records a
/// run's output every 50 ms).
const SOON: Duration = Duration::from_millis(20);

/// How long `run --detach` waits for the run's start to print it.
const START_WAIT: Duration = Duration::from_secs(10);

/// The exit status of a follow ended by Ctrl-C (the run goes on on the host).
const INTERRUPTED: u8 = 130;

/// `run --agent NAME` on the host (detached there), followed here; or `run --attach RUN_ID`.
fn run_on_host(remote: &Remote, args: &RunArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
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
        return follow_on_host(remote, &events, follower, &started, format, out);
    }
    if args.max_cost.is_some() || args.max_tokens.is_some() || args.over_budget {
        anyhow::bail!(
            "--max-cost, --max-tokens and --over-budget do not reach a host yet: its studio holds the run to \
             the budgets of its .zibby/studio.toml"
        );
    }
    let started = start_on_host(remote, args)?;
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
    follow_on_host(remote, &events, RunFollower::new(&started), &started, format, out)
}

/// Starts the agent on the host (a replay with `--session` and `--node`); an agent the host's
/// studio does not trust yet is shown and asked about first (or trusted by `--trust`), and
/// trusted there.
fn start_on_host(remote: &Remote, args: &RunArgs) -> anyhow::Result<StartedRun> {
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
fn run_record(remote: &Remote, run_id: &str) -> anyhow::Result<RunRecord> {
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
fn hints(remote: &Remote, run_id: &str) -> String {
    format!(
        "`zstudio --remote {target} stop {run_id}` stops it, `zstudio --remote {target} run --attach {run_id}` follows it again",
        target = remote.target
    )
}

/// Prints the run's events until it ends (exiting with its outcome, as `run` does), Ctrl-C is
/// pressed, or the link is given up; neither stops the run on the host.
fn follow_on_host(
    remote: &Remote,
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
pub(crate) fn say_state(remote: &Remote, state: &LinkState, run_id: Option<&str>) -> anyhow::Result<()> {
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
