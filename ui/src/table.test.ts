import { beforeEach, describe, expect, it, vi } from "vitest";

import { createSessionsTable, progressOf, ROW_HEIGHT } from "./table";
import { row } from "./testdata";

const now = new Date("2026-11-29T12:00:00Z");
const many = Array.from({ length: 10_000 }, (_, i) => row(`s${i}`, { updated_at: "2026-11-29T11:00:00Z" }));

function actions() {
  return { togglePin: vi.fn(), askDelete: vi.fn(), openSession: vi.fn() };
}

function drawnIds(element: HTMLElement): string[] {
  return [...element.querySelectorAll("tr[data-session-id]")].map((tr) => tr.getAttribute("data-session-id")!);
}

function scrollTo(element: HTMLElement, top: number): void {
  element.scrollTop = top;
  element.dispatchEvent(new Event("scroll"));
}

beforeEach(() => document.body.replaceChildren());

describe("the virtualised sessions table", () => {
  it("puts only the rows in view and a margin in the DOM, with spacers for the rest", () => {
    const table = createSessionsTable(actions());
    document.body.append(table.element);
    table.update(many, now, new Set(), null);
    const ids = drawnIds(table.element);
    expect(ids[0]).toBe("s0");
    expect(ids.length).toBeLessThan(40);
    const [top, bottom] = [...table.element.querySelectorAll("tr.spacer")] as HTMLElement[];
    expect(top!.style.height).toBe("0px");
    expect(parseInt(bottom!.style.height, 10)).toBe((10_000 - ids.length) * ROW_HEIGHT);

    scrollTo(table.element, 5_000 * ROW_HEIGHT);
    const after = drawnIds(table.element);
    expect(after).toContain("s5000");
    expect(after).not.toContain("s0");
    expect(after.length).toBeLessThan(45);
    expect(parseInt(top!.style.height, 10)).toBe(Number(after[0]!.slice(1)) * ROW_HEIGHT);
  });

  it("patches rows in place: unchanged rows keep their element, changed ones are rebuilt", () => {
    const table = createSessionsTable(actions());
    document.body.append(table.element);
    const rows = many.slice(0, 5);
    table.update(rows, now, new Set(), null);
    const before = [...table.element.querySelectorAll("tr[data-session-id]")];
    const changed = rows.map((r) => (r.id === "s2" ? { ...r, status: "running" as const } : { ...r }));
    table.update(changed, now, new Set(), "s3");
    const after = [...table.element.querySelectorAll("tr[data-session-id]")];
    expect(after[0]).toBe(before[0]);
    expect(after[2]).not.toBe(before[2]);
    expect(after[2]!.querySelector(".badge")?.getAttribute("data-status")).toBe("running");
    expect(after[3]!.getAttribute("aria-selected")).toBe("true");
    expect(after[3]!.classList.contains("selected")).toBe(true);
  });

  it("keeps the scroll position across updates, and reveals a row selected out of view", () => {
    const table = createSessionsTable(actions());
    document.body.append(table.element);
    table.update(many, now, new Set(), null);
    scrollTo(table.element, 100 * ROW_HEIGHT);
    table.update([...many], now, new Set(), null);
    expect(table.element.scrollTop).toBe(100 * ROW_HEIGHT);
    table.reveal("s9000");
    expect(drawnIds(table.element)).toContain("s9000");
  });

  it("shows agent, progress, messages and current node, and opens a session on a click", () => {
    const spies = actions();
    const table = createSessionsTable(spies);
    document.body.append(table.element);
    const session = row("a", {
      agent: "writer",
      messages: 4,
      current_node: "write",
      status: "running",
      nodes: [
        { name: "plan", status: "success" },
        { name: "write", status: "running" },
      ],
    });
    table.update([session], now, new Set(["a"]), null);
    const tr = table.element.querySelector("tr[data-session-id='a']")!;
    expect(tr.querySelector("td.agent")?.textContent).toBe("writer");
    expect(tr.querySelector(".progress-count")?.textContent).toBe("1/2");
    expect(tr.querySelector(".current-node")?.textContent).toBe("write");
    expect(tr.querySelector("td.messages")?.textContent).toBe("4");
    expect((tr.querySelector("[data-testid='delete']") as HTMLButtonElement).disabled).toBe(true);
    (tr.querySelector("td.session") as HTMLElement).click();
    expect(spies.openSession).toHaveBeenCalledWith("a");
    (tr.querySelector("[data-testid='pin']") as HTMLElement).click();
    expect(spies.openSession).toHaveBeenCalledTimes(1);
    expect(spies.togglePin).toHaveBeenCalledWith("a", true);
  });
});

describe("progressOf", () => {
  it("counts the nodes that ended", () => {
    expect(progressOf(row("a"))).toEqual({ done: 0, total: 0 });
    expect(
      progressOf(
        row("a", {
          nodes: [
            { name: "x", status: "error" },
            { name: "y", status: "running" },
            { name: "z", status: "success" },
          ],
        }),
      ),
    ).toEqual({ done: 2, total: 3 });
  });
});

describe("the compact table beside the session view", () => {
  it("keeps the pin, session, status and last update columns", () => {
    const table = createSessionsTable(actions());
    document.body.append(table.element);
    table.update([row("a", { agent: "writer", title: "t" })], now, new Set(), "a", true);
    expect([...table.element.querySelectorAll("th")].map((th) => th.textContent)).toEqual([
      "",
      "Session",
      "Status",
      "Updated",
    ]);
    const tr = table.element.querySelector("tr[data-session-id='a']")!;
    expect(tr.querySelectorAll("td")).toHaveLength(4);
    expect(tr.querySelector(".session-title")?.textContent).toBe("t");
    expect(table.element.querySelector("tr.spacer td")?.getAttribute("colspan")).toBe("4");
    table.update([row("a")], now, new Set(), null, false);
    expect(table.element.querySelectorAll("th")).toHaveLength(8);
  });
});

describe("focus in the table", () => {
  it("stays on a row's pin when the row is rebuilt", () => {
    const table = createSessionsTable(actions());
    document.body.append(table.element);
    table.update([row("a")], now, new Set(), null);
    (table.element.querySelector("[data-testid='pin']") as HTMLButtonElement).focus();
    table.update([row("a", { pinned: true })], now, new Set(), null);
    expect(document.activeElement?.getAttribute("aria-pressed")).toBe("true");
    expect(document.activeElement?.getAttribute("data-testid")).toBe("pin");
  });
});
