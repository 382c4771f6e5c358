import { render } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";

import { detailNode } from "../../fake-backend";
import { at, runRecord, span, T0 } from "../../testdata";
import type { Session } from "../../types";
import Timeline from "./Timeline.svelte";

const evil = "<img src=x onerror=alert(1)>";

const live = runRecord("r1", "s", { status: "running", started_at: at(0), ended_at: null });

describe("the Timeline", () => {
  it("draws one bar per node execution, with its status, depth and duration, names as text", () => {
    const { container } = render(Timeline, {
      runs: [live],
      spans: new Map([
        ["r1", [span(1, "run", 0, null), span(2, "plan", 0, 2_400), span(3, evil, 2_400, null, { depth: 2 })]],
      ]),
      now: T0 + 4_000,
      detail: null,
      failed: false,
    });
    const nodes = [...container.querySelectorAll(".timeline-node")];
    expect(nodes.map((node) => [node.getAttribute("data-node"), node.getAttribute("data-status")])).toEqual([
      ["plan", "success"],
      [evil, "running"],
    ]);
    expect(nodes[0]!.querySelector(".timeline-duration")?.textContent).toBe("✓ 2.4 s");
    expect(nodes[0]!.querySelector<HTMLElement>(".timeline-bar")?.style.width).toContain("60%");
    expect(nodes[1]!.querySelector<HTMLElement>(".timeline-label")?.style.paddingLeft).toBe("36px");
    expect(nodes[1]!.querySelector(".timeline-bar")?.classList.contains("running")).toBe(true);
    expect(container.querySelector(".timeline-run-bar")?.getAttribute("data-status")).toBe("running");
    expect(container.querySelector(".timeline-axis")?.getAttribute("aria-hidden")).toBe("true");
    expect(container.querySelector("img")).toBeNull();
  });

  it("puts the oldest run first and says when only the newest are shown", () => {
    const runs = Array.from({ length: 22 }, (_, i) =>
      runRecord(`r${i}`, "s", { started_at: at((21 - i) * 60_000), ended_at: at((21 - i) * 60_000 + 1_000) }),
    );
    const { container } = render(Timeline, { runs, spans: new Map(), now: T0, detail: null, failed: false });
    const shown = [...container.querySelectorAll(".timeline-run")].map((run) => run.getAttribute("data-run-id"));
    expect(shown).toHaveLength(20);
    expect(shown[0]).toBe("r19");
    expect(shown.at(-1)).toBe("r0");
    expect(container.textContent).toContain("The newest 20 of 22 runs.");
    expect(container.textContent).toContain("No spans recorded for this run yet.");
  });

  it("lists the nodes without an axis for a session without spans, and says why", () => {
    const detail = { nodes: [detailNode("plan", "success", null)] } as unknown as Session;
    const { container } = render(Timeline, { runs: [], spans: new Map(), now: T0, detail, failed: false });
    expect(container.querySelector(".timeline-node[data-node='plan']")?.getAttribute("data-status")).toBe("success");
    expect(container.querySelector("ol.untimed-nodes > li.timeline-node")).not.toBeNull();
    expect(container.textContent).toContain("not run by the studio");
    expect(container.querySelector(".timeline-axis")).toBeNull();
  });

  it("marks a node whose order is a guess, and says once what is not known", () => {
    const detail = {
      nodes: [
        { ...detailNode("plan", "success", null), order_uncertain: true },
        { ...detailNode("execute", "success", null), order_uncertain: true },
        detailNode("report", "success", null),
      ],
      not_known: "Run outside the studio: its engine records neither how a run ended",
    } as unknown as Session;
    const { container } = render(Timeline, { runs: [], spans: new Map(), now: T0, detail, failed: false });
    const marked = [...container.querySelectorAll(".timeline-node")].map(
      (node) => node.querySelector(".order-uncertain")?.textContent ?? null,
    );
    expect(marked).toEqual(["?", "?", null]);
    expect(container.querySelectorAll(".not-known")).toHaveLength(1);
    expect(container.querySelector(".not-known")?.textContent).toContain("records neither how a run ended");
  });

  it("draws the note's commands as code, and the rest of it as text, never as HTML", () => {
    const detail = {
      nodes: [detailNode("plan", "unknown", null)],
      not_known: `Run outside the studio: run it with \`zstudio run -- <command>\` or set \`${evil}\`.`,
    } as unknown as Session;
    const { container } = render(Timeline, { runs: [], spans: new Map(), now: T0, detail, failed: false });
    const note = container.querySelector(".not-known")!;
    expect([...note.querySelectorAll("code")].map((code) => code.textContent)).toEqual([
      "zstudio run -- <command>",
      evil,
    ]);
    expect(note.textContent).not.toContain("`");
    expect(note.textContent?.trim()).toBe(
      `Run outside the studio: run it with zstudio run -- <command> or set ${evil}.`,
    );
    expect(note.querySelector("img")).toBeNull();
  });

  it("says the session is being read, or could not be", () => {
    expect(
      render(Timeline, { runs: [], spans: new Map(), now: T0, detail: null, failed: false }).container.textContent,
    ).toContain("Reading…");
    expect(
      render(Timeline, { runs: [], spans: new Map(), now: T0, detail: null, failed: true }).container.textContent,
    ).toContain("could not be read");
  });
});

