import { describe, expect, it } from "vitest";

import { changedIndexes, durationDelta, stepChanged, timeAxis, withMore } from "./compare";
import type { NodeDiff, RunDiff, TextDiff } from "./types";

const NONE: TextDiff = { changed: false, hunks: [], more: false };

function node(
  name: string,
  change: NodeDiff["change"],
  a: [number | null, number | null] | null,
  b: [number | null, number | null] | null,
): NodeDiff {
  const side = (s: [number | null, number | null] | null) =>
    s === null ? null : { status: "success" as const, started_ms: s[0], elapsed_ms: s[1], usage: null };
  return {
    name,
    occurrence: 0,
    change,
    a: side(a),
    b: side(b),
    output: NONE,
    prompt: null,
    result: null,
    cost_change: null,
  };
}

function diff(nodes: NodeDiff[], aMs: number | null = null, bMs: number | null = null): RunDiff {
  const summary = (ms: number | null) => ({
    session_id: null,
    run_id: null,
    status: "success" as const,
    elapsed_ms: ms,
    usage: null,
  });
  return { a: summary(aMs), b: summary(bMs), nodes, output: NONE, cost_change: null };
}

describe("the compare view's steps and axis", () => {
  it("steps between changed nodes only, staying put at either end", () => {
    const nodes = [
      node("a", "same", null, null),
      node("b", "changed", null, null),
      node("c", "same", null, null),
      node("d", "added", null, null),
    ];
    const changed = changedIndexes(nodes);
    expect(changed).toEqual([1, 3]);
    expect(stepChanged(changed, null, 1)).toBe(1);
    expect(stepChanged(changed, null, -1)).toBe(3);
    expect(stepChanged(changed, 1, 1)).toBe(3);
    expect(stepChanged(changed, 3, 1)).toBe(3);
    expect(stepChanged(changed, 2, -1)).toBe(1);
    expect(stepChanged([], 0, 1)).toBeNull();
  });

  it("draws both runs on one axis, known starts where they are, else one after another", () => {
    const axis = timeAxis(
      diff(
        [
          node("plan", "same", [0, 100], [0, 300]),
          node("act", "removed", [100, 100], null),
          node("log", "added", null, [null, 100]),
        ],
        200,
        400,
      ),
    );
    expect(axis.totalMs).toBe(400);
    expect(axis.a).toEqual([{ left: 0, width: 25 }, { left: 25, width: 25 }, null]);
    // B's "log" node has no start: it goes after B's last one (300 ms).
    expect(axis.b).toEqual([{ left: 0, width: 75 }, null, { left: 75, width: 25 }]);
  });

  it("says the difference of the durations and puts later hunks after the first", () => {
    expect(durationDelta(node("x", "same", [0, 100], [0, 140]))).toBe("+40 ms");
    expect(durationDelta(node("x", "same", [0, 100], [0, 60]))).toBe("−40 ms");
    expect(durationDelta(node("x", "same", [0, 1_000], [0, 66_000]))).toBe("+1 min 05 s");
    expect(durationDelta(node("x", "added", null, [0, 60]))).toBeNull();
    const hunk = (n: number) => ({ a_start: n, a_lines: 1, b_start: n, b_lines: 1, lines: [], lines_cut: 0 });
    const merged = withMore(
      { changed: true, hunks: [hunk(1)], more: true },
      { changed: true, hunks: [hunk(9)], more: false },
    );
    expect(merged.hunks.map((h) => h.a_start)).toEqual([1, 9]);
    expect(merged.more).toBe(false);
  });
});
