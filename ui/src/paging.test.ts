// The sessions table a page at a time (issue 46): the first screen is one page, the next ones come
// as the table is scrolled to the end of the rows held, a change reads the rows held again (new
// sessions at the top, changed ones in place), a filter or the order by cost reads the whole
// listing, and rows being checked against their folders are marked.

import { flushSync } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { startApp, type StartedApp } from "./app";
import { fakeBackend, type FakeBackend } from "./fake-backend";
import { PAGE_ROWS } from "./state/sessions.svelte";
import { row } from "./testdata";
import type { UsageTotal } from "./types";

let root: HTMLElement;
let started: StartedApp[] = [];

beforeEach(() => {
  vi.useFakeTimers({ shouldAdvanceTime: true });
  document.body.replaceChildren();
  root = document.createElement("div");
  document.body.append(root);
});
afterEach(() => {
  for (const app of started) app.destroy();
  started = [];
  vi.useRealTimers();
  localStorage.clear();
});

/** `count` sessions, the newest first, every third by agent `writer`, the others by `reader`. */
function sessions(count: number) {
  return Array.from({ length: count }, (_, i) =>
    row(`s${String(count - i).padStart(5, "0")}`, {
      agent: i % 3 === 0 ? "writer" : "reader",
      status: i === count - 1 ? "error" : "success",
    }),
  );
}

async function start(backend: FakeBackend): Promise<StartedApp> {
  const app = startApp(root, backend);
  started.push(app);
  await app.refresh();
  await app.ready;
  flushSync();
  return app;
}

const wrap = () => root.querySelector(".table-wrap") as HTMLElement;
const count = () => root.querySelector(".sessions-head .count")?.textContent;
const pageCalls = (backend: FakeBackend) => backend.calls.filter((call) => call.startsWith("sessionsPage("));

/** Scrolls the table to the end of the rows it holds (as far as a wheel goes: no further). */
function scrollToEnd(app: StartedApp): void {
  wrap().scrollTop = 46 * app.state.sessions.rows().length;
  wrap().dispatchEvent(new Event("scroll"));
  flushSync();
}

describe("the sessions table in pages", () => {
  it("shows its first screen from one page, and the count of every session", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await start(backend);
    expect(pageCalls(backend)).toEqual([`sessionsPage(0, ${PAGE_ROWS})`]);
    expect(backend.calls).not.toContain("sessionsList()");
    expect(app.state.sessions.rows()).toHaveLength(PAGE_ROWS);
    expect(count()).toBe("450 sessions");
    expect(root.querySelector("tr[data-session-id='s00450']")).not.toBeNull();
  });

  it("reads the next pages as the table is scrolled to the end of the rows held, each row once", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await start(backend);
    scrollToEnd(app);
    await vi.waitFor(() => expect(app.state.sessions.rows()).toHaveLength(2 * PAGE_ROWS));
    scrollToEnd(app);
    await vi.waitFor(() => expect(app.state.sessions.rows()).toHaveLength(450));
    expect(pageCalls(backend)).toEqual([
      `sessionsPage(0, ${PAGE_ROWS})`,
      `sessionsPage(${PAGE_ROWS}, ${PAGE_ROWS})`,
      `sessionsPage(${2 * PAGE_ROWS}, ${PAGE_ROWS})`,
    ]);
    const held = app.state.sessions.rows().map((r) => r.id);
    expect(new Set(held).size).toBe(450);
    scrollToEnd(app);
    await vi.advanceTimersByTimeAsync(50);
    expect(pageCalls(backend)).toHaveLength(3);
  });

  it("reads the rows held again on a change: a new session at the top, a changed one in place", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await start(backend);
    scrollToEnd(app);
    await vi.waitFor(() => expect(app.state.sessions.rows()).toHaveLength(2 * PAGE_ROWS));
    backend.sessions = [
      row("s99999", { status: "running" }),
      ...backend.sessions.map((r) => (r.id === "s00300" ? { ...r, status: "error" as const } : r)),
    ];
    backend.sessionsChanged();
    await vi.advanceTimersByTimeAsync(200);
    await vi.waitFor(() => expect(app.state.sessions.rows()[0]?.id).toBe("s99999"));
    const held = app.state.sessions.rows();
    expect(held).toHaveLength(2 * PAGE_ROWS);
    expect(held.find((r) => r.id === "s00300")?.status).toBe("error");
    expect(count()).toBe("451 sessions");
  });

  it("covers every session with a filter (the whole listing), and goes back to pages without", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await start(backend);
    app.state.sessions.setFilters({ status: "error", agent: "all", pinnedOnly: false });
    await vi.waitFor(() => expect(backend.calls).toContain("sessionsList()"));
    flushSync();
    // The one failed session is the oldest, far past the first page.
    await vi.waitFor(() => expect(app.state.sessions.visible.map((r) => r.id)).toEqual(["s00001"]));
    expect(count()).toBe("1 of 450");
    app.state.sessions.setFilters({ status: "all", agent: "all", pinnedOnly: false });
    await vi.waitFor(() => expect(app.state.sessions.rows()).toHaveLength(PAGE_ROWS));
    expect(app.state.sessions.whole).toBe(false);
  });

  it("orders by cost over every session", async () => {
    const rows = sessions(300);
    rows[299] = { ...rows[299]!, usage: { ...usage(5) } };
    const backend = fakeBackend({ sessions: rows });
    const app = await start(backend);
    app.state.sessions.toggleCostSort();
    await vi.waitFor(() => expect(app.state.sessions.visible[0]?.id).toBe(rows[299]!.id));
  });

  it("marks the rows the page says are being checked against their folders, and only those", async () => {
    const backend = fakeBackend({ sessions: sessions(10) });
    backend.checking = ["s00009"];
    await start(backend);
    const marked = [...root.querySelectorAll("[data-testid='checking']")].map((mark) =>
      mark.closest("tr")?.getAttribute("data-session-id"),
    );
    expect(marked).toEqual(["s00009"]);
    backend.checking = [];
    backend.sessionsChanged();
    await vi.advanceTimersByTimeAsync(200);
    await vi.waitFor(() => expect(root.querySelectorAll("[data-testid='checking']")).toHaveLength(0));
  });

  it("reads what every session costs apart from the rows", async () => {
    const backend = fakeBackend({ sessions: sessions(10), sessionsUsage: usage(12) });
    await start(backend);
    await vi.waitFor(() => expect(root.querySelector("#sessions-cost")?.textContent).toContain("in all"));
    expect(backend.calls).toContain("sessionsCost()");
  });
});

function usage(dollars: number): UsageTotal {
  const tokens = { input: 1, cache_read: 0, cache_write: 0, output: 1, reasoning: null };
  const label = `$${dollars}.00`;
  return {
    tokens,
    cost_usd: dollars,
    nodes: 1,
    nodes_with_usage: 1,
    nodes_priced: 1,
    label,
    short_label: label,
    tokens_label: "2 tokens",
  };
}
