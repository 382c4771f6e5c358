import { describe, expect, it } from "vitest";

import { row } from "./testdata";
import type { NodeUsage, UsageTotal } from "./types";
import { nextCostSort, nodeUsageTitle, sortByCost, totalTitle } from "./usage";

const tokens = { input: 10, cache_read: 1000, cache_write: 24, output: 200, reasoning: null };

const tokens_label = "1,234 tokens (in 10, cache read 1,000, cache write 24, out 200)";

/** A total as the core sends it, its labels written as `zstudio` prints them (the core words them:
 * crates/core/src/sessions/cost.rs). */
export function total(
  cost: number | null,
  priced: number,
  nodes: number,
  label = "–",
  short_label = label,
): UsageTotal {
  return {
    tokens,
    cost_usd: cost,
    nodes,
    nodes_with_usage: priced,
    nodes_priced: priced,
    label,
    short_label,
    tokens_label,
  };
}

export function nodeUsage(overrides: Partial<NodeUsage> = {}): NodeUsage {
  return {
    format: "claude_code",
    tokens,
    models: ["claude-sonnet-4-5"],
    turns: 3,
    duration_ms: 1200,
    cost_usd: 0.0483,
    cost_source: "reported",
    api_equivalent: true,
    last_attempt_only: false,
    cost_label: "$0.0483",
    tokens_label,
    ...overrides,
  };
}

describe("cost titles", () => {
  it("say where a node's cost came from, with the core's labels", () => {
    const title = nodeUsageTitle(nodeUsage({ last_attempt_only: true }));
    expect(title).toContain("cost $0.0483 (reported by the agent: an API-equivalent estimate, not a bill)");
    expect(title).toContain(tokens_label);
    expect(title).toContain("models: claude-sonnet-4-5");
    expect(title).toContain("last attempt only");
    const estimated = nodeUsageTitle(
      nodeUsage({ cost_source: "estimated", api_equivalent: false, cost_label: "~$0.0483" }),
    );
    expect(estimated).toContain("cost ~$0.0483 (estimated from the price table)");
    expect(nodeUsageTitle(nodeUsage({ cost_usd: null, cost_source: "unknown", cost_label: "–" }))).toContain(
      "cost – (unknown: no cost reported and no price for the model)",
    );
  });

  it("say how many nodes a total priced", () => {
    const lower = total(0.0483, 1, 3, "≥ $0.0483 (1 of 3 nodes priced)", "≥ $0.0483");
    expect(totalTitle(lower)).toBe(
      `≥ $0.0483 (1 of 3 nodes priced)\n${tokens_label}\n1 of 3 nodes priced, 1 with usage`,
    );
  });
});

describe("sorting by cost", () => {
  const rows = [
    row("a", { usage: total(0.5, 1, 1) }),
    row("b", { usage: null }),
    row("c", { usage: total(2, 1, 1) }),
    row("d", { usage: total(null, 0, 1) }),
    row("e", { usage: total(0.1, 1, 2) }),
  ];
  const ids = (sorted: readonly { id: string }[]) => sorted.map((r) => r.id);

  it("goes most expensive first, cheapest first, then back, with unknown costs last", () => {
    expect(ids(sortByCost(rows, "none"))).toEqual(["a", "b", "c", "d", "e"]);
    expect(ids(sortByCost(rows, "desc"))).toEqual(["c", "a", "e", "b", "d"]);
    expect(ids(sortByCost(rows, "asc"))).toEqual(["e", "a", "c", "b", "d"]);
    expect(nextCostSort("none")).toBe("desc");
    expect(nextCostSort("desc")).toBe("asc");
    expect(nextCostSort("asc")).toBe("none");
  });
});
