// The one seam between the UI and the desktop shell: the only module that imports @tauri-apps/api.
// Everything else talks to a `Backend`, so the UI can run against a fake one (tests, a browser).

import { invoke } from "@tauri-apps/api/core";

import type { CommandError, SessionSummary, WorkspaceInfo } from "./types";

export interface Backend {
  workspaceGet(): Promise<WorkspaceInfo>;
  sessionsList(): Promise<SessionSummary[]>;
}

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
  sessionsList: () => call<SessionSummary[]>("sessions_list"),
};
