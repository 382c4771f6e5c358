// Generated from the Rust types that cross IPC (src-tauri/src/ipc_types.rs): do not edit.
// Regenerate with `scripts/gen-ipc-types.sh`; a unit test of the shell fails while this is stale.

export type Status = "running" | "success" | "error" | "cancelled" | "interrupted" | "unknown";

/**
 * A moment, as milliseconds since the Unix epoch; written (and sent to the window) as RFC 3339
 * UTC text.
 */
export type Timestamp = string;

/**
 * A session id that is safe to use as one folder name.
 */
export type SessionId = string;

/**
 * The stable, machine-readable code of an [`Error`]: what `--json` and IPC carry (its
 * snake_case word, [`ErrorCode::as_str`]), and what the window branches on. One list for
 * the core, the CLI, the shell and the window (whose TypeScript union is generated from
 * it), the window's own codes included. New codes may come: match with a fallback arm.
 */
export type ErrorCode = "invalid_session_id" | "invalid_node_name" | "workspace_not_found" | "not_a_folder" | "session_not_found" | "io" | "store" | "store_too_new" | "no_data_folder" | "run_not_found" | "session_live" | "trash" | "agents_file" | "agent_not_found" | "agent_exists" | "run_not_live" | "outside_session" | "symlink_refused" | "not_a_regular_file" | "file_too_large" | "agents_untrusted" | "no_replay_command" | "no_workspace" | "shutting_down" | "invalid_stream" | "invalid_query" | "reveal" | "import_entry_refused" | "import_too_large" | "bundle_version_unknown" | "bundle_checksum_mismatch" | "bundle_invalid" | "session_exists" | "not_importable" | "bucket" | "invalid_request" | "protocol_mismatch" | "remote_link" | "local_only" | "budget_exceeded" | "invalid_tag" | "too_many_tags" | "note_too_large" | "invalid_view_name" | "view_not_found" | "ssh_not_answering" | "ssh_key_refused" | "ssh_host_key_changed" | "ssh_host_key_unknown" | "ssh_link_lost" | "ssh" | "remote_workspace" | "remote_bootstrap" | "ipc" | "internal" | "invalid_agent" | "watch_polling";

/**
 * Every failed command rejects with this; the UI branches on `code`, never on `message`.
 */
export type CommandError = { 
/**
 * Stable and machine-readable: the core's [`studio_core::Error::code`].
 */
code: ErrorCode, message: string, 
/**
 * `agents_untrusted`: the `AgentLaunch` to show before trusting the file.
 */
details?: unknown, };

/**
 * The open workspace, as the window's header shows it.
 */
export type WorkspaceInfo = { root: string, sessions_dir: string, };

/**
 * Where a link is: what a window shows on the workspace.
 */
export type LinkState = { "state": "connected" } | { "state": "reconnecting", since_ms: number, reason: string, attempts: number, } | { "state": "failed", reason: string, };

/**
 * A remote workspace as the window shows it.
 */
export type RemoteStatus = { 
/**
 * The host as errors name it (`user@host:port`, what was given).
 */
host: string, 
/**
 * The workspace folder there, absolute.
 */
path: string, 
/**
 * `ssh://host/path`, which opens it again (Open Recent).
 */
target: string, 
/**
 * Where its link is: connected, or reconnecting (commands fail with `remote_link`
 * meanwhile, and the listing is read again once it is back).
 */
link: LinkState, 
/**
 * Why the link was lost, once it was given up (or closed): every command then fails with it.
 */
lost: string | null, };

/**
 * A cloud workspace as the window shows it.
 */
export type CloudStatus = { 
/**
 * The source's URL (`s3://bucket/prefix`), which names it.
 */
url: string, 
/**
 * The endpoint given in the form, when one was.
 */
endpoint: string | null, 
/**
 * The credential chain's profile given in the form, when one was (a name, no secret).
 */
profile: string | null, 
/**
 * What opens it again (Open Recent): the URL with the endpoint and profile given
 * (`s3://bucket/prefix?endpoint=…&profile=…`).
 */
target: string, 
/**
 * Why the last refresh failed, while it does (the source named); `None` once one succeeds.
 */
error: string | null, 
/**
 * The first refresh since this open is under way: the listing shown is the mirror's as
 * fetched before (a warm mirror) or the prefix's ids with nothing fetched yet (a cold one);
 * what it changes arrives as any change does.
 */
checking: boolean, 
/**
 * A cold open's ids are still being listed, a page at a time: the rows shown are those of
 * the pages answered so far, and a status is told as each next page is (`listed` grown).
 */
listing: boolean, 
/**
 * How many ids a cold open has listed so far (each a row, being fetched until its files are in).
 */
listed: number, 
/**
 * A cold mirror's first fetch under way: how many of the `to_fetch` sessions it fetches
 * are in (told after each chunk); both 0 when none is.
 */
fetched: number, to_fetch: number, 
/**
 * Grows with each status told, of any cloud workspace of this process: of two statuses of
 * one target (a reply and an event sent at about the same time), the higher is the newer.
 */
revision: number, };

