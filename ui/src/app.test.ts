// The whole window against the fake backend: loading, reloads, pins, a run followed from its
// events and leaving the strip on its own, live agents, announcements, idleness, the theme, the
// split, dialogs and their focus.

import { flushSync } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { startApp, type StartedApp } from "./app";
import { fakeBackend, refusal, type FakeBackend } from "./fake-backend";
import { ENDED_LINGER_MS } from "./state/app.svelte";
import { MOST_HELD_ROWS, PAGE_ROWS } from "./state/sessions.svelte";
import { freshRoot, row } from "./testdata";
import type { UsageTotal } from "./types";

let root: HTMLElement;
let started: StartedApp[] = [];

beforeEach(() => {
  vi.useFakeTimers({ shouldAdvanceTime: true });
  root = freshRoot();
});
afterEach(() => {
  for (const app of started) app.destroy();
  started = [];
  vi.useRealTimers();
  localStorage.clear();
  delete document.documentElement.dataset.theme;
});

function start(backend: FakeBackend, clock?: () => Date): StartedApp {
  const app = startApp(root, backend, clock);
  started.push(app);
  return app;
}

const ids = () => [...root.querySelectorAll("tr[data-session-id]")].map((tr) => tr.getAttribute("data-session-id"));
const click = (selector: string) => {
  (root.querySelector(selector) as HTMLElement).click();
  flushSync();
};

