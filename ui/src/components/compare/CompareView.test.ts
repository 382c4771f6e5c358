import { render, waitFor } from "@testing-library/svelte";
import axe from "axe-core";
import { flushSync } from "svelte";
import { describe, expect, it, vi } from "vitest";

import { fakeBackend, refusal } from "../../fake-backend";
import type { NodeDiff, RunDiff, TextDiff } from "../../types";
import { EVIL } from "../session/testing";
import CompareView from "./CompareView.svelte";

const NONE: TextDiff = { changed: false, hunks: [], more: false };

function output(removed: string, added: string, more = false): TextDiff {
  return {
    changed: true,
    more,
    hunks: [
      {
        a_start: 3,
        a_lines: 2,
        b_start: 3,
        b_lines: 2,
        lines_cut: 0,
        lines: [
          { op: " ", text: "context" },
          {
            op: "-",
            text: removed,
            words: [
              { changed: false, text: "status " },
              { changed: true, text: removed.split(" ")[1] ?? "" },
            ],
          },
          { op: "+", text: added },
        ],
      },
    ],
  };
}

function node(name: string, change: NodeDiff["change"], extra: Partial<NodeDiff> = {}): NodeDiff {
  const side = { status: "success" as const, elapsed_ms: 100, started_ms: 0, usage: null };
  return {
    name,
    occurrence: 0,
    change,
    a: change === "added" ? null : side,
    b: change === "removed" ? null : { ...side, elapsed_ms: 160 },
    output: NONE,
    prompt: null,
    result: null,
    cost_change: null,
    ...extra,
  };
}

function diff(): RunDiff {
  const summary = (session: string) => ({
    session_id: session,
    run_id: `${session}-run`,
    status: "success" as const,
    elapsed_ms: 1000,
    usage: null,
  });
  return {
    a: summary("s-a"),
    b: { ...summary("s-b"), status: "error" },
    nodes: [
      node("plan", "same"),
      node("write", "changed", {
        output: output("status ok", `status ${EVIL}`, true),
        result: {
          changed: true,
          more: false,
          hunks: [],
          paths: [{ path: "/ok", change: "changed", a: true, b: false }],
        },
      }),
      node("review", "same"),
      node("publish", "added", { output: output("x y", "+ publish") }),
    ],
    output: NONE,
    cost_change: null,
  };
}

function view(answer: () => RunDiff = diff) {
  const backend = fakeBackend();
  backend.compare = vi.fn(answer);
  const onclose = vi.fn();
  const result = render(CompareView, { backend, a: "s-a", b: "s-b", onclose });
  return { ...result, backend, onclose };
}

const selectedName = (container: HTMLElement) =>
  container.querySelector("[role='option'][aria-selected='true'] .compare-node-name")?.textContent;

describe("the compare view", () => {
  it("lists the nodes with what changed and opens on the first changed one, its output as text", async () => {
    const { container, backend } = view();
    await waitFor(() => expect(container.querySelectorAll("[role='option']")).toHaveLength(4));
    expect(backend.calls).toEqual(["runsCompare(s-a, s-b)"]);
    expect(container.querySelector("#compare-count")?.textContent).toContain("2 of 4 nodes differ");
    expect([...container.querySelectorAll(".compare-change")].map((e) => e.textContent)).toEqual([
      "same",
      "changed",
      "same",
      "added",
    ]);
    expect(selectedName(container)).toBe("write");
    const lines = [...container.querySelectorAll(".diff-line")].map((line) => line.textContent);
    expect(lines).toEqual([" context", "−removed: status ok", `+added: status ${EVIL}`]);
    // Agent output is text: the markup in it is not an element.
    expect(container.querySelector(".diff-lines img")).toBeNull();
    expect(container.querySelector(".diff-line.removed mark")?.textContent).toBe("ok");
    expect(container.querySelector(".compare-sides")?.textContent).toContain("+60 ms");
    expect(container.querySelector(".compare-paths tbody")?.textContent).toContain("/ok");
    // Both durations on one axis: a bar per side.
    expect(container.querySelectorAll("#compare-node-1 .compare-bar")).toHaveLength(2);
    expect(container.querySelectorAll("#compare-node-3 .compare-bar")).toHaveLength(1);
  });

  it("goes to the next and previous changed node with n and p, and through all with the arrows", async () => {
    const { container } = view();
    await waitFor(() => expect(selectedName(container)).toBe("write"));
    const section = container.querySelector("#compare-view")!;
    const press = (key: string, target: Element = section) => {
      const event = new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true });
      target.dispatchEvent(event);
      flushSync();
      return event;
    };
    const window = vi.fn();
    document.addEventListener("keydown", window);
    expect(press("n").defaultPrevented).toBe(true);
    expect(selectedName(container)).toBe("publish");
    press("n");
    expect(selectedName(container)).toBe("publish");
    press("p");
    expect(selectedName(container)).toBe("write");
    const list = container.querySelector("[role='listbox']")!;
    press("ArrowDown", list);
    expect(selectedName(container)).toBe("review");
    expect(list.getAttribute("aria-activedescendant")).toBe("compare-node-2");
    press("Home", list);
    expect(selectedName(container)).toBe("plan");
    // The window's keys (P pins) never saw them.
    expect(window).not.toHaveBeenCalled();
    document.removeEventListener("keydown", window);
  });

  it("asks for more hunks of one node and puts them after those shown", async () => {
    const { container, backend } = view();
    await waitFor(() => expect(container.querySelector("#compare-more")).not.toBeNull());
    backend.compare = vi.fn(() => ({
      ...diff(),
      nodes: [node("write", "changed", { output: output("b later", "b LATER") })],
    }));
    (container.querySelector("#compare-more") as HTMLButtonElement).click();
    await waitFor(() => expect(container.querySelectorAll(".diff-hunk")).toHaveLength(2));
    expect(backend.calls.at(-1)).toBe("runsCompare(s-a, s-b, write#0 from 1)");
    expect(container.querySelector("#compare-more")).toBeNull();
  });

  it("says why two runs could not be compared, and closes", async () => {
    const { container, onclose } = view(() => {
      throw refusal("session_not_found", "no session `s-b`");
    });
    await waitFor(() => expect(container.textContent).toContain("no session `s-b`"));
    (container.querySelector("#compare-close") as HTMLButtonElement).click();
    expect(onclose).toHaveBeenCalled();
  });
});

