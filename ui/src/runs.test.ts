import { describe, expect, it } from "vitest";

import {
  addStartedRun,
  applyRunEvent,
  dismissRun,
  nodesFromSpans,
  runElapsedMs,
  stopRequested,
  STRIP_NODES,
  type LiveRun,
} from "./runs";
import { runFinished, span } from "./testdata";
import type { RunEvent } from "./types";

function replay(events: RunEvent[], start: LiveRun[] = []): LiveRun[] {
  return events.reduce((runs, event) => applyRunEvent(runs, event, 1_000), start);
}

const started: RunEvent = { type: "run_started", run_id: "r", session_id: "s", pid: 1 };

describe("applyRunEvent", () => {
  it("follows nodes as they begin and end, the current node being the last still running", () => {
    const [run] = replay([
      started,
      { type: "node_begin", run_id: "r", node: "plan", depth: 0, t_ms: 1 },
      { type: "node_begin", run_id: "r", node: "inner", depth: 1, t_ms: 2 },
      { type: "node_end", run_id: "r", node: "inner", status: "success", t_ms: 3 },
    ]);
    expect(run!.nodes).toEqual([
      { name: "plan", status: "running" },
      { name: "inner", status: "success" },
    ]);
    expect(run!.currentNode).toBe("plan");
  });

  it("holds the last STRIP_NODES nodes of a long run and counts those gone, never a running one", () => {
    const events: RunEvent[] = [started, { type: "node_begin", run_id: "r", node: "outer", depth: 0, t_ms: 0 }];
    for (let i = 0; i < 1_000; i++) {
      events.push({ type: "node_begin", run_id: "r", node: `n${i}`, depth: 1, t_ms: i });
      events.push({ type: "node_end", run_id: "r", node: `n${i}`, status: "success", t_ms: i });
    }
    const [run] = replay(events);
    expect(run!.nodes).toHaveLength(STRIP_NODES);
    // The outer node began first and still runs: it stays, the earliest ended ones went.
    expect(run!.nodes[0]).toEqual({ name: "outer", status: "running" });
    expect(run!.nodes.slice(1).map((node) => node.name)).toEqual(
      Array.from({ length: STRIP_NODES - 1 }, (_, i) => `n${1_000 - STRIP_NODES + 1 + i}`),
    );
    expect(run!.earlier).toBe(1_000 - (STRIP_NODES - 1));
    expect(run!.currentNode).toBe("outer");
    // Its end finds it, however early it began.
    const [ended] = replay([{ type: "node_end", run_id: "r", node: "outer", status: "error", t_ms: 2_000 }], [run!]);
    expect(ended!.nodes.filter((node) => node.name === "outer")).toEqual([{ name: "outer", status: "error" }]);
    expect(ended!.currentNode).toBeNull();
  });

  it("shows what the run's budget said last, a budget reached never taken back by a warning", () => {
    const spend = {
      cost_usd: 0.45,
      tokens: 100,
      max_cost_usd: 0.5,
      max_tokens: null,
      limit: "max_cost_usd",
      label: "$0.45 of $0.50",
    };
    const [warned] = replay([started, { type: "budget_warning", run_id: "r", spend }]);
    expect(warned!.budget).toEqual({ state: "warning", label: "budget: $0.45 of $0.50 spent (80 %)" });
    const [reached] = replay([
      started,
      { type: "budget_reached", run_id: "r", spend: { ...spend, label: "$0.51 of $0.50" } },
      { type: "budget_warning", run_id: "r", spend },
    ]);
    expect(reached!.budget).toEqual({
      state: "reached",
      label: "budget reached: $0.51 of $0.50; stopping after this node",
    });
    const [unpriced] = replay([
      started,
      { type: "budget_unpriced", run_id: "r", nodes_priced: 1, nodes_with_usage: 3 },
    ]);
    expect(unpriced!.budget?.label).toBe("budget not enforced: 1 of 3 nodes priced");
    // Once the run ended, a budget reached says so without "stopping".
    const [ended] = replay([
      started,
      { type: "budget_reached", run_id: "r", spend: { ...spend, label: "$0.51 of $0.50" } },
      {
        type: "run_finished",
        run_id: "r",
        session_id: "s",
        status: "cancelled",
        exit_code: null,
        elapsed_ms: 10,
        stopped_by: "budget",
        error: null,
      },
    ]);
    expect(ended!.budget).toEqual({ state: "reached", label: "budget reached: $0.51 of $0.50" });
  });

  it("takes back a node_begin that was a title, not a node", () => {
    const [run] = replay([
      started,
      { type: "node_begin", run_id: "r", node: "banner", depth: 0, t_ms: 0 },
      { type: "node_begin", run_id: "r", node: "plan", depth: 0, t_ms: 1 },
      { type: "node_discarded", run_id: "r", node: "banner" },
    ]);
    expect(run!.nodes).toEqual([{ name: "plan", status: "running" }]);
    expect(run!.currentNode).toBe("plan");
  });

  it("lists a node that runs again twice", () => {
    const [run] = replay([
      started,
      { type: "node_begin", run_id: "r", node: "loop", depth: 0, t_ms: 1 },
      { type: "node_end", run_id: "r", node: "loop", status: "success", t_ms: 2 },
      { type: "node_begin", run_id: "r", node: "loop", depth: 0, t_ms: 3 },
    ]);
    expect(run!.nodes.map((n) => n.status)).toEqual(["success", "running"]);
  });

  it("ends the nodes still running with the run", () => {
    const [run] = replay([
      started,
      { type: "node_begin", run_id: "r", node: "write", depth: 0, t_ms: 1 },
      {
        type: "run_finished",
        run_id: "r",
        session_id: "s",
        status: "cancelled",
        exit_code: null,
        elapsed_ms: 9_000,
        stopped_by: "forced",
        error: null,
      },
    ]);
    expect(run!.nodes).toEqual([{ name: "write", status: "cancelled" }]);
    expect(run!.currentNode).toBeNull();
    expect(run!.end?.status).toBe("cancelled");
    expect(runElapsedMs(run!, 99_999)).toBe(9_000);
  });

  it("ignores events of runs it does not know", () => {
    expect(replay([{ type: "node_begin", run_id: "other", node: "x", depth: 0, t_ms: 1 }])).toEqual([]);
  });

  it("lists a run once, whether its start event or the command's answer comes first", () => {
    expect(addStartedRun(replay([started]), "r", "s", 5)).toHaveLength(1);
    expect(replay([started], addStartedRun([], "r", "s", 5))).toHaveLength(1);
  });

  it("gives back the same list when an event changes nothing, so the page is not redrawn", () => {
    const runs = stopRequested(replay([started]), "r", false);
    expect(applyRunEvent(runs, { type: "stopping", run_id: "r", forced: false, elsewhere: false }, 2)).toBe(runs);
    expect(applyRunEvent(runs, { type: "node_begin", run_id: "other", node: "x", depth: 0, t_ms: 1 }, 2)).toBe(runs);
    expect(addStartedRun(runs, "r", "s", 3)).toBe(runs);
  });

  it("never goes back from a forced stop to a graceful one", () => {
    const runs = stopRequested(replay([started]), "r", true);
    const [run] = applyRunEvent(runs, { type: "stopping", run_id: "r", forced: false, elsewhere: false }, 2);
    expect(run!.stop).toBe("forced");
    expect(stopRequested(replay([started]), "r", false)[0]!.stop).toBe("graceful");
  });

  it("counts elapsed time from when the run started until it ends", () => {
    const [run] = replay([started]);
    expect(runElapsedMs(run!, 8_500)).toBe(7_500);
    expect(dismissRun([run!], "r")).toEqual([]);
  });
});