describe("the window", () => {
  it("shows what the backend returns, and reloads on Refresh", async () => {
    const backend = fakeBackend();
    await start(backend).refresh();
    expect(root.querySelector(".empty")).not.toBeNull();
    backend.sessions = [row("run-1", { status: "running" })];
    click("#refresh");
    await vi.waitFor(() => expect(root.querySelector("tr[data-session-id='run-1']")).not.toBeNull());
    expect(backend.calls.filter((call) => call.startsWith("sessionsPage(0,"))).toHaveLength(2);
  });

  it("lists the sessions again after a burst of session changes, once", async () => {
    const backend = fakeBackend();
    const app = start(backend);
    await app.refresh();
    await app.ready;
    const lists = () => backend.calls.filter((call) => call.startsWith("sessionsPage(0,")).length;
    const before = lists();
    backend.sessions = [row("from-a-terminal", { status: "running" })];
    backend.sessionsChanged();
    backend.sessionsChanged();
    backend.sessionsChanged();
    await vi.advanceTimersByTimeAsync(200);
    await vi.waitFor(() => expect(ids()).toEqual(["from-a-terminal"]));
    expect(lists()).toBe(before + 1);
  });

  it("reads the listing one at a time, once more after, however many run events ask", async () => {
    const backend = fakeBackend();
    const app = start(backend);
    await app.refresh();
    await app.ready;
    // Each read is answered when the test says, with the listing as it is then.
    const read = backend.sessionsPage.bind(backend);
    let asked = 0;
    let answer: () => void = () => {};
    backend.sessionsPage = async (offset, limit) => {
      asked += 1;
      await new Promise<void>((resolve) => (answer = resolve));
      return read(offset, limit);
    };
    backend.emit({ type: "run_started", run_id: "r", session_id: "s", pid: 1 });
    for (let i = 0; i < 500; i++) {
      backend.emit({ type: "node_begin", run_id: "r", node: `n${i}`, depth: 0, t_ms: i });
      backend.emit({ type: "node_end", run_id: "r", node: `n${i}`, status: "success", t_ms: i });
    }
    await vi.waitFor(() => expect(asked).toBe(1));
    backend.sessions = [row("s", { status: "running" })];
    answer();
    // The one read asked for meanwhile, with what the listing is now.
    await vi.waitFor(() => expect(asked).toBe(2));
    answer();
    await vi.waitFor(() => expect(ids()).toEqual(["s"]));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(asked).toBe(2);
  });

  it("turns a rejected command into an error box with its code", async () => {
    const backend = fakeBackend();
    backend.sessionsPage = () => Promise.reject(refusal("io", "cannot read"));
    await start(backend).refresh();
    expect(root.querySelector(".error")?.getAttribute("data-error-code")).toBe("io");
  });

  it("blames the workspace when it could not be opened, and Refresh waits", async () => {
    const backend = fakeBackend();
    const error = refusal("workspace_not_found", "workspace not found: /nope");
    backend.workspaceGet = () => Promise.reject(error);
    backend.sessionsPage = () => Promise.reject(error);
    await start(backend).refresh();
    expect(root.querySelectorAll(".sessions-body .error")).toHaveLength(1);
    expect(root.querySelector(".error-title")?.textContent).toContain("workspace could not be opened");
    expect((root.querySelector("#refresh") as HTMLButtonElement).disabled).toBe(true);
  });

  it("says how to get sessions instead of showing an empty table", async () => {
    await start(fakeBackend()).refresh();
    expect(root.querySelector("table")).toBeNull();
    const text = root.querySelector(".empty")?.textContent ?? "";
    expect(text).toContain("Run an agent with ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS=1 in this folder");
    expect(text).toContain("cargo run -p zibby-test-agent -- fill-demo /p");
  });

  it("pins a session and lists it first; a refused pin shows in place", async () => {
    const backend = fakeBackend({ sessions: [row("newer"), row("older")] });
    await start(backend).refresh();
    expect(ids()).toEqual(["newer", "older"]);
    click("tr[data-session-id='older'] [data-testid='pin']");
    await vi.waitFor(() => expect(ids()).toEqual(["older", "newer"]));
    expect(backend.calls).toContain("pinAdd(older)");
    expect(root.querySelector("tr[data-session-id='older'] [data-testid='pin']")?.getAttribute("aria-pressed")).toBe(
      "true",
    );
    backend.pinRemove = () => Promise.reject(refusal("invalid_session_id", "invalid session id `older`"));
    click("tr[data-session-id='older'] [data-testid='pin']");
    await vi.waitFor(() =>
      expect(root.querySelector(".error")?.getAttribute("data-error-code")).toBe("invalid_session_id"),
    );
  });

  it("asks before deleting, naming the session, then deletes it", async () => {
    const backend = fakeBackend({ sessions: [row("a"), row("b")] });
    await start(backend).refresh();
    click("tr[data-session-id='a'] [data-testid='delete']");
    const dialog = root.querySelector("[data-testid='delete-dialog']")!;
    expect(dialog.textContent).toContain("a");
    expect(dialog.textContent).toContain("cannot be undone");
    click("[data-testid='cancel-delete']");
    expect(root.querySelector("[data-testid='delete-dialog']")).toBeNull();
    click("tr[data-session-id='a'] [data-testid='delete']");
    backend.sessions = [row("b")];
    click("[data-testid='confirm-delete']");
    await vi.waitFor(() => expect(ids()).toEqual(["b"]));
    expect(backend.calls).toContain("sessionDelete(a)");
  });
});

describe("sessions the shell asks to show", () => {
  it("opens an imported session, and the one the command line asked for", async () => {
    const backend = fakeBackend({ sessions: [row("s1"), row("s2")] });
    backend.requested = "s2";
    const app = start(backend);
    await app.ready;
    await vi.waitFor(() => expect(root.querySelector("#session-view")?.getAttribute("data-session-id")).toBe("s2"));
    expect(await backend.sessionRequested()).toBeNull();
    // Imported from the menu or a drop: the listing is read again and the session shown.
    backend.sessions.push(row("s-imported"));
    const listed = backend.calls.filter((call) => call.startsWith("sessionsPage(0,")).length;
    backend.sessionOpened("s-imported");
    flushSync();
    expect(root.querySelector("#session-view")?.getAttribute("data-session-id")).toBe("s-imported");
    await vi.waitFor(() =>
      expect(backend.calls.filter((call) => call.startsWith("sessionsPage(0,")).length).toBeGreaterThan(listed),
    );
  });

  it("says why an import failed, until the next one succeeds", async () => {
    const backend = fakeBackend({ sessions: [row("s1")] });
    const app = start(backend);
    await app.ready;
    backend.importFailed(refusal("import_entry_refused", "in.zip: entry `session/../x` refused: its path goes up"));
    flushSync();
    expect(root.textContent).toContain("The session could not be imported");
    expect(root.textContent).toContain("entry `session/../x` refused");
    backend.sessionOpened("s1");
    flushSync();
    expect(root.textContent).not.toContain("The session could not be imported");
  });

  it("lets the user dismiss a failed import's error", async () => {
    const backend = fakeBackend({ sessions: [row("s1")] });
    const app = start(backend);
    await app.ready;
    backend.importFailed(refusal("not_importable", "notes.png: it is not text"));
    flushSync();
    const dismiss = root.querySelector<HTMLButtonElement>("#import-error .error-dismiss");
    expect(dismiss?.getAttribute("aria-label")).toBe("Dismiss: The session could not be imported");
    dismiss!.click();
    flushSync();
    expect(root.querySelector("#import-error")).toBeNull();
  });
});

