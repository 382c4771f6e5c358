//! `zstudio`'s command line, as clap reads it: the global options ([`Globals`]: `--workspace`,
//! `--db | --memory`, `--json`), defined once and taken before or after the command, and one
//! arguments struct per command.
//!
//! Which command takes which global is [`StudioCommand::takes`]; a global a command has no use
//! for is refused by [`Cli::check`] with a sentence saying so, never silently ignored.

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use studio_args::StoreArgs;
use studio_core::store::retention::Rule;

pub use crate::filter_args::{FilterArgs, NoteArgs, TagArgs, ViewAction, ViewArgs};
pub use crate::otlp_args::{OtlpArgs, OtlpCommand, OtlpPushArgs};

#[derive(Parser)]
#[command(
    name = "zstudio",
    version,
    about = "Zibby Studio on the command line: sessions, runs and their timelines"
)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command that reads a workspace or the store takes, before or after its name.
#[derive(Args, Clone)]
pub struct Globals {
    /// The project folder whose sessions are under .zibby/output/sessions/ [default: current
    /// folder]
    #[arg(long, short = 'w', value_name = "DIR", global = true)]
    pub workspace: Vec<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON instead of text: one document, or one object per line for what streams (run,
    /// watch, tail); the fields are in docs/cli.md
    #[arg(long, global = true)]
    pub json: bool,
    /// A workspace on another machine, reached with the system's ssh: HOST:PATH (HOST an alias
    /// of the ssh config or USER@HOST[:PORT]; PATH absolute or ~/…) or ssh://[USER@]HOST[:PORT]/PATH.
    /// Taken by sessions, show, watch, run (--agent), stop, export, import (a file here, uploaded),
    /// open, tag, untag, note, view and mcp (the host's own store is used), by diff (A on the
    /// host, B here) and by otlp push (the host reads the traces, this machine sends them)
    #[arg(long, value_name = "HOST:PATH", global = true)]
    pub remote: Option<String>,
    /// An ssh config file for --remote, handed to ssh as `-F FILE`
    #[arg(
        long,
        value_name = "FILE",
        global = true,
        env = studio_core::remote::ssh::SSH_CONFIG_ENV,
        hide_env_values = true
    )]
    pub ssh_config: Option<PathBuf>,
    /// With --remote: how long `watch` and `run` try to connect again when the link drops,
    /// before they give up (a run on the host goes on all the same); 0: never
    /// [default: 300]
    #[arg(long, value_name = "SECONDS", global = true)]
    pub reconnect_for: Option<u64>,
    /// With --remote: keep the ssh connection this long after the command, and the workspace's
    /// server on the host (but for watch, run and mcp), for the next one to use (a command ended
    /// by a signal ends the connection at once); 0: close them with the command [default: 60]
    #[arg(
        long,
        value_name = "SECONDS",
        global = true,
        env = "ZIBBY_STUDIO_KEEP_CONNECTION",
        hide_env_values = true
    )]
    pub keep_connection: Option<u64>,
    /// `--source URL`: a bucket prefix read as the workspace (the `cloud` command module).
    #[command(flatten)]
    pub source: SourceArgs,
}

/// The global options of a bucket source (the `cloud` command module reads them).
#[derive(Args, Clone, Default)]
pub struct SourceArgs {
    /// Read the sessions of a bucket prefix instead of a workspace, read-only: s3://BUCKET/PREFIX,
    /// gs://BUCKET/PREFIX or az://CONTAINER/PREFIX. Credentials, region and endpoint come from the
    /// provider's own variables and files (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL, ...)
    #[arg(long = "source", id = "bucket_source", value_name = "URL", global = true)]
    pub source: Option<String>,
    /// With --source: the most its cache folder holds (bytes, or with K, M, G, T); the limit set
    /// in the window's Open Cloud Workspace form, else 2G
    #[arg(long, value_name = "SIZE", global = true, value_parser = studio_args::parse_size)]
    pub cache_limit: Option<u64>,
    /// With --source: empty its cache folder first (the bucket is not touched)
    #[arg(long, global = true)]
    pub clear_cache: bool,
}

