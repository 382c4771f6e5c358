// The one seam between the UI and the desktop shell: the only module that imports @tauri-apps/api.
// Everything else talks to a `Backend`, so the UI can run against a fake one (tests, a browser).

import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";

import type {
  Agent,
  CommandError,
  RunEvent,
  RunRecord,
  RunStartRequest,
  SessionRow,
  StartedRun,
  WorkspaceInfo,
} from "./types";

export interface Backend {
  workspaceGet(): Promise<WorkspaceInfo>;
  /** Pinned first (most recently pinned first), then most recently updated first. */
  sessionsList(): Promise<SessionRow[]>;
  pinAdd(sessionId: string): Promise<void>;
  pinRemove(sessionId: string): Promise<void>;
  agentsList(): Promise<Agent[]>;
  runStart(request: RunStartRequest): Promise<StartedRun>;
  /** Resolves with what the studio is doing about it ("stopping: the current node finishes first"). */
  runStop(runId: string, force: boolean): Promise<string>;
  runsList(sessionId?: string): Promise<RunRecord[]>;
  /** Deletes a session's records and moves its folder to the trash; refused while its run is live. */
  sessionDelete(sessionId: string): Promise<void>;
  /** Calls `handler` with every run event from now on; resolves to a function that stops that. */
  onRunEvent(handler: (event: RunEvent) => void): Promise<() => void>;
  /** Calls `handler` whenever a session folder appears, changes or goes (from any source). */
  onSessionsChanged(handler: () => void): Promise<() => void>;
}

/** The Tauri event the shell sends run events as. */
export const RUN_EVENT = "run-event";

/** The Tauri event the shell sends the watcher's session changes as. */
export const SESSIONS_CHANGED = "sessions-changed";

/** A rejected command, as a `CommandError` (IPC failures get the code `ipc`). */
export class BackendError extends Error implements CommandError {
  readonly code: string;

  constructor(error: CommandError) {
    super(error.message);
    this.name = "BackendError";
    this.code = error.code;
  }
}

function isCommandError(value: unknown): value is CommandError {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as CommandError).code === "string" &&
    typeof (value as CommandError).message === "string"
  );
}

async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (error) {
    if (isCommandError(error)) throw new BackendError(error);
    throw new BackendError({ code: "ipc", message: String(error) });
  }
}

export const tauriBackend: Backend = {
  workspaceGet: () => call<WorkspaceInfo>("workspace_get"),
  sessionsList: () => call<SessionRow[]>("sessions_list"),
  pinAdd: (sessionId) => call<void>("pin_add", { session_id: sessionId }),
  pinRemove: (sessionId) => call<void>("pin_remove", { session_id: sessionId }),
  agentsList: () => call<Agent[]>("agents_list"),
  runStart: (request) => call<StartedRun>("run_start", { ...request, session_id: request.session_id ?? null }),
  runStop: (runId, force) => call<string>("run_stop", { run_id: runId, force }),
  runsList: (sessionId) => call<RunRecord[]>("runs_list", { session_id: sessionId ?? null }),
  sessionDelete: (sessionId) => call<void>("session_delete", { session_id: sessionId }),
  onRunEvent: (handler) => listen<RunEvent>(RUN_EVENT, (event) => handler(event.payload)),
  onSessionsChanged: (handler) => listen(SESSIONS_CHANGED, () => handler()),
};