describe("a run started from the window", () => {
  it("is followed from its events, stays put as it ends, then leaves the strip for a notification", async () => {
    const backend = fakeBackend({ agents: [{ name: "writer", run: ["w"] }] });
    const clock = () => new Date(vi.getMockedSystemTime() ?? Date.now());
    const app = start(backend, clock);
    await app.ready;
    await app.refresh();

    const prompt = root.querySelector("#run-prompt") as HTMLTextAreaElement;
    prompt.value = "write it";
    click("#run-button");
    // The event may come before the command's answer: the run is listed once either way.
    backend.emit({ type: "run_started", run_id: "run-1", session_id: "session-1", pid: 1001 });
    await vi.waitFor(() => expect(prompt.value).toBe(""));
    expect(backend.calls).toContain("runStart(writer, write it)");
    expect(root.querySelectorAll(".live-run")).toHaveLength(1);
    await vi.waitFor(() =>
      expect(root.querySelector("#announcer")?.textContent).toBe("Run started: session session-1"),
    );
    expect(root.querySelector("#announcer")?.getAttribute("role")).toBe("status");

    backend.emit({ type: "node_begin", run_id: "run-1", node: "plan", depth: 0, t_ms: 5 });
    backend.emit({ type: "node_end", run_id: "run-1", node: "plan", status: "success", t_ms: 1500 });
    backend.emit({ type: "node_begin", run_id: "run-1", node: "write", depth: 0, t_ms: 1501 });
    const run = () => root.querySelector(".live-run[data-run-id='run-1']");
    expect(run()?.querySelector(".node[data-node='plan']")?.getAttribute("data-status")).toBe("success");
    expect(run()?.querySelector(".live-current-node")?.textContent?.trim()).toBe("▸ write");

    await vi.advanceTimersByTimeAsync(3_000);
    expect(run()?.querySelector(".elapsed")?.textContent).toBe("0:03");

    const stop = run()!.querySelector(".stop") as HTMLButtonElement;
    stop.click();
    flushSync();
    expect(backend.calls).toContain("runStop(run-1, false)");
    expect(stop.textContent).toBe("Stopping: the current node finishes first");
    backend.emit({ type: "stopping", run_id: "run-1", forced: false, elsewhere: false });
    expect(run()?.querySelector(".force-stop")).not.toBeNull();

    backend.sessions = [row("session-1", { status: "cancelled" })];
    backend.emit({
      type: "run_finished",
      run_id: "run-1",
      session_id: "session-1",
      status: "cancelled",
      exit_code: 0,
      elapsed_ms: 3_100,
      stopped_by: "graceful",
      error: null,
    });
    expect(run()?.getAttribute("data-status")).toBe("cancelled");
    // Stop is still there, in its place, and does nothing.
    expect(run()?.querySelector(".stop")).toBe(stop);
    expect(stop.disabled).toBe(true);
    expect(run()?.querySelector(".force-stop")).toBeNull();
    await vi.waitFor(() => expect(ids()).toEqual(["session-1"]));
    await vi.waitFor(() =>
      expect(root.querySelector("#announcer")?.textContent).toBe("Run of session session-1 ended: cancelled"),
    );
    expect(app.state.ticking).toBe(false);

    await vi.advanceTimersByTimeAsync(ENDED_LINGER_MS + 100);
    expect(run()).toBeNull();
    expect(root.querySelector(".live-runs")).toBeNull();
    expect(root.querySelector(".toast[data-run-id='run-1']")?.getAttribute("data-status")).toBe("cancelled");
    expect(ids()).toEqual(["session-1"]);
  });

  it("waits for the pointer to leave the strip before an ended run leaves it", async () => {
    const backend = fakeBackend();
    const app = start(backend);
    await app.ready;
    await app.refresh();
    backend.emit({ type: "run_started", run_id: "r", session_id: "s", pid: 1 });
    const strip = root.querySelector(".live-runs")!;
    strip.dispatchEvent(new PointerEvent("pointerenter"));
    backend.emit({
      type: "run_finished",
      run_id: "r",
      session_id: "s",
      status: "success",
      exit_code: 0,
      elapsed_ms: 10,
      stopped_by: null,
      error: null,
    });
    await vi.advanceTimersByTimeAsync(ENDED_LINGER_MS + 100);
    expect(root.querySelector(".live-run[data-run-id='r']")).not.toBeNull();
    strip.dispatchEvent(new PointerEvent("pointerleave"));
    flushSync();
    expect(root.querySelector(".live-run[data-run-id='r']")).toBeNull();
  });

  it("shows why a run could not start, keeping the prompt", async () => {
    const backend = fakeBackend({ agents: [{ name: "writer", run: ["w"] }] });
    backend.runStart = () => Promise.reject(refusal("agent_not_found", "no agent `writer`"));
    await start(backend).refresh();
    const prompt = root.querySelector("#run-prompt") as HTMLTextAreaElement;
    prompt.value = "go";
    click("#run-button");
    await vi.waitFor(() =>
      expect(root.querySelector("#run-bar .error")?.getAttribute("data-error-code")).toBe("agent_not_found"),
    );
    expect(prompt.value).toBe("go");
  });
});

