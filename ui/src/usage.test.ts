import { describe, expect, it } from "vitest";

import { row } from "./testdata";
import type { NodeUsage, UsageTotal } from "./types";
import { nextCostSort, nodeCostLabel, nodeUsageTitle, shortTotalLabel, sortByCost, totalLabel } from "./usage";

const tokens = { input: 10, cache_read: 1000, cache_write: 24, output: 200, reasoning: null };

export function total(cost: number | null, priced: number, nodes: number): UsageTotal {
  return { tokens, cost_usd: cost, nodes, nodes_with_usage: priced, nodes_priced: priced };
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
    ...overrides,
  };
}

describe("cost labels", () => {
  it("says a total over partly priced nodes is a lower bound, and an unknown cost is a dash", () => {
    expect(totalLabel(total(1.5, 3, 3))).toBe("$1.50");
    expect(totalLabel(total(0.0483, 1, 3))).toBe("≥ $0.0483 (1 of 3 nodes priced)");
    expect(shortTotalLabel(total(0.0483, 1, 3))).toBe("≥ $0.0483");
    expect(totalLabel(total(null, 0, 3))).toBe("–");
    expect(shortTotalLabel(null)).toBe("–");
  });

  it("marks estimates and says where a node's cost came from", () => {
    expect(nodeCostLabel(nodeUsage())).toBe("$0.0483");
    expect(nodeCostLabel(nodeUsage({ cost_source: "estimated", api_equivalent: false }))).toBe("~$0.0483");
    expect(nodeCostLabel(nodeUsage({ cost_usd: null, cost_source: "unknown" }))).toBe("–");
    const title = nodeUsageTitle(nodeUsage({ last_attempt_only: true }));
    expect(title).toContain("API-equivalent estimate");
    expect(title).toContain("1,234 tokens: 10 in, 1,000 cache read, 24 cache write, 200 out");
    expect(title).toContain("last attempt only");
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
