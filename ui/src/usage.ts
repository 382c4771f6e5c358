// What a node, a run or a session cost, as the window says it: the core reads it (the usage
// object, docs/cli.md) and these pure functions word it. An unknown cost is "–", never $0; a total
// over nodes some of which have no cost is a lower bound and says so.

import type { NodeUsage, SessionRow, Tokens, UsageTotal } from "./types";

/** Dollars: cents from $1, four decimals below (as `zstudio` prints them). */
export function dollars(cost: number): string {
  return cost >= 1 ? `$${cost.toFixed(2)}` : `$${cost.toFixed(4)}`;
}

function complete(total: UsageTotal): boolean {
  return total.cost_usd !== null && total.nodes_priced === total.nodes;
}

/** `$0.42`, `≥ $0.42` (not every node priced) or `–`: the table's cell. */
export function shortTotalLabel(total: UsageTotal | null): string {
  if (!total || total.cost_usd === null) return "–";
  return complete(total) ? dollars(total.cost_usd) : `≥ ${dollars(total.cost_usd)}`;
}

/** `$0.42`, `≥ $0.42 (2 of 3 nodes priced)` or `–`. */
export function totalLabel(total: UsageTotal | null): string {
  if (!total || total.cost_usd === null) return "–";
  if (complete(total)) return dollars(total.cost_usd);
  return `≥ ${dollars(total.cost_usd)} (${total.nodes_priced} of ${total.nodes} nodes priced)`;
}

/** A node's cost: `$0.0123`, `~$0.0123` (estimated from the price table) or `–`. */
export function nodeCostLabel(usage: NodeUsage): string {
  if (usage.cost_usd === null) return "–";
  return usage.cost_source === "estimated" ? `~${dollars(usage.cost_usd)}` : dollars(usage.cost_usd);
}

export function tokenCount(tokens: Tokens): number {
  return tokens.input + tokens.cache_read + tokens.cache_write + tokens.output;
}

/** `12,345 tokens: 10 in, 1,000 cache read, 24 cache write, 200 out (of which 50 thinking)`. */
export function tokensText(tokens: Tokens): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const thinking = tokens.reasoning === null ? "" : ` (of which ${n(tokens.reasoning)} thinking)`;
  return (
    `${n(tokenCount(tokens))} tokens: ${n(tokens.input)} in, ${n(tokens.cache_read)} cache read, ` +
    `${n(tokens.cache_write)} cache write, ${n(tokens.output)} out${thinking}`
  );
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
  lines.push(`cost ${nodeCostLabel(usage)} (${source})`);
  lines.push(usage.tokens ? tokensText(usage.tokens) : "no tokens reported");
  if (usage.models.length > 0) lines.push(`models: ${usage.models.join(", ")}`);
  if (usage.turns !== null) lines.push(`turns: ${usage.turns}`);
  if (usage.last_attempt_only) lines.push("last attempt only");
  return lines.join("\n");
}

/** Everything a total says when pointed at. */
export function totalTitle(total: UsageTotal): string {
  const priced = `${total.nodes_priced} of ${total.nodes} nodes priced, ${total.nodes_with_usage} with usage`;
  return `${totalLabel(total)}\n${tokensText(total.tokens)}\n${priced}`;
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
