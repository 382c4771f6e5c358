// The shapes that cross IPC, as the Rust side serialises them (studio-core's `SessionRow`, `Agent`,
// `StartedRun`, `RunRecord` and `RunEvent`, the shell's `WorkspaceInfo` and `CommandError`). Keep in
// step with the Rust types.

export type Status = "running" | "success" | "error" | "cancelled" | "interrupted" | "unknown";

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
  | { type: "stopping"; run_id: string; forced: boolean; message: string }
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
}