/// The commands that read a bucket source.
pub const READING: [&str; 14] = [
    "sessions", "show", "logs", "search", "diff", "export", "import", "open", "mcp", "otlp", "tag", "untag", "note",
    "view",
];

/// How a command prints what it found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// Laid out for a person, control characters shown as escapes.
    Human,
    /// `--json`: the stable fields of docs/cli.md.
    Json,
}

impl Globals {
    pub fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            Format::Human
        }
    }
}

#[derive(Subcommand)]
pub enum Command {
    #[command(flatten)]
    Studio(StudioCommand),
    /// The run keeper (used by the studio itself): run COMMAND, copy its output to DIR and to
    /// this process's own output, and record its exit in DIR/exit
    #[command(hide = true)]
    Keep(KeepArgs),
    /// Print this zstudio's version, build id and platform as one JSON line: a remote
    /// workspace's bootstrap checks a `zstudio` on the host's PATH with it
    #[command(hide = true)]
    BuildInfo,
}

/// The commands a person runs: they print through [`crate::visible::Visible`].
#[derive(Subcommand)]
pub enum StudioCommand {
    /// List the sessions of a workspace: pinned first, then most recently updated; --status,
    /// --agent, --tag, --pinned and --search narrow the list (each must hold), or --view NAME
    Sessions(SessionsArgs),
    /// Show one session in full
    Show(ShowArgs),
    /// Read a captured run's stdout (a CI log, say) and print its timeline
    Parse(ParseArgs),
    /// Pin a session: pinned sessions list first, and stay pinned across restarts
    Pin(SessionArg),
    /// Unpin a session
    Unpin(SessionArg),
    /// List the pinned sessions
    Pins,
    /// Add tags to a session (a tag: at most 64 characters, no control or bidi characters, no
    /// whitespace at its ends; a session holds at most 32)
    Tag(TagArgs),
    /// Remove tags from a session
    Untag(TagArgs),
    /// Print a session's note, or set it: TEXT, or - to read it from standard input ("" removes
    /// it; a note holds at most 64 KiB). Search finds the words of notes
    Note(NoteArgs),
    /// Saved views: the sessions' filters kept under a name, per workspace (`zstudio sessions
    /// --view NAME` lists through one)
    View(ViewArgs),
    /// List the runs the studio started, newest first
    Runs(RunsArgs),
    /// Print a session's log (run.started, node.begin, run.cancelled, ...)
    Logs(SessionArg),
    /// Search run output, messages, node names and logs of a workspace, and what its session
    /// folders' nodes printed
    Search(SearchArgs),
    /// Delete a session: its records in the store, and its folder (moved to the trash)
    Delete(DeleteArgs),
    /// Run an agent in the foreground and follow it live (Ctrl-C stops it gracefully, a second
    /// Ctrl-C by force). Exit status: 0 success, 1 error, 2 cancelled, 3 interrupted
    Run(RunArgs),
    /// Stop a run that another studio process (the app, a `zstudio run`) supervises, or ask a run
    /// started outside the studio (a terminal) to stop before its next node
    Stop(StopArgs),
    /// Delete old sessions by a retention rule (pinned sessions are always kept, tagged and
    /// annotated ones unless --include-tagged)
    Prune(PruneArgs),
    /// Print the changes of the sessions of one or more workspaces as they happen, until
    /// interrupted: sessions added, updated and removed, and new output lines (give -w DIR once
    /// for each workspace)
    Watch,
    /// Print the last lines of a session's output (its raw_stream_output.txt, else its nodes'
    /// in order), and with --follow the lines that come after
    Tail(TailArgs),
    /// Compare two runs node by node: A and B are session ids (their last run) or run ids, or
    /// give two captured logs with --log FILE --log FILE
    #[command(
        override_usage = "zstudio diff [OPTIONS] <A> <B>\n       zstudio diff [OPTIONS] --log <FILE> --log <FILE>"
    )]
    Diff(DiffArgs),
    /// Write a session as one .zip bundle to share: its folder, and what the studio recorded of
    /// it (runs, output, spans, logs, messages); .session-info.json's config is left out
    Export(ExportArgs),
    /// Bring a bundle, a session folder (a downloaded cloud session) or a captured log (its
    /// stdout; --stderr, --exit-code) into the workspace as a session, marked as imported
    Import(ImportArgs),
    /// Serve the studio to one client on standard input and output (JSON lines: a banner, then
    /// requests, replies and notifications; see docs/cli.md), until standard input ends. The
    /// runs it started go on after it
    Serve(ServeArgs),
    /// Bring the studio's window to the front on a session, starting the app if it is not
    /// running (the app: $ZIBBY_STUDIO_APP, else the zibby-studio beside zstudio, else on the PATH)
    Open(SessionArg),
    /// Serve the workspace to a coding agent as an MCP server on standard input and output
    /// (sessions, output, logs, search, comparisons; see docs/cli.md), until standard input ends
    Mcp(McpArgs),
    /// Runs as OpenTelemetry traces, sent to a collector (see docs/cli.md)
    Otlp(OtlpArgs),
}

