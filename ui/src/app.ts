// The app's state and its loop: ask the backend, render; run events, keys and clicks change the
// state, and the page is drawn again. The open session's view is a component of its own: the app
// builds it, feeds it the events and the table's reloads, and closes it.

import type { Backend } from "./backend";
import { toCommandError } from "./errors";
import { NO_FILTERS } from "./filters";
import { keyCommand, moveSelection, type KeyCommand } from "./keyboard";
import { tickElapsed } from "./liveruns";
import { addStartedRun, applyRunEvent, dismissRun, isLive, stopRefused, stopRequested } from "./runs";
import { SEARCH_LIMIT } from "./search";
import { askingToTrust } from "./trust";
import { createSessionView, type SessionTab, type SessionView } from "./sessionview";
import { DELETE_LIVE_TITLE } from "./table";
import type { RunEvent, RunOutputEvent, SessionRow, Stopping, WorkspaceInfo } from "./types";
import { renderApp, visibleSessions, type Actions, type Loaded, type ViewState } from "./view";

export { toCommandError };

/** Relative times ("5 min ago") are re-rendered this often. */
const CLOCK_TICK_MS = 30_000;
/** The elapsed time of live runs is updated this often. */
const ELAPSED_TICK_MS = 1_000;

async function settle<T>(promise: Promise<T>): Promise<Loaded<T>> {
  try {
    return { kind: "ok", value: await promise };
  } catch (error) {
    return { kind: "error", error: toCommandError(error) };
  }
}

/** How long the table waits after a session change for the rest of its burst. */
export const SESSIONS_CHANGED_DELAY_MS = 150;

/** The tab a search hit opens. */
const TAB_OF_HIT: Partial<Record<string, SessionTab>> = {
  output: "output",
  message: "conversation",
  log: "logs",
  node: "nodes",
};

export interface App {
  /** Reloads the workspace, its sessions and its agents; resolves once the page shows them. */
  refresh(): Promise<void>;
  /** Resolves once the app listens to run events. */
  ready: Promise<void>;
}

/** What belongs to one workspace: a new workspace starts from this. */
function workspaceState(): Pick<
  ViewState,
  | "sessions"
  | "pinError"
  | "confirmDelete"
  | "deleteError"
  | "openSession"
  | "sessionView"
  | "selected"
  | "filters"
  | "search"
  | "workspaceMenu"
  | "watchNotice"
  | "trustRequest"
> {
  return {
    sessions: { kind: "loading" },
    pinError: null,
    confirmDelete: null,
    deleteError: null,
    openSession: null,
    sessionView: null,
    selected: null,
    filters: NO_FILTERS,
    search: { kind: "idle" },
    workspaceMenu: null,
    watchNotice: null,
    trustRequest: null,
  };
}

