// The app's state and its loop: ask the backend, render; run events and clicks change the state,
// and the page is drawn again.

import type { Backend } from "./backend";
import { tickElapsed } from "./liveruns";
import { addStartedRun, applyRunEvent, dismissRun, isLive, stopRefused, stopRequested } from "./runs";
import { toCommandError } from "./errors";
import type { RunEvent, RunOutputEvent, SessionRow } from "./types";
import { createSessionView, type SessionView } from "./sessionview";
import { renderApp, type Actions, type Loaded, type ViewState } from "./view";

/** Relative times ("5 min ago") are re-rendered this often. */
const CLOCK_TICK_MS = 30_000;
/** The elapsed time of live runs is updated this often. */
const ELAPSED_TICK_MS = 1_000;

export { toCommandError };

async function settle<T>(promise: Promise<T>): Promise<Loaded<T>> {
  try {
    return { kind: "ok", value: await promise };
  } catch (error) {
    return { kind: "error", error: toCommandError(error) };
  }
}

/** How long the table waits after a session change for the rest of its burst. */
export const SESSIONS_CHANGED_DELAY_MS = 150;

export interface App {
  /** Reloads the workspace, its sessions and its agents; resolves once the page shows them. */
  refresh(): Promise<void>;
  /** Resolves once the app listens to run events. */
  ready: Promise<void>;
}