/**
 * A cloud session copied into a local workspace (`Studio::cloud_import`).
 */
export type CloudImported = { 
/**
 * The session's id in the local workspace (the bucket's).
 */
session_id: string, 
/**
 * The local workspace's folder it went into.
 */
workspace: string, };

/**
 * Which machine-readable format a node's usage was read from (told by content).
 */
export type UsageFormat = "claude_code" | "codex" | "gemini_cli" | "cursor";

/**
 * Token counts in one shape for every provider (see the module doc for the rules).
 */
export type Tokens = { 
/**
 * Input not read from a cache.
 */
input: number, 
/**
 * Input read from the provider's cache.
 */
cache_read: number, 
/**
 * Input written to the provider's cache (Anthropic bills it apart).
 */
cache_write: number, 
/**
 * Output, thinking included.
 */
output: number, 
/**
 * How much of `output` was thinking, where the agent says.
 */
reasoning: number | null, };

/**
 * Where a node's cost came from.
 */
export type CostSource = "reported" | "estimated" | "unknown";

/**
 * One node's usage, in one shape whatever the agent (docs/cli.md, "The usage object").
 */
export type NodeUsage = { 
/**
 * The format it was read from.
 */
format: UsageFormat, 
/**
 * Its tokens; `None` where the format reports none (Cursor).
 */
tokens: Tokens | null, 
/**
 * The models it used, as the agent named them.
 */
models: Array<string>, turns: number | null, duration_ms: number | null, 
/**
 * In US dollars; `None` when unknown (never 0 for "unknown").
 */
cost_usd: number | null, cost_source: CostSource, 
/**
 * The reported cost is what the tokens would cost at API prices (Claude Code's), not a bill.
 */
api_equivalent: boolean, 
/**
 * The node ran more than once and this is its last attempt's usage only.
 */
last_attempt_only: boolean, 
/**
 * `$0.0123`, `~$0.0123` (estimated) or `–`: what every surface shows of the cost.
 */
cost_label: string, 
/**
 * `1,234 tokens (in 10, cache read 1,000, cache write 24, out 200)`, or `no tokens
 * reported`.
 */
tokens_label: string, };

/**
 * The total over a run's or a session's nodes.
 */
export type UsageTotal = { 
/**
 * The sum over the nodes that reported tokens.
 */
tokens: Tokens, 
/**
 * The sum over the priced nodes; `None` when none is.
 */
cost_usd: number | null, 
/**
 * Every node counted (m).
 */
nodes: number, 
/**
 * The nodes that reported any usage.
 */
nodes_with_usage: number, 
/**
 * The nodes with a cost, reported or estimated (n): fewer than `nodes` makes `cost_usd` a
 * lower bound.
 */
nodes_priced: number, 
/**
 * `$0.42`, `≥ $0.42 (2 of 3 nodes priced)` or `–` ([`UsageTotal::label`]).
 */
label: string, 
/**
 * `$0.42`, `≥ $0.42` or `–`, for a table's column ([`UsageTotal::short_label`]).
 */
short_label: string, 
/**
 * The tokens, as [`tokens_label`] words them.
 */
tokens_label: string, };

/**
 * The short form of a node, as listings show it.
 */
export type NodeSummary = { name: string, status: Status, 
/**
 * What its agent said it used (`cost`); `None` when nothing says.
 */
usage?: NodeUsage | null, 
/**
 * Its place among the nodes is a guess: nothing recorded the order it ran in (no events, no
 * span, not seen live) and its folder was written in the same tick of the file system's
 * clock (4 ms) as another node's, so the two could have run either way round. Absent
 * (false) when the order is known.
 */
order_uncertain?: boolean, };

/**
 * A file of the session that could not be read as expected, and why.
 */
export type Problem = { 
/**
 * The file, relative to the session folder.
 */
file: string, reason: string, };

/**
 * One session as the listing shows it.
 */
export type SessionSummary = { id: SessionId, path: string, 
/**
 * The workflow or agent it ran: the store's word for a session the studio ran, else the
 * folder's (see the module doc); none when neither says.
 */
agent: string | null, 
/**
 * What it is called, one line: the studio's first prompt, else the folder's (see the module
 * doc), else the agent's name.
 */
title: string | null, status: Status, current_node: string | null, created_at: Timestamp | null, updated_at: Timestamp, nodes: Array<NodeSummary>, problems: Array<Problem>, 
/**
 * The total over its nodes (`cost::UsageTotal`); `None` when no node has usage.
 */
usage?: UsageTotal | null, 
/**
 * What the studio cannot know of this session and how to get the full story, in one
 * sentence for a user: a run it did not start, whose engine left no record of how it ended
 * (see docs/cli.md, "Where each fact comes from"). Absent when nothing is missing that a
 * run through the studio would have recorded.
 */
not_known?: string, };

