// Which sessions the table shows: by status, by agent, by tags, pinned only. Pure functions; the
// filter bar that sets them is components/Filters.svelte.

import type { SessionRow, Status } from "./types";

export interface SessionFilters {
  status: Status | "all";
  /** An agent's name, or `"all"`. */
  agent: string;
  /** Only the sessions holding every one of these tags (none: any). */
  tags: readonly string[];
  pinnedOnly: boolean;
}

export const NO_FILTERS: SessionFilters = Object.freeze({ status: "all", agent: "all", tags: [], pinnedOnly: false });

export const STATUSES: readonly Status[] = ["running", "success", "error", "cancelled", "interrupted", "unknown"];

export function isFiltered(filters: SessionFilters): boolean {
  return filters.status !== "all" || filters.agent !== "all" || filters.tags.length > 0 || filters.pinnedOnly;
}

/** The rows that pass every filter, in the order given (pinned first, then most recent). */
export function filterSessions(rows: readonly SessionRow[], filters: SessionFilters): readonly SessionRow[] {
  if (!isFiltered(filters)) return rows;
  return rows.filter(
    (row) =>
      (filters.status === "all" || row.status === filters.status) &&
      (filters.agent === "all" || row.agent === filters.agent) &&
      filters.tags.every((tag) => row.tags.includes(tag)) &&
      (!filters.pinnedOnly || row.pinned),
  );
}

/** The agents of the rows, sorted, each once. */
export function agentsSeen(rows: readonly SessionRow[]): string[] {
  const names = new Set<string>();
  for (const row of rows) if (row.agent) names.add(row.agent);
  return [...names].sort((a, b) => a.localeCompare(b));
}

/** The tags of the rows, sorted, each once. */
export function tagsSeen(rows: readonly SessionRow[]): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const tag of row.tags) names.add(tag);
  return [...names].sort((a, b) => a.localeCompare(b));
}
