// The compare view's arithmetic: which nodes changed and the steps between them (n / p), where
// each execution sits on the one time axis both runs share, and hunks asked for later ("more")
// put after those shown. The diff itself is the core's (`runs_compare`).

import { durationLabel } from "./format";
import type { NodeDiff, NodeSide, RunDiff, TextDiff } from "./types";

/** The indexes of the nodes that are not the same. */
export function changedIndexes(nodes: readonly NodeDiff[]): number[] {
  return nodes.flatMap((node, index) => (node.change === "same" ? [] : [index]));
}

/** The changed node after (`step` 1) or before (-1) `current`; the first (last) one from none;
 * `current` itself at either end; null when nothing changed. */
export function stepChanged(changed: readonly number[], current: number | null, step: 1 | -1): number | null {
  if (changed.length === 0) return null;
  if (current === null) return step === 1 ? changed[0]! : changed[changed.length - 1]!;
  if (step === 1) return changed.find((index) => index > current) ?? current;
  return [...changed].reverse().find((index) => index < current) ?? current;
}

/** Where an execution is drawn on the shared axis, in percent of it. */
export interface Bar {
  left: number;
  width: number;
}

export interface TimeAxis {
  /** The axis's length: the longest run (or its nodes end to end, when times are unknown). */
  totalMs: number;
  a: (Bar | null)[];
  b: (Bar | null)[];
}

/** Each side's executions on one time axis: at their start where it is known, else one after
 * another in order (a log's nodes have durations only); null for a side without the node or
 * without its duration. */
export function timeAxis(diff: RunDiff): TimeAxis {
  const place = (sides: (NodeSide | null)[]): { at: number; ms: number }[] => {
    let cursor = 0;
    return sides.map((side) => {
      const ms = side?.elapsed_ms ?? 0;
      const at = side?.started_ms ?? cursor;
      if (side) cursor = at + ms;
      return { at, ms };
    });
  };
  const aSides = diff.nodes.map((node) => node.a);
  const bSides = diff.nodes.map((node) => node.b);
  const a = place(aSides);
  const b = place(bSides);
  const ends = [...a, ...b].map((p) => p.at + p.ms);
  const totalMs = Math.max(1, diff.a.elapsed_ms ?? 0, diff.b.elapsed_ms ?? 0, ...ends);
  const bars = (sides: (NodeSide | null)[], placed: { at: number; ms: number }[]) =>
    sides.map((side, i) =>
      side === null || side.elapsed_ms === null
        ? null
        : { left: (placed[i]!.at / totalMs) * 100, width: Math.max(0.5, (placed[i]!.ms / totalMs) * 100) },
    );
  return { totalMs, a: bars(aSides, a), b: bars(bSides, b) };
}

/** "+120 ms", "−1 min 05 s", "±0 ms": B's duration against A's, when both are known, worded as
 * the window words every duration (`durationLabel`). */
export function durationDelta(node: NodeDiff): string | null {
  const a = node.a?.elapsed_ms;
  const b = node.b?.elapsed_ms;
  if (a === undefined || a === null || b === undefined || b === null) return null;
  const delta = b - a;
  return delta === 0 ? "±0 ms" : `${delta > 0 ? "+" : "−"}${durationLabel(Math.abs(delta))}`;
}

/** A text diff with the hunks asked for later after those already shown. */
export function withMore(shown: TextDiff, more: TextDiff): TextDiff {
  return { changed: shown.changed || more.changed, hunks: [...shown.hunks, ...more.hunks], more: more.more };
}