export function startApp(root: HTMLElement, backend: Backend, clock: () => Date = () => new Date()): App {
  let state: ViewState = {
    workspace: { kind: "loading" },
    sessions: { kind: "loading" },
    agents: { kind: "loading" },
    runs: [],
    runsNow: clock().getTime(),
    starting: false,
    runError: null,
    pinError: null,
    confirmDelete: null,
    deleteError: null,
    refreshing: false,
    now: clock(),
    openSession: null,
    sessionView: null,
    selected: null,
  };
  let sessionView: SessionView | null = null;
  const set = (change: Partial<ViewState>) => {
    state = { ...state, ...change };
    if (change.runs) state.runsNow = clock().getTime();
    renderApp(root, state, actions);
    if (change.sessions || change.runs) updateSessionView();
  };

  const rows = (): readonly SessionRow[] => (state.sessions.kind === "ok" ? state.sessions.value : []);
  const rowOf = (sessionId: string) => rows().find((row) => row.id === sessionId) ?? null;

  /** The live run of a session: the store's, else one this window started and still follows. */
  function liveRunOf(sessionId: string): string | null {
    const started = state.runs.find((run) => run.sessionId === sessionId && isLive(run));
    return rowOf(sessionId)?.live_run ?? started?.runId ?? null;
  }

  function updateSessionView(): void {
    if (!sessionView) return;
    sessionView.update(rowOf(sessionView.sessionId), liveRunOf(sessionView.sessionId));
  }

  function openSession(sessionId: string): void {
    if (sessionView?.sessionId !== sessionId) {
      sessionView = createSessionView(
        sessionId,
        {
          backend,
          agents: () => (state.agents.kind === "ok" ? state.agents.value : []),
          stopRun: (runId, force) => stopRun(runId, force),
          askDelete: (id) => actions.askDelete(id),
          togglePin: (id, pin) => actions.togglePin(id, pin),
          runStarted: (started) =>
            set({ runs: addStartedRun(state.runs, started.run_id, started.session_id, clock().getTime()) }),
          close: () => closeSession(),
          now: () => clock().getTime(),
        },
        rowOf(sessionId),
        liveRunOf(sessionId),
      );
    }
    set({ openSession: sessionId, selected: sessionId, sessionView: sessionView.element });
  }

  function closeSession(): void {
    sessionView = null;
    set({ openSession: null, sessionView: null });
  }

  /** Stops a run; the Live runs strip shows it too when this window follows the run. */
  function stopRun(runId: string, force: boolean): Promise<string> {
    set({ runs: stopRequested(state.runs, runId, force) });
    return backend.runStop(runId, force).catch((error: unknown) => {
      // A run that ended meanwhile is not live any more: its `run_finished` tells the rest.
      const run = state.runs.find((candidate) => candidate.runId === runId);
      if (run && isLive(run)) set({ runs: stopRefused(state.runs, runId, toCommandError(error)) });
      throw error;
    });
  }

  async function refresh(): Promise<void> {
    set({ refreshing: true });
    const [workspace, sessions, agents] = await Promise.all([
      settle(backend.workspaceGet()),
      settle(backend.sessionsList()),
      settle(backend.agentsList()),
    ]);
    set({ workspace, sessions, agents, refreshing: false, now: clock() });
  }

  /** Only the table: after a pin, and as runs start, go from node to node, and end. */
  async function refreshSessions(): Promise<void> {
    const sessions = await settle(backend.sessionsList());
    // A failed reload keeps the rows on screen rather than replacing them with an error.
    if (sessions.kind === "ok" || state.sessions.kind !== "ok") set({ sessions, now: clock() });
  }

  const actions: Actions = {
    refresh: () => void refresh(),

    togglePin(sessionId, pin) {
      void (async () => {
        try {
          await (pin ? backend.pinAdd(sessionId) : backend.pinRemove(sessionId));
          set({ pinError: null });
        } catch (error) {
          set({ pinError: toCommandError(error) });
        }
        await refreshSessions();
      })();
    },

    async runStart(agent, prompt) {
      set({ starting: true, runError: null });
      try {
        const started = await backend.runStart({ agent, prompt });
        set({ starting: false, runs: addStartedRun(state.runs, started.run_id, started.session_id, clock().getTime()) });
        return true;
      } catch (error) {
        set({ starting: false, runError: toCommandError(error) });
        return false;
      }
    },

    askDelete(sessionId) {
      set({ confirmDelete: sessionId, deleteError: null });
    },

    openSession,

    deleteSession(sessionId) {
      set({ confirmDelete: null });
      if (sessionView?.sessionId === sessionId) closeSession();
      void (async () => {
        try {
          await backend.sessionDelete(sessionId);
          set({ deleteError: null });
        } catch (error) {
          set({ deleteError: toCommandError(error) });
        }
        await refreshSessions();
      })();
    },

    runStop(runId, force) {
      stopRun(runId, force).catch(() => {});
    },

    dismissRun(runId) {
      set({ runs: dismissRun(state.runs, runId) });
    },
  };

  function onRunEvent(event: RunEvent): void {
    set({ runs: applyRunEvent(state.runs, event, clock().getTime()) });
    sessionView?.onRunEvent(event);
    // The table follows too (its session row, current node, nodes); `stopping` changes no file.
    if (event.type !== "stopping") void refreshSessions();
  }

  // Session folders change in bursts (a run writes several files per node): one reload per burst.
  let reloadSoon: ReturnType<typeof setTimeout> | null = null;
  function onSessionsChanged(): void {
    if (reloadSoon !== null) return;
    reloadSoon = setTimeout(() => {
      reloadSoon = null;
      void refreshSessions();
    }, SESSIONS_CHANGED_DELAY_MS);
  }

  function onRunOutput(event: RunOutputEvent): void {
    sessionView?.onRunOutput(event);
  }

  const ready = Promise.all([
    backend.onRunEvent(onRunEvent),
    backend.onSessionsChanged(onSessionsChanged),
    backend.onRunOutput(onRunOutput),
  ]).then(
    () => undefined,
    (error: unknown) => set({ runError: toCommandError(error) }),
  );

  setInterval(() => set({ now: clock() }), CLOCK_TICK_MS);
  setInterval(() => {
    if (state.runs.some(isLive)) tickElapsed(root, state.runs, clock().getTime());
    sessionView?.tick();
  }, ELAPSED_TICK_MS);

  renderApp(root, state, actions);
  return { refresh, ready };
}
