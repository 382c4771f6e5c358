// The window's state and what changes it: backend calls, run events, keys. Runes (`$state`)
// make it reactive, so each component redraws only what reads what changed (a clock tick redraws
// the clocks, not the page). It holds data only, never DOM nodes: the session view's adapter is
// kept out of the reactive state (`sessionView`), and its element is mounted by SessionPane.

import { flushSync } from "svelte";

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import { filterSessions, NO_FILTERS, type SessionFilters } from "../filters";
import { type CostSort, nextCostSort, sortByCost } from "../usage";
import { moveSelection, type KeyCommand } from "../keyboard";
import type { Loaded } from "../loaded";
import { addStartedRun, applyRunEvent, dismissRun, isLive, stopRefused, stopRequested, type LiveRun } from "../runs";
import { SEARCH_LIMIT, type SearchResults } from "../search";
import { DELETE_LIVE_TITLE } from "../sessions";
import { createSessionView, type SessionTab, type SessionView } from "../sessionview";
import { askingToTrust, untrustedLaunch } from "../trust";
import type {
  Agent,
  AgentLaunch,
  CommandError,
  QuitRequest,
  RunEvent,
  RunOutputEvent,
  SearchHit,
  SessionOpened,
  SessionListing,
  SessionRow,
  Status,
  Stopping,
  WatchNotice,
  WorkspaceInfo,
  UsageTotal,
} from "../types";

/** Relative times ("5 min ago") are re-rendered this often. */
export const CLOCK_TICK_MS = 30_000;
/** The elapsed time of live runs is updated this often (only while a run is live). */
export const ELAPSED_TICK_MS = 1_000;
/** How long the table waits after a session change for the rest of its burst. */
export const SESSIONS_CHANGED_DELAY_MS = 150;
/** How long an ended run stays in the Live runs strip (its control disabled in place). */
export const ENDED_LINGER_MS = 8_000;
/** How long a notification of an ended run stays. */
export const TOAST_MS = 12_000;

/** The tab a search hit opens. */
const TAB_OF_HIT: Partial<Record<string, SessionTab>> = {
  output: "output",
  message: "conversation",
  log: "logs",
  node: "nodes",
};

export type QuitAnswer = "stop" | "keep" | "cancel";

export interface WorkspaceMenu {
  recent: Loaded<string[]>;
  /** Why the last switch failed. */
  error: CommandError | null;
}

export interface AgentFormState {
  /** The agent being edited; `null`: a new one. */
  editing: Agent | null;
  saving: boolean;
  error: CommandError | null;
}

export interface TrustRequest {
  launch: AgentLaunch;
  answer: (trust: boolean) => void;
}

/** A run that ended, told in the notification region. */
export interface Toast {
  id: number;
  runId: string;
  sessionId: string;
  status: Status;
  text: string;
}

async function settle<T>(promise: Promise<T>): Promise<Loaded<T>> {
  try {
    return { kind: "ok", value: await promise };
  } catch (error) {
    return { kind: "error", error: toCommandError(error) };
  }
}

export function endText(run: LiveRun): string {
  const end = run.end;
  if (!end) return "";
  if (end.status === "cancelled" && end.stoppedBy) return `stopped (${end.stoppedBy})`;
  if (end.exitCode !== null && end.exitCode !== 0) return `exited with ${end.exitCode}`;
  if (end.status === "error") return "failed";
  return "finished";
}

export class AppState {
  readonly backend: Backend;
  readonly clock: () => Date;

