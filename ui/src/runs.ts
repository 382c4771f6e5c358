// The runs this window started, as their events arrive: pure functions from the old list to the
// new one (no DOM, no clock: the caller passes `now`, in milliseconds).

import type { CommandError, RunEvent, Span, Status, StoppedBy } from "./types";

export interface LiveNode {
  name: string;
  status: Status;
}

/** `none`, then `graceful` after Stop (the current node finishes first), `forced` after Force stop. */
export type StopState = "none" | "graceful" | "forced";

export interface RunEnd {
  status: Status;
  elapsedMs: number;
  exitCode: number | null;
  stoppedBy: StoppedBy | null;
  error: string | null;
}

/** What the run's budget said last: at 80 % (`warning`), spent (`reached`: it stops after the
 * current node), or not enforced in dollars (`unpriced`); the words are the core's. */
export interface BudgetBadge {
  state: "warning" | "reached" | "unpriced";
  label: string;
}

/** What a reached budget's badge adds while the run goes on; the run ended, it says no more. */
const STOPPING_AFTER_NODE = "; stopping after this node";

export interface LiveRun {
  runId: string;
  sessionId: string;
  /** When this window heard the run start (client clock, ms). */
  startedAt: number;
  /** In the order they began; a node that runs again appears again. At most [`STRIP_NODES`]
   * (and the nodes still running, however early they began): the earliest ended nodes go. */
  nodes: LiveNode[];
  /** How many ended nodes went from `nodes` (the strip says so). */
  earlier: number;
  currentNode: string | null;
  stop: StopState;
  /** Why the last Stop or Force stop was refused. */
  stopError: CommandError | null;
  budget: BudgetBadge | null;
  end: RunEnd | null;
}

function newRun(runId: string, sessionId: string, now: number): LiveRun {
  return {
    runId,
    sessionId,
    startedAt: now,
    nodes: [],
    earlier: 0,
    currentNode: null,
    stop: "none",
    stopError: null,
    budget: null,
    end: null,
  };
}

/** The list with one run changed; the same list when nothing changed, so the page is not redrawn
 * (a redraw replaces the buttons under the pointer). */
function update(runs: readonly LiveRun[], runId: string, change: (run: LiveRun) => LiveRun): LiveRun[] {
  const changed = runs.map((run) => (run.runId === runId ? change(run) : run));
  return changed.every((run, i) => run === runs[i]) ? (runs as LiveRun[]) : changed;
}

/** The nodes a live run holds, past which its earliest ended ones go (a run of 80,000 node
 * executions held them all, copied them all at each of its 160,000 node events, and drew each as
 * a chip). */
export const STRIP_NODES = 50;

/** `nodes` held to [`STRIP_NODES`]: the earliest ended ones past it go, counted in `earlier`; a
 * node still running stays (its end finds it). */
function held(nodes: LiveNode[], earlier: number): Pick<LiveRun, "nodes" | "earlier"> {
  let excess = nodes.length - STRIP_NODES;
  if (excess <= 0) return { nodes, earlier };
  const kept = nodes.filter((node) => {
    if (excess > 0 && node.status !== "running") {
      excess -= 1;
      return false;
    }
    return true;
  });
  return { nodes: kept, earlier: earlier + nodes.length - kept.length };
}

/** The node still running that began last (the innermost, when graphs nest). */
function lastRunning(nodes: readonly LiveNode[]): string | null {
  for (let i = nodes.length - 1; i >= 0; i--) if (nodes[i]!.status === "running") return nodes[i]!.name;
  return null;
}

/** Adds a run the window just started, unless its `run_started` event got here first. */
export function addStartedRun(runs: readonly LiveRun[], runId: string, sessionId: string, now: number): LiveRun[] {
  if (runs.some((run) => run.runId === runId)) return runs as LiveRun[];
  return [...runs, newRun(runId, sessionId, now)];
}

/** The list after one event. Events of runs this window does not know, other than their start,
 * change nothing. */