#[derive(Args)]
pub struct McpArgs {
    /// Also offer the tools that start, re-run and stop runs (of agents already trusted here)
    #[arg(long)]
    pub allow_runs: bool,
}

#[derive(Args)]
pub struct SessionArg {
    pub session_id: String,
}

#[derive(Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    pub filters: FilterArgs,
    /// List through a saved view: its filters (`zstudio view list`); not with the filters above
    #[arg(long, value_name = "NAME", conflicts_with_all = ["status", "agent", "tags", "pinned", "search"])]
    pub view: Option<String>,
    /// Only the first N sessions of the listing (pinned, then newest first), read from the
    /// store's catalogue: the other folders are not read (docs/cli.md, "The catalogue")
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Speak on standard input and output
    #[arg(long, required_unless_present = "listen")]
    pub stdio: bool,
    /// Relay to the workspace's kept server (started when missing), kept SECONDS once idle
    #[arg(long, value_name = "SECONDS", hide = true, requires = "kept_build")]
    pub keep_for: Option<u64>,
    /// The build the start script verified: it names the kept server's socket
    #[arg(long, value_name = "BUILD", hide = true)]
    pub kept_build: Option<String>,
    /// Be the kept server, on this socket
    #[arg(long, value_name = "SOCKET", hide = true, requires = "keep_for")]
    pub listen: Option<std::path::PathBuf>,
    /// Said back in the banner, so the client knows its banner among what came before it
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub nonce: String,
}

#[derive(Args)]
pub struct ShowArgs {
    pub session_id: String,
    /// Include `.session-info.json`'s `config` (it may hold secrets)
    #[arg(long)]
    pub with_config: bool,
}

#[derive(Args)]
pub struct ParseArgs {
    /// The run's stderr, for the error message of a failed run
    #[arg(long, value_name = "FILE")]
    pub stderr: Option<PathBuf>,
    /// The run's exit status (shell-style: 128+n is signal n); without it the run is
    /// `unknown` unless its output says it stopped
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,
}

