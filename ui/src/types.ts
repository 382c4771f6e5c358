// The shapes that cross IPC, as the Rust side serialises them (studio-core's `SessionSummary`,
// the shell's `WorkspaceInfo` and `CommandError`). Keep in step with the Rust types.

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

/** Every failed command rejects with this; the UI branches on `code`, never on `message`. */
export interface CommandError {
  code: string;
  message: string;
}