export function applyRunEvent(runs: readonly LiveRun[], event: RunEvent, now: number): LiveRun[] {
  switch (event.type) {
    case "run_started":
      return addStartedRun(runs, event.run_id, event.session_id, now);
    case "node_begin":
      return update(runs, event.run_id, (run) => ({
        ...run,
        ...held([...run.nodes, { name: event.node, status: "running" }], run.earlier),
        currentNode: event.node,
      }));
    case "node_end":
      return update(runs, event.run_id, (run) => {
        const nodes = [...run.nodes];
        let index = -1;
        for (let i = nodes.length - 1; i >= 0; i--) {
          if (nodes[i]!.name === event.node && nodes[i]!.status === "running") {
            index = i;
            break;
          }
        }
        if (index === -1) nodes.push({ name: event.node, status: event.status });
        else nodes[index] = { name: event.node, status: event.status };
        return { ...run, ...held(nodes, run.earlier), currentNode: lastRunning(nodes) };
      });
    case "node_discarded":
      // A `┌ title` line taken for a node until the first marker: its `node_begin` is taken back.
      return update(runs, event.run_id, (run) => {
        let index = -1;
        run.nodes.forEach((node, i) => {
          if (node.name === event.node && node.status === "running") index = i;
        });
        if (index === -1) return run;
        const nodes = run.nodes.filter((_, i) => i !== index);
        return { ...run, nodes, currentNode: lastRunning(nodes) };
      });
    case "stopping":
      return update(runs, event.run_id, (run) => {
        const stop = event.forced || run.stop === "forced" ? "forced" : "graceful";
        return stop === run.stop ? run : { ...run, stop };
      });
    case "budget_warning":
      return update(runs, event.run_id, (run) =>
        // A budget reached stays said: a warning heard late does not take it back.
        run.budget?.state === "reached"
          ? run
          : { ...run, budget: { state: "warning", label: `budget: ${event.spend.label} spent (80 %)` } },
      );
    case "budget_reached":
      return update(runs, event.run_id, (run) => ({
        ...run,
        budget: { state: "reached", label: `budget reached: ${event.spend.label}${STOPPING_AFTER_NODE}` },
      }));
    case "budget_unpriced":
      return update(runs, event.run_id, (run) =>
        run.budget
          ? run
          : {
              ...run,
              budget: {
                state: "unpriced",
                label: `budget not enforced: ${event.nodes_priced} of ${event.nodes_with_usage} nodes priced`,
              },
            },
      );
    case "run_finished":
      return update(runs, event.run_id, (run) => ({
        ...run,
        // A node the run ended in the middle of ends with the run.
        nodes: run.nodes.map((node) => (node.status === "running" ? { ...node, status: event.status } : node)),
        currentNode: null,
        budget:
          run.budget?.state === "reached"
            ? { ...run.budget, label: run.budget.label.replace(STOPPING_AFTER_NODE, "") }
            : run.budget,
        end: {
          status: event.status,
          elapsedMs: event.elapsed_ms,
          exitCode: event.exit_code,
          stoppedBy: event.stopped_by,
          error: event.error,
        },
      }));
  }
}

/** A run's nodes as its recorded spans tell them (the node spans, in the order they began): what
 * the strip shows once events may have been missed (a remote workspace's link was down while the
 * run went on). A node still running in the record ends with the run, when the run has ended. */
export function nodesFromSpans(runs: readonly LiveRun[], runId: string, spans: readonly Span[]): LiveRun[] {
  // Spans are recorded as they begin: their ids are in that order.
  const began = spans.filter((span) => span.run_id === runId && span.kind === "node").sort((a, b) => a.id - b.id);
  return update(runs, runId, (run) => {
    const { nodes, earlier } = held(
      began.map((span) => ({
        name: span.name,
        status: span.ended_at === null && run.end ? run.end.status : span.status,
      })),
      0,
    );
    const same =
      earlier === run.earlier &&
      nodes.length === run.nodes.length &&
      nodes.every((node, i) => node.name === run.nodes[i]!.name && node.status === run.nodes[i]!.status);
    return same ? run : { ...run, nodes, earlier, currentNode: run.end ? null : lastRunning(nodes) };
  });
}

/** After Stop or Force stop was pressed: the button changes at once, before the event comes back. */
export function stopRequested(runs: readonly LiveRun[], runId: string, force: boolean): LiveRun[] {
  return update(runs, runId, (run) => ({
    ...run,
    stop: force || run.stop === "forced" ? "forced" : "graceful",
    stopError: null,
  }));
}

export function stopRefused(runs: readonly LiveRun[], runId: string, error: CommandError): LiveRun[] {
  return update(runs, runId, (run) => ({ ...run, stopError: error }));
}

export function dismissRun(runs: readonly LiveRun[], runId: string): LiveRun[] {
  return runs.filter((run) => run.runId !== runId);
}

/** How long the run has been going (or went, once it ended). */
export function runElapsedMs(run: LiveRun, now: number): number {
  return run.end ? run.end.elapsedMs : Math.max(0, now - run.startedAt);
}

export function isLive(run: LiveRun): boolean {
  return run.end === null;
}
