import { render } from "@testing-library/svelte";
import { flushSync } from "svelte";
import { describe, expect, it, vi } from "vitest";

import { DELETE_LIVE_TITLE } from "../sessions";
import { row } from "../testdata";
import type { SessionRow } from "../types";
import SessionsTable from "./SessionsTable.svelte";

const now = new Date("2026-11-29T12:00:00Z");

function session(overrides: Partial<SessionRow> = {}): SessionRow {
  return row("1795952464415_3prb", {
    current_node: "report",
    created_at: "2026-11-29T11:41:04.415Z",
    updated_at: "2026-11-29T11:55:00.000Z",
    nodes: [
      { name: "plan", status: "success" },
      { name: "execute", status: "success" },
      { name: "report", status: "success" },
    ],
    ...overrides,
  });
}

function table(rows: SessionRow[], more: Partial<{ live: Set<string>; selected: string | null; now: Date }> = {}) {
  const actions = { onpin: vi.fn(), ondelete: vi.fn(), onopen: vi.fn() };
  const result = render(SessionsTable, {
    rows,
    now: more.now ?? now,
    live: more.live ?? new Set<string>(),
    selected: more.selected ?? null,
    ...actions,
  });
  return { ...result, ...actions };
}

const describedBy = (element: Element | null) =>
  (element?.getAttribute("aria-describedby") ?? "")
    .split(" ")
    .map((id) => document.getElementById(id)?.textContent)
    .join("");

