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
  const side = { status: "success" as const, elapsed_ms: 100, started_ms: 0 };
  return {
    name,
    occurrence: 0,
    change,
    a: change === "added" ? null : side,
    b: change === "removed" ? null : { ...side, elapsed_ms: 160 },
    output: NONE,
    prompt: null,
    result: null,
    ...extra,
  };
}

function diff(): RunDiff {
  const summary = (session: string) => ({
    session_id: session,
    run_id: `${session}-run`,
    status: "success" as const,
    elapsed_ms: 1000,
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
