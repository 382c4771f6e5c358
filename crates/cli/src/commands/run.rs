//! `zstudio run`: starts a run through the keeper, prints it live, stops it on Ctrl-C, and exits
//! with its outcome; or with `--detach` leaves it running.
//!
//! The steps, in order: [`open`] the workspace and the store, [`resolve`] what to run (an agent
//! once trusted, or the user's command), [`start`] it under a supervisor, then either
//! [`leave_running`] or [`stop_on_ctrl_c`] and [`follow`] it to its end.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::mpsc::TryRecvError;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use studio_core::agents::Budget;
use studio_core::runner::{Keeper, RunEvent, RunEvents, RunRequest, StartedRun, Supervisor};
use studio_core::stop::Stopping;
use studio_core::store::{Store, StoreLocation};
use studio_core::{SessionId, Workspace};

use crate::ask::confirm;
use crate::cli::{Format, Globals, RunArgs, Target};
use crate::open::{open_store, TempFolder};
use crate::print;
use crate::visible::Visible;

pub fn run(args: &RunArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
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
pub struct RunPrinter<'a> {
    started: &'a StartedRun,
    format: Format,
    last_stderr: Option<String>,
    /// A line on stdout or a node was printed.
    pub printed_stdout: bool,
}

impl<'a> RunPrinter<'a> {
    pub fn new(started: &'a StartedRun, format: Format) -> RunPrinter<'a> {
        RunPrinter {
            started,
            format,
            last_stderr: None,
            printed_stdout: false,
        }
    }

    /// Prints one event of the run.
    pub fn print(&mut self, out: &mut impl Write, event: &RunEvent) -> anyhow::Result<()> {
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
pub fn exit_code(status: studio_core::Status) -> ExitCode {
    ExitCode::from(match status {
        studio_core::Status::Success => 0,
        studio_core::Status::Cancelled => 2,
        studio_core::Status::Interrupted => 3,
        _ => 1,
    })
}

pub fn print_event(out: &mut impl Write, format: Format, event: &RunEvent, started: &StartedRun) -> anyhow::Result<()> {
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
pub fn ask_trust(
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
