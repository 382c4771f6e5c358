import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { startApp } from "./app";
import { fakeBackend, refusal } from "./fake-backend";
import { row } from "./testdata";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const ids = (root: HTMLElement) =>
  [...root.querySelectorAll("tr[data-session-id]")].map((tr) => tr.getAttribute("data-session-id"));

describe("startApp", () => {
  it("shows what the backend returns, and reloads on Refresh", async () => {
    const backend = fakeBackend();
    const root = document.createElement("div");
    const app = startApp(root, backend);
    await app.refresh();
    expect(root.querySelector(".empty")).not.toBeNull();

    backend.sessions = [row("run-1", { status: "running" })];
    (root.querySelector("#refresh") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(root.querySelector("tr[data-session-id='run-1']")).not.toBeNull());
    expect(backend.calls.filter((call) => call === "sessionsList()")).toHaveLength(2);
  });

  it("lists the sessions again after a burst of session changes, once", async () => {
    const backend = fakeBackend();
    const root = document.createElement("div");
    const app = startApp(root, backend);
    await app.refresh();
    await app.ready;
    const lists = () => backend.calls.filter((call) => call === "sessionsList()").length;
    const before = lists();

    backend.sessions = [row("from-a-terminal", { status: "running" })];
    backend.sessionsChanged();
    backend.sessionsChanged();
    backend.sessionsChanged();
    await vi.advanceTimersByTimeAsync(200);
    await vi.waitFor(() => expect(ids(root)).toEqual(["from-a-terminal"]));
    expect(lists()).toBe(before + 1);
  });

  it("turns a rejected command into an error box with its code", async () => {
    const root = document.createElement("div");
    const backend = fakeBackend();
    backend.sessionsList = () => Promise.reject(refusal("io", "cannot read"));
    await startApp(root, backend).refresh();
    expect(root.querySelector(".error")?.getAttribute("data-error-code")).toBe("io");
  });

  it("pins a session and lists it first", async () => {
    const backend = fakeBackend({ sessions: [row("newer"), row("older")] });
    const root = document.createElement("div");
    await startApp(root, backend).refresh();
    expect(ids(root)).toEqual(["newer", "older"]);

    (root.querySelector("tr[data-session-id='older'] [data-testid='pin']") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(ids(root)).toEqual(["older", "newer"]));
    expect(backend.calls).toContain("pinAdd(older)");
    const star = root.querySelector("tr[data-session-id='older'] [data-testid='pin']");
    expect(star?.getAttribute("aria-pressed")).toBe("true");

    (star as HTMLButtonElement).click();
    await vi.waitFor(() => expect(ids(root)).toEqual(["newer", "older"]));
    expect(backend.calls).toContain("pinRemove(older)");
  });

  it("shows a refused pin in place", async () => {
    const backend = fakeBackend({ sessions: [row("a")] });
    backend.pinAdd = () => Promise.reject(refusal("invalid_session_id", "invalid session id `a`"));
    const root = document.createElement("div");
    await startApp(root, backend).refresh();
    (root.querySelector("[data-testid='pin']") as HTMLButtonElement).click();
    await vi.waitFor(() =>
      expect(root.querySelector(".error")?.getAttribute("data-error-code")).toBe("invalid_session_id"),
    );
  });

  it("follows a run it started from its events, and reloads the table when it ends", async () => {
    const backend = fakeBackend({ agents: [{ name: "writer", run: ["w"] }] });
    const root = document.createElement("div");
    document.body.append(root);
    const clock = () => new Date(vi.getMockedSystemTime() ?? Date.now());
    const app = startApp(root, backend, clock);
    await app.ready;
    await app.refresh();

    const prompt = root.querySelector("#run-prompt") as HTMLTextAreaElement;
    prompt.value = "write it";
    (root.querySelector("#run-button") as HTMLButtonElement).click();
    // The event may come before the command's answer: the run is listed once either way.
    backend.emit({ type: "run_started", run_id: "run-1", session_id: "session-1", pid: 1001 });
    await vi.waitFor(() => expect(prompt.value).toBe(""));
    expect(backend.calls).toContain("runStart(writer, write it)");
    expect(root.querySelectorAll(".live-run")).toHaveLength(1);

    backend.emit({ type: "node_begin", run_id: "run-1", node: "plan", depth: 0, t_ms: 5 });
    backend.emit({ type: "node_end", run_id: "run-1", node: "plan", status: "success", t_ms: 1500 });
    backend.emit({ type: "node_begin", run_id: "run-1", node: "write", depth: 0, t_ms: 1501 });
    const run = () => root.querySelector(".live-run[data-run-id='run-1']")!;
    expect(run().querySelector(".node[data-node='plan']")?.getAttribute("data-status")).toBe("success");
    expect(run().querySelector(".live-current-node")?.textContent).toBe("▸ write");

    vi.advanceTimersByTime(3_000);
    expect(run().querySelector(".elapsed")?.textContent).toBe("0:03");

    (run().querySelector(".stop") as HTMLButtonElement).click();
    expect(backend.calls).toContain("runStop(run-1, false)");
    expect(run().querySelector(".stop")?.textContent).toBe("Stopping: the current node finishes first");
    backend.emit({ type: "stopping", run_id: "run-1", forced: false, elsewhere: false });
    expect(run().querySelector(".force-stop")).not.toBeNull();

    backend.sessions = [row("session-1", { status: "cancelled" })];
    backend.emit({ type: "node_end", run_id: "run-1", node: "write", status: "success", t_ms: 3000 });
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
    expect(run().getAttribute("data-status")).toBe("cancelled");
    expect(run().querySelector(".stop")).toBeNull();
    await vi.waitFor(() => expect(ids(root)).toEqual(["session-1"]));
    root.remove();
  });

  it("shows why a run could not start", async () => {
    const backend = fakeBackend({ agents: [{ name: "writer", run: ["w"] }] });
    backend.runStart = () => Promise.reject(refusal("agent_not_found", "no agent `writer`"));
    const root = document.createElement("div");
    await startApp(root, backend).refresh();
    const prompt = root.querySelector("#run-prompt") as HTMLTextAreaElement;
    prompt.value = "go";
    (root.querySelector("#run-button") as HTMLButtonElement).click();
    await vi.waitFor(() =>
      expect(root.querySelector("#run-bar .error")?.getAttribute("data-error-code")).toBe("agent_not_found"),
    );
    expect(prompt.value).toBe("go");
  });
});
