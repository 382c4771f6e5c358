// The window's state, by concern: the workspace, its agents, the sessions table, the runs this
// window follows, the dialogs, and the open session (a `SessionModel`, drawn by
// `components/session/SessionView`) or the compare view beside the table. This class joins them:
// the backend's events, the keys, the clocks, and what one concern's change means for another.
// Runes (`$state`) make it reactive, so each component redraws only what reads what changed (a
// clock tick redraws the clocks, not the page). It holds data only, never DOM nodes.

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import { moveSelection, type KeyCommand } from "../keyboard";
import { settle } from "../loaded";
import { isLive } from "../runs";
import { DELETE_LIVE_TITLE } from "../sessions";
import { SessionModel, type SessionTab } from "../sessionmodel.svelte";
import { askingToTrust } from "../trust";
import type {
  Agent,
  CloudStatus,
  CommandError,
  CompareAcross,
  RemoteStatus,
  RunEvent,
  SearchHit,
  WorkspaceInfo,
} from "../types";
import { AgentsState } from "./agents.svelte";
import { DialogsState, type QuitAnswer } from "./dialogs.svelte";
import { RunsState } from "./runs.svelte";
import { PAGE_ROWS, SessionsState } from "./sessions.svelte";
import { WorkspaceState } from "./workspace.svelte";

export { ENDED_LINGER_MS, TOAST_MS } from "./runs.svelte";

/** Relative times ("5 min ago") are re-rendered this often. */
export const CLOCK_TICK_MS = 30_000;
/** The elapsed time of live runs is updated this often (only while a run is live). */
export const ELAPSED_TICK_MS = 1_000;
/** How long the table waits after a session change for the rest of its burst. */
export const SESSIONS_CHANGED_DELAY_MS = 150;

/** The tab a search hit opens. */
const TAB_OF_HIT: Partial<Record<string, SessionTab>> = {
  output: "output",
  message: "conversation",
  log: "logs",
  node: "nodes",
  file: "files",
};

export class AppState {
  readonly backend: Backend;
  readonly clock: () => Date;

  readonly workspace: WorkspaceState;
  readonly agents: AgentsState;
  readonly sessions: SessionsState;
  readonly runs: RunsState;
  readonly dialogs: DialogsState;

  /** The open session, drawn beside the table. */
  session = $state.raw<SessionModel | null>(null);
  /** The two runs the compare view compares (run or session ids), while it is open; it stands
   * where the session is. */
  compare = $state.raw<{ a: string; b: string; across: CompareAcross | null } | null>(null);
  /** Refresh is reading the workspace, its sessions and its agents again. */
  refreshing = $state(false);
  /** Why the last import from the menu or a drop failed. */
  importError = $state.raw<CommandError | null>(null);

  /** The sessions with a live run (the store's, or one this window follows). */
  live = $derived.by(() => {
    const live = new Set(this.runs.list.filter(isLive).map((run) => run.sessionId));
    for (const row of this.sessions.rows()) if (row.live_run) live.add(row.id);
    return live;
  });

  /** Runs the S key asked to stop (a second S forces). */
  readonly #stopAsked = new Set<string>();
  #reloadSoon: ReturnType<typeof setTimeout> | null = null;
  #elapsedTimer: ReturnType<typeof setInterval> | null = null;
  #clockTimer: ReturnType<typeof setInterval> | null = null;
  #firstFrameMarked = false;
  #unlisten: (() => void)[] = [];
  readonly ready: Promise<void>;