/**
 * A session as the studio lists it: what its folder says, and what the studio knows of it (its
 * `agent` and `title` are the summary's, named by `session_model::name_session`). Written as
 * one object, the summary's fields and its own; read back without a flattened field's tree of
 * values (`RowVisitor`: a remote workspace's listing).
 */
export type SessionRow = { pinned: boolean, pinned_at: Timestamp | null, 
/**
 * The messages of its conversation.
 */
messages: number, 
/**
 * The id of its run that is live now (started by this or another studio process).
 */
live_run: string | null, 
/**
 * Its tags, in the order they were added (`zstudio tag`).
 */
tags: Array<string>, 
/**
 * Whether it has a note (`zstudio note`; `show` gives its text).
 */
has_note: boolean, 
/**
 * Listed by a cloud workspace before its files are fetched: the id alone, its details to
 * come (`app::cloud::CloudWorkspace::fetching`). Absent when false.
 */
fetching?: boolean, id: SessionId, path: string, 
/**
 * The workflow or agent it ran: the store's word for a session the studio ran, else the
 * folder's (see the module doc); none when neither says.
 */
agent: string | null, 
/**
 * What it is called, one line: the studio's first prompt, else the folder's (see the module
 * doc), else the agent's name.
 */
title: string | null, status: Status, current_node: string | null, created_at: Timestamp | null, updated_at: Timestamp, nodes: Array<NodeSummary>, problems: Array<Problem>, 
/**
 * The total over its nodes (`cost::UsageTotal`); `None` when no node has usage.
 */
usage?: UsageTotal | null, 
/**
 * What the studio cannot know of this session and how to get the full story, in one
 * sentence for a user: a run it did not start, whose engine left no record of how it ended
 * (see docs/cli.md, "Where each fact comes from"). Absent when nothing is missing that a
 * run through the studio would have recorded.
 */
not_known?: string, };

/**
 * Which sessions a listing keeps: each filter set narrows it (all must hold).
 */
export type Filters = { 
/**
 * Only the sessions of this status.
 */
status?: Status, 
/**
 * Only the sessions of this agent (as the listing names it).
 */
agent?: string, 
/**
 * Only the sessions holding every one of these tags.
 */
tags?: Array<string>, 
/**
 * Only the pinned sessions.
 */
pinned?: boolean, 
/**
 * Only the sessions a search for this text finds (among its first [`SEARCH_HITS`] hits).
 */
search?: string, };

/**
 * A saved view: its name, its filters, when it was saved.
 */
export type SavedView = { name: string, filters: Filters, saved_at: Timestamp, };

/**
 * Where a workspace's runs go as traces, as the window's Traces setting shows it.
 */
export type TraceSetting = { 
/**
 * The URL every run's spans are sent to now (`…/v1/traces`); `None`: runs are not sent.
 */
sending_to: string | null, 
/**
 * Where that comes from: a variable's name (`OTEL_EXPORTER_OTLP_ENDPOINT`, …, which wins over
 * the file) or the workspace's `.zibby/studio.toml`.
 */
from: string | null, 
/**
 * The `[otlp]` table's `endpoint` as written (a collector's base: traces go to
 * `/v1/traces` under it); `None`: the workspace names none.
 */
endpoint: string | null, 
/**
 * The table's `protocol` (`http/protobuf`, the default, or `http/json`).
 */
protocol: string | null, };

/**
 * The supervisor, held for one command.
 * The sessions of a workspace as the window lists them ([`Studio::sessions`]).
 */
export type SessionListing = { sessions: Array<SessionRow>, 
/**
 * What they cost in all (`store::index::usage_of_sessions`); null when no node has usage.
 */
usage: UsageTotal | null, };

/**
 * A page of the sessions as the window's table asks for them (`Studio::sessions_page`):
 * `sessions` are the listing's rows from `offset`, in its order (pinned first, then most
 * recently updated).
 */
export type SessionsPage = { sessions: Array<SessionRow>, offset: number, 
/**
 * How many sessions the listing holds in all (on a first launch, the folders found, some
 * still being read).
 */
total: number, 
/**
 * The ids of the page's rows shown as the store last saw them while their folder, which
 * differs, is read again (the window marks them "checking").
 */
checking: Array<string>, };

/**
 * The sessions of the workspace here that the open remote workspace's sessions can be compared
 * with: the last local workspace the window had open.
 */
export type LocalSessions = { 
/**
 * The workspace folder here.
 */
root: string, sessions: Array<SessionRow>, };

/**
 * Which of the studio's own environment an agent gets (`inherit_env` in `.zibby/studio.toml`).
 * Either way, the studio's own variables (`ZIBBY_STUDIO_*`, and those the app sets for its
 * window) are never passed on, and the variables the agent sets are.
 */
