// Saved views: the table's filters and search text under a name, kept in the store per workspace
// (the same views as `zstudio view` and `zstudio sessions --view`). Pure conversions between the
// table's filters and the store's; the sidebar that lists, applies and saves them is
// components/SavedViews.svelte.

import { NO_FILTERS, type SessionFilters } from "./filters";
import type { ViewFilters } from "./types";

/** What a view sets in the table: its filters and its search box. */
export interface TableView {
  filters: SessionFilters;
  search: string;
}

/** The table's filters as the store keeps them: only what narrows. */
export function toViewFilters(view: TableView): ViewFilters {
  const saved: ViewFilters = {};
  if (view.filters.status !== "all") saved.status = view.filters.status;
  if (view.filters.agent !== "all") saved.agent = view.filters.agent;
  if (view.filters.tags.length > 0) saved.tags = [...view.filters.tags];
  if (view.filters.pinnedOnly) saved.pinned = true;
  const search = view.search.trim();
  if (search !== "") saved.search = search;
  return saved;
}

/** A saved view's filters as the table's (what it does not set is "all"). */
export function fromViewFilters(saved: ViewFilters): TableView {
  return {
    filters: {
      status: saved.status ?? NO_FILTERS.status,
      agent: saved.agent ?? NO_FILTERS.agent,
      tags: saved.tags ?? [],
      pinnedOnly: saved.pinned ?? false,
    },
    search: saved.search ?? "",
  };
}

/** Whether the table shows what a saved view sets. */
export function showsView(table: TableView, saved: ViewFilters): boolean {
  const a = toViewFilters(table);
  const b = toViewFilters(fromViewFilters(saved));
  return (
    a.status === b.status &&
    a.agent === b.agent &&
    a.pinned === b.pinned &&
    a.search === b.search &&
    [...(a.tags ?? [])].sort().join("\n") === [...(b.tags ?? [])].sort().join("\n")
  );
}

/** A view's filters in words, for its tooltip: "status error · agent writer · tags bug, slow". */
export function describeView(saved: ViewFilters): string {
  const said: string[] = [];
  if (saved.status) said.push(`status ${saved.status}`);
  if (saved.agent) said.push(`agent ${saved.agent}`);
  if (saved.tags && saved.tags.length > 0)
    said.push(`${saved.tags.length === 1 ? "tag" : "tags"} ${saved.tags.join(", ")}`);
  if (saved.pinned) said.push("pinned only");
  if (saved.search) said.push(`search “${saved.search}”`);
  return said.length === 0 ? "all sessions" : said.join(" · ");
}
