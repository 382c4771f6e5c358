// What a node, a run or a session cost, as the window says it: the core reads it and words it (the
// usage object's labels, docs/cli.md: `cost_label`, `label`, `short_label`, `tokens_label`, the same
// words `zstudio` prints); these pure functions only put those labels together. An unknown cost is
// "–", never $0; a total over nodes some of which have no cost is a lower bound and says so.

import type { NodeUsage, SessionRow, Tokens, UsageTotal } from "./types";

export function tokenCount(tokens: Tokens): number {
  return tokens.input + tokens.cache_read + tokens.cache_write + tokens.output;
}

/** Everything a node's badge says when pointed at. */
export function nodeUsageTitle(usage: NodeUsage): string {
  const lines: string[] = [];
  const source =
    usage.cost_source === "reported"
      ? usage.api_equivalent
        ? "reported by the agent: an API-equivalent estimate, not a bill"
        : "reported by the agent"
      : usage.cost_source === "estimated"
        ? "estimated from the price table"
        : "unknown: no cost reported and no price for the model";
  lines.push(`cost ${usage.cost_label} (${source})`);
  lines.push(usage.tokens_label);
  if (usage.models.length > 0) lines.push(`models: ${usage.models.join(", ")}`);
  if (usage.turns !== null) lines.push(`turns: ${usage.turns}`);
  if (usage.last_attempt_only) lines.push("last attempt only");
  return lines.join("\n");
}

/** Everything a total says when pointed at. */
export function totalTitle(total: UsageTotal): string {
  const priced = `${total.nodes_priced} of ${total.nodes} nodes priced, ${total.nodes_with_usage} with usage`;
  return `${total.label}\n${total.tokens_label}\n${priced}`;
}

export type CostSort = "none" | "desc" | "asc";

/** The next order of the Cost column's header: none → most expensive first → cheapest first → none. */
export function nextCostSort(sort: CostSort): CostSort {
  return sort === "none" ? "desc" : sort === "desc" ? "asc" : "none";
}

/** The rows by cost (a stable sort: equal costs keep their order); rows without a cost last, in
 * either direction. */
export function sortByCost(rows: readonly SessionRow[], sort: CostSort): readonly SessionRow[] {
  if (sort === "none") return rows;
  const sign = sort === "desc" ? -1 : 1;
  const cost = (row: SessionRow) => row.usage?.cost_usd ?? null;
  return [...rows].sort((a, b) => {
    const x = cost(a);
    const y = cost(b);
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
    return sign * (x - y);
  });
}
