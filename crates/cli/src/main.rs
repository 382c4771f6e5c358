//! `zstudio`: Zibby Studio without a window, over the same core as the app.
//!
//! Every command takes `--json` for machine-readable output; the field names are documented in
//! `docs/cli.md` and stable. Errors are one line on stderr naming the path or id, and exit 1.

mod visible;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::{Parser, Subcommand};
use serde::Serialize;
use studio_core::protocol::{Stream, StreamReader};
use studio_core::runner::{Keeper, RunEvent, RunRequest, StartedRun, Supervisor};
use studio_core::session::Timestamp;
use studio_core::store::retention::{self, Rule};
use studio_core::store::{SessionRow, Store, StoreLocation};
use studio_core::tail::{last_lines, FileTail};
use studio_core::timeline::{Exit, RunEnd, RunTimeline, TimelineFold};
use studio_core::watcher::{Change, ChangeSink, Watcher, WatcherOptions};
use studio_core::{SessionId, Workspace};

#[derive(Parser)]
#[command(
    name = "zstudio",
    version,
    about = "Zibby Studio on the command line: sessions, runs and their timelines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct WorkspaceArg {
    /// The project folder whose sessions are under .zibby/output/sessions/ [default: current folder]
    #[arg(long, short = 'w', value_name = "DIR")]
    workspace: Option<PathBuf>,
}

impl WorkspaceArg {
    fn open(&self) -> anyhow::Result<Workspace> {
        let root = match &self.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()?,
        };
        Ok(Workspace::open(root)?)
    }
}

#[derive(clap::Args)]
struct StoreArgs {
    /// The studio's store [default: $ZIBBY_STUDIO_DB, else $XDG_DATA_HOME/zibby-studio/studio.sqlite]
    #[arg(long, value_name = "PATH", conflicts_with = "memory")]
    db: Option<PathBuf>,
    /// Use a throwaway in-memory store: nothing is kept after the command
    #[arg(long)]
    memory: bool,
}

impl StoreArgs {
    /// Opens the store, settling first the runs no studio process follows any more.
    fn open(&self) -> anyhow::Result<Store> {
        let store = Store::open(&StoreLocation::resolve(self.db.clone(), self.memory)?)?;
        // Runs whose studio is gone are settled first; `zstudio runs` shows what became of them.
        studio_core::runner::reconcile(&store, SystemTime::now())?;
        Ok(store)
    }
}