describe("the sessions table", () => {
  it("shows a row's tags as text chips, three and a count, all in the tooltip", () => {
    const tags = ["bug", "<img src=x onerror=alert(1)>", "slow", "flaky"];
    const { container } = table([session({ tags }), session({ id: "1795952464416_3prc", tags: [] })]);
    const [tagged, plain] = [...container.querySelectorAll("tr[data-session-id]")];
    const chips = [...tagged!.querySelectorAll(".row-tags .tag-chip")].map((chip) => chip.textContent);
    expect(chips).toEqual(["bug", "<img src=x onerror=alert(1)>", "slow"]);
    expect(tagged!.querySelector("img")).toBeNull();
    expect(tagged!.querySelector(".more-tags")?.textContent).toBe("+1");
    expect(tagged!.querySelector(".row-tags")?.getAttribute("title")).toBe(`Tags: ${tags.join(", ")}`);
    expect(plain!.querySelector(".row-tags")).toBeNull();
  });

  it("has one row per session, keyed by id, with the columns filled in", () => {
    const { container } = table([session()]);
    const rows = container.querySelectorAll("tr[data-session-id]");
    expect(rows).toHaveLength(1);
    const tr = rows[0]!;
    expect(tr.querySelector(".session-id")?.textContent).toBe("1795952464415_3prb");
    expect(tr.querySelector(".badge")?.getAttribute("data-status")).toBe("success");
    expect(tr.querySelector(".current-node")?.textContent).toBe("report");
    expect(tr.querySelector("td.progress .progress-count")?.textContent).toBe("3/3");
    expect(tr.querySelector("td.progress")?.getAttribute("title")).toBe(
      "plan: success\nexecute: success\nreport: success",
    );
    const time = tr.querySelector("td.updated time");
    expect(time?.textContent).toBe("5 min ago");
    expect(time?.getAttribute("title")).not.toBe("");
  });

  it("renders agent-provided strings as text, never as HTML", () => {
    const evil = "<img src=x onerror=alert(1)>";
    const { container } = table([
      session({
        id: evil,
        title: evil,
        agent: evil,
        current_node: evil,
        nodes: [{ name: evil, status: "error" }],
        problems: [{ file: evil, reason: evil }],
      }),
    ]);
    expect(container.querySelector("img")).toBeNull();
    expect(container.querySelector("[onerror]")).toBeNull();
    expect(container.querySelector(".session-id")?.textContent).toBe(evil);
    expect(container.querySelector(".session-title")?.textContent).toBe(evil);
    expect(container.querySelector(".current-node")?.textContent).toBe(evil);
  });

  it("shows a problem count when files of a session could not be read", () => {
    const { container } = table([session({ problems: [{ file: "a.json", reason: "bad" }] })]);
    expect(container.querySelector(".problems")?.textContent).toBe("⚠ 1 problem");
  });

  it("says a cloud session whose files are not fetched yet is being fetched, not its unknown status", () => {
    const said = "Being fetched from s3://team-runs/ci: its details show once its files are in.";
    const { container } = table([
      session({ fetching: true, status: "unknown", nodes: [], current_node: null, not_known: said }),
    ]);
    const badge = container.querySelector("tr[data-session-id] td.status .badge");
    expect(badge?.getAttribute("data-status")).toBe("fetching");
    expect(badge?.textContent).toBe("fetching…");
    expect(badge?.getAttribute("title")).toBe(said);
    expect(container.querySelector("td.progress")?.textContent).toBe("—");
  });

  it("has a star per row that says whether the session is pinned, and asks to toggle it", () => {
    const { container, onpin } = table([session({ id: "a", pinned: true }), session({ id: "b" })]);
    const stars = [...container.querySelectorAll("[data-testid='pin']")];
    expect(stars.map((star) => star.getAttribute("aria-pressed"))).toEqual(["true", "false"]);
    expect(stars.map((star) => star.textContent)).toEqual(["★", "☆"]);
    expect(stars.map((star) => describedBy(star))).toEqual(["Unpin", "Pin"]);
    expect(container.querySelector("tr[data-session-id='a']")?.classList.contains("pinned")).toBe(true);
    (stars[1] as HTMLButtonElement).click();
    (stars[0] as HTMLButtonElement).click();
    expect(onpin.mock.calls).toEqual([
      ["b", true],
      ["a", false],
    ]);
  });

  it("opens a session on a click of its row (not of its buttons), and asks before deleting", () => {
    const { container, onopen, ondelete } = table([session()]);
    (container.querySelector("td.session") as HTMLElement).click();
    expect(onopen).toHaveBeenCalledWith("1795952464415_3prb");
    (container.querySelector("[data-testid='delete']") as HTMLButtonElement).click();
    expect(ondelete).toHaveBeenCalledWith("1795952464415_3prb");
    expect(onopen).toHaveBeenCalledTimes(1);
  });

  it("disables Delete while the session's run is live, saying why", () => {
    const { container } = table([session()], { live: new Set(["1795952464415_3prb"]) });
    const remove = container.querySelector("[data-testid='delete']") as HTMLButtonElement;
    expect(remove.disabled).toBe(true);
    expect(describedBy(remove.closest("td"))).toBe(DELETE_LIVE_TITLE);
  });

  it("marks the selected row", () => {
    const { container } = table([session({ id: "a" }), session({ id: "b" })], { selected: "b" });
    const b = container.querySelector("tr[data-session-id='b']")!;
    expect(b.getAttribute("aria-selected")).toBe("true");
    expect(b.classList.contains("selected")).toBe(true);
    expect(container.querySelector("tr[data-session-id='a']")?.getAttribute("aria-selected")).toBe("false");
  });

  it("labels its icon columns and leaves no header empty", () => {
    const { container } = table([session()]);
    for (const th of container.querySelectorAll("th")) expect(th.textContent?.trim()).not.toBe("");
    expect(container.querySelector("table")?.getAttribute("role")).toBe("grid");
  });

  it("draws only the rows in view and a margin, with every row counted and each drawn row indexed", () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => session({ id: `s${i}` }));
    const { container } = table(rows);
    const drawn = container.querySelectorAll("tr[data-session-id]");
    expect(drawn.length).toBeGreaterThan(10);
    expect(drawn.length).toBeLessThan(60);
    expect(container.querySelector("table")?.getAttribute("aria-rowcount")).toBe("10001");
    expect(drawn[0]?.getAttribute("aria-rowindex")).toBe("2");

    const wrap = container.querySelector(".table-wrap") as HTMLElement;
    wrap.scrollTop = 46 * 5_000;
    wrap.dispatchEvent(new Event("scroll"));
    flushSync();
    const ids = [...container.querySelectorAll("tr[data-session-id]")].map((tr) => tr.getAttribute("data-session-id"));
    expect(ids).toContain("s5000");
    const first = container.querySelector("tr[data-session-id]")!;
    expect(Number(first.getAttribute("aria-rowindex"))).toBe(
      Number(first.getAttribute("data-session-id")!.slice(1)) + 2,
    );
  });

  it("on a clock tick, changes the time cells and keeps every row element", async () => {
    const { container, rerender } = table([session({ id: "a" }), session({ id: "b" })]);
    const before = [...container.querySelectorAll("tr[data-session-id]")];
    await rerender({ now: new Date(now.getTime() + 60 * 60_000) });
    const after = [...container.querySelectorAll("tr[data-session-id]")];
    expect(after).toEqual(before);
    expect(after.every((tr, i) => tr === before[i])).toBe(true);
    expect(after[0]?.querySelector("time")?.textContent).toBe("1 h ago");
  });

  it("brings a newly selected row into view, and leaves the scroll alone on a reload", async () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => session({ id: `s${i}` }));
    const { container, rerender } = table(rows);
    const wrap = container.querySelector(".table-wrap") as HTMLElement;
    await rerender({ selected: "s1500" });
    expect(wrap.scrollTop).toBeGreaterThan(46 * 1_400);
    expect(container.querySelector("tr[data-session-id='s1500']")).not.toBeNull();
    wrap.scrollTop = 0;
    wrap.dispatchEvent(new Event("scroll"));
    flushSync();
    await rerender({ rows: rows.map((r) => ({ ...r })) });
    expect(wrap.scrollTop).toBe(0);
    expect(container.querySelector("tr[data-session-id='s0']")).not.toBeNull();
  });
});

