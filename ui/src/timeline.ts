// The Timeline tab's maths: each run of a session as a waterfall on its own time axis, one bar per
// span (the run, then each node execution, offset by depth), as wide as it lasted; bars still
// running grow to now. Pure; components/session/Timeline.svelte draws it.

import type { Span } from "./types";

export interface TimelineBar {
  span: Span;
  /** Where the bar starts, as a fraction of the axis. */
  left: number;
  /** How wide it is, as a fraction of the axis. */
  width: number;
  durationMs: number;
  running: boolean;
}

export interface TimelineLayout {
  /** The axis: from the first start to the last end (or now), in ms since the epoch. */
  start: number;
  end: number;
  bars: TimelineBar[];
}

/**
 * Places spans on one axis: in the order they started, a parent before its children. A span not
 * ended grows to now while its run lives (`runEnd` null), and ends at the run's end once it ended:
 * a finished run's bars never grow with the clock.
 */
export function layoutTimeline(spans: readonly Span[], now: number, runEnd: number | null = null): TimelineLayout {
  const timed = spans.map((span) => {
    const start = Date.parse(span.started_at);
    const running = span.ended_at === null && runEnd === null;
    const end = span.ended_at !== null ? Date.parse(span.ended_at) : Math.max(start, runEnd ?? now);
    return { span, start, end, running };
  });
  if (timed.length === 0) return { start: now, end: now, bars: [] };
  const start = Math.min(...timed.map((item) => item.start));
  const end = Math.max(...timed.map((item) => item.end));
  const length = Math.max(1, end - start);
  const bars = timed
    .sort((a, b) => a.start - b.start || a.span.depth - b.span.depth || a.span.id - b.span.id)
    .map(({ span, start: from, end: to, running }) => ({
      span,
      left: (from - start) / length,
      width: (to - from) / length,
      durationMs: to - from,
      running,
    }));
  return { start, end, bars };
}

const TICK_STEPS_MS = [
  100, 250, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
  3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
];

/** Offsets (ms) for the axis labels: a round step giving at most `most` ticks, from 0. */
export function axisTicks(durationMs: number, most = 8): number[] {
  const step =
    TICK_STEPS_MS.find((candidate) => Math.floor(durationMs / candidate) + 1 <= most) ?? Math.ceil(durationMs / most);
  const ticks: number[] = [];
  for (let at = 0; at <= durationMs; at += step) ticks.push(at);
  return ticks;
}

/** An axis label: "0", "500 ms", "2 s", "1.5 min", "2 h". */
export function tickLabel(ms: number): string {
  if (ms === 0) return "0";
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${ms / 1_000} s`;
  if (ms < 3_600_000) return `${ms / 60_000} min`;
  return `${ms / 3_600_000} h`;
}
