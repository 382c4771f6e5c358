// The "Live runs" strip: each run this window started, its nodes as they begin and end, how long
// it has been going, and Stop (then Force stop). A run that ended stays, with its final status,
// until dismissed.

import { elapsedLabel, statusMark } from "./format";
import { badge, button, el, errorBox } from "./elements";
import { runElapsedMs, type LiveRun } from "./runs";

export interface LiveRunActions {
  runStop(runId: string, force: boolean): void;
  dismissRun(runId: string): void;
}

/** What the Stop button says once pressed. */
export const STOPPING_LABEL = "Stopping: the current node finishes first";

export function liveRunsStrip(runs: readonly LiveRun[], now: number, actions: LiveRunActions): HTMLElement | null {
  if (runs.length === 0) return null;
  const live = runs.filter((run) => run.end === null).length;
  return el(
    "section",
    { class: "live-runs card", attrs: { "aria-labelledby": "live-runs-title" } },
    el(
      "div",
      { class: "card-head" },
      el("h1", { attrs: { id: "live-runs-title" } }, "Live runs"),
      el("span", { class: "count" }, live === 0 ? "all ended" : live === 1 ? "1 running" : `${live} running`),
    ),
    el("ul", { class: "live-run-list" }, ...runs.map((run) => liveRun(run, now, actions))),
  );
}

function liveRun(run: LiveRun, now: number, actions: LiveRunActions): HTMLElement {
  const status = run.end?.status ?? "running";
  return el(
    "li",
    { class: "live-run", attrs: { "data-run-id": run.runId, "data-status": status } },
    el(
      "div",
      { class: "live-run-head" },
      badge(status),
      el("code", { class: "live-session-id", title: `run ${run.runId}` }, run.sessionId),
      el(
        "span",
        { class: "live-current-node" },
        ...(run.currentNode === null
          ? [el("span", { class: "muted" }, run.end ? endLabel(run) : "starting…")]
          : ["▸ ", el("code", {}, run.currentNode)]),
      ),
      el(
        "time",
        { class: "elapsed", title: "elapsed", attrs: { "data-run-id": run.runId } },
        elapsedLabel(runElapsedMs(run, now)),
      ),
      el("span", { class: "live-run-buttons" }, ...stopButtons(run, actions)),
    ),
    el("div", { class: "live-nodes" }, ...nodeChips(run)),
    run.end?.error && el("p", { class: "live-run-error" }, run.end.error),
    run.stopError && errorBox("The run could not be stopped", run.stopError),
  );
}

function endLabel(run: LiveRun): string {
  const end = run.end!;
  if (end.status === "cancelled" && end.stoppedBy) return `stopped (${end.stoppedBy})`;
  if (end.exitCode !== null && end.exitCode !== 0) return `exited with ${end.exitCode}`;
  if (end.status === "error") return "failed";
  return "finished";
}

function nodeChips(run: LiveRun): Node[] {
  if (run.nodes.length === 0)
    return [el("span", { class: "muted no-nodes" }, run.end ? "no nodes ran" : "no node yet")];
  return run.nodes.map((node) =>
    el(
      "span",
      {
        class: `node status-${node.status}`,
        title: `${node.name}: ${node.status}`,
        attrs: { "data-node": node.name, "data-status": node.status },
      },
      `${node.name} ${statusMark(node.status)}`,
    ),
  );
}

function stopButtons(run: LiveRun, actions: LiveRunActions): HTMLElement[] {
  if (run.end) {
    return [
      button(
        { class: "button small dismiss", title: "Remove from this list", attrs: { "aria-label": "Dismiss" } },
        "Dismiss",
        () => actions.dismissRun(run.runId),
      ),
    ];
  }
  switch (run.stop) {
    case "none":
      return [
        button({ class: "button small stop", title: "Stop after the current node" }, "Stop", () =>
          actions.runStop(run.runId, false),
        ),
      ];
    case "graceful": {
      const stopping = button({ class: "button small stop" }, STOPPING_LABEL, () => {});
      stopping.disabled = true;
      return [
        stopping,
        button(
          { class: "button small force-stop", title: "Signal the run's processes now (SIGTERM, then SIGKILL)" },
          "Force stop",
          () => actions.runStop(run.runId, true),
        ),
      ];
    }
    case "forced": {
      const forcing = button({ class: "button small stop" }, "Force stopping…", () => {});
      forcing.disabled = true;
      return [forcing];
    }
  }
}

/** Updates the elapsed clocks in place (a re-render every second would steal clicks and focus). */
export function tickElapsed(root: HTMLElement, runs: readonly LiveRun[], now: number): void {
  const live = new Map(runs.filter((run) => run.end === null).map((run) => [run.runId, run]));
  for (const time of root.querySelectorAll<HTMLElement>(".live-run .elapsed[data-run-id]")) {
    const run = live.get(time.getAttribute("data-run-id") ?? "");
    if (run) time.textContent = elapsedLabel(runElapsedMs(run, now));
  }
}
