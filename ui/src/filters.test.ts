import { describe, expect, it } from "vitest";

import { agentsSeen, filterSessions, NO_FILTERS } from "./filters";
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