describe("idle", () => {
  it("runs no 1 s tick while nothing is live, and redraws no row on a clock tick", async () => {
    const backend = fakeBackend({ sessions: [row("a"), row("b")] });
    const app = start(backend);
    await app.ready;
    await app.refresh();
    expect(app.state.ticking).toBe(false);
    const rows = [...root.querySelectorAll("tr[data-session-id]")];
    await vi.advanceTimersByTimeAsync(31_000);
    flushSync();
    const after = [...root.querySelectorAll("tr[data-session-id]")];
    expect(after.every((tr, i) => tr === rows[i])).toBe(true);
  });
});

describe("the agents file, watched", () => {
  it("shows new agents without Refresh, and a broken file in place without losing the last good agents", async () => {
    const backend = fakeBackend({ agents: [{ name: "writer", run: ["w"] }] });
    const app = start(backend);
    await app.ready;
    await app.refresh();
    const options = () => [...root.querySelectorAll("#run-agent option")].map((option) => option.textContent);
    expect(options()).toEqual(["writer"]);

    backend.agents = [...backend.agents, { name: "reviewer", run: ["r"] }];
    backend.agentsChanged();
    await vi.waitFor(() => expect(options()).toEqual(["writer", "reviewer"]));

    backend.agentsBroken = refusal("agents_file", ".zibby/studio.toml line 4: expected `=`");
    backend.agentsChanged();
    await vi.waitFor(() =>
      expect(root.querySelector("#run-bar [data-error-code='agents_file'] .error-message")?.textContent).toBe(
        ".zibby/studio.toml line 4: expected `=`",
      ),
    );
    expect(options()).toEqual(["writer", "reviewer"]);

    backend.agentsBroken = null;
    backend.agentsChanged();
    await vi.waitFor(() => expect(root.querySelector("#run-bar [data-error-code='agents_file']")).toBeNull());
  });

  it("asks to trust a file the shell refuses as untrusted", async () => {
    const backend = fakeBackend({ agents: [{ name: "writer", run: ["w"] }] });
    const app = start(backend);
    await app.ready;
    await app.refresh();
    const launch = {
      agent: "writer",
      argv: ["w"],
      cwd: "/p",
      env: [] as [string, string][],
      agents_file: "/p/.zibby/studio.toml",
      digest: "d1",
      shown: {
        agent: "writer",
        command: ['"w"'],
        command_line: '["w"]',
        cwd: "/p",
        env: [],
        inherits: "all of the studio's environment",
        agents_file: "/p/.zibby/studio.toml",
        covers: [],
      },
    };
    backend.agentsBroken = refusal("agents_untrusted", "not trusted", launch);
    backend.agentsChanged();
    await vi.waitFor(() => expect(root.querySelector("#trust-dialog")).not.toBeNull());
    backend.agentsBroken = null;
    click("#trust-run");
    await vi.waitFor(() => expect(backend.calls).toContain("agentsTrust(writer, null, null, null)"));
    await vi.waitFor(() => expect(root.querySelector("#trust-dialog")).toBeNull());
  });
});

