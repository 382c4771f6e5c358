import { describe, expect, it } from "vitest";

import { span, T0 } from "./testdata";
import { axisTicks, layoutTimeline, tickLabel } from "./timeline";

describe("layoutTimeline", () => {
  it("places each span on one axis by when it started and how long it lasted", () => {
    const layout = layoutTimeline(
      [span(3, "write", 2_000, 4_000), span(1, "run", 0, 4_000), span(2, "plan", 0, 2_000)],
      T0 + 10_000,
    );
    expect(layout.bars.map((bar) => [bar.span.name, bar.left, bar.width, bar.durationMs])).toEqual([
      ["run", 0, 1, 4_000],
      ["plan", 0, 0.5, 2_000],
      ["write", 0.5, 0.5, 2_000],
    ]);
  });

  it("ends the spans of a run that ended at its end, however late it is drawn", () => {
    // Spans read while the run was live (no ends yet), drawn an hour later.
    const spans = [span(1, "run", 0, null), span(2, "plan", 1_000, 2_000), span(3, "write", 2_000, null)];
    const layout = layoutTimeline(spans, T0 + 3_600_000, T0 + 6_600);
    expect(layout.end - layout.start).toBe(6_600);
    const run = layout.bars.find((bar) => bar.span.name === "run")!;
    expect([run.durationMs, run.running]).toEqual([6_600, false]);
  });

  it("grows a span still running to now", () => {
    const layout = layoutTimeline(
      [span(1, "run", 0, null), span(2, "plan", 1_000, 2_000), span(3, "write", 2_000, null)],
      T0 + 8_000,
    );
    expect(layout.end - layout.start).toBe(8_000);
    const write = layout.bars.find((bar) => bar.span.name === "write")!;
    expect(write.running).toBe(true);
    expect(write.durationMs).toBe(6_000);
    expect(write.left + write.width).toBe(1);
  });
});

describe("axisTicks", () => {
  it("picks a round step with at most 8 ticks", () => {
    expect(axisTicks(4_000)).toEqual([0, 1_000, 2_000, 3_000, 4_000]);
    expect(axisTicks(9_000)).toEqual([0, 2_000, 4_000, 6_000, 8_000]);
    expect(axisTicks(600)).toEqual([0, 100, 200, 300, 400, 500, 600]);
    expect(axisTicks(25 * 60_000)).toHaveLength(6);
  });

  it("labels the ticks in the unit that reads best", () => {
    expect([0, 500, 2_000, 90_000, 7_200_000].map((ms) => tickLabel(ms))).toEqual([
      "0",
      "500 ms",
      "2 s",
      "1.5 min",
      "2 h",
    ]);
  });
});
