import { render } from "@testing-library/svelte";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { NO_FILTERS } from "../filters";
import { row } from "../testdata";
import Filters from "./Filters.svelte";

const rows = [row("a", { agent: "writer" }), row("b", { agent: "planner" }), row("c", { agent: "writer" })];

describe("the filter bar", () => {
  it("offers the statuses and the agents of the rows, and reports changes", async () => {
    const user = userEvent.setup();
    const onchange = vi.fn();
    const { container } = render(Filters, { rows, filters: NO_FILTERS, onchange });
    const agent = container.querySelector("#filter-agent") as HTMLSelectElement;
    expect([...agent.options].map((option) => option.value)).toEqual(["all", "planner", "writer"]);
    expect([...(container.querySelector("#filter-status") as HTMLSelectElement).options].map((o) => o.value)).toContain(
      "interrupted",
    );
    await user.selectOptions(agent, "writer");
    expect(onchange).toHaveBeenLastCalledWith({ status: "all", agent: "writer", pinnedOnly: false });
    await user.click(container.querySelector("#filter-pinned")!);
    expect(onchange).toHaveBeenLastCalledWith({ status: "all", agent: "writer", pinnedOnly: true });
  });

  it("still offers All agents for an empty table, and an agent chosen that no row has any more", () => {
    const { container } = render(Filters, {
      rows: [],
      filters: { ...NO_FILTERS, agent: "gone" },
      onchange: () => {},
    });
    const agent = container.querySelector("#filter-agent") as HTMLSelectElement;
    expect([...agent.options].map((o) => o.value)).toEqual(["all", "gone"]);
    expect(agent.value).toBe("gone");
  });
});
