// The app's state and its one loop: ask the backend, render, repeat on Refresh.

import type { Backend } from "./backend";
import type { CommandError } from "./types";
import { renderApp, type Loaded, type ViewState } from "./view";

/** Relative times ("5 min ago") are re-rendered this often. */
const CLOCK_TICK_MS = 30_000;

function toCommandError(error: unknown): CommandError {
  if (typeof error === "object" && error !== null && "code" in error && "message" in error) {
    return { code: String(error.code), message: String(error.message) };
  }
  return { code: "internal", message: String(error) };
}

async function settle<T>(promise: Promise<T>): Promise<Loaded<T>> {
  try {
    return { kind: "ok", value: await promise };
  } catch (error) {
    return { kind: "error", error: toCommandError(error) };
  }
}

export interface App {
  /** Reloads the workspace and its sessions; resolves once the page shows them. */
  refresh(): Promise<void>;
}

export function startApp(root: HTMLElement, backend: Backend, clock: () => Date = () => new Date()): App {
  let state: ViewState = {
    workspace: { kind: "loading" },
    sessions: { kind: "loading" },
    refreshing: false,
    now: clock(),
  };
  const show = () => renderApp(root, state, { refresh: () => void refresh() });

  async function refresh(): Promise<void> {
    state = { ...state, refreshing: true };
    show();
    const [workspace, sessions] = await Promise.all([
      settle(backend.workspaceGet()),
      settle(backend.sessionsList()),
    ]);
    state = { workspace, sessions, refreshing: false, now: clock() };
    show();
  }

  setInterval(() => {
    state = { ...state, now: clock() };
    show();
  }, CLOCK_TICK_MS);

  show();
  return { refresh };
}