#[derive(Args)]
pub struct RunsArgs {
    /// Only the runs of this session
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Args)]
pub struct SearchArgs {
    pub text: String,
    /// At most this many hits
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

#[derive(Args)]
pub struct DeleteArgs {
    pub session_id: String,
    /// Do not ask for confirmation
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args)]
pub struct RunArgs {
    /// One of the agents in .zibby/studio.toml
    #[arg(long, conflicts_with = "command", required_unless_present_any = ["command", "attach"])]
    pub agent: Option<String>,
    /// With --remote: follow again a run of the host (its id), from its first line
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["agent", "command", "detach", "session", "prompt"])]
    pub attach: Option<String>,
    /// The prompt ({prompt} in the command, and $ZIBBY_STUDIO_PROMPT)
    #[arg(long)]
    pub prompt: Option<String>,
    /// Continue this session (a new one otherwise)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Replay this node of the session (the agent's replay command)
    #[arg(long, value_name = "NODE", requires = "session")]
    pub node: Option<String>,
    /// Seconds a graceful stop waits before signals
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub grace: u64,
    /// Start the run and leave it running in the background (`zstudio runs` shows it,
    /// `zstudio stop` stops it, and its outcome is recorded when a studio next looks)
    #[arg(long)]
    pub detach: bool,
    /// Run an agent of a `.zibby/studio.toml` not trusted yet (without a terminal to ask on);
    /// the file's content is trusted from then on
    #[arg(long, requires = "agent")]
    pub trust: bool,
    /// Stop this run at its next node once its priced cost reaches USD (instead of the agent's
    /// max_cost_usd)
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop this run at its next node once its nodes used N tokens (instead of the agent's
    /// max_tokens)
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Start even when the workspace spent its daily budget today (the run's log says so)
    #[arg(long)]
    pub over_budget: bool,
    /// The command to run instead of an agent (after --)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// What `zstudio run` runs: clap lets exactly one of `--agent` and `-- COMMAND` through.
pub enum Target<'a> {
    /// An agent of `.zibby/studio.toml`, run once its launch is trusted (`--trust`).
    Agent { name: &'a str, trust: bool },
    /// A command of the user's own, trusted as given.
    Command(&'a [String]),
}

impl RunArgs {
    pub fn target(&self) -> Target<'_> {
        match &self.agent {
            Some(name) => Target::Agent {
                name,
                trust: self.trust,
            },
            None => Target::Command(&self.command),
        }
    }
}

#[derive(Args)]
pub struct StopArgs {
    /// A run id, or a session id (its live run)
    pub id: String,
    /// Signal the run's processes now instead of waiting for the current node (not for a run
    /// the studio did not start: it knows none of its processes)
    #[arg(long)]
    pub force: bool,
    /// Seconds a graceful stop waits before signals
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub grace: u64,
}

#[derive(Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub rule: Retention,
    /// Only report what would be deleted
    #[arg(long)]
    pub dry_run: bool,
    /// Delete tagged and annotated sessions (a tag or a note) the rule reaches too; pinned ones
    /// are always kept
    #[arg(long)]
    pub include_tagged: bool,
    /// Do not ask for confirmation
    #[arg(long)]
    pub yes: bool,
}

/// `--keep-days N | --keep N`: the retention rule, exactly one of the two.
pub struct Retention(pub Rule);

impl FromArgMatches for Retention {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        if let Some(days) = matches.get_one::<u64>("keep_days") {
            return Ok(Retention(Rule::KeepDays(*days)));
        }
        if let Some(count) = matches.get_one::<usize>("keep") {
            return Ok(Retention(Rule::KeepLast(*count)));
        }
        Err(clap::Error::raw(
            ErrorKind::MissingRequiredArgument,
            "give a retention rule: --keep-days N or --keep N\n",
        ))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Retention::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for Retention {
    fn augment_args(command: clap::Command) -> clap::Command {
        use clap::{value_parser, Arg};
        command
            .arg(
                Arg::new("keep_days")
                    .long("keep-days")
                    .value_name("N")
                    .value_parser(value_parser!(u64))
                    .required_unless_present("keep")
                    .conflicts_with("keep")
                    .help("Keep the sessions updated within the last N days"),
            )
            .arg(
                Arg::new("keep")
                    .long("keep")
                    .value_name("N")
                    .value_parser(value_parser!(usize))
                    .help("Keep the N most recently updated sessions"),
            )
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Retention::augment_args(command)
    }
}

#[derive(Args)]
pub struct TailArgs {
    pub session_id: String,
    /// Keep printing new lines until interrupted
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// How many of the last lines to print first
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
    pub lines: usize,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The two runs: session ids (a session means its last run) or run ids (the usage line and
    /// the command's text name them; clap's own line read `[A] [B]...`)
    #[arg(num_args = 2, value_names = ["A", "B"], required_unless_present = "log", conflicts_with = "log", hide = true)]
    pub runs: Vec<String>,
    /// A captured log (its stdout), read as `zstudio parse` reads it; give it twice
    #[arg(long, value_name = "FILE", num_args = 1, action = clap::ArgAction::Append)]
    pub log: Vec<PathBuf>,
    /// With --log: a log's stderr, for the error message of a failed run; give it once per
    /// --log, in the same order
    #[arg(long, value_name = "FILE", requires = "log", action = clap::ArgAction::Append)]
    pub stderr: Vec<PathBuf>,
    /// With --log: a log's exit status (shell-style: 128+n is signal n); without it a log is
    /// `unknown` unless its output says it stopped; give it once per --log, in the same order
    #[arg(long, value_name = "N", requires = "log", allow_negative_numbers = true, action = clap::ArgAction::Append)]
    pub exit_code: Vec<i32>,
    /// Only the executions of this node
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Hunks shown at most per node (and per prompt, result and output outside nodes)
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub hunks: usize,
    /// Exit 0 whether the runs differ or not (by default, as diff(1): 0 when they are the same,
    /// 1 when they differ, 2 on trouble)
    #[arg(long)]
    pub exit_zero: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    pub session_id: String,
    /// Where to write the bundle [default: <SESSION_ID>.zip in the current folder]
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep .session-info.json's `config` (it may hold secrets)
    #[arg(long)]
    pub include_config: bool,
    /// Write the session's runs as OpenTelemetry traces to FILE instead of a bundle (OTLP/JSON,
    /// as a collector's file receiver reads it)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["output", "include_config"])]
    pub otlp: Option<PathBuf>,
    /// With --otlp: put each node's prompt and output in its span (their first 4 KiB, secrets
    /// redacted)
    #[arg(long, requires = "otlp")]
    pub include_output: bool,
}

#[derive(Args, Clone)]
pub struct ImportArgs {
    /// A bundle (.zip), a session folder, or a captured log (a run's stdout); with --source, the
    /// id of the bucket's session to copy into the local workspace
    #[arg(value_name = "FILE|FOLDER")]
    pub source: PathBuf,
    /// Give the session a new id (an id the workspace has is refused otherwise)
    #[arg(long)]
    pub as_new: bool,
    /// For a captured log: the run's stderr
    #[arg(long, value_name = "FILE")]
    pub stderr: Option<PathBuf>,
    /// For a captured log: the run's exit status (shell-style: 128+n is signal n); without it
    /// the run is `unknown` unless its output says it stopped
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,
    /// The most the import may write, all together (bytes, or with K, M, G, T: binary units);
    /// 1G by default
    #[arg(long, value_name = "SIZE", value_parser = studio_args::parse_size)]
    pub max_bytes: Option<u64>,
}

#[derive(Args)]
pub struct KeepArgs {
    #[arg(long, value_name = "DIR")]
    pub run_dir: PathBuf,
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The commands that take `--remote` (the `remote` module runs them).
pub const REMOTE_COMMANDS: &[&str] = &[
    "sessions", "show", "watch", "run", "stop", "export", "import", "diff", "open", "tag", "untag", "note", "view",
    "mcp", "otlp",
];

/// How many workspaces a command reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Workspaces {
    None,
    One,
    Several,
}

/// Which global options a command has a use for.
pub struct Takes {
    pub workspaces: Workspaces,
    pub store: bool,
    pub json: bool,
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Keep(_) => "keep",
            Command::BuildInfo => "build-info",
            Command::Studio(command) => command.name(),
        }
    }

    fn takes(&self) -> Takes {
        match self {
            Command::Keep(_) | Command::BuildInfo => Takes {
                workspaces: Workspaces::None,
                store: false,
                json: false,
            },
            Command::Studio(command) => command.takes(),
        }
    }
}

impl StudioCommand {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            StudioCommand::Sessions(_) => "sessions",
            StudioCommand::Show(_) => "show",
            StudioCommand::Parse(_) => "parse",
            StudioCommand::Pin(_) => "pin",
            StudioCommand::Unpin(_) => "unpin",
            StudioCommand::Pins => "pins",
            StudioCommand::Tag(_) => "tag",
            StudioCommand::Untag(_) => "untag",
            StudioCommand::Note(_) => "note",
            StudioCommand::View(_) => "view",
            StudioCommand::Runs(_) => "runs",
            StudioCommand::Logs(_) => "logs",
            StudioCommand::Search(_) => "search",
            StudioCommand::Delete(_) => "delete",
            StudioCommand::Run(_) => "run",
            StudioCommand::Stop(_) => "stop",
            StudioCommand::Prune(_) => "prune",
            StudioCommand::Watch => "watch",
            StudioCommand::Tail(_) => "tail",
            StudioCommand::Diff(_) => "diff",
            StudioCommand::Export(_) => "export",
            StudioCommand::Import(_) => "import",
            StudioCommand::Open(_) => "open",
            StudioCommand::Serve(_) => "serve",
            StudioCommand::Mcp(_) => "mcp",
            StudioCommand::Otlp(_) => "otlp",
        }
    }

    pub fn takes(&self) -> Takes {
        StudioCommand::takes_named(self.name())
    }

    /// Every command reads one workspace and the store and prints JSON with `--json`, but
    /// `parse` (standard input only), `watch` (several workspaces), `serve` and `mcp` (their
    /// frames are JSON already).
    fn takes_named(name: &str) -> Takes {
        match name {
            "parse" => Takes {
                workspaces: Workspaces::None,
                store: false,
                json: true,
            },
            "watch" => Takes {
                workspaces: Workspaces::Several,
                store: true,
                json: true,
            },
            "serve" | "mcp" => Takes {
                workspaces: Workspaces::One,
                store: true,
                json: false,
            },
            _ => Takes {
                workspaces: Workspaces::One,
                store: true,
                json: true,
            },
        }
    }
}

