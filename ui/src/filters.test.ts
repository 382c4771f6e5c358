import { describe, expect, it, vi } from "vitest";

import { agentsSeen, createFilterBar, filterSessions, NO_FILTERS } from "./filters";
import { row } from "./testdata";

const rows = [
  row("a", { status: "running", agent: "writer", pinned: true }),
  row("b", { status: "success", agent: "planner" }),
  row("c", { status: "error", agent: "writer" }),
  row("d", { status: "success", agent: null, pinned: true }),
];
const ids = (list: readonly { id: string }[]) => list.map((item) => item.id);

describe("filterSessions", () => {
  it("keeps every row, in order, without filters", () => {
    expect(filterSessions(rows, NO_FILTERS)).toBe(rows);
  });

  it("keeps the rows that pass every filter", () => {
    expect(ids(filterSessions(rows, { ...NO_FILTERS, status: "success" }))).toEqual(["b", "d"]);
    expect(ids(filterSessions(rows, { ...NO_FILTERS, agent: "writer" }))).toEqual(["a", "c"]);
    expect(ids(filterSessions(rows, { ...NO_FILTERS, pinnedOnly: true }))).toEqual(["a", "d"]);
    expect(ids(filterSessions(rows, { status: "success", agent: "all", pinnedOnly: true }))).toEqual(["d"]);
    expect(ids(filterSessions(rows, { status: "error", agent: "planner", pinnedOnly: false }))).toEqual([]);
  });
});

describe("agentsSeen", () => {
  it("lists each agent once, sorted, without the unknown ones", () => {
    expect(agentsSeen(rows)).toEqual(["planner", "writer"]);
  });
});

describe("the filter bar", () => {
  it("offers the statuses and the agents of the rows, and reports changes", () => {
    const onChange = vi.fn();
    const bar = createFilterBar(onChange);
    bar.update(rows, NO_FILTERS);
    const agent = bar.element.querySelector("#filter-agent") as HTMLSelectElement;
    expect([...agent.options].map((option) => option.value)).toEqual(["all", "planner", "writer"]);
    expect(
      [...(bar.element.querySelector("#filter-status") as HTMLSelectElement).options].map((o) => o.value),
    ).toContain("interrupted");
    agent.value = "writer";
    agent.dispatchEvent(new Event("change"));
    expect(onChange).toHaveBeenLastCalledWith({ status: "all", agent: "writer", pinnedOnly: false });
    const pinned = bar.element.querySelector("#filter-pinned") as HTMLInputElement;
    pinned.checked = true;
    pinned.dispatchEvent(new Event("change"));
    expect(onChange).toHaveBeenLastCalledWith({ status: "all", agent: "writer", pinnedOnly: true });
  });
});

describe("the filter bar of an empty table", () => {
  it("still offers All agents", () => {
    const bar = createFilterBar(() => {});
    bar.update([], NO_FILTERS);
    expect([...(bar.element.querySelector("#filter-agent") as HTMLSelectElement).options].map((o) => o.value)).toEqual([
      "all",
    ]);
  });
});