export type InheritEnv = "all" | Array<string>;

export type Agent = { name: string, run: Array<string>, replay?: Array<string>, cwd?: string, env?: { [key in string]: string }, 
/**
 * Which of the studio's environment it gets: all of it (when absent), or only the listed
 * variables; never the studio's own.
 */
inherit_env?: InheritEnv, 
/**
 * A run stops at its next node once its priced cost reaches this many US dollars.
 */
max_cost_usd?: number, 
/**
 * A run stops at its next node once its nodes used this many tokens.
 */
max_tokens?: number, };

/**
 * A file inside the workspace that the command names (a script, a config): trust covers its
 * content.
 */
export type LaunchFile = { 
/**
 * Relative to the workspace.
 */
path: string, bytes: number, 
/**
 * The SHA-256 of its content.
 */
sha256: string, };

/**
 * What a run may spend (`.zibby/studio.toml`: an agent's `max_cost_usd` and `max_tokens`, the
 * workspace's `[budget] daily_usd`); `None`: no limit.
 */
export type Budget = { 
/**
 * At most this many US dollars per run (its priced cost).
 */
max_cost_usd: number | null, 
/**
 * At most this many tokens per run.
 */
max_tokens: number | null, 
/**
 * At most this many US dollars a local calendar day, over the workspace's runs.
 */
daily_usd: number | null, };

/**
 * A [`Launch`] as a trust prompt shows it: nothing in it can draw a line, reorder text or hide
 * a character, and no value is longer than a few lines.
 */
export type ShownLaunch = { agent: string, 
/**
 * Each argument, quoted, as it will run (placeholders filled where this run knows their
 * value).
 */
command: Array<string>, 
/**
 * The arguments as one list: `["sh", "agent.sh", "Plan a trip"]`.
 */
command_line: string, cwd: string, 
/**
 * `NAME=value`, each.
 */
env: Array<string>, 
/**
 * Which of the studio's environment the agent gets, in words.
 */
inherits: string, agents_file: string, 
/**
 * What trusting it covers, in words: each thing whose change asks again.
 */
covers: Array<string>, };

/**
 * A cloned repository can declare any command, folder and environment. Trust is given to this
 * launch, by its [`Launch::digest`] (what it covers: the module's docs).
 */
export type Launch = { agent: string, 
/**
 * The command, placeholders unexpanded (`{prompt}`, `{session_id}`, ...).
 */
argv: Array<string>, cwd: string, 
/**
 * The variables the file sets, with their values (`NODE_OPTIONS` can run code too).
 */
env: Array<[string, string]>, inherit_env: InheritEnv, agents_file: string, 
/**
 * The workspace folder's identity: `device:inode:creation time`.
 */
workspace_identity: string, 
/**
 * The files of the workspace the command names, with their content's digest.
 */
files: Array<LaunchFile>, 
/**
 * What a run of it may spend: trusted as a ceiling (the module's docs).
 */
budget: Budget, 
/**
 * The SHA-256 of all of the above: what the user is shown and says yes to.
 */
digest: string, 
/**
 * The SHA-256 of all of the above but the budget: what trust is kept by, with the budget
 * trusted beside it.
 */
trust_key: string, 
/**
 * What a prompt shows: every value escaped and folded ([`crate::vocabulary::visible::shown`]),
 * the command as it will run for this run's prompt, session and node.
 */
shown: ShownLaunch, };

/**
 * A run that was started (or that could not start: then it has already finished, as `error`).
 */
export type StartedRun = { run_id: string, session_id: string, session_path: string, pid: number | null, };

/**
 * A graceful stop asked of a run the studio did not start.
 */
export type OutsideStop = { session_id: string, 
/**
 * The stop files written in its session folder (both names every engine era knows).
 */
stop_files: Array<string>, };

/**
 * How a cancelled run was stopped (the store keeps the same words: `graceful`, `forced`,
 * `budget`).
 */
export type StoppedBy = "graceful" | "forced" | "budget";

/**
 * Where a run stands against its budget, as the run's log and its events say it.
 */
export type BudgetSpend = { 
/**
 * The priced cost of its nodes so far (a lower bound when some are not priced); `None`
 * when none is priced.
 */
cost_usd: number | null, tokens: number, max_cost_usd: number | null, max_tokens: number | null, 
/**
 * The limit this is about: `max_cost_usd` or `max_tokens`.
 */
limit: string, 
/**
 * What every surface shows of it: `$0.41 of $0.50`, `41,000 of 50,000 tokens`.
 */
label: string, };

/**
 * A run as the store records it.
 */