describe("the Timeline's usage badges", () => {
  const usage = (cost: number | null, source: "reported" | "estimated" | "unknown") => ({
    format: "codex" as const,
    tokens: { input: 1000, cache_read: 500, cache_write: 0, output: 200, reasoning: 50 },
    models: ["gpt-5"],
    turns: null,
    duration_ms: null,
    cost_usd: cost,
    cost_source: source,
    api_equivalent: false,
    last_attempt_only: false,
    cost_label: cost === null ? "–" : source === "estimated" ? `~$${cost.toFixed(4)}` : `$${cost.toFixed(4)}`,
    tokens_label: "1,700 tokens (in 1,000, cache read 500, cache write 0, out 200, of which thinking 50)",
  });
  const detail = {
    nodes: [
      { ...detailNode("plan", "success", "/p/plan"), usage: usage(0.0185, "estimated") },
      { ...detailNode("write", "success", "/p/write"), usage: usage(null, "unknown") },
      detailNode("check", "success", "/p/check"),
    ],
  } as unknown as Session;

  it("puts each node's cost on the newest run that ran it, unknown as a dash, none without usage", () => {
    const first = runRecord("r1", "s", { started_at: at(0), ended_at: at(10_000) });
    const replay = runRecord("r2", "s", { started_at: at(60_000), ended_at: at(70_000), replayed_node: "plan" });
    const spans = new Map([
      [
        "r1",
        [
          span(1, "run", 0, 10_000),
          span(2, "plan", 0, 3_000),
          span(3, "write", 3_000, 6_000),
          span(4, "check", 6_000, 10_000),
        ],
      ],
      ["r2", [span(5, "run", 60_000, 70_000, { run_id: "r2" }), span(6, "plan", 60_000, 70_000, { run_id: "r2" })]],
    ]);
    const { container } = render(Timeline, { runs: [replay, first], spans, now: T0, detail, failed: false });
    const badge = (run: string, node: string) =>
      container.querySelector(`[data-run-id='${run}'] .timeline-node[data-node='${node}'] [data-testid='usage-badge']`);
    expect(badge("r1", "plan")).toBeNull();
    expect(badge("r2", "plan")?.textContent).toBe("~$0.0185 · 1.7k tok");
    expect(badge("r2", "plan")?.getAttribute("title")).toContain("estimated from the price table");
    expect(badge("r1", "write")?.textContent).toBe("– · 1.7k tok");
    expect(badge("r1", "check")).toBeNull();
  });

  it("puts them on the nodes of a session without spans too", () => {
    const { container } = render(Timeline, { runs: [], spans: new Map(), now: T0, detail, failed: false });
    const badges = [...container.querySelectorAll("[data-testid='usage-badge']")].map((b) => b.textContent);
    expect(badges).toEqual(["~$0.0185 · 1.7k tok", "– · 1.7k tok"]);
  });
});