#[derive(Subcommand)]
enum Command {
    /// List the sessions of a workspace: pinned first, then most recently updated
    Sessions {
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        /// One JSON array of sessions
        #[arg(long)]
        json: bool,
    },
    /// Show one session in full
    Show {
        session_id: String,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
        /// Include `.session-info.json`'s `config` (it may hold secrets)
        #[arg(long)]
        with_config: bool,
    },
    /// Read a captured run's stdout (a CI log, say) and print its timeline
    Parse {
        /// The run's stderr, for the error message of a failed run
        #[arg(long, value_name = "FILE")]
        stderr: Option<PathBuf>,
        /// The run's exit status (shell-style: 128+n is signal n); without it the run is
        /// `running` unless its output says it stopped
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        exit_code: Option<i32>,
        #[arg(long)]
        json: bool,
    },
    /// Pin a session: pinned sessions list first, and stay pinned across restarts
    Pin {
        session_id: String,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Unpin a session
    Unpin {
        session_id: String,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List the pinned sessions
    Pins {
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// List the runs the studio started, newest first
    Runs {
        /// Only the runs of this session
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// Print a session's log (run.started, node.begin, run.cancelled, ...)
    Logs {
        session_id: String,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// Search run output, messages, node names and logs of a workspace
    Search {
        text: String,
        /// At most this many hits
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// Delete a session: its records in the store, and its folder (moved to the trash)
    Delete {
        session_id: String,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Run an agent in the foreground and follow it live (Ctrl-C stops it gracefully, a second
    /// Ctrl-C by force). Exit status: 0 success, 1 error, 2 cancelled, 3 interrupted
    Run {
        /// One of the agents in .zibby/studio.toml
        #[arg(long, conflicts_with = "command", required_unless_present = "command")]
        agent: Option<String>,
        /// The prompt ({prompt} in the command, and $ZIBBY_STUDIO_PROMPT)
        #[arg(long)]
        prompt: Option<String>,
        /// Continue this session (a new one otherwise)
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Replay this node of the session (the agent's replay command)
        #[arg(long, value_name = "NODE", requires = "session")]
        node: Option<String>,
        /// Seconds a graceful stop waits before signals
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        grace: u64,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        /// One JSON object per line per event
        #[arg(long)]
        json: bool,
        /// Start the run and leave it running in the background (`zstudio runs` shows it,
        /// `zstudio stop` stops it, and its outcome is recorded when a studio next looks)
        #[arg(long)]
        detach: bool,
        /// Run an agent of a `.zibby/studio.toml` not trusted yet (without a terminal to ask on);
        /// the file's content is trusted from then on
        #[arg(long, requires = "agent")]
        trust: bool,
        /// The command to run instead of an agent (after --)
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// The run keeper (used by the studio itself): run COMMAND, copy its output to DIR and to
    /// this process's own output, and record its exit in DIR/exit
    #[command(hide = true)]
    Keep {
        #[arg(long, value_name = "DIR")]
        run_dir: PathBuf,
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Stop a run that another studio process (the app, a `zstudio run`) supervises
    Stop {
        /// A run id, or a session id (its live run)
        id: String,
        /// Signal the run's processes now instead of waiting for the current node
        #[arg(long)]
        force: bool,
        /// Seconds a graceful stop waits before signals
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        grace: u64,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Delete old sessions by a retention rule (pinned sessions are always kept)
    Prune {
        /// Keep the sessions updated within the last N days
        #[arg(long, value_name = "N", required_unless_present = "keep", conflicts_with = "keep")]
        keep_days: Option<u64>,
        /// Keep the N most recently updated sessions
        #[arg(long, value_name = "N")]
        keep: Option<usize>,
        /// Only report what would be deleted
        #[arg(long)]
        dry_run: bool,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// Print the changes of the sessions of one or more workspaces as they happen, until
    /// interrupted: sessions added, updated and removed, and new output lines
    Watch {
        /// A workspace to watch; repeat for several [default: current folder]
        #[arg(long, short = 'w', value_name = "DIR")]
        workspace: Vec<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
        /// One JSON object per line per change
        #[arg(long)]
        json: bool,
    },
    /// Print the last lines of a session's output (its raw_stream_output.txt, else its nodes'
    /// in order), and with --follow the lines that come after
    Tail {
        session_id: String,
        #[command(flatten)]
        workspace: WorkspaceArg,
        #[command(flatten)]
        store: StoreArgs,
        /// Keep printing new lines until interrupted
        #[arg(long, short = 'f')]
        follow: bool,
        /// How many of the last lines to print first
        #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
        lines: usize,
        /// One JSON object per line: {"file", "line"}
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The keeper's threads write to stdout themselves: it must not be locked here.
    if let Command::Keep { run_dir, command } = &cli.command {
        let status = studio_core::keeper::keep(run_dir, command);
        return ExitCode::from(u8::try_from(status).unwrap_or(1));
    }
    // Untrusted text (node names, output lines, file names) is printed: control characters as escapes.
    let mut out = visible::Visible::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let result = match cli.command {
        Command::Run {
            agent,
            prompt,
            session,
            node,
            grace,
            workspace,
            store,
            json,
            detach,
            trust,
            command,
        } => run_agent(
            RunArgs {
                agent,
                prompt,
                session,
                node,
                grace: Duration::from_secs(grace),
                detach,
                trust,
                command,
            },
            &workspace,
            &store,
            json,
            &mut out,
        ),
        command => run(command, &mut out).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            // A closed pipe (`zstudio sessions | head`) is not an error worth a message.
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(visible::Visible::new(std::io::stderr().lock()), "zstudio: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command, out: &mut impl Write) -> anyhow::Result<()> {
    let now = SystemTime::now();
    match command {
        Command::Watch { workspace, store, json } => watch_sessions(&workspace, &store, json, out),
        Command::Tail {
            session_id,
            workspace,
            store,
            follow,
            lines,
            json,
        } => tail_session(&session_id, &workspace, &store, follow, lines, json, out),
        Command::Sessions { workspace, store, json } => {
            let sessions = store.open()?.list_sessions(&workspace.open()?, now)?;
            emit(out, json, &sessions, |out, sessions| print_sessions(out, sessions, now))
        }
        Command::Pin {
            session_id,
            workspace,
            store,
        } => {
            let (workspace, store, id) = (workspace.open()?, store.open()?, SessionId::parse(&session_id)?);
            require_session(&store, &workspace, &id)?;
            store.pin(&workspace, &id, now)?;
            writeln!(out, "pinned {id}")?;
            Ok(())
        }
        Command::Unpin {
            session_id,
            workspace,
            store,
        } => {
            let (workspace, store, id) = (workspace.open()?, store.open()?, SessionId::parse(&session_id)?);
            store.unpin(&workspace, &id)?;
            writeln!(out, "unpinned {id}")?;
            Ok(())
        }
        Command::Pins { workspace, store, json } => {
            let pins = store.open()?.pins(&workspace.open()?)?;
            if json {
                return write_json(out, &pins);
            }
            for pin in pins {
                writeln!(out, "{}  pinned {}", pin.session_id, ago(pin.pinned_at, now))?;
            }
            Ok(())
        }
        Command::Runs {
            session,
            workspace,
            store,
            json,
        } => {
            let session = session.as_deref().map(SessionId::parse).transpose()?;
            let (store, workspace) = (store.open()?, workspace.open()?);
            if let Some(id) = &session {
                require_session(&store, &workspace, id)?;
            }
            let runs = store.runs(&workspace, session.as_ref())?;
            if json {
                return write_json(out, &runs);
            }
            if runs.is_empty() {
                writeln!(out, "No runs yet.")?;
            }
            for run in runs {
                let status = if run.detached {
                    "running (detached)".to_owned()
                } else {
                    run.status.to_string()
                };
                writeln!(
                    out,
                    "{:<18} {}  {}  {}  {}",
                    status,
                    run.id,
                    run.session_id,
                    ago(run.started_at, now),
                    run.command.join(" ")
                )?;
            }
            Ok(())
        }
        Command::Logs {
            session_id,
            workspace,
            store,
            json,
        } => {
            let id = SessionId::parse(&session_id)?;
            let (store, workspace) = (store.open()?, workspace.open()?);
            require_session(&store, &workspace, &id)?;
            let logs = store.logs(&workspace, &id)?;
            if json {
                return write_json(out, &logs);
            }
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
        Command::Search {
            text,
            limit,
            workspace,
            store,
            json,
        } => {
            let hits = store.open()?.search(&workspace.open()?, &text, limit)?;
            if json {
                return write_json(out, &hits);
            }
            for hit in hits {
                let place = match (&hit.run_id, &hit.node) {
                    (Some(run), Some(node)) => format!("run {run} node {node}"),
                    (Some(run), None) => format!("run {run}"),
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
        Command::Delete {
            session_id,
            yes,
            workspace,
            store,
        } => {
            let (workspace, store, id) = (workspace.open()?, store.open()?, SessionId::parse(&session_id)?);
            require_session(&store, &workspace, &id)?;
            let folder = workspace.session_path(&id);
            if !yes
                && !confirm(&format!(
                    "Delete session {id} ({})? Its folder goes to the trash.",
                    folder.display()
                ))?
            {
                anyhow::bail!("not deleted: {id}");
            }
            store.session_delete(&workspace, &id, studio_core::process::move_to_trash)?;
            writeln!(out, "deleted {id} (folder moved to the trash)")?;
            Ok(())
        }
        Command::Run { .. } | Command::Keep { .. } => unreachable!("main runs these"),
        Command::Stop {
            id,
            force,
            grace,
            workspace,
            store,
        } => {
            let store = store.open()?;
            let run = find_run(&store, &workspace, &id)?;
            let session = SessionId::parse(&run.session_id)?;
            let session_path = Workspace::from_canonical_root(run.workspace.clone()).session_path(&session);
            let ended = studio_core::runner::stop_elsewhere_and_wait(
                &store,
                &run.id,
                &session_path,
                force,
                Duration::from_secs(grace),
                |progress| eprintln!("{}", stop_progress_words(progress)),
            )?;
            let how = ended.stopped_by.map(|s| format!(" ({s})")).unwrap_or_default();
            writeln!(
                out,
                "run {} of session {}: {}{how}",
                ended.id, ended.session_id, ended.status
            )?;
            Ok(())
        }
        Command::Prune {
            keep_days,
            keep,
            dry_run,
            yes,
            workspace,
            store,
            json,
        } => {
            let rule = match (keep_days, keep) {
                (Some(days), _) => Rule::KeepDays(days),
                (None, Some(n)) => Rule::KeepLast(n),
                (None, None) => unreachable!("clap requires one of them"),
            };
            let (workspace, store) = (workspace.open()?, store.open()?);
            let doomed = retention::plan(&store.list_sessions(&workspace, now)?, rule, now);
            if json {
                write_json(out, &doomed)?;
            } else {
                for session in &doomed {
                    writeln!(
                        out,
                        "would delete {}  (updated {})",
                        session.session_id,
                        ago(session.updated_at, now)
                    )?;
                }
                writeln!(out, "{} session(s) to delete; pinned sessions are kept", doomed.len())?;
            }
            if dry_run || doomed.is_empty() {
                return Ok(());
            }
            out.flush()?;
            if !yes && !confirm(&format!("Delete these {} session(s)?", doomed.len()))? {
                anyhow::bail!("nothing deleted");
            }
            for session in &doomed {
                let id = SessionId::parse(&session.session_id)?;
                match store.session_delete(&workspace, &id, studio_core::process::move_to_trash) {
                    Ok(()) => eprintln!("deleted {id}"),
                    // A session whose run is live is skipped, not a reason to stop.
                    Err(e @ studio_core::Error::SessionLive { .. }) => eprintln!("zstudio: skipped: {e}"),
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        }
        Command::Show {
            session_id,
            workspace,
            store,
            json,
            with_config,
        } => {
            let id = SessionId::parse(&session_id)?;
            // What the store knows is laid over the folder, as `sessions` lays it.
            let mut session = store.open()?.read_session(&workspace.open()?, &id, now)?;
            if !with_config {
                session = session.without_config();
            }
            emit(out, json, &session, |out, session| print_session(out, session, now))
        }
        Command::Parse {
            stderr,
            exit_code,
            json,
        } => {
            let stderr = match stderr {
                Some(path) => {
                    Some(std::fs::read(&path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?)
                }
                None => None,
            };
            let timeline = parse_stdin(stderr.as_deref(), exit_code)?;
            emit(out, json, &timeline, print_timeline)
        }
    }
}

/// Streams stdin through the reader in chunks: a multi-gigabyte log is never held whole.
fn parse_stdin(stderr: Option<&[u8]>, exit_code: Option<i32>) -> anyhow::Result<RunTimeline> {
    let mut reader = StreamReader::new();
    let mut fold = TimelineFold::new();
    let mut stdin = std::io::stdin().lock();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let n = match stdin.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => anyhow::bail!("cannot read standard input: {e}"),
        };
        reader.push(Stream::Stdout, &buffer[..n], 0, &mut |e| {
            fold.apply(&e);
        });
    }
    if let Some(stderr) = stderr {
        reader.push(Stream::Stderr, stderr, 0, &mut |e| {
            fold.apply(&e);
        });
    }
    reader.finish(0, &mut |e| {
        fold.apply(&e);
    });
    Ok(fold.timeline(exit_code.map(|status| RunEnd {
        exit: Exit::from_shell_status(status),
        signalled_by_studio: false,
    })))
}

/// A folder of the system's temp folder, removed (with the folder named after it) when dropped.
struct TempFolder(PathBuf);

impl Drop for TempFolder {
    fn drop(&mut self) {
        let owner = self
            .0
            .parent()
            .filter(|parent| parent.starts_with(std::env::temp_dir()));
        let _ = std::fs::remove_dir_all(owner.unwrap_or(&self.0));
    }
}

struct RunArgs {
    agent: Option<String>,
    prompt: Option<String>,
    session: Option<String>,
    node: Option<String>,
    grace: Duration,
    detach: bool,
    trust: bool,
    command: Vec<String>,
}

/// `zstudio run`: starts the run, prints it live, stops it on Ctrl-C, exits with its outcome.
fn run_agent(
    args: RunArgs,
    workspace: &WorkspaceArg,
    store: &StoreArgs,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let workspace = workspace.open()?;
    let session = args.session.as_deref().map(SessionId::parse).transpose()?;
    if args.detach && store.memory {
        anyhow::bail!("--detach with --memory: nothing would be left to record how the run ends; use a store (--db)");
    }
    let store_location = StoreLocation::resolve(store.db.clone(), store.memory)?;
    // A throwaway store's keeper folders live in the system's temp folder: gone with the command.
    let _scratch = store.memory.then(|| TempFolder(store_location.runs_dir()));
    let store = std::sync::Arc::new(store.open()?);
    let (agent_name, command, cwd, env) = match &args.agent {
        Some(name) => {
            let found = studio_core::agents::find(workspace.root(), name, args.node.is_some())?;
            require_trust(&store, &workspace, found.launch, args.trust)?;
            let agent = found.agent;
            (
                Some(agent.name),
                found.command,
                agent.cwd,
                agent.env.into_iter().collect(),
            )
        }
        None => (None, args.command.clone(), None, Vec::new()),
    };
    // Through the keeper (this very program), so that a run can be left running.
    let supervisor = std::sync::Arc::new(Supervisor::with_keeper(
        store,
        Keeper {
            program: std::env::current_exe()?,
            runs_dir: store_location.runs_dir(),
        },
    ));
    let events = supervisor.subscribe();
    let started = supervisor.start(RunRequest {
        workspace,
        agent: agent_name,
        command,
        cwd,
        env,
        session,
        prompt: args.prompt,
        node: args.node,
        grace: args.grace,
    })?;
    let run_id = started.run_id.clone();
    if args.detach {
        if let Some(event) = events.iter().find(|e| e.run_id() == run_id) {
            if json {
                serde_json::to_writer(&mut *out, &event)?;
                writeln!(out)?;
            } else {
                print_run_event(out, &event, &started)?;
            }
        }
        supervisor.detach();
        if !json {
            writeln!(out, "left running; `zstudio stop {}` stops it", started.session_id)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    {
        let supervisor = supervisor.clone();
        let run_id = run_id.clone();
        ctrlc::set_handler(move || match supervisor.stop(&run_id, false) {
            Ok(studio_core::stop::Stopping::Graceful) => {
                eprintln!("\n{} (Ctrl-C again to force)", stopping_words(false, false))
            }
            Ok(studio_core::stop::Stopping::Forced) => eprintln!("\n{}", stopping_words(true, false)),
            Err(error) => eprintln!("\n{error}"),
        })?;
    }
    let mut code = ExitCode::FAILURE;
    loop {
        let event = match events.try_recv() {
            Ok(event) => event,
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                out.flush()?;
                match events.recv() {
                    Ok(event) => event,
                    Err(_) => break,
                }
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
        };
        if event.run_id() != run_id {
            continue;
        }
        if json {
            serde_json::to_writer(&mut *out, &event)?;
            writeln!(out)?;
        } else {
            print_run_event(out, &event, &started)?;
        }
        if let RunEvent::RunFinished { status, .. } = &event {
            code = ExitCode::from(match status {
                studio_core::Status::Success => 0,
                studio_core::Status::Cancelled => 2,
                studio_core::Status::Interrupted => 3,
                _ => 1,
            });
            break;
        }
    }
    Ok(code)
}

/// What a stop is called in the CLI's output.
fn stopping_words(forced: bool, elsewhere: bool) -> String {
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
fn stop_progress_words(progress: studio_core::stop::StopProgress) -> String {
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

fn print_run_event(out: &mut impl Write, event: &RunEvent, started: &StartedRun) -> anyhow::Result<()> {
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

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// A run by its id, or the live (else latest) run of a session.
fn find_run(store: &Store, workspace: &WorkspaceArg, id: &str) -> anyhow::Result<studio_core::store::RunRecord> {
    if uuid_like(id) {
        return Ok(store.run(id)?);
    }
    let session = SessionId::parse(id)?;
    let runs = store.runs(&workspace.open()?, Some(&session))?;
    runs.iter()
        .find(|r| r.status == studio_core::Status::Running)
        .or(runs.first())
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no run of session `{id}` in the store"))
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

fn require_session(store: &Store, workspace: &Workspace, id: &SessionId) -> anyhow::Result<()> {
    if store.session_exists(workspace, id)? {
        Ok(())
    } else {
        Err(studio_core::Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        }
        .into())
    }
}

/// An agent from a workspace's `.zibby/studio.toml` runs only once the user trusted that content
/// of the file: with `--trust`, or on a terminal after reading what it would run. Without a
/// terminal and `--trust`, it is refused with what it would run.
fn require_trust(
    store: &Store,
    workspace: &Workspace,
    launch: studio_core::agents::Launch,
    trust: bool,
) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let launch = match store.require_trusted(workspace, launch) {
        Ok(()) => return Ok(()),
        Err(studio_core::Error::AgentsUntrusted { launch }) => launch,
        Err(other) => return Err(other.into()),
    };
    if !trust {
        if !std::io::stdin().is_terminal() {
            let refused = studio_core::Error::AgentsUntrusted { launch };
            anyhow::bail!("{refused}: pass --trust to run it (no terminal to ask on)");
        }
        let mut err = visible::Visible::new(std::io::stderr().lock());
        writeln!(
            err,
            "Agent `{}` of {} is not trusted yet. It would run:",
            launch.agent,
            launch.agents_file.display()
        )?;
        writeln!(err, "  command      {:?}", launch.argv)?;
        writeln!(err, "  in           {}", launch.cwd.display())?;
        writeln!(err, "  environment  {}", launch.env_text())?;
        drop(err);
        if !confirm("Trust this and run it?")? {
            anyhow::bail!("not run: agent `{}` is not trusted", launch.agent);
        }
    }
    store.trust_launch(workspace, &launch.digest, SystemTime::now())?;
    Ok(())
}

/// Asks on the terminal; without one, the answer is no (pass --yes).
fn confirm(question: &str) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("{question} Not asked: no terminal; pass --yes to confirm");
    }
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `value` as JSON with `--json`, else laid out for a person by `print`.
fn emit<W: Write, T: Serialize>(
    out: &mut W,
    json: bool,
    value: &T,
    print: impl FnOnce(&mut W, &T) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if json {
        write_json(out, value)
    } else {
        print(out, value)
    }
}

fn write_json(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

fn print_sessions(out: &mut impl Write, sessions: &[SessionRow], now: SystemTime) -> anyhow::Result<()> {
    if sessions.is_empty() {
        writeln!(
            out,
            "No sessions yet. Run an agent in this folder, or start one with the studio."
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "  {:<11} {:<28} {:<20} {:<12} UPDATED",
        "STATUS", "SESSION", "CURRENT NODE", "NODES"
    )?;
    for row in sessions {
        let session = &row.summary;
        let done = session.nodes.iter().filter(|n| n.status.is_finished()).count();
        writeln!(
            out,
            "{} {:<11} {:<28} {:<20} {:<12} {}",
            if row.pinned { "*" } else { " " },
            session.status,
            session.id,
            shorten(session.current_node.as_deref().unwrap_or("-"), 20),
            format!("{done}/{}", session.nodes.len()),
            ago(session.updated_at, now)
        )?;
    }
    Ok(())
}

fn print_session(out: &mut impl Write, session: &studio_core::Session, now: SystemTime) -> anyhow::Result<()> {
    writeln!(out, "session   {}", session.id)?;
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
        .filter_map(|(name, file)| file.as_ref().map(|f| format!("{name} {}", bytes(f.bytes))))
        .collect();
        writeln!(out, "  {:<11} {}  {}", node.status, node.name, files.join(", "))?;
    }
    if let Some(raw) = &session.raw_stream_output {
        writeln!(out, "output    {} ({})", raw.path.display(), bytes(raw.bytes))?;
    }
    if !session.events.is_empty() {
        writeln!(out, "events    {}", session.events.len())?;
    }
    for problem in &session.problems {
        writeln!(out, "problem   {}: {}", problem.file, problem.reason)?;
    }
    Ok(())
}

fn print_timeline(out: &mut impl Write, timeline: &RunTimeline) -> anyhow::Result<()> {
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

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
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

/// `zstudio watch`: the watcher's changes, printed until the process is interrupted.
/// `zstudio watch`: the change stream, which also keeps the store's folder index current (so the
/// next listing reads again only what changed while nothing watched).
fn watch_sessions(roots: &[PathBuf], store: &StoreArgs, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let workspaces = if roots.is_empty() {
        vec![Workspace::open(std::env::current_dir()?)?]
    } else {
        roots.iter().map(Workspace::open).collect::<Result<Vec<_>, _>>()?
    };
    let several = workspaces.len() > 1;
    let (changes, received) = std::sync::mpsc::channel();
    let sink: ChangeSink = std::sync::Arc::new(move |change| {
        let _ = changes.send(change);
    });
    let sink = studio_core::index::keeping_current(std::sync::Arc::new(store.open()?), sink);
    let _watcher = Watcher::start(workspaces, sink, WatcherOptions::default())?;
    for change in received {
        if json {
            serde_json::to_writer(&mut *out, &change)?;
            writeln!(out)?;
        } else {
            print_change(out, &change, several)?;
        }
        out.flush()?;
    }
    Ok(())
}

fn print_change(out: &mut impl Write, change: &Change, with_workspace: bool) -> anyhow::Result<()> {
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
    }
    Ok(())
}

/// `zstudio tail`: the last lines of a session's output, then (with `follow`) what comes after.
fn tail_session(
    session_id: &str,
    workspace: &WorkspaceArg,
    store: &StoreArgs,
    follow: bool,
    count: usize,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let id = SessionId::parse(session_id)?;
    let workspace = workspace.open()?;
    let (own_file, mut files) = session_output_files(&workspace, &id)?;
    if files.is_empty() {
        // No output file in the folder: a session the studio ran has its output in the store.
        let store = store.open()?;
        if let Some(run) = store.runs(&workspace, Some(&id))?.into_iter().next() {
            return tail_stored_output(&store, &run.id, follow, count, json, out);
        }
    }
    // Tails are placed before the last lines are read: a line is never missed, at worst printed twice.
    let mut tails: Vec<FileTail> = files.iter().map(FileTail::from_end).collect::<Result<_, _>>()?;
    let mut last: Vec<(PathBuf, String)> = Vec::new();
    for file in files.iter().rev() {
        if last.len() >= count {
            break;
        }
        let page = last_lines(file, count - last.len())?;
        let mut lines = page.lines;
        if follow && page.last_line_partial && Some(file) == files.last() {
            // Printed once complete, by the tail.
            lines.pop();
        }
        last.splice(0..0, lines.into_iter().map(|l| (file.clone(), l)));
    }
    for (file, line) in &last {
        print_output_line(out, file, line, json)?;
    }
    out.flush()?;
    if !follow {
        return Ok(());
    }
    let (wake, woken) = std::sync::mpsc::channel();
    let watched = id.clone();
    let sink: ChangeSink = std::sync::Arc::new(move |change: Change| {
        if change.session_id() == Some(&watched) {
            let _ = wake.send(());
        }
    });
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
            loop {
                let new = tail.read_new_lines(studio_core::watcher::MAX_APPENDED_BYTES)?;
                for line in &new.lines {
                    print_output_line(out, tail.path(), line, json)?;
                }
                if !new.more {
                    break;
                }
            }
        }
        out.flush()?;
        // A change of the session wakes the loop; the timeout is a safety net, not the pace.
        match woken.recv_timeout(Duration::from_secs(2)) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
        while woken.try_recv().is_ok() {}
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

/// The last `count` lines of a run's stored output, then (with `follow`) its new lines as they are
/// stored. `--json` names the run instead of a file: `{"run_id", "line"}`.
fn tail_stored_output(
    store: &Store,
    run_id: &str,
    follow: bool,
    count: usize,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut next = (store.output_line_count(run_id)? - count as i64).max(0) + 1;
    loop {
        let lines = store.output_page(run_id, next, 5_000)?;
        for line in &lines {
            if json {
                serde_json::to_writer(&mut *out, &serde_json::json!({ "run_id": run_id, "line": line.text }))?;
                writeln!(out)?;
            } else {
                writeln!(out, "{}", line.text)?;
            }
            next = line.seq + 1;
        }
        out.flush()?;
        let caught_up = lines.len() < 5_000;
        if !follow && caught_up {
            return Ok(());
        }
        if lines.is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn print_output_line(out: &mut impl Write, file: &std::path::Path, line: &str, json: bool) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, &serde_json::json!({ "file": file, "line": line }))?;
        writeln!(out)?;
    } else {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