export function startApp(root: HTMLElement, shellBackend: Backend, clock: () => Date = () => new Date()): App {
  // Every run start (the Run bar, Continue, Re-run node) asks before an untrusted agents file runs.
  const backend = askingToTrust(shellBackend, (launch) => {
    // One question at a time: one still open (a second Run meanwhile) is answered no.
    state.trustRequest?.answer(false);
    return new Promise<boolean>((resolve) =>
      set({
        trustRequest: {
          launch,
          answer: (trust) => {
            if (state.trustRequest?.launch === launch) set({ trustRequest: null });
            resolve(trust);
          },
        },
      }),
    );
  });
  let state: ViewState = {
    ...workspaceState(),
    workspace: { kind: "loading" },
    agents: { kind: "loading" },
    runs: [],
    runsNow: clock().getTime(),
    starting: false,
    runError: null,
    refreshing: false,
    now: clock(),
    agentForm: null,
    quitRequest: null,
  };
  let sessionView: SessionView | null = null;
  /** Runs the S key asked to stop (a second S forces). */
  const stopAsked = new Set<string>();

  const set = (change: Partial<ViewState>) => {
    state = { ...state, ...change };
    if (change.runs) state.runsNow = clock().getTime();
    renderApp(root, state, actions);
    if (change.sessions || change.runs || change.agents) updateSessionView();
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

  async function refresh(): Promise<void> {
    set({ refreshing: true });
    const [workspace, sessions, agents] = await Promise.all([
      settle(backend.workspaceGet()),
      settle(backend.sessionsList()),
      settle(backend.agentsList()),
    ]);
    set({ workspace, sessions, agents, refreshing: false, now: clock() });
    markFirstFrame();
  }

  /** The first frame that shows the workspace (its sessions, or what to do without any) is marked
   * once as the performance entry `workspace-shown`: the launch benchmark reads it. A callback
   * before the next frame schedules the mark after it, once that frame is painted. */
  let firstFrameMarked = false;
  function markFirstFrame(): void {
    if (firstFrameMarked || typeof requestAnimationFrame !== "function") return;
    firstFrameMarked = true;
    requestAnimationFrame(() => setTimeout(() => performance.mark("workspace-shown")));
  }

  /** Only the table: after a pin, and as runs start, go from node to node, and end. */
  async function refreshSessions(): Promise<void> {
    const sessions = await settle(backend.sessionsList());
    // A failed reload keeps the rows on screen rather than replacing them with an error.
    if (sessions.kind === "ok" || state.sessions.kind !== "ok") set({ sessions, now: clock() });
  }

  /** Another workspace is open: everything of the old one goes. */
  async function workspaceSwitched(): Promise<void> {
    sessionView = null;
    stopAsked.clear();
    // A question about the last workspace's agents file is answered no (its start gives up).
    state.trustRequest?.answer(false);
    set(workspaceState());
    await refresh();
    switchingTo = null;
  }

  function openSession(sessionId: string, tab?: SessionTab): SessionView {
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
        tab,
      );
    } else if (tab) {
      sessionView.showTab(tab);
    }
    set({ openSession: sessionId, selected: sessionId, sessionView: sessionView.element });
    return sessionView;
  }

  function closeSession(): void {
    sessionView = null;
    set({ openSession: null, sessionView: null });
  }

  /** Stops a run; the Live runs strip shows it too when this window follows the run. */
  function stopRun(runId: string, force: boolean): Promise<Stopping> {
    set({ runs: stopRequested(state.runs, runId, force) });
    return backend.runStop(runId, force).catch((error: unknown) => {
      // A run that ended meanwhile is not live any more: its `run_finished` tells the rest.
      const run = state.runs.find((candidate) => candidate.runId === runId);
      if (run && isLive(run)) set({ runs: stopRefused(state.runs, runId, toCommandError(error)) });
      throw error;
    });
  }

  let searchAsked = 0;
  /** The workspace this window is opening (its `workspace-changed` echo needs no second reload). */
  let switchingTo: string | null = null;

  function onWorkspaceChanged(workspace: WorkspaceInfo): void {
    const open = state.workspace.kind === "ok" ? state.workspace.value.root : null;
    if (workspace.root === switchingTo || workspace.root === open) return;
    void workspaceSwitched();
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
        set({
          starting: false,
          runs: addStartedRun(state.runs, started.run_id, started.session_id, clock().getTime()),
        });
        // The new session opens live, on its output.
        openSession(started.session_id, "output");
        void refreshSessions();
        return true;
      } catch (error) {
        set({ starting: false, runError: toCommandError(error) });
        return false;
      }
    },

    askDelete(sessionId) {
      set({ confirmDelete: sessionId, deleteError: null });
    },

    openSession: (sessionId) => void openSession(sessionId),

    deleteSession(sessionId) {
      set({ confirmDelete: null });
      if (sessionView?.sessionId === sessionId) closeSession();
      void (async () => {
        try {
          await backend.sessionDelete(sessionId);
          set({ deleteError: null, selected: state.selected === sessionId ? null : state.selected });
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

    setFilters(filters) {
      set({ filters });
    },

    search(query) {
      const asked = ++searchAsked;
      if (query === "") {
        set({ search: { kind: "idle" } });
        return;
      }
      set({ search: { kind: "searching", query } });
      backend.search(query, SEARCH_LIMIT).then(
        (hits) => asked === searchAsked && set({ search: { kind: "ok", query, hits } }),
        (error: unknown) =>
          asked === searchAsked && set({ search: { kind: "error", query, error: toCommandError(error) } }),
      );
    },

    openHit(hit) {
      const view = openSession(hit.session_id, TAB_OF_HIT[hit.kind]);
      if (hit.kind === "output" && hit.run_id) view.showOutputLine(hit.run_id, hit.line);
    },

    toggleWorkspaceMenu(open) {
      if (!open) {
        set({ workspaceMenu: null });
        return;
      }
      set({ workspaceMenu: { recent: { kind: "loading" }, error: null } });
      void settle(backend.workspacesRecent()).then((recent) => {
        if (state.workspaceMenu) set({ workspaceMenu: { ...state.workspaceMenu, recent } });
      });
    },

    openWorkspace(path) {
      void (async () => {
        try {
          switchingTo = path;
          await backend.workspaceOpen(path);
          await workspaceSwitched();
        } catch (error) {
          if (state.workspaceMenu) set({ workspaceMenu: { ...state.workspaceMenu, error: toCommandError(error) } });
        }
      })();
    },

    pickWorkspace() {
      void (async () => {
        try {
          const picked = await backend.workspacePick();
          if (picked === null) return; // cancelled: the menu stays as it was
          await workspaceSwitched();
        } catch (error) {
          if (state.workspaceMenu) set({ workspaceMenu: { ...state.workspaceMenu, error: toCommandError(error) } });
        }
      })();
    },

    editAgent(name) {
      const agents = state.agents.kind === "ok" ? state.agents.value : [];
      const editing = name === null ? null : (agents.find((agent) => agent.name === name) ?? null);
      set({ agentForm: { editing, saving: false, error: null } });
    },

    answerQuit(choice) {
      set({ quitRequest: null });
      if (choice === "cancel") return;
      backend.appQuit(choice === "keep").catch((error: unknown) => set({ runError: toCommandError(error) }));
    },

    closeAgentForm() {
      set({ agentForm: null });
    },

    saveAgent(agent, previousName) {
      if (!state.agentForm) return;
      set({ agentForm: { ...state.agentForm, saving: true, error: null } });
      backend.agentSave(agent, previousName).then(
        (agents) => set({ agentForm: null, agents: { kind: "ok", value: agents } }),
        (error: unknown) =>
          state.agentForm && set({ agentForm: { ...state.agentForm, saving: false, error: toCommandError(error) } }),
      );
    },
  };

  /** The session the keys act on: the selected one, else the open one. */
  const keyTarget = () => state.selected ?? state.openSession;

  function runKey(command: KeyCommand): boolean {
    const ids = () => visibleSessions(state).map((row) => row.id);
    switch (command) {
      case "select-previous":
      case "select-next": {
        const selected = moveSelection(ids(), state.selected, command === "select-next" ? 1 : -1);
        if (selected === null) return false;
        set({ selected });
        return true;
      }
      case "open": {
        if (state.selected === null) return false;
        openSession(state.selected);
        return true;
      }
      case "focus-search": {
        const search = root.querySelector<HTMLInputElement>("#search");
        search?.focus();
        search?.select();
        return search !== null;
      }
      case "toggle-pin": {
        const target = keyTarget();
        const row = target === null ? null : rowOf(target);
        if (!row) return false;
        actions.togglePin(row.id, !row.pinned);
        return true;
      }
      case "stop": {
        const target = keyTarget();
        if (target === null) return false;
        if (sessionView?.sessionId === target) {
          sessionView.stop();
          return true;
        }
        const runId = liveRunOf(target);
        if (runId === null) return false;
        const force = stopAsked.has(runId);
        stopAsked.add(runId);
        stopRun(runId, force).catch(() => {});
        return true;
      }
      case "delete": {
        const target = keyTarget();
        if (target === null || !rowOf(target)) return false;
        if (liveRunOf(target) !== null) set({ deleteError: { code: "session_live", message: DELETE_LIVE_TITLE } });
        else actions.askDelete(target);
        return true;
      }
      case "escape": {
        if (state.quitRequest !== null) actions.answerQuit("cancel");
        else if (state.trustRequest !== null) state.trustRequest.answer(false);
        else if (state.confirmDelete !== null) set({ confirmDelete: null });
        else if (state.agentForm) set({ agentForm: null });
        else if (state.workspaceMenu) set({ workspaceMenu: null });
        else if (state.search.kind !== "idle") {
          const search = root.querySelector<HTMLInputElement>("#search");
          if (search) search.value = "";
          actions.search("");
        } else if (sessionView) closeSession();
        else return false;
        return true;
      }
    }
  }

  function onKeyDown(event: KeyboardEvent): void {
    if (!root.isConnected) return;
    const command = keyCommand(event);
    // While a dialog is open, only Escape reaches the window.
    const dialogOpen =
      state.confirmDelete !== null ||
      state.agentForm !== null ||
      state.quitRequest !== null ||
      state.trustRequest !== null;
    if (command === null || (dialogOpen && command !== "escape")) return;
    if (runKey(command)) event.preventDefault();
  }
  document.addEventListener("keydown", onKeyDown);

  // A click outside the workspace menu closes it.
  document.addEventListener("click", (event) => {
    if (state.workspaceMenu && event.target instanceof Element && !event.target.closest(".workspace"))
      set({ workspaceMenu: null });
  });

  function onRunEvent(event: RunEvent): void {
    set({ runs: applyRunEvent(state.runs, event, clock().getTime()) });
    sessionView?.onRunEvent(event);
    if (event.type === "run_finished") stopAsked.delete(event.run_id);
    // The table follows too (its session row, current node, nodes); `stopping` changes no file.
    if (event.type !== "stopping") void refreshSessions();
  }

  function onRunOutput(event: RunOutputEvent): void {
    sessionView?.onRunOutput(event);
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

  const ready = Promise.all([
    backend.onRunEvent(onRunEvent),
    backend.onSessionsChanged(onSessionsChanged),
    backend.onRunOutput(onRunOutput),
    backend.onWorkspaceChanged(onWorkspaceChanged),
    backend.onWatchNotice((watchNotice) => set({ watchNotice })),
    backend.onQuitRequested((quitRequest) => set({ quitRequest })),
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