  workspace = $state.raw<Loaded<WorkspaceInfo>>({ kind: "loading" });
  /** Pinned first, as the backend orders them. */
  sessions = $state.raw<Loaded<SessionRow[]>>({ kind: "loading" });
  /** What all the workspace's sessions cost, as the core totals and words it (the last listing's). */
  sessionsUsage = $state.raw<UsageTotal | null>(null);
  agents = $state.raw<Loaded<Agent[]>>({ kind: "loading" });
  /** Why the agents file could not be read again (the last good agents stay). */
  agentsError = $state.raw<CommandError | null>(null);
  /** The runs this window started, live ones and ended ones not gone yet. */
  runs = $state.raw<LiveRun[]>([]);
  /** The moment the live runs' elapsed times are drawn for (ms). */
  runsNow = $state(0);
  starting = $state(false);
  runError = $state.raw<CommandError | null>(null);
  /** Why the last import from the menu or a drop failed. */
  importError = $state.raw<CommandError | null>(null);
  pinError = $state.raw<CommandError | null>(null);
  confirmDelete = $state<string | null>(null);
  deleteError = $state.raw<CommandError | null>(null);
  refreshing = $state(false);
  /** The moment relative times are drawn for. */
  now = $state.raw(new Date());
  openSession = $state<string | null>(null);
  selected = $state<string | null>(null);
  /** The two runs the compare view compares (run or session ids), while it is open. */
  compare = $state.raw<{ a: string; b: string } | null>(null);
  /** The sessions marked in the table to compare, in the order marked (two at most). */
  marked = $state.raw<readonly string[]>([]);
  filters = $state.raw<SessionFilters>(NO_FILTERS);
  /** What the search box holds. */
  searchText = $state("");
  search = $state.raw<SearchResults>({ kind: "idle" });
  workspaceMenu = $state.raw<WorkspaceMenu | null>(null);
  agentForm = $state.raw<AgentFormState | null>(null);
  quitRequest = $state.raw<QuitRequest | null>(null);
  watchNotice = $state.raw<WatchNotice | null>(null);
  trustRequest = $state.raw<TrustRequest | null>(null);
  toasts = $state.raw<Toast[]>([]);
  /** The last status change, for the polite live region. */
  announcement = $state("");
  /** The pointer is over the Live runs strip: ended runs wait for it to leave. */
  stripHovered = $state(false);

  /** The table's order by cost (its Cost column's header): none keeps pinned, then most recent. */
  costSort = $state<CostSort>("none");
  /** The sessions the table shows: through the filters, in the table's order. */
  visible = $derived(
    this.sessions.kind === "ok" ? sortByCost(filterSessions(this.sessions.value, this.filters), this.costSort) : [],
  );
  /** The sessions with a live run (the store's, or one this window follows). */
  live = $derived.by(() => {
    const live = new Set(this.runs.filter(isLive).map((run) => run.sessionId));
    if (this.sessions.kind === "ok") for (const row of this.sessions.value) if (row.live_run) live.add(row.id);
    return live;
  });
  dialogOpen = $derived(
    this.confirmDelete !== null || this.agentForm !== null || this.quitRequest !== null || this.trustRequest !== null,
  );

  /** The open session's view (an imperative island; not reactive state). */
  sessionView: SessionView | null = null;
  /** Listeners of the open session view changing (SessionPane mounts its element). */
  readonly #viewListeners = new Set<() => void>();
  /** Runs the S key asked to stop (a second S forces). */
  readonly #stopAsked = new Set<string>();
  #searchAsked = 0;
  /** The workspace this window is opening (its `workspace-changed` echo needs no second reload). */
  #switchingTo: string | null = null;
  #reloadSoon: ReturnType<typeof setTimeout> | null = null;
  #elapsedTimer: ReturnType<typeof setInterval> | null = null;
  #clockTimer: ReturnType<typeof setInterval> | null = null;
  readonly #lingering = new Map<string, ReturnType<typeof setTimeout>>();
  /** Ended runs whose time is up but wait for the pointer to leave the strip. */
  readonly #due = new Set<string>();
  #nextToast = 1;
  #firstFrameMarked = false;
  #unlisten: (() => void)[] = [];
  readonly ready: Promise<void>;