export type RunRecord = { id: string, session_id: string, 
/**
 * The workspace the session belongs to.
 */
workspace: string, agent: string | null, command: Array<string>, pid: number | null, process_group: number | null, status: Status, 
/**
 * A `running` run that no studio process follows (it was left running, or its studio died).
 */
detached: boolean, started_at: Timestamp, ended_at: Timestamp | null, exit_code: number | null, error: string | null, stopped_by: StoppedBy | null, 
/**
 * A stop asked for by another studio process (`graceful` or `forced`).
 */
stop_requested: StoppedBy | null, 
/**
 * The run keeper's folder, for a run that can outlive its studio.
 */
keeper_dir: string | null, replayed_node: string | null, 
/**
 * Where the run was asked for when not by the studio's own faces: `mcp` for a run started
 * or re-run through `zstudio mcp` (`Store::run_set_origin`); none for the window's, `zstudio run`'s
 * and `serve`'s.
 */
origin: string | null, 
/**
 * The limits it was started with (`max_cost_usd`, `max_tokens`), when it had any.
 */
budget: Budget | null, 
/**
 * What its nodes used, where asked for (`Store::with_runs_usage`; see `session_model`).
 */
usage?: UsageTotal | null, };

/**
 * What subscribers see of runs, as it happens. `t_ms` is milliseconds since the run started.
 */
export type RunEvent = { "type": "run_started", run_id: string, session_id: string, pid: number | null, } | { "type": "node_begin", run_id: string, node: string, depth: number, t_ms: number, } | { "type": "node_end", run_id: string, node: string, status: Status, t_ms: number, } | { "type": "node_discarded", run_id: string, node: string, } | { "type": "stopping", run_id: string, forced: boolean, 
/**
 * Asked by another process (`zstudio stop`, another studio's window), which does the
 * stopping.
 */
elsewhere: boolean, } | { "type": "budget_warning", run_id: string, spend: BudgetSpend, } | { "type": "budget_reached", run_id: string, spend: BudgetSpend, } | { "type": "budget_unpriced", run_id: string, nodes_priced: number, nodes_with_usage: number, } | { "type": "run_finished", run_id: string, session_id: string, status: Status, exit_code: number | null, elapsed_ms: number, stopped_by: StoppedBy | null, error: string | null, };

/**
 * A file that exists, with its size; its contents are read on demand.
 */
export type FileRef = { path: string, bytes: number, };

export type NodeArtifacts = { prompt: FileRef | null, 
/**
 * The first 4 KiB of the prompt, as text.
 */
prompt_preview: string | null, raw_output: FileRef | null, result: FileRef | null, result_value: unknown, raw_stream: FileRef | null, };

export type SessionNode = { name: string, status: Status, 
/**
 * The node's folder, when it has one.
 */
path: string | null, artifacts: NodeArtifacts, 
/**
 * What its agent said it used (`cost`); `None` without a raw stream or a known format.
 */
usage?: NodeUsage | null, 
/**
 * Its place among the nodes is a guess: nothing recorded the order it ran in (no events, no
 * span, not seen live) and its folder was written in the same tick of the file system's
 * clock (4 ms) as another node's, so the two could have run either way round. Absent
 * (false) when the order is known.
 */
order_uncertain?: boolean, };

/**
 * `.session-info.json`, as far as it parses.
 */
export type SessionInfo = { session_path: string | null, session_timestamp: number | null, current_node: string | null, 
/**
 * When the *current node* started (the engine rewrites the file before every node).
 */
created_at: string | null, };

/**
 * Which of the two folder layouts of docs/protocol.md §5 a session uses.
 */
export type Layout = "engine" | "documented";

/**
 * Where a session came from, as the store marks it imported.
 */
export type Imported = { 
/**
 * The bundle, folder or log it was imported from.
 */
from: string, at: Timestamp, };

/**
 * One session folder, read in full.
 */
export type Session = { id: SessionId, path: string, layout: Layout, 
/**
 * The workflow or agent it ran (see [`SessionSummary::agent`]).
 */
agent: string | null, 
/**
 * What it is called (see [`SessionSummary::title`]).
 */
title: string | null, status: Status, current_node: string | null, created_at: Timestamp | null, updated_at: Timestamp, info: SessionInfo | null, nodes: Array<SessionNode>, result: unknown, events: unknown[], raw_stream_output: FileRef | null, problems: Array<Problem>, 
/**
 * The total over its nodes (`cost::UsageTotal`); `None` when no node has usage.
 */
usage?: UsageTotal | null, 
/**
 * Where it was imported from (`zstudio import`, the window's Import…), as the store marks
 * it; `None` for a session of this workspace's own runs, and from a folder alone.
 */
imported?: Imported | null, 
/**
 * Its tags, in the order added (the store's; none from a folder alone).
 */
tags: Array<string>, 
/**
 * Its note (the store's; none from a folder alone).
 */
note?: string | null, 
/**
 * What the studio cannot know of this session and how to get the full story, in one
 * sentence for a user: a run it did not start, whose engine left no record of how it ended
 * (see docs/cli.md, "Where each fact comes from"). Absent when nothing is missing that a
 * run through the studio would have recorded.
 */
not_known?: string, };