  constructor(shellBackend: Backend, clock: () => Date = () => new Date()) {
    this.clock = clock;
    const backend = () => this.backend;
    this.dialogs = new DialogsState(backend);
    // Every run start (the Run bar, Continue, Re-run node) asks before an untrusted agents file runs.
    this.backend = askingToTrust(shellBackend, (launch) => this.dialogs.askTrust(launch));
    this.workspace = new WorkspaceState(this.backend, () => this.workspaceSwitched());
    this.agents = new AgentsState(this.backend, (launch) => this.dialogs.askTrust(launch));
    this.sessions = new SessionsState(backend, clock, () => this.#sessionChanged());
    this.sessions.paused = () => this.workspace.switching;
    this.runs = new RunsState(
      backend,
      () => clock().getTime(),
      () => this.#sessionChanged(),
    );
    const listening = [
      this.backend.onRunEvent((event) => this.onRunEvent(event)),
      this.backend.onSessionsChanged(() => this.onSessionsChanged()),
      this.backend.onRunOutput((event) => this.session?.onRunOutput(event)),
      this.backend.onWorkspaceChanged((workspace: WorkspaceInfo) => this.workspace.changed(workspace)),
      this.backend.onWatchNotice((notice) => (this.workspace.watchNotice = notice)),
      this.backend.onRemoteStatus((status) => this.onRemoteStatus(status)),
      this.backend.onRemoteConnecting((target) => (this.workspace.connecting = target)),
      this.backend.onRemoteOpenRequested(() => this.workspace.askRemote()),
      this.backend.onCloudOpenRequested(() => this.workspace.askCloud()),
      this.backend.onCloudStatus((status) => this.onCloudStatus(status)),
      this.backend.onQuitRequested((request) => (this.dialogs.quitRequest = request)),
      this.backend.onAgentsChanged(() => void this.agents.reload()),
      this.backend.onSessionOpened((opened) => this.showSession(opened.session_id)),
      this.backend.onImportFailed((error) => (this.importError = error)),
    ];
    this.ready = Promise.all(listening).then(
      (unlisten) => {
        this.#unlisten = unlisten;
        // `zstudio open` started the app on a session.
        this.backend.sessionRequested().then(
          (sessionId) => {
            if (sessionId !== null) this.showSession(sessionId);
          },
          () => {},
        );
      },
      (error: unknown) => {
        this.runs.error = toCommandError(error);
      },
    );
    this.#clockTimer = setInterval(() => {
      // Nothing to redraw while the window is hidden; the next tick catches up.
      if (typeof document !== "undefined" && document.hidden) return;
      this.sessions.now = this.clock();
    }, CLOCK_TICK_MS);
  }

  /** Stops every timer and listener (tests, a page going away). */
  destroy(): void {
    for (const stop of this.#unlisten) stop();
    if (this.#clockTimer !== null) clearInterval(this.#clockTimer);
    if (this.#elapsedTimer !== null) clearInterval(this.#elapsedTimer);
    if (this.#reloadSoon !== null) clearTimeout(this.#reloadSoon);
    this.runs.destroy();
    this.session?.destroy();
    this.#clockTimer = this.#elapsedTimer = this.#reloadSoon = null;
  }

  /** The live run of a session: the store's, else one this window started and still follows. */
  liveRunOf(sessionId: string): string | null {
    return this.sessions.rowOf(sessionId)?.live_run ?? this.runs.liveOf(sessionId);
  }

  // ---- loading ----

  async refresh(): Promise<void> {
    this.refreshing = true;
    const [workspace, sessions, agents, remote, connecting, cloud] = await Promise.all([
      settle(this.backend.workspaceGet()),
      // The first screen: one page of the listing (the next ones as the table is scrolled).
      settle(this.backend.sessionsPage(0, PAGE_ROWS)),
      settle(this.backend.agentsList()),
      settle(this.backend.workspaceRemote()),
      settle(this.backend.workspaceConnecting()),
      settle(this.backend.workspaceCloud()),
    ]);
    this.workspace.info = workspace;
    this.workspace.remote = remote.kind === "ok" ? remote.value : null;
    this.workspace.connecting = connecting.kind === "ok" ? connecting.value : null;
    this.workspace.setCloud(cloud.kind === "ok" ? cloud.value : null);
    this.sessions.setPage(sessions);
    this.agents.set(agents);
    this.refreshing = false;
    this.sessions.now = this.clock();
    this.markFirstFrame();
    // What they cost in all, behind the first screen.
    void this.sessions.readUsage();
  }

  /** The first frame that shows the workspace (its sessions, or what to do without any) is marked
   * once as the performance entry `workspace-shown`: the launch benchmark reads it. A callback
   * before the next frame schedules the mark after it, once that frame is painted. */
  markFirstFrame(): void {
    if (this.#firstFrameMarked || typeof requestAnimationFrame !== "function") return;
    this.#firstFrameMarked = true;
    requestAnimationFrame(() => setTimeout(() => performance.mark("workspace-shown")));
  }

  /** The remote workspace's link changed; back after reconnecting, the open session reads on
   * from what it holds and the live runs' nodes are read again (the shell has the listing read
   * again). */
  onRemoteStatus(status: RemoteStatus): void {
    const was = this.workspace.remote?.link.state;
    this.workspace.remote = status;
    if (was === "reconnecting" && status.link.state === "connected") {
      this.runs.resume();
      this.session?.resume();
    }
  }

  /** A cloud workspace's status: the listing is read again when a cold open's next page of ids is
   * in (`listed` grew, or the listing ended) and once its first check is done (a cold open's rows
   * still being fetched, past the cache's bound, then go). */
  onCloudStatus(status: CloudStatus): void {
    const before = this.workspace.cloud;
    this.workspace.cloudStatus(status);
    const now = this.workspace.cloud;
    if (before === null || now === null || now === before) return;
    const checked = before.checking && !now.checking;
    const morePages = now.listed > before.listed || (before.listing && !now.listing);
    if (checked || morePages) this.onSessionsChanged();
  }

  onSessionsChanged(): void {
    // Session folders change in bursts (a run writes several files per node): one reload per burst.
    if (this.#reloadSoon !== null) return;
    this.#reloadSoon = setTimeout(() => {
      this.#reloadSoon = null;
      void this.sessions.reload();
    }, SESSIONS_CHANGED_DELAY_MS);
  }

  /** Another workspace is open: everything of the old one goes. */
  async workspaceSwitched(): Promise<void> {
    this.closeSession();
    this.#stopAsked.clear();
    this.dialogs.reset();
    this.sessions.reset();
    this.workspace.reset();
    await this.refresh();
    this.workspace.switchDone();
  }

  // ---- the open session ----

  /** The open session's row or live run may have changed (a listing, a run started or ended). */
  #sessionChanged(): void {
    const session = this.session;
    if (session) session.update(this.sessions.rowOf(session.sessionId), this.liveRunOf(session.sessionId));
    this.#syncElapsedTicker();
  }

  /** Opens a session beside the table (on `tab`), or shows `tab` of the one open. */
  openSessionView(sessionId: string, tab?: SessionTab): SessionModel {
    let session = this.session;
    if (session?.sessionId !== sessionId) {
      session?.destroy();
      session = new SessionModel(
        sessionId,
        {
          backend: this.backend,
          remote: () => this.workspace.remote,
          readOnly: () => this.workspace.cloud !== null,
          agents: () => this.agents.list,
          stopRun: (runId, force) => this.runs.stop(runId, force),
          runStarted: (started) => this.runs.add(started),
          now: () => this.clock().getTime(),
        },
        this.sessions.rowOf(sessionId),
        this.liveRunOf(sessionId),
        tab,
      );
      this.session = session;
      this.#syncElapsedTicker();
    } else if (tab) {
      session.showTab(tab);
    }
    this.sessions.selected = sessionId;
    return session;
  }

  /** Shows a session the shell asked for (imported, or `zstudio open`): the listing is read again
   * so that a new session is in it. */
  showSession(sessionId: string): void {
    this.importError = null;
    this.openSessionView(sessionId);
    void this.sessions.reload();
  }

  closeSession(): void {
    this.session?.destroy();
    this.session = null;
    this.#syncElapsedTicker();
  }

  /** Opens the compare view on two runs (run or session ids), where the session view is;
   * `across`: A is a session of the remote workspace, B one of the workspace here. */
  openCompare(a: string, b: string, across: CompareAcross | null = null): void {
    this.compare = { a, b, across };
  }

  closeCompare(): void {
    this.compare = null;
  }

  openHit(hit: SearchHit): void {
    const session = this.openSessionView(hit.session_id, TAB_OF_HIT[hit.kind]);
    if (hit.kind === "output" && hit.run_id) session.showOutputLine(hit.run_id, hit.line);
    if (hit.kind === "file" && hit.path) session.openFile = hit.path;
  }

  // ---- runs ----

  /** The 1 s tick, only while something live shows an elapsed time. */
  #syncElapsedTicker(): void {
    const needed = this.runs.anyLive || (this.session !== null && this.session.liveRunId !== null);
    if (needed && this.#elapsedTimer === null) {
      this.#elapsedTimer = setInterval(() => {
        this.runs.now = this.clock().getTime();
        this.session?.tick();
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

  onRunEvent(event: RunEvent): void {
    this.runs.onEvent(event);
    this.session?.onRunEvent(event);
    if (event.type === "run_finished") this.#stopAsked.delete(event.run_id);
    // The table follows too (its session row, current node, nodes); `stopping` changes no file.
    if (event.type !== "stopping") void this.sessions.reload();
  }

  async runStart(agent: string, prompt: string, maxCostUsd: number | null = null): Promise<boolean> {
    const started = await this.runs.start(agent, prompt, maxCostUsd);
    if (started === null) return false;
    // The new session opens live, on its output.
    this.openSessionView(started.session_id, "output");
    void this.sessions.reload();
    return true;
  }

  // ---- sessions, agents and dialogs ----

  askDelete(sessionId: string | null): void {
    this.dialogs.askDelete(sessionId);
    this.sessions.deleteError = null;
  }

  deleteSession(sessionId: string): void {
    this.dialogs.askDelete(null);
    if (this.session?.sessionId === sessionId) this.closeSession();
    this.sessions.delete(sessionId);
  }

  editAgent(name: string | null): void {
    this.dialogs.editAgent(name === null ? null : (this.agents.list.find((agent) => agent.name === name) ?? null));
  }

  saveAgent(agent: Agent, previousName: string | null): void {
    this.dialogs.saveAgent(agent, previousName, (agents) => this.agents.set({ kind: "ok", value: agents }));
  }

  answerQuit(choice: QuitAnswer): void {
    this.dialogs.answerQuit(choice, (error) => (this.runs.error = error));
  }

  // ---- keys ----

  /** The session the keys act on: the selected one, else the open one. */
  #keyTarget(): string | null {
    return this.sessions.selected ?? this.session?.sessionId ?? null;
  }

  /** Carries out a key's command; `false` when it had nothing to do. `focusSearch` is the
   * window's (it owns the search box). */
  runKey(command: KeyCommand, focusSearch: () => boolean): boolean {
    switch (command) {
      case "select-previous":
      case "select-next": {
        const ids = this.sessions.visible.map((row) => row.id);
        const selected = moveSelection(ids, this.sessions.selected, command === "select-next" ? 1 : -1);
        if (selected === null) return false;
        this.sessions.selected = selected;
        return true;
      }
      case "open": {
        if (this.sessions.selected === null) return false;
        this.openSessionView(this.sessions.selected);
        return true;
      }
      case "focus-search":
        return focusSearch();
      case "toggle-pin": {
        const target = this.#keyTarget();
        const row = target === null ? null : this.sessions.rowOf(target);
        if (!row) return false;
        this.sessions.togglePin(row.id, !row.pinned);
        return true;
      }
      case "stop": {
        const target = this.#keyTarget();
        if (target === null) return false;
        if (this.session?.sessionId === target) {
          this.session.stopByKey();
          return true;
        }
        const runId = this.liveRunOf(target);
        if (runId === null) return false;
        const force = this.#stopAsked.has(runId);
        this.#stopAsked.add(runId);
        this.runs.stop(runId, force).catch(() => {});
        return true;
      }
      case "delete": {
        const target = this.#keyTarget();
        const row = target === null ? undefined : this.sessions.rowOf(target);
        if (target === null || !row) return false;
        // A run the studio did not start reads `running` too: its folder is not deleted under it.
        if (this.liveRunOf(target) !== null || row.status === "running") {
          this.sessions.deleteError = { code: "session_live", message: DELETE_LIVE_TITLE };
        } else {
          this.askDelete(target);
        }
        return true;
      }
      case "escape": {
        if (this.dialogs.quitRequest !== null) this.answerQuit("cancel");
        else if (this.dialogs.dismissTop()) return true;
        else if (this.workspace.menu) this.workspace.menu = null;
        else if (this.sessions.searching) this.sessions.clearSearch();
        else if (this.compare) this.closeCompare();
        else if (this.session) this.closeSession();
        else return false;
        return true;
      }
    }
  }
}