describe("the cost column", () => {
  // As the core words them (crates/core/src/sessions/cost.rs).
  const usage = (cost: number | null, priced: number, nodes: number, label = "–", short_label = label) => ({
    tokens: { input: 10, cache_read: 1000, cache_write: 24, output: 200, reasoning: null },
    cost_usd: cost,
    nodes,
    nodes_with_usage: nodes,
    nodes_priced: priced,
    label,
    short_label,
    tokens_label: "1,234 tokens (in 10, cache read 1,000, cache write 24, out 200)",
  });

  it("shows each session's cost, a lower bound as such, and a dash (never $0) when unknown", () => {
    const { container } = table([
      row("a", { usage: usage(1.5, 3, 3, "$1.50") }),
      row("b", { usage: usage(0.0483, 1, 3, "≥ $0.0483 (1 of 3 nodes priced)", "≥ $0.0483") }),
      row("c", { usage: usage(null, 0, 2) }),
      row("d"),
    ]);
    const cells = [...container.querySelectorAll("[data-testid='cost']")];
    expect(cells.map((cell) => cell.textContent?.trim())).toEqual(["$1.50", "≥ $0.0483", "–", "–"]);
    expect(cells[1]!.getAttribute("title")).toContain("≥ $0.0483 (1 of 3 nodes priced)");
    expect(cells[1]!.getAttribute("title")).toContain("1,234 tokens");
    expect(cells[3]!.getAttribute("title")).toBe("no usage reported");
  });

  it("sorts from its header, and says how", async () => {
    const oncostsort = vi.fn();
    const { container, rerender } = render(SessionsTable, {
      rows: [row("a")],
      now,
      live: new Set<string>(),
      selected: null,
      onpin: vi.fn(),
      ondelete: vi.fn(),
      onopen: vi.fn(),
      oncostsort,
    });
    const header = container.querySelector("th.col-cost")!;
    expect(header.getAttribute("aria-sort")).toBe("none");
    container.querySelector<HTMLButtonElement>("#sort-by-cost")!.click();
    expect(oncostsort).toHaveBeenCalledOnce();
    await rerender({ costSort: "desc" });
    expect(header.getAttribute("aria-sort")).toBe("descending");
    expect(header.textContent).toContain("Cost ↓");
  });

  it("is left out beside the session view", () => {
    const { container } = render(SessionsTable, {
      rows: [row("a", { usage: usage(1, 1, 1) })],
      now,
      live: new Set<string>(),
      selected: null,
      compact: true,
      onpin: vi.fn(),
      ondelete: vi.fn(),
      onopen: vi.fn(),
    });
    expect(container.querySelector("[data-testid='cost']")).toBeNull();
  });
});