export type Message = { seq: number, role: string, text: string, created_at: Timestamp, };

export type Level = "debug" | "info" | "warn" | "error";

export type LogLine = { at: Timestamp, level: Level, 
/**
 * `run.started`, `node.begin`, `run.cancelled`, …
 */
event: string, message: string, run_id: string | null, 
/**
 * An object, or `null` when the line has none.
 */
fields: Record<string, unknown> | null, };

/**
 * What a span is; the store keeps the same words (`run`, `node`).
 */
export type SpanKind = "run" | "node";

/**
 * One span of a trace: a run, or one node execution inside it.
 */
export type Span = { id: number, parent_id: number | null, run_id: string, name: string, kind: SpanKind, depth: number, started_at: Timestamp, ended_at: Timestamp | null, status: Status, };

export type Stream = "stdout" | "stderr";

export type OutputLine = { 
/**
 * 1-based line number within the run.
 */
seq: number, stream: Stream, 
/**
 * Arrival time, milliseconds since the run started.
 */
at_ms: number, 
/**
 * The innermost node running when the line arrived.
 */
node: string | null, text: string, };

/**
 * A page of output: the lines, where the next page starts (`None`: nothing more yet), and how
 * many lines the run has (unfiltered).
 */
export type OutputPage = { lines: Array<OutputLine>, next_seq: number | null, total: number, };

/**
 * Where a find in a run's output got to.
 */
export type OutputFind = { 
/**
 * The first line found, from where the find started, in its direction.
 */
seq: number | null, 
/**
 * No line found yet, and more to read: where to go on (a find reads at most
 * [`FIND_BUDGET_LINES`] lines per call, so a caller can show progress and stop).
 */
next_seq: number | null, 
/**
 * How many lines this call read.
 */
scanned: number, };

/**
 * One file of a session folder.
 */
export type FileEntry = { 
/**
 * Relative to the session folder, `/`-separated.
 */
path: string, bytes: number, modified_at: Timestamp, };

/**
 * A page of a file: `text` holds the bytes `offset..next_offset` (or to the end).
 */
export type FileChunk = { path: string, offset: number, bytes_total: number, text: string, 
/**
 * Where the next page starts; `None` at the end of the file.
 */
next_offset: number | null, 
/**
 * The page holds NUL bytes: `text` is empty, the file is not text.
 */
binary: boolean, };

/**
 * What a search hit is: the kind of row of the index it leads back to (that row's FTS rowid is
 * `source id * 8 + kind`). The lookups below select the same words.
 */
export type SearchHitKind = "output" | "message" | "log" | "node" | "file" | "note" | "tag";

/**
 * One place a search matched.
 */
export type SearchHit = { kind: SearchHitKind, session_id: string, run_id: string | null, node: string | null, 
/**
 * The output line number, message number or log id; for a file, the line number in it
 * (counted from the start of its last MiB when it is larger, the part indexed).
 */
line: number, text: string, 
/**
 * A `file` hit's file, relative to the session folder (`plan/raw_stream_output.txt`).
 */
path?: string, };

export type RunOutput = { run_id: string, session_id: string, lines: number, };

export type SessionsChanged = { changes: number, };

export type WatchNotice = { workspace: string, reason: string, };

export type QuitRequested = { live_runs: number, 
/**
 * Whether the runs can be left running (they go through the run keeper).
 */
can_keep: boolean, 
/**
 * The host of the open remote workspace, if one is: its runs go on there whatever is chosen
 * (they are its server's, detached), so they are neither counted nor stopped.
 */
remote_host: string | null, };

/**
 * A session for the window to show.
 */
export type SessionOpened = { session_id: string, };

/**
 * Where an export went and what it redacted, for the window to say.
 */
export type ExportedBundle = { session_id: string, path: string, 
/**
 * How many secrets were replaced by `[redacted]` in what the studio recorded of how the
 * session ran (its commands, errors, log lines, `.session-info.json`); what the agent
 * printed and wrote is in the bundle as it is.
 */
secrets_redacted: number, };

/**
 * What one line of a hunk is: the same on both sides, only in A, only in B.
 */
export type LineOp = " " | "-" | "+";

/**
 * A run of characters of a changed line, changed or not (against the line it replaced).
 */
export type WordPart = { changed: boolean, text: string, };

export type DiffLine = { op: LineOp, 
/**
 * The line, escapes stripped, at most [`Limits::line_chars`] characters.
 */
text: string, 
/**
 * For a `-` line paired with a `+` line (a line changed in place): its parts, the changed
 * words marked. Absent otherwise.
 */
words?: Array<WordPart>, };

/**
 * One hunk, as a unified diff has it: 1-based first lines and line counts on each side.
 */
export type Hunk = { a_start: number, a_lines: number, b_start: number, b_lines: number, lines: Array<DiffLine>, 
/**
 * Lines of the hunk left out past [`Limits::hunk_lines`].
 */
lines_cut: number, };