describe("the compare view's costs", () => {
  // As the core words them (crates/core/src/sessions/cost.rs), for the fixtures of
  // tests/fixtures/usage compared: `zstudio diff` prints the same.
  const tokens = { input: 12, cache_read: 27520, cache_write: 5420, output: 258, reasoning: null };
  const usage = (cost: number, cost_label: string) => ({
    format: "claude_code" as const,
    tokens,
    models: ["claude-sonnet-4-5"],
    turns: 4,
    duration_ms: 18342,
    cost_usd: cost,
    cost_source: "reported" as const,
    api_equivalent: true,
    last_attempt_only: false,
    cost_label,
    tokens_label: "33,210 tokens (in 12, cache read 27,520, cache write 5,420, out 258)",
  });
  const total = (label: string) => ({
    tokens,
    cost_usd: 0.0483,
    nodes: 2,
    nodes_with_usage: 1,
    nodes_priced: 1,
    label,
    short_label: "≥ $0.0483",
    tokens_label: "33,210 tokens (in 12, cache read 27,520, cache write 5,420, out 258)",
  });

  it("gives each run's total, each side's node cost and what B cost more or less", async () => {
    const { container } = view(() => {
      const value = diff();
      value.a.usage = total("≥ $0.0483 (1 of 2 nodes priced)");
      value.b.usage = total("≥ $0.0123 (1 of 2 nodes priced)");
      value.cost_change = "−31,147 tokens";
      const write = value.nodes[1]!;
      value.nodes[1] = {
        ...write,
        a: { ...write.a!, usage: usage(0.0483, "$0.0483") },
        b: { ...write.b!, usage: usage(0.0123, "$0.0123") },
        cost_change: "−$0.0360, −31,147 tokens",
      };
      return value;
    });
    await waitFor(() => expect(selectedName(container)).toBe("write"));
    const text = (selector: string) => container.querySelector(selector)?.textContent?.trim();
    expect(text("#compare-cost-a")).toBe("≥ $0.0483 (1 of 2 nodes priced)");
    expect(container.querySelector("#compare-cost-a")?.getAttribute("title")).toContain("33,210 tokens");
    expect(text("#compare-cost-b")).toBe("≥ $0.0123 (1 of 2 nodes priced)");
    expect(text("#compare-cost-change")).toBe("−31,147 tokens");
    expect(text("#compare-side-a [data-testid='usage-badge']")).toBe("$0.0483 · 33.2k tok");
    expect(text("#compare-side-b [data-testid='usage-badge']")).toBe("$0.0123 · 33.2k tok");
    expect(text("#compare-node-cost-change")).toBe("−$0.0360, −31,147 tokens");
  });

  it("says nothing of cost where neither side knows it", async () => {
    const { container } = view();
    await waitFor(() => expect(selectedName(container)).toBe("write"));
    for (const id of ["compare-cost-a", "compare-cost-b", "compare-cost-change", "compare-node-cost-change"]) {
      expect(container.querySelector(`#${id}`)).toBeNull();
    }
    expect(container.querySelector(".compare-sides [data-testid='usage-badge']")).toBeNull();
  });
});

describe("the compare view's accessibility", () => {
  it("has no axe violations, a node with output, prompt and result selected", async () => {
    const { container } = view(() => {
      const value = diff();
      value.nodes[1] = { ...value.nodes[1]!, prompt: output("status a", "status b") };
      value.output = output("status x", "status y");
      return value;
    });
    await waitFor(() => expect(container.querySelector(".compare-paths")).not.toBeNull());
    (container.querySelector(".compare-outside summary") as HTMLElement).click();
    const result = await axe.run(document.body, {
      rules: { "color-contrast": { enabled: false }, region: { enabled: false } },
    });
    expect(result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)).toEqual([]);
  });
});
