import { render } from "@testing-library/svelte";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import RunBar from "./RunBar.svelte";

const agents: { name: string; run: string[]; max_cost_usd?: number }[] = [
  { name: "writer", run: ["w"] },
  { name: "planner", run: ["p"], max_cost_usd: 0.5 },
];

function bar(
  props: Partial<{ agents: typeof agents; onrun: (a: string, p: string, max: number | null) => Promise<boolean> }> = {},
) {
  const onrun = vi.fn(props.onrun ?? (() => Promise.resolve(true)));
  const onedit = vi.fn();
  const result = render(RunBar, { agents: props.agents ?? agents, onrun, onedit });
  return { ...result, onrun, onedit };
}

describe("the Run bar", () => {
  it("runs with a budget of its own for one run, refuses one that is not a budget, shows the agent's", async () => {
    const user = userEvent.setup();
    const { container, onrun } = bar();
    const budget = container.querySelector("#run-max-cost") as HTMLInputElement;
    expect(budget.placeholder).toBe("none");
    await user.selectOptions(container.querySelector("#run-agent")!, "planner");
    expect(budget.placeholder).toBe("0.5");
    const prompt = container.querySelector("#run-prompt") as HTMLTextAreaElement;
    await user.type(budget, "-1");
    await user.type(prompt, "go{Enter}");
    expect(onrun).not.toHaveBeenCalled();
    expect(container.querySelector("#run-budget-problem")?.textContent).toContain("above 0");
    expect(document.activeElement).toBe(budget);
    await user.clear(budget);
    await user.type(budget, "$0.25{Enter}");
    expect(onrun).toHaveBeenLastCalledWith("planner", "go", 0.25);
    expect(container.querySelector("#run-budget-problem")).toBeNull();
    // For that run only: the next one has the agent's.
    expect(budget.value).toBe("");
    await user.type(prompt, "again{Enter}");
    expect(onrun).toHaveBeenLastCalledWith("planner", "again", null);
  });

  it("offers to add an agent when the workspace has none", async () => {
    const { container, onedit } = bar({ agents: [] });
    expect((container.querySelector("#run-bar .run-row") as HTMLElement).hidden).toBe(true);
    expect((container.querySelector("#run-bar .no-agents") as HTMLElement).hidden).toBe(false);
    await userEvent.click(container.querySelector("#run-agent-add")!);
    expect(onedit).toHaveBeenCalledWith(null);
  });

  it("lists the agents, runs the chosen one on Enter, keeps Shift+Enter for a new line, clears the prompt", async () => {
    const user = userEvent.setup();
    const { container, onrun } = bar();
    expect([...container.querySelectorAll("#run-agent option")].map((option) => option.textContent)).toEqual([
      "writer",
      "planner",
    ]);
    await user.selectOptions(container.querySelector("#run-agent")!, "planner");
    const prompt = container.querySelector("#run-prompt") as HTMLTextAreaElement;
    await user.type(prompt, "plan{Shift>}{Enter}{/Shift}the release");
    expect(onrun).not.toHaveBeenCalled();
    await user.type(prompt, "{Enter}");
    expect(onrun).toHaveBeenCalledWith("planner", "plan\nthe release", null);
    await vi.waitFor(() => expect(prompt.value).toBe(""));
  });

  it("does not run an empty prompt, and keeps the prompt when the run could not start", async () => {
    const user = userEvent.setup();
    const { container, onrun } = bar({ onrun: () => Promise.resolve(false) });
    await user.click(container.querySelector("#run-button")!);
    expect(onrun).not.toHaveBeenCalled();
    const prompt = container.querySelector("#run-prompt") as HTMLTextAreaElement;
    await user.type(prompt, "go{Enter}");
    expect(onrun).toHaveBeenCalledWith("writer", "go", null);
    expect(prompt.value).toBe("go");
  });

  it("keeps what is being typed when its agents change", async () => {
    const user = userEvent.setup();
    const { container, rerender } = bar();
    const prompt = container.querySelector("#run-prompt") as HTMLTextAreaElement;
    await user.type(prompt, "half a thought");
    await rerender({ agents: [...agents, { name: "third", run: ["t"] }] });
    expect(container.querySelector("#run-prompt")).toBe(prompt);
    expect(prompt.value).toBe("half a thought");
  });

  it("shows why a run could not start, and a broken agents file above the last good agents", () => {
    const { container } = render(RunBar, {
      agents,
      error: { code: "agent_not_found", message: "no agent `x`" },
      agentsError: { code: "agents_file", message: "line 3: expected `=`" },
      onrun: () => Promise.resolve(true),
      onedit: () => {},
    });
    expect(container.querySelector("#run-bar .run-error-slot .error")?.getAttribute("data-error-code")).toBe(
      "agent_not_found",
    );
    expect(container.querySelector("#run-bar [data-error-code='agents_file'] .error-message")?.textContent).toBe(
      "line 3: expected `=`",
    );
    expect(container.querySelectorAll("#run-agent option")).toHaveLength(2);
  });
});