/**
 * The difference of two texts: whether they differ, and their first hunks.
 */
export type TextDiff = { changed: boolean, hunks: Array<Hunk>, 
/**
 * More hunks follow the ones given (ask with [`Limits::skip_hunks`]).
 */
more: boolean, };

/**
 * How a path differs.
 */
export type PathChange = "changed" | "added" | "removed";

/**
 * One path of a JSON value that differs, as a JSON pointer (`/items/2/name`; `""`: the whole
 * value).
 */
export type PathDiff = { path: string, change: PathChange, a: unknown, b: unknown, };

/**
 * Two JSON values compared: their line diff (pretty-printed) and the paths that differ.
 */
export type JsonDiff = { changed: boolean, hunks: Array<Hunk>, more: boolean, paths: Array<PathDiff>, };

/**
 * A side's run: `session_id` and `run_id` are null for a log (and `run_id` for a folder).
 */
export type RunSummary = { session_id: string | null, run_id: string | null, status: Status, elapsed_ms: number | null, 
/**
 * The total over its nodes, as `zstudio runs` gives it for a run
 * (`Store::runs_nodes_usage`), as `show` for a folder; read from the output for a log.
 */
usage: UsageTotal | null, };

/**
 * How a node of B differs from its match in A (`Change::as_str` gives its JSON name).
 */
export type Change = "same" | "changed" | "added" | "removed";

/**
 * One side of a node execution.
 */
export type NodeSide = { status: Status, elapsed_ms: number | null, 
/**
 * When it began, from its run's start (for one time axis); null when unknown (logs, folders).
 */
started_ms: number | null, 
/**
 * What it used (the usage object, docs/cli.md): a node's usage is its last execution's
 * (the raw stream holds the last one's), so earlier executions of it have none.
 */
usage: NodeUsage | null, };

/**
 * One node execution matched across the two runs.
 */
export type NodeDiff = { name: string, 
/**
 * Which execution of the node this is (0 for the first), on both sides.
 */
occurrence: number, change: Change, a: NodeSide | null, b: NodeSide | null, 
/**
 * What B cost more or less than A (`cost::change_label`): null unless both sides know it.
 * A cost alone never makes a node changed (its output does).
 */
cost_change: string | null, output: TextDiff, 
/**
 * The node's `prompt.txt`, when either side's folder has one for this execution (a node
 * folder holds its last execution's files) and both sides' folders are their runs' (two
 * session folders, or a session's last run): null otherwise.
 */
prompt: TextDiff | null, 
/**
 * The node's `result.json`, on the same terms as `prompt`.
 */
result: JsonDiff | null, };

/**
 * Two runs compared.
 */
export type RunDiff = { a: RunSummary, b: RunSummary, nodes: Array<NodeDiff>, 
/**
 * The output printed outside any node: the whole output when neither run's nodes are known.
 */
output: TextDiff, 
/**
 * What B cost more or less than A, over all nodes: null unless both totals are exact (every
 * node priced) or both report tokens.
 */
cost_change: string | null, };

