import { describe, expect, it } from "vitest";

import { agentsSeen, filterSessions, isFiltered, NO_FILTERS, tagsSeen } from "./filters";
import { row } from "./testdata";

const rows = [
  row("a", { status: "running", agent: "writer", pinned: true, tags: ["bug", "slow"] }),
  row("b", { status: "success", agent: "planner", tags: ["slow"] }),
  row("c", { status: "error", agent: "writer", tags: ["bug"] }),
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
    expect(ids(filterSessions(rows, { ...NO_FILTERS, status: "success", pinnedOnly: true }))).toEqual(["d"]);
    expect(ids(filterSessions(rows, { ...NO_FILTERS, status: "error", agent: "planner" }))).toEqual([]);
  });
});

describe("the tag filter", () => {
  it("keeps the rows holding every tag chosen", () => {
    expect(ids(filterSessions(rows, { ...NO_FILTERS, tags: ["bug"] }))).toEqual(["a", "c"]);
    expect(ids(filterSessions(rows, { ...NO_FILTERS, tags: ["bug", "slow"] }))).toEqual(["a"]);
    expect(ids(filterSessions(rows, { ...NO_FILTERS, tags: ["slow"], agent: "planner" }))).toEqual(["b"]);
    expect(ids(filterSessions(rows, { ...NO_FILTERS, tags: ["nobody"] }))).toEqual([]);
    expect(isFiltered({ ...NO_FILTERS, tags: ["bug"] })).toBe(true);
  });

  it("offers each tag of the rows once, sorted", () => {
    expect(tagsSeen(rows)).toEqual(["bug", "slow"]);
  });
});

describe("agentsSeen", () => {
  it("lists each agent once, sorted, without the unknown ones", () => {
    expect(agentsSeen(rows)).toEqual(["planner", "writer"]);
  });
});
