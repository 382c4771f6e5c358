import { render } from "@testing-library/svelte";
import { describe, expect, it, vi } from "vitest";

import type { LiveRun } from "../runs";
import { STOPPING_LABEL } from "../sessions";
import LiveRuns from "./LiveRuns.svelte";

const now = new Date("2026-11-29T12:00:00Z").getTime();

function liveRun(overrides: Partial<LiveRun> = {}): LiveRun {
  return {
    runId: "r1",
    sessionId: "1795952464415_3prb",
    startedAt: now - 7_000,
    nodes: [
      { name: "plan", status: "success" },
      { name: "write", status: "running" },
    ],
    earlier: 0,
    currentNode: "write",
    stop: "none",
    stopError: null,
    budget: null,
    end: null,
    ...overrides,
  };
}

const ended = {
  status: "cancelled" as const,
  elapsedMs: 4_200,
  exitCode: 0,
  stoppedBy: "graceful" as const,
  error: null,
};

function strip(runs: LiveRun[]) {
  const onstop = vi.fn();
  const ondismiss = vi.fn();
  const result = render(LiveRuns, { runs, now, onstop, ondismiss });
  return { ...result, onstop, ondismiss };
}

describe("the Live runs strip", () => {
  it("is not there without runs", () => {
    const { container } = strip([]);
    expect(container.querySelector(".live-runs")).toBeNull();
  });

  it("shows what the run's budget said, as text, and nothing without a budget", () => {
    const label = "budget reached: $0.51 of $0.50; stopping after this node";
    const { container } = strip([liveRun({ budget: { state: "reached", label } }), liveRun({ runId: "r2" })]);
    const badge = container.querySelector(".live-run[data-run-id='r1'] .budget-badge");
    expect(badge?.getAttribute("data-budget")).toBe("reached");
    expect(badge?.textContent).toBe(label);
    expect(container.querySelector(".live-run[data-run-id='r2'] .budget-badge")).toBeNull();
  });

  it("says how many earlier nodes a long run's strip no longer shows, and nothing when none", () => {
    const { container } = strip([liveRun({ earlier: 79_951 }), liveRun({ runId: "r2" })]);
    const earlier = container.querySelector(".live-run[data-run-id='r1'] .earlier-nodes");
    expect(earlier?.textContent).toBe("79,951 earlier");
    expect(earlier?.nextElementSibling?.getAttribute("data-node")).toBe("plan");
    expect(container.querySelector(".live-run[data-run-id='r2'] .earlier-nodes")).toBeNull();
  });

  it("shows each run's session, current node, node badges and elapsed time, in a list of items", () => {
    const { container } = strip([liveRun()]);
    const run = container.querySelector(".live-run[data-run-id='r1']")!;
    expect(container.querySelector(".live-runs h1")?.textContent).toBe("Live runs");
    expect(run.querySelector(".live-session-id")?.textContent).toBe("1795952464415_3prb");
    expect(run.querySelector(".live-current-node")?.textContent?.trim()).toBe("▸ write");
    const badges = [...run.querySelectorAll(".live-nodes .node")];
    expect(badges.map((node) => [node.getAttribute("data-node"), node.getAttribute("data-status")])).toEqual([
      ["plan", "success"],
      ["write", "running"],
    ]);
    expect(run.querySelector(".elapsed")?.textContent).toBe("0:07");
    for (const child of container.querySelector("ul")!.children) expect(child.tagName).toBe("LI");
  });

  it("turns Stop into a waiting label in its place and offers Force stop beside it", async () => {
    const { container, onstop, rerender } = strip([liveRun()]);
    const stop = container.querySelector(".live-run .stop") as HTMLButtonElement;
    stop.click();
    expect(onstop).toHaveBeenCalledWith("r1", false);

    await rerender({ runs: [liveRun({ stop: "graceful" })] });
    expect(container.querySelector(".live-run .stop")).toBe(stop);
    expect(stop.textContent).toBe(STOPPING_LABEL);
    expect(stop.disabled).toBe(true);
    (container.querySelector(".live-run .force-stop") as HTMLButtonElement).click();
    expect(onstop).toHaveBeenLastCalledWith("r1", true);
  });

  it("keeps an ended run's Stop where it was, disabled, and puts Dismiss at the other end", async () => {
    const { container, onstop, ondismiss, rerender } = strip([liveRun()]);
    const stop = container.querySelector(".live-run .stop") as HTMLButtonElement;
    expect(container.querySelector(".dismiss")).toBeNull();
    await rerender({ runs: [liveRun({ end: ended, currentNode: null })] });
    const run = container.querySelector(".live-run")!;
    expect(run.getAttribute("data-status")).toBe("cancelled");
    expect(run.querySelector(".badge")?.textContent).toBe("cancelled");
    expect(run.querySelector(".elapsed")?.textContent).toBe("0:04");
    // The same button, in the same place, doing nothing: a click meant for Stop stops nothing else.
    expect(run.querySelector(".stop")).toBe(stop);
    expect(stop.disabled).toBe(true);
    expect(stop.textContent).toBe("Stopped");
    stop.click();
    expect(onstop).not.toHaveBeenCalled();
    expect(stop.parentElement?.querySelector(".dismiss, .force-stop")).toBeNull();
    (run.querySelector(".dismiss") as HTMLButtonElement).click();
    expect(ondismiss).toHaveBeenCalledWith("r1");
  });

  it("takes Stop's tooltip away once it cannot stop", async () => {
    const { container, rerender } = strip([liveRun()]);
    const stop = container.querySelector(".live-run .stop")!;
    const tip = document.getElementById(stop.getAttribute("aria-describedby")!)!;
    expect(tip.textContent).toBe("Stop after the current node (S)");
    await rerender({ runs: [liveRun({ end: ended, currentNode: null })] });
    expect(stop.hasAttribute("aria-describedby")).toBe(false);
    await rerender({ runs: [] });
    expect(document.querySelectorAll(".tooltip")).toHaveLength(0);
  });

  it("renders run strings as text", () => {
    const evil = "<img src=x onerror=alert(1)>";
    const end = { status: "error" as const, elapsedMs: 1, exitCode: 1, stoppedBy: null, error: evil };
    const { container } = strip([
      liveRun({ sessionId: evil, nodes: [{ name: evil, status: "error" }], currentNode: null, end }),
    ]);
    expect(container.querySelector("img")).toBeNull();
    expect(container.querySelector(".live-session-id")?.textContent).toBe(evil);
    expect(container.querySelector(".live-run-error")?.textContent).toBe(evil);
    expect(container.querySelector(".live-current-node")?.textContent?.trim()).toBe("exited with 1");
  });
});
