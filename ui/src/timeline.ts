// The Timeline tab: each run of a session as a waterfall on its own time axis, one bar per span
// (the run, then each node execution, offset by depth), as wide as it lasted; bars still running
// grow to now. Sessions without a studio run have no spans: their nodes are listed without an axis.

import { badge, el } from "./elements";
import { durationLabel, exactTime, statusMark } from "./format";
import type { RunRecord, SessionNode, Span } from "./types";

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

function tickLabel(ms: number): string {
  if (ms === 0) return "0";
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${ms / 1_000} s`;
  if (ms < 3_600_000) return `${ms / 60_000} min`;
  return `${ms / 3_600_000} h`;
}

export interface RunSpans {
  run: RunRecord;
  spans: Span[];
}

/** The waterfall of each run (oldest first: the session's story). */
export function timelineView(runs: readonly RunSpans[], now: number): HTMLElement {
  const ordered = [...runs].sort((a, b) => Date.parse(a.run.started_at) - Date.parse(b.run.started_at));
  return el("div", { class: "timeline" }, ...ordered.map((item) => runWaterfall(item, now)));
}

function runWaterfall({ run, spans }: RunSpans, now: number): HTMLElement {
  const layout = layoutTimeline(spans, now, run.ended_at === null ? null : Date.parse(run.ended_at));
  const length = Math.max(1, layout.end - layout.start);
  const ticks = axisTicks(length);
  const head = el(
    "div",
    { class: "timeline-run-head" },
    badge(run.status),
    el("code", { class: "timeline-run-id" }, run.id),
    run.replayed_node && el("span", { class: "muted" }, "replay of ", el("code", {}, run.replayed_node)),
    el("time", { class: "muted", attrs: { datetime: run.started_at } }, exactTime(new Date(run.started_at))),
  );
  if (layout.bars.length === 0) {
    return el(
      "section",
      { class: "timeline-run" },
      head,
      el("p", { class: "muted timeline-note" }, "No spans recorded for this run yet."),
    );
  }
  const axis = el(
    "div",
    { class: "timeline-axis", attrs: { "aria-hidden": "true" } },
    el("div", { class: "timeline-label" }),
    el(
      "div",
      { class: "timeline-track" },
      ...ticks.map((tick) => {
        const mark = el("span", { class: "timeline-tick" }, tickLabel(tick));
        mark.style.left = `${(tick / length) * 100}%`;
        return mark;
      }),
    ),
  );
  const rows = layout.bars.map((bar) => barRow(bar));
  return el("section", { class: "timeline-run", attrs: { "data-run-id": run.id } }, head, axis, ...rows);
}

function barRow(bar: TimelineBar): HTMLElement {
  const { span } = bar;
  const duration = durationLabel(bar.durationMs);
  const label = el(
    "div",
    { class: "timeline-label", title: span.name },
    el("span", { class: "timeline-name" }, span.kind === "run" ? "run" : span.name),
  );
  label.style.paddingLeft = `${8 + span.depth * 14}px`;
  const fill = el("div", {
    class: `timeline-bar status-${span.status}${bar.running ? " running" : ""}`,
    title: `${span.name}: ${span.status}, ${duration}${bar.running ? " so far" : ""}`,
  });
  fill.style.left = `${bar.left * 100}%`;
  fill.style.width = `${bar.width * 100}%`; // at least 3 px wide (style.css)
  const time = el("span", { class: "timeline-duration" }, `${statusMark(span.status)} ${duration}`);
  // The duration sits after the bar, or inside its end when the bar reaches the right edge.
  if (bar.left + bar.width > 0.8) {
    time.classList.add("inside");
    time.style.right = `${(1 - bar.left - bar.width) * 100}%`;
  } else {
    time.style.left = `calc(${(bar.left + bar.width) * 100}% + 6px)`;
  }
  return el(
    "div",
    {
      class: span.kind === "run" ? "timeline-row timeline-run-bar" : "timeline-row timeline-node",
      attrs:
        span.kind === "run" ? { "data-status": span.status } : { "data-node": span.name, "data-status": span.status },
    },
    label,
    el("div", { class: "timeline-track" }, fill, time),
  );
}

/** A session the studio did not run: its nodes as its folder records them, without times. */
export function nodesWithoutTimes(nodes: readonly SessionNode[]): HTMLElement {
  return el(
    "div",
    { class: "timeline timeline-untimed" },
    el(
      "p",
      { class: "muted timeline-note" },
      "No time axis: this session was not run by the studio, so no spans were traced. Its nodes, as its folder records them:",
    ),
    nodes.length === 0
      ? el("p", { class: "muted timeline-note" }, "The folder records no nodes.")
      : el(
          "ol",
          { class: "untimed-nodes" },
          ...nodes.map((node) =>
            el(
              "li",
              { class: "timeline-node", attrs: { "data-node": node.name, "data-status": node.status } },
              badge(node.status),
              el("code", {}, node.name),
            ),
          ),
        ),
  );
}