  constructor(shellBackend: Backend, clock: () => Date = () => new Date()) {
    this.clock = clock;
    this.now = clock();
    this.runsNow = clock().getTime();
    // Every run start (the Run bar, Continue, Re-run node) asks before an untrusted agents file runs.
    this.backend = askingToTrust(shellBackend, (launch) => this.askTrust(launch));
    const backend = this.backend;
    // An event is drawn before the next one is handled (as the shell sends them, one task each).
    const drawn =
      <A extends unknown[]>(handler: (...args: A) => void) =>
      (...args: A) => {
        handler(...args);
        flushSync();
      };
    const listening = [
      backend.onRunEvent(drawn((event: RunEvent) => this.onRunEvent(event))),
      backend.onSessionsChanged(drawn(() => this.onSessionsChanged())),
      backend.onRunOutput((event) => this.onRunOutput(event)),
      backend.onWorkspaceChanged(drawn((workspace: WorkspaceInfo) => this.onWorkspaceChanged(workspace))),
      backend.onWatchNotice(drawn((notice: WatchNotice) => (this.watchNotice = notice))),
      backend.onQuitRequested(drawn((request: QuitRequest) => (this.quitRequest = request))),
      backend.onAgentsChanged(() => void this.reloadAgents()),
      backend.onSessionOpened(drawn((opened: SessionOpened) => this.showSession(opened.session_id))),
      backend.onImportFailed(drawn((error: CommandError) => (this.importError = error))),
    ];
    this.ready = Promise.all(listening).then(
      (unlisten) => {
        this.#unlisten = unlisten;
        // `zstudio open` started the app on a session.
        backend.sessionRequested().then(
          (sessionId) => {
            if (sessionId !== null) {
              this.showSession(sessionId);
              flushSync();
            }
          },
          () => {},
        );
      },
      (error: unknown) => {
        this.runError = toCommandError(error);
      },
    );
    this.#clockTimer = setInterval(() => {
      // Nothing to redraw while the window is hidden; the next tick catches up.
      if (typeof document !== "undefined" && document.hidden) return;
      this.now = this.clock();
    }, CLOCK_TICK_MS);
  }

  /** Stops every timer and listener (tests, a page going away). */
  destroy(): void {
    for (const stop of this.#unlisten) stop();
    if (this.#clockTimer !== null) clearInterval(this.#clockTimer);
    if (this.#elapsedTimer !== null) clearInterval(this.#elapsedTimer);
    if (this.#reloadSoon !== null) clearTimeout(this.#reloadSoon);
    for (const timer of this.#lingering.values()) clearTimeout(timer);
    this.#clockTimer = this.#elapsedTimer = this.#reloadSoon = null;
  }

  get agentList(): readonly Agent[] {
    return this.agents.kind === "ok" ? this.agents.value : [];
  }

  rows(): readonly SessionRow[] {
    return this.sessions.kind === "ok" ? this.sessions.value : [];
  }

  rowOf(sessionId: string): SessionRow | null {
    return this.rows().find((row) => row.id === sessionId) ?? null;
  }

  /** The live run of a session: the store's, else one this window started and still follows. */
  liveRunOf(sessionId: string): string | null {
    const started = this.runs.find((run) => run.sessionId === sessionId && isLive(run));
    return this.rowOf(sessionId)?.live_run ?? started?.runId ?? null;
  }

  // ---- loading ----

  async refresh(): Promise<void> {
    this.refreshing = true;
    const [workspace, sessions, agents] = await Promise.all([
      settle(this.backend.workspaceGet()),
      settle(this.backend.sessionsList()),
      settle(this.backend.agentsList()),
    ]);
    this.workspace = workspace;
    this.setSessions(sessions);
    this.setAgents(agents);
    this.refreshing = false;
    this.now = this.clock();
    this.markFirstFrame();
  }

  /** The first frame that shows the workspace (its sessions, or what to do without any) is marked
   * once as the performance entry `workspace-shown`: the launch benchmark reads it. A callback
   * before the next frame schedules the mark after it, once that frame is painted. */
  markFirstFrame(): void {
    if (this.#firstFrameMarked || typeof requestAnimationFrame !== "function") return;
    this.#firstFrameMarked = true;
    requestAnimationFrame(() => setTimeout(() => performance.mark("workspace-shown")));
  }

  setSessions(listing: Loaded<SessionListing>): void {
    if (listing.kind === "ok") {
      this.sessions = { kind: "ok", value: listing.value.sessions };
      this.sessionsUsage = listing.value.usage;
    } else {
      this.sessions = listing;
    }
    this.updateSessionView();
    this.syncElapsedTicker();
  }

  setAgents(agents: Loaded<Agent[]>): void {
    if (agents.kind === "ok") {
      this.agents = agents;
      this.agentsError = null;
    } else if (agents.kind === "error" && this.agents.kind === "ok") {
      // A broken file after a good one: the good agents stay, the error shows where they are chosen.
      this.agentsError = agents.error;
    } else {
      this.agents = agents;
    }
    this.updateSessionView();
  }

  /** `.zibby/studio.toml` changed (`agents-changed`): its agents again, without Refresh. */
  async reloadAgents(): Promise<void> {
    try {
      this.setAgents({ kind: "ok", value: await this.backend.agentsList() });
    } catch (error) {
      const launch = untrustedLaunch(error);
      if (launch !== null) {
        if (await this.askTrust(launch)) {
          await this.backend.agentsTrust(launch.digest);
          return this.reloadAgents();
        }
      }
      this.setAgents({ kind: "error", error: toCommandError(error) });
    }
  }

  /** Only the table: after a pin, and as runs start, go from node to node, and end. */
  async refreshSessions(): Promise<void> {
    const sessions = await settle(this.backend.sessionsList());
    // A failed reload keeps the rows on screen rather than replacing them with an error.
    if (sessions.kind === "ok" || this.sessions.kind !== "ok") {
      this.setSessions(sessions);
      this.now = this.clock();
    }
  }

  onSessionsChanged(): void {
    // Session folders change in bursts (a run writes several files per node): one reload per burst.
    if (this.#reloadSoon !== null) return;
    this.#reloadSoon = setTimeout(() => {
      this.#reloadSoon = null;
      void this.refreshSessions();
    }, SESSIONS_CHANGED_DELAY_MS);
  }

  // ---- the workspace ----

  /** Another workspace is open: everything of the old one goes. */
  async workspaceSwitched(): Promise<void> {
    this.setSessionView(null);
    this.#stopAsked.clear();
    // A question about the last workspace's agents file is answered no (its start gives up).
    this.trustRequest?.answer(false);
    this.sessions = { kind: "loading" };
    this.pinError = null;
    this.confirmDelete = null;
    this.deleteError = null;
    this.openSession = null;
    this.selected = null;
    this.filters = NO_FILTERS;
    this.searchText = "";
    this.search = { kind: "idle" };
    this.workspaceMenu = null;
    this.watchNotice = null;
    this.trustRequest = null;
    await this.refresh();
    this.#switchingTo = null;
  }

  onWorkspaceChanged(workspace: WorkspaceInfo): void {
    const open = this.workspace.kind === "ok" ? this.workspace.value.root : null;
    if (workspace.root === this.#switchingTo || workspace.root === open) return;
    void this.workspaceSwitched();
  }

  toggleWorkspaceMenu(open: boolean): void {
    if (!open) {
      this.workspaceMenu = null;
      return;
    }
    this.workspaceMenu = { recent: { kind: "loading" }, error: null };
    void settle(this.backend.workspacesRecent()).then((recent) => {
      if (this.workspaceMenu) this.workspaceMenu = { ...this.workspaceMenu, recent };
    });
  }

  openWorkspace(path: string): void {
    void (async () => {
      try {
        this.#switchingTo = path;
        await this.backend.workspaceOpen(path);
        await this.workspaceSwitched();
      } catch (error) {
        if (this.workspaceMenu) this.workspaceMenu = { ...this.workspaceMenu, error: toCommandError(error) };
      }
    })();
  }

  pickWorkspace(): void {
    void (async () => {
      try {
        const picked = await this.backend.workspacePick();
        if (picked === null) return; // cancelled: the menu stays as it was
        await this.workspaceSwitched();
      } catch (error) {
        if (this.workspaceMenu) this.workspaceMenu = { ...this.workspaceMenu, error: toCommandError(error) };
      }
    })();
  }

  // ---- the session view ----

  onViewChange(listener: () => void): () => void {
    this.#viewListeners.add(listener);
    return () => this.#viewListeners.delete(listener);
  }

  private setSessionView(view: SessionView | null): void {
    this.sessionView = view;
    for (const listener of this.#viewListeners) listener();
    this.syncElapsedTicker();
  }

  updateSessionView(): void {
    const view = this.sessionView;
    if (view) view.update(this.rowOf(view.sessionId), this.liveRunOf(view.sessionId));
  }

  openSessionView(sessionId: string, tab?: SessionTab): SessionView {
    let view = this.sessionView;
    if (view?.sessionId !== sessionId) {
      view = createSessionView(
        sessionId,
        {
          backend: this.backend,
          agents: () => this.agentList,
          // The island's calls are drawn at once (its clicks are not the components').
          stopRun: (runId, force) => this.stopRun(runId, force).finally(() => flushSync()),
          askDelete: (id) => {
            this.askDelete(id);
            flushSync();
          },
          togglePin: (id, pin) => this.togglePin(id, pin),
          runStarted: (started) => {
            this.addRun(started.run_id, started.session_id);
            flushSync();
          },
          close: () => {
            this.closeSession();
            flushSync();
          },
          compareRuns: (a, b) => {
            this.openCompare(a, b);
            flushSync();
          },
          now: () => this.clock().getTime(),
        },
        this.rowOf(sessionId),
        this.liveRunOf(sessionId),
        tab,
      );
      this.setSessionView(view);
    } else if (tab) {
      view.showTab(tab);
    }
    this.openSession = sessionId;
    this.selected = sessionId;
    return view;
  }

  // ---- comparing runs ----

  /** Marks a session of the table to compare (or unmarks it); a third mark drops the first. */
  toggleMark(sessionId: string, marked: boolean): void {
    const others = this.marked.filter((id) => id !== sessionId);
    this.marked = marked ? [...others, sessionId].slice(-2) : others;
  }

  /** Opens the compare view on two runs (run or session ids), where the session view is. */
  openCompare(a: string, b: string): void {
    this.compare = { a, b };
  }

  closeCompare(): void {
    this.compare = null;
  }

  /** Shows a session the shell asked for (imported, or `zstudio open`): the listing is read again
   * so that a new session is in it. */
  showSession(sessionId: string): void {
    this.importError = null;
    this.openSessionView(sessionId);
    void this.refreshSessions();
  }

  closeSession(): void {
    this.setSessionView(null);
    this.openSession = null;
  }

  // ---- runs ----

  private setRuns(runs: LiveRun[]): void {
    if (runs === this.runs) return;
    this.runs = runs;
    this.runsNow = this.clock().getTime();
    this.updateSessionView();
    this.syncElapsedTicker();
  }

  private addRun(runId: string, sessionId: string): void {
    this.setRuns(addStartedRun(this.runs, runId, sessionId, this.clock().getTime()));
  }

  /** The 1 s tick, only while something live shows an elapsed time. */
  private syncElapsedTicker(): void {
    const needed = this.runs.some(isLive) || (this.sessionView !== null && this.sessionView.liveRun() !== null);
    if (needed && this.#elapsedTimer === null) {
      this.#elapsedTimer = setInterval(() => {
        this.runsNow = this.clock().getTime();
        this.sessionView?.tick();
        // A run that ended elsewhere without this window hearing it stops the tick at the next change.
      }, ELAPSED_TICK_MS);
    } else if (!needed && this.#elapsedTimer !== null) {
      clearInterval(this.#elapsedTimer);
      this.#elapsedTimer = null;
    }
  }

  /** Whether the 1 s tick runs (for tests of idleness). */
  get ticking(): boolean {
    return this.#elapsedTimer !== null;
  }

  private announce(text: string): void {
    // The same words twice still get read: the region is emptied first.
    if (this.announcement === text) this.announcement = "";
    queueMicrotask(() => (this.announcement = text));
  }

  onRunEvent(event: RunEvent): void {
    const before = this.runs;
    this.setRuns(applyRunEvent(this.runs, event, this.clock().getTime()));
    this.sessionView?.onRunEvent(event);
    switch (event.type) {
      case "run_started":
        this.announce(`Run started: session ${event.session_id}`);
        break;
      case "stopping":
        this.announce(
          `Stopping the run of session ${this.runs.find((run) => run.runId === event.run_id)?.sessionId ?? event.run_id}`,
        );
        break;
      case "run_finished": {
        this.#stopAsked.delete(event.run_id);
        this.announce(`Run of session ${event.session_id} ended: ${event.status}`);
        const run = this.runs.find((candidate) => candidate.runId === event.run_id);
        const known = before.some((candidate) => candidate.runId === event.run_id && isLive(candidate));
        if (run && known) this.runEnded(run);
        break;
      }
      default:
        break;
    }
    // The table follows too (its session row, current node, nodes); `stopping` changes no file.
    if (event.type !== "stopping") void this.refreshSessions();
  }

  onRunOutput(event: RunOutputEvent): void {
    this.sessionView?.onRunOutput(event);
  }

  /** An ended run stays a few seconds in the strip (its Stop disabled in place), then leaves it
   * for the notifications; its result stays in the table. */
  private runEnded(run: LiveRun): void {
    this.#lingering.set(
      run.runId,
      setTimeout(() => {
        this.#lingering.delete(run.runId);
        if (this.stripHovered) this.#due.add(run.runId);
        else this.leaveStrip([run.runId]);
      }, ENDED_LINGER_MS),
    );
  }

  /** Ended runs leave the strip on their own: each is told in a notification. */
  private leaveStrip(runIds: readonly string[]): void {
    const leaving = this.runs.filter((run) => runIds.includes(run.runId) && run.end !== null);
    if (leaving.length === 0) return;
    const toasts = leaving.map((run): Toast => ({
      id: this.#nextToast++,
      runId: run.runId,
      sessionId: run.sessionId,
      status: run.end?.status ?? "unknown",
      text: endText(run),
    }));
    this.toasts = [...this.toasts, ...toasts];
    for (const toast of toasts) setTimeout(() => this.dismissToast(toast.id), TOAST_MS);
    this.setRuns(this.runs.filter((run) => !runIds.includes(run.runId)));
  }

  /** The pointer entered (`true`) or left the strip: runs due to leave wait until it leaves. */
  hoverStrip(hovered: boolean): void {
    this.stripHovered = hovered;
    if (hovered || this.#due.size === 0) return;
    const due = [...this.#due];
    this.#due.clear();
    this.leaveStrip(due);
  }

  dismissRun(runId: string): void {
    const timer = this.#lingering.get(runId);
    if (timer !== undefined) clearTimeout(timer);
    this.#lingering.delete(runId);
    this.#due.delete(runId);
    this.setRuns(dismissRun(this.runs, runId));
  }

  dismissToast(id: number): void {
    if (this.toasts.some((toast) => toast.id === id)) this.toasts = this.toasts.filter((toast) => toast.id !== id);
  }

  /** Stops a run; the Live runs strip shows it too when this window follows the run. */
  stopRun(runId: string, force: boolean): Promise<Stopping> {
    this.setRuns(stopRequested(this.runs, runId, force));
    return this.backend.runStop(runId, force).catch((error: unknown) => {
      // A run that ended meanwhile is not live any more: its `run_finished` tells the rest.
      const run = this.runs.find((candidate) => candidate.runId === runId);
      if (run && isLive(run)) this.setRuns(stopRefused(this.runs, runId, toCommandError(error)));
      throw error;
    });
  }

  runStop(runId: string, force: boolean): void {
    // A click that lands as the run ends does nothing: the run is not live any more.
    const run = this.runs.find((candidate) => candidate.runId === runId);
    if (run && !isLive(run)) return;
    this.stopRun(runId, force).catch(() => {});
  }

  async runStart(agent: string, prompt: string): Promise<boolean> {
    this.starting = true;
    this.runError = null;
    try {
      const started = await this.backend.runStart({ agent, prompt });
      this.starting = false;
      this.addRun(started.run_id, started.session_id);
      // The new session opens live, on its output.
      this.openSessionView(started.session_id, "output");
      void this.refreshSessions();
      return true;
    } catch (error) {
      this.starting = false;
      this.runError = toCommandError(error);
      return false;
    }
  }

  private askTrust(launch: AgentLaunch): Promise<boolean> {
    // One question at a time: one still open (a second Run meanwhile) is answered no.
    this.trustRequest?.answer(false);
    return new Promise<boolean>((resolve) => {
      this.trustRequest = {
        launch,
        answer: (trust) => {
          if (this.trustRequest?.launch === launch) this.trustRequest = null;
          resolve(trust);
        },
      };
    });
  }

  // ---- sessions ----

  togglePin(sessionId: string, pin: boolean): void {
    void (async () => {
      try {
        await (pin ? this.backend.pinAdd(sessionId) : this.backend.pinRemove(sessionId));
        this.pinError = null;
      } catch (error) {
        this.pinError = toCommandError(error);
      }
      await this.refreshSessions();
    })();
  }

  askDelete(sessionId: string | null): void {
    this.confirmDelete = sessionId;
    this.deleteError = null;
  }

  deleteSession(sessionId: string): void {
    this.confirmDelete = null;
    if (this.sessionView?.sessionId === sessionId) this.closeSession();
    void (async () => {
      try {
        await this.backend.sessionDelete(sessionId);
        this.deleteError = null;
        if (this.selected === sessionId) this.selected = null;
      } catch (error) {
        this.deleteError = toCommandError(error);
      }
      await this.refreshSessions();
    })();
  }

  /** The Cost column's header was pressed: the next order. */
  toggleCostSort(): void {
    this.costSort = nextCostSort(this.costSort);
  }

  setFilters(filters: SessionFilters): void {
    this.filters = filters;
  }

  /** The query changed (already debounced); "" clears the results. */
  runSearch(query: string): void {
    const asked = ++this.#searchAsked;
    if (query === "") {
      this.search = { kind: "idle" };
      return;
    }
    this.search = { kind: "searching", query };
    this.backend.search(query, SEARCH_LIMIT).then(
      (hits) => {
        if (asked === this.#searchAsked) this.search = { kind: "ok", query, hits };
      },
      (error: unknown) => {
        if (asked === this.#searchAsked) this.search = { kind: "error", query, error: toCommandError(error) };
      },
    );
  }

  clearSearch(): void {
    this.searchText = "";
    this.runSearch("");
  }

  openHit(hit: SearchHit): void {
    const view = this.openSessionView(hit.session_id, TAB_OF_HIT[hit.kind]);
    if (hit.kind === "output" && hit.run_id) view.showOutputLine(hit.run_id, hit.line);
  }

  // ---- agents and quitting ----

  editAgent(name: string | null): void {
    const editing = name === null ? null : (this.agentList.find((agent) => agent.name === name) ?? null);
    this.agentForm = { editing, saving: false, error: null };
  }

  closeAgentForm(): void {
    this.agentForm = null;
  }

  saveAgent(agent: Agent, previousName: string | null): void {
    if (!this.agentForm) return;
    this.agentForm = { ...this.agentForm, saving: true, error: null };
    this.backend.agentSave(agent, previousName).then(
      (agents) => {
        this.agentForm = null;
        this.setAgents({ kind: "ok", value: agents });
      },
      (error: unknown) => {
        if (this.agentForm) this.agentForm = { ...this.agentForm, saving: false, error: toCommandError(error) };
      },
    );
  }

  answerQuit(choice: QuitAnswer): void {
    this.quitRequest = null;
    if (choice === "cancel") return;
    this.backend.appQuit(choice === "keep").catch((error: unknown) => (this.runError = toCommandError(error)));
  }

  // ---- keys ----

  /** The session the keys act on: the selected one, else the open one. */
  private keyTarget(): string | null {
    return this.selected ?? this.openSession;
  }

  /** Carries out a key's command; `false` when it had nothing to do. `focusSearch` is the
   * window's (it owns the search box). */
  runKey(command: KeyCommand, focusSearch: () => boolean): boolean {
    switch (command) {
      case "select-previous":
      case "select-next": {
        const ids = this.visible.map((row) => row.id);
        const selected = moveSelection(ids, this.selected, command === "select-next" ? 1 : -1);
        if (selected === null) return false;
        this.selected = selected;
        return true;
      }
      case "open": {
        if (this.selected === null) return false;
        this.openSessionView(this.selected);
        return true;
      }
      case "focus-search":
        return focusSearch();
      case "toggle-pin": {
        const target = this.keyTarget();
        const row = target === null ? null : this.rowOf(target);
        if (!row) return false;
        this.togglePin(row.id, !row.pinned);
        return true;
      }
      case "stop": {
        const target = this.keyTarget();
        if (target === null) return false;
        if (this.sessionView?.sessionId === target) {
          this.sessionView.stop();
          return true;
        }
        const runId = this.liveRunOf(target);
        if (runId === null) return false;
        const force = this.#stopAsked.has(runId);
        this.#stopAsked.add(runId);
        this.stopRun(runId, force).catch(() => {});
        return true;
      }
      case "delete": {
        const target = this.keyTarget();
        if (target === null || !this.rowOf(target)) return false;
        if (this.liveRunOf(target) !== null) this.deleteError = { code: "session_live", message: DELETE_LIVE_TITLE };
        else this.askDelete(target);
        return true;
      }
      case "escape": {
        if (this.quitRequest !== null) this.answerQuit("cancel");
        else if (this.trustRequest !== null) this.trustRequest.answer(false);
        else if (this.confirmDelete !== null) this.confirmDelete = null;
        else if (this.agentForm) this.agentForm = null;
        else if (this.workspaceMenu) this.workspaceMenu = null;
        else if (this.search.kind !== "idle" || this.searchText !== "") this.clearSearch();
        else if (this.compare) this.closeCompare();
        else if (this.sessionView) this.closeSession();
        else return false;
        return true;
      }
    }
  }
}
