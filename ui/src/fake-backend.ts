// A backend in memory, for the unit tests (and a browser without the desktop shell): sessions and
// agents as given, pins kept in a set, runs started as the test says, events sent with `emit`.

import type { Backend } from "./backend";
import type { Agent, RunEvent, SessionRow, StartedRun, WorkspaceInfo } from "./types";

export interface FakeBackend extends Backend {
  /** Sends a run event to whoever listens, as the shell would. */
  emit(event: RunEvent): void;
  /** Tells whoever listens that session folders changed, as the shell's watcher would. */
  sessionsChanged(): void;
  sessions: SessionRow[];
  agents: Agent[];
  /** The calls made, as `name(args)` strings, in order. */
  calls: string[];
}

export function fakeBackend(
  init: { workspace?: WorkspaceInfo; sessions?: SessionRow[]; agents?: Agent[] } = {},
): FakeBackend {
  const listeners = new Set<(event: RunEvent) => void>();
  const sessionListeners = new Set<() => void>();
  let nextRun = 1;
  const backend: FakeBackend = {
    sessions: init.sessions ?? [],
    agents: init.agents ?? [],
    calls: [],
    emit(event) {
      for (const listener of listeners) listener(event);
    },
    sessionsChanged() {
      for (const listener of sessionListeners) listener();
    },
    async workspaceGet() {
      return init.workspace ?? { root: "/p", sessions_dir: "/p/.zibby/output/sessions" };
    },
    async sessionsList() {
      backend.calls.push("sessionsList()");
      const rows = backend.sessions.map((row) => ({ ...row }));
      return [...rows.filter((row) => row.pinned), ...rows.filter((row) => !row.pinned)];
    },
    async pinAdd(sessionId) {
      backend.calls.push(`pinAdd(${sessionId})`);
      backend.sessions = backend.sessions.map((row) =>
        row.id === sessionId ? { ...row, pinned: true, pinned_at: new Date(0).toISOString() } : row,
      );
    },
    async pinRemove(sessionId) {
      backend.calls.push(`pinRemove(${sessionId})`);
      backend.sessions = backend.sessions.map((row) =>
        row.id === sessionId ? { ...row, pinned: false, pinned_at: null } : row,
      );
    },
    async agentsList() {
      return backend.agents;
    },
    async runStart(request) {
      backend.calls.push(`runStart(${request.agent}, ${request.prompt})`);
      const started: StartedRun = {
        run_id: `run-${nextRun}`,
        session_id: `session-${nextRun}`,
        session_path: `/p/.zibby/output/sessions/session-${nextRun}`,
        pid: 1000 + nextRun,
      };
      nextRun += 1;
      return started;
    },
    async runStop(runId, force) {
      backend.calls.push(`runStop(${runId}, ${force})`);
      return force ? "force stopping" : "stopping: the current node finishes first";
    },
    async runsList() {
      return [];
    },
    async sessionDelete(sessionId) {
      backend.calls.push(`sessionDelete(${sessionId})`);
      backend.sessions = backend.sessions.filter((row) => row.id !== sessionId);
    },
    async onRunEvent(handler) {
      listeners.add(handler);
      return () => listeners.delete(handler);
    },
    async onSessionsChanged(handler) {
      sessionListeners.add(handler);
      return () => sessionListeners.delete(handler);
    },
  };
  return backend;
}
