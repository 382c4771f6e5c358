// The runs this window follows, as the Live runs strip shows them: started, stopped, ending, then
// leaving the strip on their own for a notification; and the words the live region says of them.

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import {
  addStartedRun,
  applyRunEvent,
  dismissRun,
  isLive,
  nodesFromSpans,
  stopRefused,
  stopRequested,
  type LiveRun,
} from "../runs";
import type { CommandError, RunEvent, StartedRun, Status, StoppedBy } from "../types";

/** How long an ended run stays in the Live runs strip (its control disabled in place). */
export const ENDED_LINGER_MS = 8_000;
/** How long a notification of an ended run stays. */
export const TOAST_MS = 12_000;

/** A run that ended, told in the notification region. */
export interface Toast {
  id: number;
  runId: string;
  sessionId: string;
  status: Status;
  text: string;
}

export function endText(run: LiveRun): string {
  const end = run.end;
  if (!end) return "";
  if (end.status === "cancelled" && end.stoppedBy === "budget") return "stopped by its budget";
  if (end.status === "cancelled" && end.stoppedBy) return `stopped (${end.stoppedBy})`;
  if (end.exitCode !== null && end.exitCode !== 0) return `exited with ${end.exitCode}`;
  if (end.status === "error") return "failed";
  return "finished";
}

export class RunsState {
  /** The runs this window started, live ones and ended ones not gone yet. */
  list = $state.raw<LiveRun[]>([]);
  /** The moment the live runs' elapsed times are drawn for (ms). */
  now = $state(0);
  /** A run is being started from the Run bar. */
  starting = $state(false);
  /** Why the last start (or quitting) was refused. */
  error = $state.raw<CommandError | null>(null);
  toasts = $state.raw<Toast[]>([]);
  /** The last status change, for the polite live region. */
  announcement = $state("");
  /** The pointer is over the Live runs strip: ended runs wait for it to leave. */
  stripHovered = $state(false);

  readonly #backend: () => Backend;
  readonly #clock: () => number;
  /** Told whenever the list changed (the open session's live run, the elapsed ticker). */
  readonly #changed: () => void;
  readonly #lingering = new Map<string, ReturnType<typeof setTimeout>>();
  /** Ended runs whose time is up but wait for the pointer to leave the strip. */
  readonly #due = new Set<string>();
  #nextToast = 1;
  /** Runs that were live while a remote workspace's link was down: their node events meanwhile
   * were told to no one, so their nodes are read from the record again when they end. */
  readonly #missedEvents = new Set<string>();

  constructor(backend: () => Backend, clock: () => number, changed: () => void) {
    this.#backend = backend;
    this.#clock = clock;
    this.#changed = changed;
    this.now = clock();
  }

  destroy(): void {
    for (const timer of this.#lingering.values()) clearTimeout(timer);
    this.#lingering.clear();
  }

  get anyLive(): boolean {
    return this.list.some(isLive);
  }

  find(runId: string): LiveRun | undefined {
    return this.list.find((run) => run.runId === runId);
  }

  /** The live run this window started for a session and still follows. */
  liveOf(sessionId: string): string | null {
    return this.list.find((run) => run.sessionId === sessionId && isLive(run))?.runId ?? null;
  }

  #set(runs: LiveRun[]): void {
    if (runs === this.list) return;
    this.list = runs;
    this.now = this.#clock();
    this.#changed();
  }

  add(started: StartedRun): void {
    this.#set(addStartedRun(this.list, started.run_id, started.session_id, this.#clock()));
  }

  /** Starts a run from the Run bar (with `maxCostUsd`, its own budget): what started, or `null`
   * (`error` says why). */
  async start(agent: string, prompt: string, maxCostUsd: number | null = null): Promise<StartedRun | null> {
    this.starting = true;
    this.error = null;
    try {
      const request = maxCostUsd === null ? { agent, prompt } : { agent, prompt, max_cost_usd: maxCostUsd };
      const started = await this.#backend().runStart(request);
      this.starting = false;
      this.add(started);
      return started;
    } catch (error) {
      this.starting = false;
      this.error = toCommandError(error);
      return null;
    }
  }