describe("the theme", () => {
  it("cycles system, light, dark from the top bar, sets data-theme and remembers it", async () => {
    await start(fakeBackend()).refresh();
    const html = document.documentElement;
    expect(html.dataset.theme).toBeUndefined();
    click("#theme-toggle");
    expect(html.dataset.theme).toBe("light");
    click("#theme-toggle");
    expect(html.dataset.theme).toBe("dark");
    expect(localStorage.getItem("zibby-studio.theme")).toBe("dark");
    expect(root.querySelector("#theme-toggle")?.getAttribute("aria-label")).toBe("Theme: Dark");
    click("#theme-toggle");
    expect(html.dataset.theme).toBeUndefined();
    expect(localStorage.getItem("zibby-studio.theme")).toBeNull();
  });
});

describe("the split", () => {
  it("is a focusable separator moved by keys, remembered", async () => {
    const backend = fakeBackend({ sessions: [row("a")] });
    await start(backend).refresh();
    click("tr[data-session-id='a'] td.session");
    await vi.waitFor(() => expect(root.querySelector("#session-view")).not.toBeNull());
    const handle = root.querySelector("[role='separator']") as HTMLElement;
    expect(handle.tabIndex).toBe(0);
    expect(handle.getAttribute("aria-valuenow")).toBe("40");
    handle.focus();
    handle.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    flushSync();
    expect(handle.getAttribute("aria-valuenow")).toBe("42");
    handle.dispatchEvent(new KeyboardEvent("keydown", { key: "Home", bubbles: true }));
    flushSync();
    expect(handle.getAttribute("aria-valuenow")).toBe("20");
    expect(localStorage.getItem("zibby-studio.split")).toBe("20");
    const bench = root.querySelector(".workbench") as HTMLElement;
    // Side by side, or stacked in a narrow window (happy-dom's is 1024 px wide).
    expect(bench.style.gridTemplateColumns + bench.style.gridTemplateRows).toContain("20fr");
  });
});

describe("dialogs", () => {
  it("keep the focus inside and give it back where it was", async () => {
    const backend = fakeBackend({ sessions: [row("a")] });
    await start(backend).refresh();
    const remove = root.querySelector("[data-testid='delete']") as HTMLButtonElement;
    remove.focus();
    click("[data-testid='delete']");
    await vi.waitFor(() => expect(document.activeElement?.getAttribute("data-testid")).toBe("cancel-delete"));
    const confirm = root.querySelector("[data-testid='confirm-delete']") as HTMLButtonElement;
    confirm.focus();
    confirm.dispatchEvent(new KeyboardEvent("keydown", { key: "Tab", bubbles: true, cancelable: true }));
    expect(document.activeElement?.getAttribute("data-testid")).toBe("cancel-delete");
    document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    flushSync();
    expect(root.querySelector("[data-testid='delete-dialog']")).toBeNull();
    await vi.waitFor(() => expect(document.activeElement).toBe(remove));
  });
});