describe("nodesFromSpans", () => {
  const ofRun = { run_id: "r" };

  it("replaces what the events told by what the record holds: nodes missed while the link was down", () => {
    // The strip saw `plan` end and `write` begin; then the link dropped.
    const before = replay([
      started,
      { type: "node_begin", run_id: "r", node: "plan", depth: 0, t_ms: 1 },
      { type: "node_end", run_id: "r", node: "plan", status: "success", t_ms: 2 },
      { type: "node_begin", run_id: "r", node: "write", depth: 0, t_ms: 3 },
    ]);
    const spans = [
      span(4, "report", 2, null, ofRun),
      span(2, "plan", 0, 1, ofRun),
      span(1, "run", 0, null, ofRun),
      span(3, "write", 1, 2, ofRun),
    ];
    const [run] = nodesFromSpans(before, "r", spans);
    expect(run!.nodes).toEqual([
      { name: "plan", status: "success" },
      { name: "write", status: "success" },
      { name: "report", status: "running" },
    ]);
    expect(run!.currentNode).toBe("report");
  });

  it("ends a node the record leaves running with a run that ended, and changes nothing twice", () => {
    const ended = replay([started, runFinished("r", "s", { status: "error", exit_code: 1 })]);
    const spans = [span(2, "plan", 0, null, ofRun)];
    const once = nodesFromSpans(ended, "r", spans);
    expect(once[0]!.nodes).toEqual([{ name: "plan", status: "error" }]);
    expect(once[0]!.currentNode).toBeNull();
    expect(nodesFromSpans(once, "r", spans)).toBe(once);
    expect(nodesFromSpans(once, "other", spans)).toBe(once);
  });
});
