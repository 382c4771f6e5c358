// The Output tab of a session with studio runs: a run picker (newest first) and the output viewer
// of the chosen run. A newer run (Continue, Re-run node) takes the place of the newest one when
// that was the one shown.

import type { Backend } from "./backend";
import { el } from "./elements";
import { createOutputView, type OutputView } from "./output";
import type { RunRecord } from "./types";

export interface RunOutputs {
  element: HTMLElement;
  /** Shows the chosen run among `runs` (newest first); `nodes` are offered by the node filter. */
  update(runs: readonly RunRecord[], nodes: readonly string[]): void;
  /** A run printed: resolves `true` when it is the run shown. */
  grew(runId: string, lines: number): boolean;
  /** Shows a run at a line (a search hit), once that run is listed. */
  showLine(runId: string, seq: number): void;
  /** Draws again where it was, after its element was moved. */
  redraw(): void;
}

/** "Nov 29, 15:27" (the runs of a session, told apart). */
function shortTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
}

export function runLabel(run: RunRecord, newest: boolean): string {
  const replay = run.replayed_node ? `replay of ${run.replayed_node} · ` : "";
  return `${replay}${run.status} · ${shortTime(run.started_at)}${newest ? " (latest)" : ""}`;
}

export function createRunOutputs(backend: Backend, onError: (error: unknown) => void): RunOutputs {
  const picker = el("select", { class: "field small", attrs: { id: "output-run", "aria-label": "Run" } });
  const pickerLabel = el("label", { class: "muted run-picker" }, "Run ", picker);
  const slot = el("div", { class: "output-slot" });
  const element = el("div", { class: "output-panel" }, slot);

  let runs: readonly RunRecord[] = [];
  let nodes: readonly string[] = [];
  let chosen: string | null = null;
  let newest: string | null = null;
  let view: OutputView | null = null;
  /** The runs the picker lists, as drawn. */
  let listed = "";
  /** A line to show once its run is drawn. */
  let pendingLine: { runId: string; seq: number } | null = null;

  picker.addEventListener("change", () => {
    chosen = picker.value;
    draw();
  });

  function draw(): void {
    if (runs.length === 0) return;
    if (chosen === null || !runs.some((run) => run.id === chosen)) chosen = runs[0]!.id;
    const listing = runs.map((run) => `${run.id} ${run.status}`).join("\n");
    if (listing !== listed) {
      picker.replaceChildren(
        ...runs.map((run, index) => el("option", { attrs: { value: run.id } }, runLabel(run, index === 0))),
      );
      listed = listing;
    }
    picker.value = chosen;
    if (view === null || view.element.getAttribute("data-run-id") !== chosen) {
      view = createOutputView({ backend, runId: chosen, nodes, onError, toolbarStart: pickerLabel });
      slot.replaceChildren(view.element);
    }
    if (pendingLine && pendingLine.runId === chosen) {
      void view.showLine(pendingLine.seq);
      pendingLine = null;
    }
  }

  return {
    element,
    update(nextRuns, nextNodes) {
      const nextNewest = nextRuns[0]?.id ?? null;
      // Reading the newest run: a newer one takes its place.
      if (chosen !== null && chosen === newest && nextNewest !== newest && pendingLine === null) chosen = nextNewest;
      runs = nextRuns;
      nodes = nextNodes;
      newest = nextNewest;
      draw();
    },
    grew(runId, lines) {
      if (view === null || chosen !== runId) return false;
      view.grew(lines);
      return true;
    },
    showLine(runId, seq) {
      chosen = runId;
      pendingLine = { runId, seq };
      if (runs.some((run) => run.id === runId)) draw();
    },
    redraw() {
      view?.redraw();
    },
  };
}