// The sessions table a page at a time (issue 46): the first screen is one page, the table stands
// for every session, the next rows come as the table is scrolled to them (a jump reads the rows
// jumped to, not every row before them), a change reads the rows held again (new sessions at the
// top, changed ones in place), a filter or the order by cost reads the whole listing, and rows
// being checked against their folders are marked.

/** `count` sessions, the newest first, every third by agent `writer`, the others by `reader`. */
function sessions(count: number) {
  return Array.from({ length: count }, (_, i) =>
    row(`s${String(count - i).padStart(5, "0")}`, {
      agent: i % 3 === 0 ? "writer" : "reader",
      status: i === count - 1 ? "error" : "success",
    }),
  );
}

async function startPaged(backend: FakeBackend): Promise<StartedApp> {
  const app = start(backend);
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
    const app = await startPaged(backend);
    expect(pageCalls(backend)).toEqual([`sessionsPage(0, ${PAGE_ROWS})`]);
    expect(backend.calls).not.toContain("sessionsList()");
    expect(app.state.sessions.rows()).toHaveLength(PAGE_ROWS);
    expect(count()).toBe("450 sessions");
    expect(root.querySelector("tr[data-session-id='s00450']")).not.toBeNull();
  });

  it("reads the next pages as the table is scrolled to the end of the rows held, each row once", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await startPaged(backend);
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

  it("stands for every session: a jump to the end reads the last rows, not the rows between", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await startPaged(backend);
    const table = root.querySelector("table.sessions") as HTMLElement;
    expect(table.getAttribute("aria-rowcount")).toBe("451");
    const spacers = root.querySelectorAll<HTMLElement>("tr.spacer td");
    const drawnHeight = root.querySelectorAll("tr.session-row").length * 46;
    const height = [...spacers].reduce((sum, td) => sum + parseFloat(td.style.height || "0"), drawnHeight);
    expect(height).toBe(450 * 46);
    wrap().scrollTop = 450 * 46;
    wrap().dispatchEvent(new Event("scroll"));
    flushSync();
    await vi.waitFor(() => expect(root.querySelector("tr[data-session-id='s00001']")).not.toBeNull());
    expect(pageCalls(backend)).toEqual([`sessionsPage(0, ${PAGE_ROWS})`, `sessionsPage(250, ${PAGE_ROWS})`]);
    expect(app.state.sessions.offset).toBe(250);
    expect(app.state.sessions.rows()).toHaveLength(PAGE_ROWS);
    expect(root.querySelector("tr[data-session-id='s00001']")?.getAttribute("aria-rowindex")).toBe("451");
    // Back up past the first row held: the rows before it are read and joined to them.
    wrap().scrollTop = 240 * 46;
    wrap().dispatchEvent(new Event("scroll"));
    flushSync();
    await vi.waitFor(() => expect(app.state.sessions.offset).toBe(50));
    expect(pageCalls(backend).at(-1)).toBe(`sessionsPage(50, ${PAGE_ROWS})`);
    expect(app.state.sessions.rows()).toHaveLength(400);
    expect(root.querySelector("tr[data-session-id='s00210']")?.getAttribute("aria-rowindex")).toBe("242");
    expect(root.querySelector("tr.placeholder")).toBeNull();
  });

  it("keeps the rows held when the rows scrolled to are not read yet, and reads them once they are", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await startPaged(backend);
    const page = backend.sessionsPage.bind(backend);
    // A first launch still reading the folders behind the first screen: past row 200, nothing yet.
    backend.sessionsPage = async (offset, limit) => {
      const read = await page(offset, limit);
      return offset >= PAGE_ROWS ? { ...read, sessions: [], checking: [] } : read;
    };
    wrap().scrollTop = 450 * 46;
    wrap().dispatchEvent(new Event("scroll"));
    flushSync();
    await vi.waitFor(() => expect(pageCalls(backend)).toContain(`sessionsPage(250, ${PAGE_ROWS})`));
    await vi.advanceTimersByTimeAsync(50);
    expect(app.state.sessions.rows()).toHaveLength(PAGE_ROWS);
    expect(app.state.sessions.offset).toBe(0);
    expect(root.querySelectorAll("tr.placeholder").length).toBeGreaterThan(0);
    // The rest read: the next change of the listing brings them.
    backend.sessionsPage = page;
    backend.sessionsChanged();
    await vi.advanceTimersByTimeAsync(200);
    await vi.waitFor(() => expect(root.querySelector("tr[data-session-id='s00001']")).not.toBeNull());
  });

  it("draws the rows not yet read as placeholders while they are read", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await startPaged(backend);
    let release = () => {};
    const page = backend.sessionsPage.bind(backend);
    backend.sessionsPage = (offset, limit) =>
      new Promise((resolve) => {
        release = () => resolve(page(offset, limit));
      });
    wrap().scrollTop = 300 * 46;
    wrap().dispatchEvent(new Event("scroll"));
    flushSync();
    expect(root.querySelectorAll("tr.placeholder").length).toBeGreaterThan(0);
    expect(root.querySelector("tr.placeholder")?.textContent).toContain("Reading");
    release();
    await vi.waitFor(() => expect(root.querySelector("tr.placeholder")).toBeNull());
    expect(root.querySelector("tr[data-session-id='s00150']")).not.toBeNull();
    expect(app.state.sessions.rows().length).toBeLessThanOrEqual(2 * PAGE_ROWS);
  });

  it("holds at most MOST_HELD_ROWS rows however far it is scrolled", async () => {
    const total = MOST_HELD_ROWS + 3 * PAGE_ROWS;
    const backend = fakeBackend({ sessions: sessions(total) });
    const app = await startPaged(backend);
    let most = 0;
    for (let step = 0; step < 20 && !root.querySelector("tr[data-session-id='s00001']"); step += 1) {
      const held = app.state.sessions;
      wrap().scrollTop = 46 * (held.offset + held.rows().length);
      wrap().dispatchEvent(new Event("scroll"));
      flushSync();
      await vi.waitFor(() =>
        expect(app.state.sessions.offset + app.state.sessions.rows().length).toBeGreaterThan(
          held.offset + held.rows().length - 1,
        ),
      );
      await vi.advanceTimersByTimeAsync(10);
      most = Math.max(most, app.state.sessions.rows().length);
    }
    expect(root.querySelector("tr[data-session-id='s00001']")).not.toBeNull();
    expect(most).toBe(MOST_HELD_ROWS);
    expect(app.state.sessions.offset).toBe(total - MOST_HELD_ROWS);
    const held = app.state.sessions.rows().map((r) => r.id);
    expect(new Set(held).size).toBe(held.length);
  });

  it("reads the rows held again on a change: a new session at the top, a changed one in place", async () => {
    const backend = fakeBackend({ sessions: sessions(450) });
    const app = await startPaged(backend);
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
    const app = await startPaged(backend);
    app.state.sessions.setFilters({ status: "error", agent: "all", pinnedOnly: false, tags: [] });
    await vi.waitFor(() => expect(backend.calls).toContain("sessionsList()"));
    flushSync();
    // The one failed session is the oldest, far past the first page.
    await vi.waitFor(() => expect(app.state.sessions.visible.map((r) => r.id)).toEqual(["s00001"]));
    expect(count()).toBe("1 of 450");
    app.state.sessions.setFilters({ status: "all", agent: "all", pinnedOnly: false, tags: [] });
    await vi.waitFor(() => expect(app.state.sessions.rows()).toHaveLength(PAGE_ROWS));
    expect(app.state.sessions.whole).toBe(false);
  });

  it("orders by cost over every session", async () => {
    const rows = sessions(300);
    rows[299] = { ...rows[299]!, usage: { ...usage(5) } };
    const backend = fakeBackend({ sessions: rows });
    const app = await startPaged(backend);
    app.state.sessions.toggleCostSort();
    await vi.waitFor(() => expect(app.state.sessions.visible[0]?.id).toBe(rows[299]!.id));
  });

  it("marks the rows the page says are being checked against their folders, and only those", async () => {
    const backend = fakeBackend({ sessions: sessions(10) });
    backend.checking = ["s00009"];
    await startPaged(backend);
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
    await startPaged(backend);
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
