// The shapes that cross IPC, as the Rust side serialises them (studio-core's `SessionRow`, `Agent`,
// `StartedRun`, `RunRecord` and `RunEvent`, the shell's `WorkspaceInfo` and `CommandError`). Keep in
// step with the Rust types.

export type Status = "running" | "success" | "error" | "cancelled" | "interrupted" | "unknown";

/** How a stop stops: the current node finishes first, or its processes are signalled. */
export type Stopping = "graceful" | "forced";

export interface WorkspaceInfo {
  root: string;
  sessions_dir: string;
}

export interface NodeSummary {
  name: string;
  status: Status;
}

export interface Problem {
  /** The file, relative to the session folder. */
  file: string;
  reason: string;
}

export interface SessionSummary {
  id: string;
  path: string;
  status: Status;
  current_node: string | null;
  /** RFC 3339 UTC. */
  created_at: string | null;
  /** RFC 3339 UTC: the newest modification time of the session's files. */
  updated_at: string;
  nodes: NodeSummary[];
  problems: Problem[];
}

/** A session as the studio lists it: its folder's summary and what the store knows of it. */
export interface SessionRow extends SessionSummary {
  pinned: boolean;
  /** RFC 3339 UTC. */
  pinned_at: string | null;
  /** The beginning of the first prompt, else the agent's name (sessions the studio ran). */
  title: string | null;
  agent: string | null;
  /** The conversation messages the store holds for it. */
  messages: number;
  /** The id of its run that is live right now (possibly started by another process, such as the CLI). */
  live_run: string | null;
}

/** An agent of the workspace's `.zibby/studio.toml`. */
export interface Agent {
  name: string;
  run: string[];
  replay?: string[];
  cwd?: string;
  env?: Record<string, string>;
}

export interface RunStartRequest {
  agent: string;
  prompt: string;
  /** Continue this session; a new one otherwise. */
  session_id?: string;
}

export interface StartedRun {
  run_id: string;
  session_id: string;
  session_path: string;
  pid: number | null;
}

export type StoppedBy = "graceful" | "forced";

/** A run as the store records it. */
export interface RunRecord {
  id: string;
  session_id: string;
  workspace: string;
  agent: string | null;
  command: string[];
  pid: number | null;
  process_group: number | null;
  status: Status;
  detached: boolean;
  started_at: string;
  ended_at: string | null;
  exit_code: number | null;
  error: string | null;
  stopped_by: string | null;
  stop_requested: string | null;
  replayed_node: string | null;
}

/** What the window hears of runs as they happen (the Tauri event `run-event`); `t_ms` counts from
 * the run's start. Output lines are not sent. */
export type RunEvent =
  | { type: "run_started"; run_id: string; session_id: string; pid: number | null }
  | { type: "node_begin"; run_id: string; node: string; depth: number; t_ms: number }
  | { type: "node_end"; run_id: string; node: string; status: Status; t_ms: number }
  | { type: "stopping"; run_id: string; forced: boolean; /** Asked by another process. */ elsewhere: boolean }
  | {
      type: "run_finished";
      run_id: string;
      session_id: string;
      status: Status;
      exit_code: number | null;
      elapsed_ms: number;
      stopped_by: StoppedBy | null;
      error: string | null;
    };

/** Every failed command rejects with this; the UI branches on `code`, never on `message`. */
export interface CommandError {
  code: string;
  message: string;
  /** `agents_untrusted`: the `AgentLaunch` to show before trusting the file. */
  details?: unknown;
}

/** What running an agent of a workspace's `.zibby/studio.toml` would do (core `agents::Launch`). */
export interface AgentLaunch {
  agent: string;
  /** The command, placeholders (`{prompt}`, ...) unexpanded. */
  argv: string[];
  cwd: string;
  /** The variables the file sets, with their values (`[key, value]`). */
  env: [string, string][];
  agents_file: string;
  /** The digest of this exact launch (agent, command, folder, environment) that trusting records. */
  digest: string;
}

/** A file of a session folder: its absolute path and size. */
export interface FileRef {
  path: string;
  bytes: number;
}

export interface NodeArtifacts {
  prompt: FileRef | null;
  prompt_preview: string | null;
  raw_output: FileRef | null;
  result: FileRef | null;
  /** `result` already parsed, when it is JSON. */
  result_value: unknown | null;
  raw_stream: FileRef | null;
}

export interface SessionNode {
  name: string;
  status: Status;
  path: string | null;
  artifacts: NodeArtifacts;
}

export interface SessionInfo {
  session_path: string;
  session_timestamp: unknown;
  current_node: string | null;
  created_at: string | null;
}

/** One session read in full (`session_get`). */
export interface SessionDetail {
  id: string;
  path: string;
  layout: "engine" | "documented";
  status: Status;
  current_node: string | null;
  created_at: string | null;
  updated_at: string;
  info: SessionInfo | null;
  nodes: SessionNode[];
  result: unknown | null;
  events: unknown[];
  raw_stream_output: FileRef | null;
  problems: Problem[];
}

/** A conversation message of a session, as the store keeps it. */
export interface Message {
  seq: number;
  role: string;
  text: string;
  created_at: string;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface LogLine {
  at: string;
  level: LogLevel;
  event: string;
  message: string;
  run_id: string | null;
  /** `null` when the line has none. */
  fields: Record<string, unknown> | null;
}

/** A traced span of a run: the run itself, or one execution of a node. */
export interface Span {
  id: number;
  parent_id: number | null;
  run_id: string;
  name: string;
  kind: "run" | "node";
  depth: number;
  started_at: string;
  ended_at: string | null;
  status: Status;
}

export type OutputStream = "stdout" | "stderr";

export interface OutputLine {
  /** 1-based, over all the lines of the run. */
  seq: number;
  stream: OutputStream;
  /** Milliseconds since the run started. */
  at_ms: number;
  node: string | null;
  text: string;
}

export interface OutputPage {
  lines: OutputLine[];
  /** Where to continue; `null`: nothing more yet. */
  next_seq: number | null;
  /** All the lines of the run so far, unfiltered. */
  total: number;
}

/** Where a find in a run's output got to (`run_output_find`). */
export interface OutputFind {
  /** The line found. */
  seq: number | null;
  /** Nothing found yet and more to read: where to go on. */
  next_seq: number | null;
  /** How many lines this call read. */
  scanned: number;
}

export interface OutputFindQuery {
  fromSeq: number;
  backward: boolean;
  query: string;
}

export interface OutputQuery {
  fromSeq: number;
  limit: number;
  node?: string | null;
  stream?: OutputStream | null;
}

export interface FileEntry {
  /** Relative to the session folder, '/'-separated. */
  path: string;
  bytes: number;
  modified_at: string;
}

export interface FileChunk {
  path: string;
  offset: number;
  bytes_total: number;
  text: string;
  next_offset: number | null;
  binary: boolean;
}

export interface SearchHit {
  kind: "output" | "message" | "log" | "node";
  session_id: string;
  run_id: string | null;
  node: string | null;
  line: number;
  text: string;
}

/** The `run-output` event: the run has `lines` lines stored so far. */
export interface RunOutputEvent {
  run_id: string;
  session_id: string;
  lines: number;
}

/** The `quit-requested` event: the app is closing while runs are live; the window asks what to do
 * with them and answers with `app_quit`. */
export interface QuitRequest {
  live_runs: number;
  /** Whether the runs can be left running after the app quits. */
  can_keep: boolean;
}

/** The watcher polls the workspace instead of watching it live (the shell's `watch-notice`). */
export interface WatchNotice {
  workspace: string;
  reason: string;
}
