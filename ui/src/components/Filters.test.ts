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
    expect(onchange).toHaveBeenLastCalledWith({ ...NO_FILTERS, agent: "writer" });
    await user.click(container.querySelector("#filter-pinned")!);
    expect(onchange).toHaveBeenLastCalledWith({ ...NO_FILTERS, agent: "writer", pinnedOnly: true });
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

  it("adds a tag chosen to the filter as a chip, and its × takes it out", async () => {
    const user = userEvent.setup();
    const onchange = vi.fn();
    const tagged = [row("a", { tags: ["bug", "slow"] }), row("b", { tags: ["<b>x</b>"] })];
    const { container, rerender } = render(Filters, { rows: tagged, filters: NO_FILTERS, onchange });
    const tag = container.querySelector("#filter-tag") as HTMLSelectElement;
    expect([...tag.options].map((o) => o.value)).toEqual(["", "<b>x</b>", "bug", "slow"]);
    await user.selectOptions(tag, "bug");
    expect(onchange).toHaveBeenLastCalledWith({ ...NO_FILTERS, tags: ["bug"] });
    await rerender({ rows: tagged, filters: { ...NO_FILTERS, tags: ["bug", "<b>x</b>"] }, onchange });
    // The chosen tags are chips, as text; the list offers only the others.
    const chips = [...container.querySelectorAll(".filter-tag")];
    expect(chips.map((chip) => chip.textContent?.replace("×", ""))).toEqual(["bug", "<b>x</b>"]);
    expect(container.querySelector(".filter-tag b")).toBeNull();
    expect([...(container.querySelector("#filter-tag") as HTMLSelectElement).options].map((o) => o.value)).toEqual([
      "",
      "slow",
    ]);
    // By keyboard: Tab to the chip's ×, Enter.
    const remove = container.querySelector('[aria-label="Stop filtering by the tag bug"]') as HTMLButtonElement;
    remove.focus();
    await user.keyboard("{Enter}");
    expect(onchange).toHaveBeenLastCalledWith({ ...NO_FILTERS, tags: ["<b>x</b>"] });
  });

  it("offers no tag list when no session has a tag", () => {
    const { container } = render(Filters, { rows, filters: NO_FILTERS, onchange: () => {} });
    expect(container.querySelector("#filter-tag")).toBeNull();
  });
});