  announce(text: string): void {
    // The same words twice still get read: the region is emptied first.
    if (this.announcement === text) this.announcement = "";
    queueMicrotask(() => (this.announcement = text));
  }

  /** A run event: the strip follows, the live region says what changed. */
  onEvent(event: RunEvent): void {
    const before = this.list;
    this.#set(applyRunEvent(this.list, event, this.#clock()));
    switch (event.type) {
      case "run_started":
        this.announce(`Run started: session ${event.session_id}`);
        break;
      case "stopping":
        this.announce(`Stopping the run of session ${this.find(event.run_id)?.sessionId ?? event.run_id}`);
        break;
      case "run_finished": {
        this.announce(`Run of session ${event.session_id} ended: ${event.status}`);
        if (this.#missedEvents.delete(event.run_id)) void this.#readNodes(event.run_id);
        const run = this.find(event.run_id);
        const known = before.some((candidate) => candidate.runId === event.run_id && isLive(candidate));
        if (run && known) this.#ended(run);
        break;
      }
      default:
        break;
    }
  }

  /** A remote workspace's link is back: the node events of its runs while it was down reached no
   * one, so each live run's nodes are read from the host's record (now, and again at its end,
   * which may come from the record alone). */
  resume(): void {
    for (const run of this.list.filter(isLive)) {
      this.#missedEvents.add(run.runId);
      void this.#readNodes(run.runId);
    }
  }

  async #readNodes(runId: string): Promise<void> {
    let spans;
    try {
      spans = await this.#backend().runSpans(runId);
    } catch {
      return; // the events go on telling the nodes; the next end reads them again
    }
    this.#set(nodesFromSpans(this.list, runId, spans));
  }

  /** An ended run stays a few seconds in the strip (its Stop disabled in place), then leaves it
   * for the notifications; its result stays in the table. */
  #ended(run: LiveRun): void {
    this.#lingering.set(
      run.runId,
      setTimeout(() => {
        this.#lingering.delete(run.runId);
        if (this.stripHovered) this.#due.add(run.runId);
        else this.#leaveStrip([run.runId]);
      }, ENDED_LINGER_MS),
    );
  }

  /** Ended runs leave the strip on their own: each is told in a notification. */
  #leaveStrip(runIds: readonly string[]): void {
    const leaving = this.list.filter((run) => runIds.includes(run.runId) && run.end !== null);
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
    this.#set(this.list.filter((run) => !runIds.includes(run.runId)));
  }

  /** The pointer entered (`true`) or left the strip: runs due to leave wait until it leaves. */
  hover(hovered: boolean): void {
    this.stripHovered = hovered;
    if (hovered || this.#due.size === 0) return;
    const due = [...this.#due];
    this.#due.clear();
    this.#leaveStrip(due);
  }

  dismiss(runId: string): void {
    const timer = this.#lingering.get(runId);
    if (timer !== undefined) clearTimeout(timer);
    this.#lingering.delete(runId);
    this.#due.delete(runId);
    this.#set(dismissRun(this.list, runId));
  }

  dismissToast(id: number): void {
    if (this.toasts.some((toast) => toast.id === id)) this.toasts = this.toasts.filter((toast) => toast.id !== id);
  }

  /** Stops a run; the strip shows it too when this window follows the run. */
  stop(runId: string, force: boolean): Promise<StoppedBy> {
    this.#set(stopRequested(this.list, runId, force));
    return this.#backend()
      .runStop(runId, force)
      .catch((error: unknown) => {
        // A run that ended meanwhile is not live any more: its `run_finished` tells the rest.
        const run = this.find(runId);
        if (run && isLive(run)) this.#set(stopRefused(this.list, runId, toCommandError(error)));
        throw error;
      });
  }

  /** Stop or Force stop in the strip. A click that lands as the run ends does nothing: the run is
   * not live any more. */
  stopFromStrip(runId: string, force: boolean): void {
    const run = this.find(runId);
    if (run && !isLive(run)) return;
    this.stop(runId, force).catch(() => {});
  }
}