/** What each command of the shell (`commands.rs`) takes and resolves to: its arguments by name, as the window passes them to `invoke`, and its result. */
export type Commands = {
  workspace_get: { args: Record<string, never>; result: WorkspaceInfo };
  workspaces_recent: { args: Record<string, never>; result: Array<string> };
  workspace_open: { args: { path: string }; result: WorkspaceInfo | null };
  workspace_open_remote: { args: { target: string }; result: RemoteStatus | null };
  workspace_remote: { args: Record<string, never>; result: RemoteStatus | null };
  workspace_open_cloud: { args: { url: string; endpoint: string | null; profile: string | null; cache_limit: string | null; clear_cache: boolean }; result: WorkspaceInfo | null };
  cloud_cache_limit: { args: Record<string, never>; result: string };
  cloud_session_import: { args: { session_id: string }; result: CloudImported | null };
  workspace_cloud: { args: Record<string, never>; result: CloudStatus | null };
  workspace_connecting: { args: Record<string, never>; result: string | null };
  workspace_pick: { args: Record<string, never>; result: WorkspaceInfo | null };
  sessions_list: { args: Record<string, never>; result: SessionListing };
  sessions_page: { args: { offset: number; limit: number }; result: SessionsPage };
  sessions_usage: { args: Record<string, never>; result: UsageTotal | null };
  session_get: { args: { session_id: string }; result: Session };
  session_messages: { args: { session_id: string }; result: Array<Message> };
  session_logs: { args: { session_id: string }; result: Array<LogLine> };
  session_files: { args: { session_id: string }; result: Array<FileEntry> };
  session_file_read: { args: { session_id: string; path: string; offset: number; limit: number }; result: FileChunk };
  session_reveal: { args: { session_id: string }; result: void };
  session_delete: { args: { session_id: string }; result: void };
  pin_add: { args: { session_id: string }; result: void };
  pin_remove: { args: { session_id: string }; result: void };
  tags_add: { args: { session_id: string; tags: Array<string> }; result: Array<string> };
  tags_remove: { args: { session_id: string; tags: Array<string> }; result: Array<string> };
  note_get: { args: { session_id: string }; result: string | null };
  note_set: { args: { session_id: string; note: string | null }; result: void };
  views_list: { args: Record<string, never>; result: Array<SavedView> };
  view_save: { args: { name: string; filters: Filters }; result: Array<SavedView> };
  view_delete: { args: { name: string }; result: Array<SavedView> };
  search: { args: { query: string; limit: number }; result: Array<SearchHit> };
  agents_list: { args: Record<string, never>; result: Array<Agent> };
  agent_save: { args: { agent: Agent; previous_name: string | null }; result: Array<Agent> };
  traces_setting: { args: Record<string, never>; result: TraceSetting };
  traces_setting_save: { args: { endpoint: string | null; protocol: string | null }; result: TraceSetting | null };
  agents_trust: { args: { agent: string; prompt: string | null; session_id: string | null; node: string | null }; result: boolean };
  run_start: { args: { agent: string; prompt: string; session_id: string | null; max_cost_usd: number | null }; result: StartedRun };
  run_replay: { args: { session_id: string; node: string; agent: string }; result: StartedRun };
  run_stop: { args: { run_id: string; force: boolean }; result: StoppedBy };
  session_stop_outside: { args: { session_id: string }; result: OutsideStop };
  runs_list: { args: { session_id: string | null }; result: Array<RunRecord> };
  run_spans: { args: { run_id: string }; result: Array<Span> };
  run_output: { args: { run_id: string; from_seq: number; limit: number; node: string | null; stream: string | null }; result: OutputPage };
  run_output_find: { args: { run_id: string; from_seq: number; backward: boolean; query: string }; result: OutputFind };
  runs_compare: { args: { a: string; b: string; node: string | null; occurrence: number | null; skip_hunks: number }; result: RunDiff };
  sessions_local: { args: Record<string, never>; result: LocalSessions };
  runs_compare_across: { args: { a: string; b: string; node: string | null; occurrence: number | null; skip_hunks: number }; result: RunDiff };
  app_quit: { args: { keep_runs: boolean }; result: void };
  session_export: { args: { session_id: string }; result: ExportedBundle | null };
  session_requested: { args: Record<string, never>; result: string | null };
};

/** What the window may invoke, by name (the shell's `invoke_handler`). */
export type CommandName = keyof Commands;

/** The Tauri event the shell sends run events as (payload: `RunEvent`). */
export const RUN_EVENT = "run-event";

/** The Tauri event the shell sends output progress as (payload: `RunOutput`). */
export const RUN_OUTPUT = "run-output";

/** The Tauri event the shell sends the watcher's session changes as (payload: `SessionsChanged`). */
export const SESSIONS_CHANGED = "sessions-changed";

/** The Tauri event the shell sends when the workspace's `.zibby/studio.toml` was created, changed or removed (no payload: list the agents again). */
export const AGENTS_CHANGED = "agents-changed";

/** The Tauri event the shell says the sessions are polled, not watched live, with (payload: `WatchNotice`). */
export const WATCH_NOTICE = "watch-notice";

/** The Tauri event the shell sends when the workspace was switched (payload: `WorkspaceInfo`). */
export const WORKSPACE_CHANGED = "workspace-changed";

/** The Tauri event the shell sends when the remote workspace's link changes: reconnecting, back, lost (payload: `RemoteStatus`). */
export const REMOTE_STATUS = "remote-status";

/** The Tauri event the shell says which remote workspace it is connecting to with (payload: its target, or null once done). */
export const REMOTE_CONNECTING = "remote-connecting";

/** The Tauri event the shell asks the window to show the Open Remote Workspace form with (no payload). */
export const REMOTE_OPEN_REQUESTED = "remote-open-requested";

/** The Tauri event the shell asks the window to show the Open Cloud Workspace form with (no payload). */
export const CLOUD_OPEN_REQUESTED = "cloud-open-requested";

/** The Tauri event the shell sends when the cloud workspace's status changes: a warm open's check is done, a refresh fails or works again (payload: `CloudStatus`). */
export const CLOUD_STATUS = "cloud-status";

/** The Tauri event the shell sends when the app is closing with live runs (payload: `QuitRequested`). */
export const QUIT_REQUESTED = "quit-requested";

/** The Tauri event the shell asks the window to show a session with: imported, or asked for by a launch (payload: `SessionOpened`). */
export const SESSION_OPENED = "session-opened";

/** The Tauri event the shell says an import from the menu or a drop failed with (payload: `CommandError`). */
export const IMPORT_FAILED = "import-failed";
