// Which sessions the table shows: by status, by agent, pinned only. Pure functions and the filter
// bar that sets them.

import { el } from "./elements";
import type { SessionRow, Status } from "./types";

export interface SessionFilters {
  status: Status | "all";
  /** An agent's name, or `"all"`. */
  agent: string;
  pinnedOnly: boolean;
}

export const NO_FILTERS: SessionFilters = Object.freeze({ status: "all", agent: "all", pinnedOnly: false });

export const STATUSES: readonly Status[] = ["running", "success", "error", "cancelled", "interrupted", "unknown"];

export function isFiltered(filters: SessionFilters): boolean {
  return filters.status !== "all" || filters.agent !== "all" || filters.pinnedOnly;
}

/** The rows that pass every filter, in the order given (pinned first, then most recent). */
export function filterSessions(rows: readonly SessionRow[], filters: SessionFilters): readonly SessionRow[] {
  if (!isFiltered(filters)) return rows;
  return rows.filter(
    (row) =>
      (filters.status === "all" || row.status === filters.status) &&
      (filters.agent === "all" || row.agent === filters.agent) &&
      (!filters.pinnedOnly || row.pinned),
  );
}

/** The agents of the rows, sorted, each once. */
export function agentsSeen(rows: readonly SessionRow[]): string[] {
  const names = new Set<string>();
  for (const row of rows) if (row.agent) names.add(row.agent);
  return [...names].sort((a, b) => a.localeCompare(b));
}

export interface FilterBar {
  element: HTMLElement;
  update(rows: readonly SessionRow[], filters: SessionFilters): void;
}

/** The status and agent selects and the "Pinned only" box; `onChange` gets the new filters. */
export function createFilterBar(onChange: (filters: SessionFilters) => void): FilterBar {
  const status = el(
    "select",
    { class: "field small", attrs: { id: "filter-status", "aria-label": "Status" } },
    el("option", { attrs: { value: "all" } }, "All statuses"),
    ...STATUSES.map((name) => el("option", { attrs: { value: name } }, name)),
  );
  const agent = el("select", { class: "field small", attrs: { id: "filter-agent", "aria-label": "Agent" } });
  const pinned = el("input", { attrs: { id: "filter-pinned", type: "checkbox" } });
  const element = el(
    "div",
    { class: "filters", attrs: { role: "group", "aria-label": "Filters" } },
    status,
    agent,
    el("label", { class: "check", attrs: { for: "filter-pinned" } }, pinned, "Pinned only"),
  );
  let agentsDrawn: string | null = null;
  const changed = () =>
    onChange({ status: status.value as SessionFilters["status"], agent: agent.value, pinnedOnly: pinned.checked });
  status.addEventListener("change", changed);
  agent.addEventListener("change", changed);
  pinned.addEventListener("change", changed);

  return {
    element,
    update(rows, filters) {
      const names = agentsSeen(rows);
      // An agent chosen stays offered even when no row has it any more.
      if (filters.agent !== "all" && !names.includes(filters.agent)) names.push(filters.agent);
      if (names.join("\n") !== agentsDrawn) {
        agent.replaceChildren(
          el("option", { attrs: { value: "all" } }, "All agents"),
          ...names.map((name) => el("option", { attrs: { value: name } }, name)),
        );
        agentsDrawn = names.join("\n");
      }
      status.value = filters.status;
      agent.value = filters.agent;
      pinned.checked = filters.pinnedOnly;
    },
  };
}