impl Cli {
    /// The command line, read from the process's arguments as [`Parser::parse`] reads it, but
    /// each command's help lists only the global options it takes (those it has no use for are
    /// refused by [`Cli::check`]).
    pub fn parse_args() -> Cli {
        let matches = Cli::command_with_own_globals().get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    fn command_with_own_globals() -> clap::Command {
        let mut command = Cli::command();
        let globals: Vec<clap::Arg> = command.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
        for sub in command.get_subcommands_mut() {
            let sub_name = sub.get_name().to_owned();
            let sub_name = sub_name.as_str();
            let takes = match sub.get_name() {
                "keep" | "build-info" => Takes {
                    workspaces: Workspaces::None,
                    store: false,
                    json: false,
                },
                name => StudioCommand::takes_named(name),
            };
            let remote = REMOTE_COMMANDS.contains(&sub.get_name());
            let unused = |id: &str| match id {
                "workspace" => takes.workspaces == Workspaces::None,
                "remote" | "ssh_config" | "reconnect_for" | "keep_connection" => !remote,
                "db" | "memory" => !takes.store,
                "json" => !takes.json,
                "bucket_source" | "cache_limit" | "clear_cache" => !READING.contains(&sub_name),
                _ => false,
            };
            // A command's own copy of a global, hidden, stands in for the global (clap copies
            // a global only into a command that has no argument of its id): still parsed (and
            // refused by `check`), not listed.
            let hidden: Vec<clap::Arg> = globals
                .iter()
                .filter(|arg| unused(arg.get_id().as_str()))
                .map(|arg| arg.clone().global(false).hide(true))
                .collect();
            let owned = std::mem::take(sub);
            *sub = owned.args(hidden);
        }
        command
    }

    /// Why `--remote` cannot be taken as given: with a local workspace or store, or by a command
    /// that does not work on a remote workspace.
    fn remote_refusal(&self, name: &str) -> Option<String> {
        self.globals.remote.as_ref()?;
        if self.globals.source.source.is_some() {
            Some(
                "--remote and --source each name the workspace (a host's folder over ssh, a bucket prefix): give one of them"
                    .to_owned(),
            )
        } else if !REMOTE_COMMANDS.contains(&name) {
            Some(format!(
                "`zstudio {name}` does not work on a remote workspace: --remote is taken by {}",
                REMOTE_COMMANDS.join(", ")
            ))
        } else if name == "diff" {
            // `diff A B --remote`: B is local, in --workspace and the local store.
            None
        } else if !self.globals.workspace.is_empty() {
            Some("--remote names the workspace: --workspace is not taken with it".to_owned())
        } else if self.globals.store.given() {
            Some("--remote uses the host's own store: --db and --memory are not taken with it".to_owned())
        } else {
            None
        }
    }

    /// Why `--source` (or a cache option) is not taken here: a bucket is read by [`READING`]
    /// alone (`search` finds what its sessions' nodes printed, in the mirror's files), and the
    /// cache options need a `--source`.
    fn source_refusal(&self, name: &str) -> Option<String> {
        let source = &self.globals.source;
        if source.source.is_none() {
            return (source.cache_limit.is_some() || source.clear_cache).then(|| {
                "--cache-limit and --clear-cache are options of a bucket: give --source URL with them".to_owned()
            });
        }
        if let Command::Studio(StudioCommand::Mcp(McpArgs { allow_runs: true })) = &self.command {
            return Some("a bucket is read-only: `zstudio mcp --source URL` does not take --allow-runs".to_owned());
        }
        (!READING.contains(&name)).then(|| {
            format!(
                "`zstudio {name}` does not take --source: a bucket's sessions are read with {} (read-only); `zstudio --source URL import ID` copies one into the local workspace",
                READING.join(", ")
            )
        })
    }

    /// Why an option of `--remote` alone is given without it; why `run` is given a command with
    /// `--remote` (the host runs the agents of its workspace).
    fn remote_only_refusal(&self) -> Option<String> {
        let remote = self.globals.remote.is_some();
        let run = match &self.command {
            Command::Studio(StudioCommand::Run(run)) => Some(run),
            _ => None,
        };
        if !remote && self.globals.reconnect_for.is_some() {
            Some("--reconnect-for is an option of --remote: give --remote HOST:PATH with it".to_owned())
        } else if !remote && run.is_some_and(|run| run.attach.is_some()) {
            Some("--attach follows a run of a host: give --remote HOST:PATH with it".to_owned())
        } else if remote && run.is_some_and(|run| !run.command.is_empty()) {
            Some("with --remote, `run` takes --agent NAME (an agent of the host's workspace), not a command".to_owned())
        } else {
            None
        }
    }

    /// Refuses a global option the command has no use for, as clap refuses a mistake (exit 2).
    pub fn check(&self) -> Result<(), clap::Error> {
        let takes = self.command.takes();
        let name = self.command.name();
        let given = self.globals.workspace.len();
        let refusal = if let Some(refused) = self
            .remote_refusal(name)
            .or_else(|| self.source_refusal(name))
            .or_else(|| self.remote_only_refusal())
        {
            Some(refused)
        } else if given > 0 && takes.workspaces == Workspaces::None {
            Some(format!(
                "`zstudio {name}` reads no workspace: --workspace is not taken here"
            ))
        } else if given > 1 && takes.workspaces == Workspaces::One {
            Some(format!(
                "`zstudio {name}` reads one workspace: --workspace was given {given} times (only `watch` takes several)"
            ))
        } else if self.globals.store.db.is_some() && self.globals.store.memory {
            // clap checks the conflict only when both are on the same side of the command's name.
            Some("the argument '--db <PATH>' cannot be used with '--memory'".to_owned())
        } else if self.globals.store.given() && !takes.store {
            Some(format!(
                "`zstudio {name}` uses no store: --db and --memory are not taken here"
            ))
        } else if self.globals.json && !takes.json {
            Some(format!("`zstudio {name}` prints no JSON: --json is not taken here"))
        } else {
            None
        };
        match refusal {
            None => Ok(()),
            Some(message) => {
                let mut command = Cli::command();
                command.build();
                let command = command
                    .find_subcommand_mut(name)
                    .expect("every command is a subcommand");
                Err(command.error(ErrorKind::ArgumentConflict, message))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<(), String> {
        let cli =
            Cli::try_parse_from(std::iter::once("zstudio").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        cli.check().map_err(|e| e.to_string())
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_commands_help_lists_only_the_globals_it_takes() {
        let help = |name: &str| {
            let shown = Cli::command_with_own_globals().try_get_matches_from(["zstudio", name, "--help"]);
            shown.expect_err("--help is an early exit").render().to_string()
        };
        let parse = help("parse");
        assert!(
            !parse.contains("--workspace") && !parse.contains("--db") && !parse.contains("--memory"),
            "{parse}"
        );
        assert!(parse.contains("--json") && parse.contains("--exit-code"), "{parse}");
        let sessions = help("sessions");
        assert!(
            sessions.contains("--workspace") && sessions.contains("--db"),
            "{sessions}"
        );
    }

    #[test]
    fn globals_go_before_or_after_the_command() {
        for args in [
            &["sessions", "--workspace", "w", "--db", "s.sqlite", "--json"][..],
            &["--workspace", "w", "--memory", "--json", "sessions"][..],
            &["-w", "w", "show", "id", "--with-config", "--json"][..],
            &["watch", "-w", "a", "-w", "b", "--memory"][..],
            &["parse", "--json", "--exit-code", "-1"][..],
            &["prune", "--keep", "3", "-w", "w"][..],
            &["run", "-w", "w", "--json", "--", "agent", "--workspace", "x", "--json"][..],
        ] {
            assert_eq!(check(args), Ok(()), "{args:?}");
        }
    }

    #[test]
    fn a_global_a_command_has_no_use_for_is_refused_saying_so() {
        for (args, says) in [
            (&["parse", "-w", "w"][..], "`zstudio parse` reads no workspace"),
            (&["parse", "--memory"][..], "`zstudio parse` uses no store"),
            (
                &["keep", "--json", "--run-dir", "d", "--", "c"][..],
                "`zstudio keep` prints no JSON",
            ),
            (&["sessions", "-w", "a", "-w", "b"][..], "--workspace was given 2 times"),
            (&["--db", "a", "sessions", "--memory"][..], "cannot be used with"),
            (&["prune"][..], "--keep-days <N>"),
            (&["prune", "--keep", "1", "--keep-days", "2"][..], "cannot be used with"),
        ] {
            let error = check(args).unwrap_err();
            assert!(error.contains(says), "{args:?}: {error}");
        }
    }

    #[test]
    fn remote_and_source_refuse_each_other() {
        for args in [
            &["--remote", "h:/w", "--source", "s3://b/p", "sessions"][..],
            &["sessions", "--source", "s3://b/p", "--remote", "h:/w"][..],
            &["--source", "s3://b/p", "diff", "a", "b", "--remote", "h:/w"][..],
        ] {
            let error = check(args).unwrap_err();
            assert!(
                error.contains("--remote and --source each name the workspace"),
                "{args:?}: {error}"
            );
        }
        assert_eq!(check(&["--remote", "h:/w", "sessions"]), Ok(()));
        assert_eq!(check(&["--source", "s3://b/p", "sessions"]), Ok(()));
        assert_eq!(check(&["--source", "s3://b/p", "mcp"]), Ok(()));
        let error = check(&["mcp", "--allow-runs", "--source", "s3://b/p"]).unwrap_err();
        assert!(error.contains("does not take --allow-runs"), "{error}");
        // `mcp` serves a host's workspace through the host's own server and store.
        assert_eq!(check(&["mcp", "--remote", "h:/w", "--allow-runs"]), Ok(()));
        let error = check(&["mcp", "--remote", "h:/w", "--source", "s3://b/p"]).unwrap_err();
        assert!(error.contains("each name the workspace"), "{error}");
        let error = check(&["mcp", "--remote", "h:/w", "--db", "x.sqlite"]).unwrap_err();
        assert!(error.contains("uses the host's own store"), "{error}");
        let error = check(&["logs", "x", "--remote", "h:/w"]).unwrap_err();
        assert!(error.contains("does not work on a remote workspace"), "{error}");
    }

    #[test]
    fn prune_holds_its_rule_and_run_what_it_launches() {
        let cli = Cli::try_parse_from(["zstudio", "prune", "--keep-days", "7"]).unwrap();
        let Command::Studio(StudioCommand::Prune(prune)) = cli.command else {
            panic!("not prune")
        };
        assert_eq!(prune.rule.0, Rule::KeepDays(7));
        let cli = Cli::try_parse_from(["zstudio", "run", "--", "a", "b"]).unwrap();
        let Command::Studio(StudioCommand::Run(run)) = cli.command else {
            panic!("not run")
        };
        assert!(matches!(run.target(), Target::Command([a, b]) if a == "a" && b == "b"));
    }
}
