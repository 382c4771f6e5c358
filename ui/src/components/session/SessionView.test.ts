import { cleanup, render, screen } from "@testing-library/svelte";
import userEvent from "@testing-library/user-event";
import { flushSync } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import type { FakeBackend } from "../../fake-backend";
import { STOPPING_LABEL } from "../../sessions";
import { OUTSIDE_STOP_ASKED, OUTSIDE_STOP_TITLE, SESSION_TABS } from "../../sessionmodel.svelte";
import { DELETE_LIVE_TITLE } from "../../sessions";
import { cloudStatus, row, runRecord } from "../../testdata";
import SessionView from "./SessionView.svelte";
import { EVIL, refusal, sessionBackend, sessionModel, span, viewProps } from "./testing";

/** A control's tooltip: the window's own (`aria-describedby`), not a native `title`. */
const tooltipOf = (element: Element | null) =>
  document.getElementById(element?.getAttribute("aria-describedby") ?? "")?.textContent ?? null;

let backend: FakeBackend;

beforeEach(() => {
  backend = sessionBackend();
});
afterEach(() => vi.useRealTimers());

async function open(sessionId: string, options: Parameters<typeof sessionModel>[2] = {}) {
  const { model, context } = await sessionModel(backend, sessionId, options);
  const rendered = render(SessionView, viewProps(model, context));
  await vi.waitFor(() => expect(backend.calls).toContain(`sessionGet(${sessionId})`));
  return { model, context, ...rendered };
}

const $ = <E extends Element = HTMLElement>(css: string) => document.querySelector<E>(css);
const tab = (name: string) => $<HTMLButtonElement>(`[data-tab='${name}']`)!;
const panel = () => $("[data-panel]")!;

describe("the session view's header", () => {
  it("names the session, its status, agent and progress; Back closes it", async () => {
    const { context } = await open("s1");
    expect($("#session-view")?.getAttribute("data-session-id")).toBe("s1");
    expect($(".sv-title")?.textContent).toBe("fix the login");
    expect($(".sv-id")?.textContent).toBe("s1");
    expect($("#session-status")?.getAttribute("data-status")).toBe("success");
    expect($("#session-status")?.classList.contains("badge")).toBe(true);
    expect($(".sv-agent")?.textContent).toBe("agent writer");
    expect($(".sv-meta")?.textContent).toContain("2/2 nodes");
    // Nothing is live: Stop is there, disabled, and says so.
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(true);
    expect($("#session-stop")?.textContent).toBe("Stop");
    await userEvent.click($("#session-close")!);
    expect(context.close).toHaveBeenCalledOnce();
  });

  it("offers no Re-run, Continue, Stop or Delete in a cloud workspace (read-only); Pin stays", async () => {
    backend.cloud = cloudStatus("s3://team/ci");
    await open("s1");
    for (const id of ["#session-rerun", "#session-continue", "#session-stop", "#session-delete"]) {
      expect($(id), id).toBeNull();
    }
    expect($("#session-pin")).not.toBeNull();
    expect($("#session-export")).not.toBeNull();
  });

  it("names the node a running session is at, and none once it ended", async () => {
    backend.sessions = backend.sessions.map((session) =>
      session.id === "folder-only" ? { ...session, status: "running", current_node: "scan" } : session,
    );
    await open("folder-only");
    expect($(".sv-meta")?.textContent).toContain("▸ scan");
    backend.sessions = backend.sessions.map((session) =>
      session.id === "folder-only" ? { ...session, status: "error" } : session,
    );
    cleanup();
    await open("folder-only");
    expect($("#session-status")?.getAttribute("data-status")).toBe("error");
    expect($(".sv-meta")?.textContent).not.toContain("▸");
    expect($(".sv-meta")?.textContent).not.toContain("scan");
  });

  it("offers neither Continue nor Re-run for a session id the workspace does not know", async () => {
    await open("20990101-000000-unknown");
    await vi.waitFor(() => expect($<HTMLButtonElement>("#session-continue")?.disabled).toBe(true));
    expect($<HTMLButtonElement>("#session-rerun")?.disabled).toBe(true);
    expect(tooltipOf($("#session-continue"))).toBe("The workspace has no such session");
    // A known session of the same workspace offers both.
    await open("s1");
    await vi.waitFor(() => expect($<HTMLButtonElement>("#session-continue:not([disabled])")).not.toBeNull());
  });

  it("names a session run outside the studio by its id, once, and says where it ran", async () => {
    backend.sessions.push(row("s-terminal", { title: null, agent: null }));
    await open("s-terminal");
    expect($(".sv-title")?.textContent).toBe("s-terminal");
    expect($(".sv-id")).toBeNull();
    expect($(".sv-agent")?.textContent).toBe("run outside the studio");
    expect($(".sv-meta")?.textContent).not.toContain("unknown");
  });

  it("gives the session's cost in its header, a lower bound as one", async () => {
    const tokens = { input: 10, cache_read: 1000, cache_write: 24, output: 200, reasoning: null };
    backend.sessions.push(
      row("s-cost", {
        title: "priced",
        usage: {
          tokens,
          cost_usd: 0.0668,
          nodes: 3,
          nodes_with_usage: 2,
          nodes_priced: 2,
          label: "≥ $0.0668 (2 of 3 nodes priced)",
          short_label: "≥ $0.0668",
          tokens_label: "1,234 tokens (in 10, cache read 1,000, cache write 24, out 200)",
        },
      }),
    );
    await open("s-cost");
    expect($("#session-cost")?.textContent).toBe("≥ $0.0668 (2 of 3 nodes priced)");
    expect($("#session-cost")?.getAttribute("title")).toContain("1,234 tokens");
  });

  it("gives no cost for a session without usage", async () => {
    await open("s1");
    expect($("#session-cost")).toBeNull();
  });

  it("counts the run's elapsed time from its start to its end", async () => {
    await open("s1");
    await vi.waitFor(() => expect($("#session-elapsed")?.textContent).toBe("0:05"));
  });

  it("pins, reveals and asks before deleting", async () => {
    const { model, context } = await open("s1");
    await userEvent.click($("#session-pin")!);
    expect(context.togglePin).toHaveBeenCalledWith("s1", true);
    model.update({ ...model.row!, pinned: true }, null);
    flushSync();
    expect($("#session-pin")?.getAttribute("aria-pressed")).toBe("true");
    expect($("#session-pin")?.textContent).toBe("★ Pinned");
    await userEvent.click($("#session-reveal")!);
    expect(backend.calls).toContain("sessionReveal(s1)");
    await userEvent.click($("#session-delete")!);
    expect(context.askDelete).toHaveBeenCalledWith("s1");
  });

  it("copies the remote path in place of Reveal in a remote workspace", async () => {
    backend.remote = {
      host: "buildbox",
      path: "/srv/p",
      target: "ssh://buildbox/srv/p",
      link: { state: "connected" },
      lost: null,
    };
    const { model } = await open("s1");
    expect($("#session-reveal")).toBeNull();
    await userEvent.click($("#session-copy-remote-path")!);
    await vi.waitFor(() => expect(model.copiedPath).toBe(model.row!.path));
    expect(backend.copied).toBe(model.row!.path);
    expect(backend.calls).not.toContain("sessionReveal(s1)");
  });

  it("compares a remote session with a session here, chosen in its form", async () => {
    backend.remote = {
      host: "buildbox",
      path: "/srv/p",
      target: "ssh://buildbox/srv/p",
      link: { state: "connected" },
      lost: null,
    };
    backend.local = { root: "/home/me/here", sessions: [row("l1"), row("l2", { title: "local try" })] };
    const { context } = await open("s1");
    await userEvent.click($("#session-compare-local")!);
    await vi.waitFor(() => expect($("#compare-local-session")).not.toBeNull());
    expect($(".compare-local-form")?.textContent).toContain("/home/me/here");
    const select = $<HTMLSelectElement>("#compare-local-session")!;
    expect([...select.options].map((option) => option.textContent)).toEqual(["l1", "l2 · local try"]);
    await userEvent.selectOptions(select, "l2");
    await userEvent.click($("#compare-local-start")!);
    expect(context.compareRuns).toHaveBeenCalledWith("s1", "l2", { host: "buildbox", root: "/home/me/here" });
  });

  it("exports the session with the save dialog, says where, and says why not", async () => {
    await open("s1");
    // The dialog cancelled: nothing is said.
    await userEvent.click($("#session-export")!);
    await vi.waitFor(() => expect(backend.calls).toContain("sessionExport(s1)"));
    expect($(".sv-exported")).toBeNull();
    backend.exportTo = "/home/u/s1.zip";
    await userEvent.click($("#session-export")!);
    await vi.waitFor(() => expect($(".sv-exported")?.textContent).toBe("Exported to /home/u/s1.zip"));
    expect($(".sv-exported")?.getAttribute("role")).toBe("status");
    backend.sessionExport = () => refusal("session `s1` has a live run (r1): stop it first", "session_live");
    await userEvent.click($("#session-export")!);
    await vi.waitFor(() => expect(document.body.textContent).toContain("The session could not be exported"));
    expect(document.body.textContent).toContain("stop it first");
  });

  it("keeps the focus on a header button as the session changes", async () => {
    const { model } = await open("s1");
    const pin = $<HTMLButtonElement>("#session-pin")!;
    pin.focus();
    model.update({ ...model.row!, pinned: true, updated_at: new Date(Date.now() + 1_000).toISOString() }, null);
    flushSync();
    expect($("#session-pin")).toBe(pin);
    expect(document.activeElement).toBe(pin);
  });

  it("shows the session's title as text", async () => {
    const { model } = await open("s1");
    model.update({ ...model.row!, title: EVIL }, null);
    flushSync();
    expect($(".sv-title")?.textContent).toBe(EVIL);
    expect($("img")).toBeNull();
    // No empty heading: an empty title shows the id.
    model.update({ ...model.row!, title: "" }, null);
    flushSync();
    expect($(".sv-title")?.textContent).toBe("s1");
  });
});

describe("an imported session", () => {
  it("says where it was imported from, in full in its title", async () => {
    const detail = await backend.sessionGet("s1");
    backend.details.set("s1", { ...detail, imported: { from: "/downloads/run-42.zip", at: "2026-11-30T09:00:00Z" } });
    await open("s1");
    await vi.waitFor(() => expect($("#session-imported")?.textContent).toBe("imported from run-42.zip"));
    expect($("#session-imported")?.getAttribute("title")).toMatch(/^Imported from \/downloads\/run-42\.zip, /);
  });

  it("is the only kind that says so", async () => {
    await open("s1");
    expect($("#session-imported")).toBeNull();
  });
});

describe("the session view's tooltips", () => {
  it("are the window's own, and leave with the view", async () => {
    const { unmount } = await open("s1", { live: "r-live", row: { live_run: "r-live", status: "running" } });
    expect(tooltipOf($("#session-close"))).toBe("Close (Escape)");
    expect(tooltipOf($("#session-stop"))).toBe("Stop after the current node (S)");
    expect($("#session-stop")?.hasAttribute("title")).toBe(false);
    expect(document.querySelectorAll(".tooltip").length).toBeGreaterThan(0);
    unmount();
    expect(document.querySelectorAll(".tooltip")).toHaveLength(0);
  });
});

describe("Stop in the session view", () => {
  it("stops a live run gracefully, then offers Force stop, and never deletes meanwhile", async () => {
    const { context } = await open("s1", { live: "r-live", row: { live_run: "r-live", status: "running" } });
    const remove = $<HTMLButtonElement>("#session-delete")!;
    expect(remove.disabled).toBe(true);
    expect(tooltipOf(remove)).toBe(DELETE_LIVE_TITLE);
    expect($("#session-force-stop")).toBeNull();
    await userEvent.click($("#session-stop")!);
    expect(context.stopRun).toHaveBeenCalledWith("r-live", false);
    expect($("#session-stop")?.textContent).toBe("Stopping…");
    expect(tooltipOf($("#session-stop"))).toBe(STOPPING_LABEL);
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(true);
    await userEvent.click($("#session-force-stop")!);
    expect(context.stopRun).toHaveBeenCalledWith("r-live", true);
    expect($("#session-stop")?.textContent).toBe("Force stopping…");
    // Force stop stays, disabled: it does not vanish from under the pointer.
    expect($<HTMLButtonElement>("#session-force-stop")?.disabled).toBe(true);
    expect(context.askDelete).not.toHaveBeenCalled();
  });

  it("shows a stop asked elsewhere (the Live runs strip, the S key) as stopping, with Force stop", async () => {
    const { model, context } = await open("s1", { live: "r-live", row: { live_run: "r-live", status: "running" } });
    expect($("#session-stop")?.textContent).toBe("Stop");
    model.onRunEvent({ type: "stopping", run_id: "r-live", forced: false, elsewhere: false });
    flushSync();
    expect($("#session-stop")?.textContent).toBe("Stopping…");
    expect(tooltipOf($("#session-stop"))).toBe(STOPPING_LABEL);
    expect($("#session-force-stop")).not.toBeNull();
    expect(context.stopRun).not.toHaveBeenCalled();
  });

  it("says why a stop failed, and offers Stop again", async () => {
    const { context } = await open("s1", { live: "r-live", row: { live_run: "r-live", status: "running" } });
    context.stopRun.mockRejectedValueOnce({ code: "internal", message: "no signal" });
    await userEvent.click($("#session-stop")!);
    await vi.waitFor(() => expect($(".error .error-message")?.textContent).toBe("no signal"));
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(false);
  });

  it("stops a run the studio did not start gracefully only, and says it cannot force it", async () => {
    backend.sessions = backend.sessions.map((session) =>
      session.id === "folder-only" ? { ...session, status: "running" } : session,
    );
    const { model, context } = await open("folder-only");
    const stop = $<HTMLButtonElement>("#session-stop")!;
    expect(stop.disabled).toBe(false);
    // Its folder is not deleted under the run.
    expect($<HTMLButtonElement>("#session-delete")?.disabled).toBe(true);
    expect(tooltipOf($("#session-delete"))).toBe(DELETE_LIVE_TITLE);
    // Its limit is said before pressing.
    expect(tooltipOf(stop)).toBe(OUTSIDE_STOP_TITLE);
    expect($("#session-outside-stop")).toBeNull();
    await userEvent.click(stop);
    expect(backend.calls).toContain("sessionStopOutside(folder-only)");
    expect(context.stopRun).not.toHaveBeenCalled();
    expect($("#session-outside-stop")?.textContent).toBe(OUTSIDE_STOP_ASKED);
    expect($("#session-stop")?.textContent).toBe("Stopping…");
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(true);
    // Never a Force stop, by button or by a second S.
    expect($("#session-force-stop")).toBeNull();
    model.stopByKey();
    flushSync();
    expect($("#session-force-stop")).toBeNull();
    expect(backend.calls.filter((call) => call.startsWith("sessionStopOutside"))).toHaveLength(1);
    // Once it ended, Stop has nothing to stop; what was asked stays said.
    model.update({ ...model.row!, status: "cancelled" }, null);
    flushSync();
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(true);
    expect(tooltipOf($("#session-stop"))).toBe("Nothing is running");
    expect($("#session-outside-stop")?.textContent).toBe(OUTSIDE_STOP_ASKED);
    expect($<HTMLButtonElement>("#session-delete")?.disabled).toBe(false);
  });

  it("offers no Stop for a session that reads ended", async () => {
    await open("folder-only");
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(true);
    expect(tooltipOf($("#session-stop"))).toBe("Nothing is running");
  });

  it("says why a stop of a run the studio did not start was refused, and offers Stop again", async () => {
    // The window still reads it running; its folder already says it ended.
    await open("s1", { row: { status: "running" } });
    await userEvent.click($("#session-stop")!);
    await vi.waitFor(() => expect($(".error .error-message")?.textContent).toBe("session s1 is success"));
    expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(false);
    expect($("#session-outside-stop")).toBeNull();
  });

  /** The run ends between the press and the release of a run control: the click does nothing,
   * and what is under the pointer is the same control, disabled, never another action. */
  async function endTheRunUnder(css: string, stopFirst = false): Promise<HTMLElement> {
    const { model, context } = await open("s1", { live: "r-live", row: { live_run: "r-live", status: "running" } });
    if (stopFirst) {
      model.onRunEvent({ type: "stopping", run_id: "r-live", forced: false, elsewhere: false });
      flushSync();
    }
    const button = $<HTMLButtonElement>(css)!;
    expect(button.disabled).toBe(false);
    const slot = button.parentElement!;
    const place = [...slot.children].indexOf(button);
    const user = userEvent.setup();
    await user.pointer({ keys: "[MouseLeft>]", target: button });
    model.onRunEvent({
      type: "run_finished",
      run_id: "r-live",
      session_id: "s1",
      status: "success",
      exit_code: 0,
      elapsed_ms: 1_000,
      stopped_by: null,
      error: null,
    });
    model.update({ ...model.row!, live_run: null, status: "success" }, null);
    flushSync();
    // The same element in the same place, disabled: no other action took its place.
    expect(button.isConnected).toBe(true);
    expect([...slot.children][place]).toBe(button);
    expect(button.disabled).toBe(true);
    await user.pointer({ keys: "[/MouseLeft]", target: button });
    expect(context.stopRun).not.toHaveBeenCalled();
    expect(context.askDelete).not.toHaveBeenCalled();
    expect(model.openForm).toBeNull();
    expect($("#session-rerun")?.getAttribute("aria-expanded")).toBe("false");
    expect(backend.calls.filter((call) => /^(runReplay|runStart|runStop|sessionDelete)/.test(call))).toEqual([]);
    return button;
  }

  it("clicked as the run ends, Stop does nothing else: it says Ended, disabled, in its own place", async () => {
    const stop = await endTheRunUnder("#session-stop");
    expect(stop.textContent).toBe("Ended");
    // Re-run, Continue and Delete are never where Stop was: they come before the run controls,
    // and Stop is the last of those.
    const actions = [...$(".sv-actions")!.children];
    const controls = $(".sv-run-controls")!;
    for (const id of ["session-rerun", "session-continue", "session-delete"]) {
      expect(actions.indexOf($(`#${id}`)!)).toBeLessThan(actions.indexOf(controls));
    }
    expect(controls.lastElementChild).toBe(stop);
  });

  it("clicked as the run ends, Force stop does nothing else either", async () => {
    const force = await endTheRunUnder("#session-force-stop", true);
    expect(force.textContent).toBe("Force stop");
    expect($("#session-stop")?.textContent).toBe("Ended");
  });

  it("says Ended for a moment, then is a disabled Stop in the same place", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const { model } = await open("s1", { live: "r-live", row: { live_run: "r-live", status: "running" } });
    const stop = $("#session-stop")!;
    model.update({ ...model.row!, live_run: null, status: "cancelled" }, null);
    flushSync();
    expect(stop.textContent).toBe("Stopped");
    await vi.advanceTimersByTimeAsync(3_100);
    expect($("#session-stop")).toBe(stop);
    expect(stop.textContent).toBe("Stop");
    expect((stop as HTMLButtonElement).disabled).toBe(true);
  });
});

describe("the tabs", () => {
  it("are a tablist: one selected tab in the tab order, arrows, Home and End move and open", async () => {
    await open("s1");
    const list = screen.getByRole("tablist", { name: "Session" });
    const tabs = screen.getAllByRole("tab");
    expect(tabs.map((item) => item.getAttribute("data-tab"))).toEqual([
      "timeline",
      "output",
      "nodes",
      "logs",
      "conversation",
      "files",
    ]);
    expect(list.contains(tabs[0]!)).toBe(true);
    const selected = () => tabs.filter((item) => item.getAttribute("aria-selected") === "true");
    expect(selected()).toEqual([tab("timeline")]);
    expect(tabs.map((item) => item.tabIndex)).toEqual([0, -1, -1, -1, -1, -1]);
    expect(tab("timeline").getAttribute("aria-controls")).toBe("panel-timeline");
    const shownPanel = screen.getByRole("tabpanel");
    expect(shownPanel.id).toBe("panel-timeline");
    expect(shownPanel.getAttribute("aria-labelledby")).toBe("tab-timeline");

    const user = userEvent.setup();
    tab("timeline").focus();
    await user.keyboard("{ArrowRight}");
    expect(document.activeElement).toBe(tab("output"));
    expect(panel().getAttribute("data-panel")).toBe("output");
    expect(tab("output").tabIndex).toBe(0);
    await user.keyboard("{End}");
    expect(document.activeElement).toBe(tab("files"));
    await user.keyboard("{ArrowRight}");
    expect(document.activeElement).toBe(tab("timeline"));
    await user.keyboard("{ArrowLeft}");
    expect(document.activeElement).toBe(tab("files"));
    await user.keyboard("{Home}");
    expect(document.activeElement).toBe(tab("timeline"));
    expect(selected()).toEqual([tab("timeline")]);
    // Every tab that controls a panel names one that exists.
    for (const item of tabs) {
      const controlled = item.getAttribute("aria-controls");
      if (controlled !== null) expect(document.getElementById(controlled)).not.toBeNull();
    }
  });

  it("opens with the tab asked for", async () => {
    await open("s1", { tab: "logs" });
    expect(tab("logs").getAttribute("aria-selected")).toBe("true");
    expect(panel().getAttribute("data-panel")).toBe("logs");
  });
});

describe("the Timeline tab", () => {
  it("shows the runs' spans as a waterfall", async () => {
    await open("s1");
    await vi.waitFor(() => expect(document.querySelectorAll(".timeline-node")).toHaveLength(2));
    expect(panel().getAttribute("data-panel")).toBe("timeline");
    const write = $(".timeline-node[data-node='write']")!;
    expect(write.getAttribute("data-status")).toBe("success");
    expect(write.querySelector(".timeline-duration")?.textContent).toBe("✓ 3.0 s");
  });

  it("reads the spans again as the session's run goes from node to node", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const { model } = await open("s1", { live: "r1", row: { live_run: "r1", status: "running" } });
    await vi.waitFor(() => expect(document.querySelectorAll(".timeline-node")).toHaveLength(2));
    const spanReads = () => backend.calls.filter((call) => call === "runSpans(r1)").length;
    const before = spanReads();
    backend.spans.get("r1")!.push({ ...span(4, "review", "2026-11-29T12:00:05Z", null), depth: 1 });
    model.onRunEvent({ type: "node_begin", run_id: "r1", node: "review", depth: 1, t_ms: 5_000 });
    model.onRunEvent({ type: "node_begin", run_id: "other-run", node: "x", depth: 0, t_ms: 1 });
    await vi.advanceTimersByTimeAsync(600);
    await vi.waitFor(() =>
      expect($(".timeline-node[data-node='review']")?.getAttribute("data-status")).toBe("running"),
    );
    expect(spanReads()).toBeGreaterThan(before);
  });

  it("reads the spans again once the run ended, so its bar ends at its end however late it is looked at", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    backend.runs = [runRecord("r1", "s1", { status: "running", ended_at: null })];
    const ended = backend.spans.get("r1")!;
    backend.spans.set(
      "r1",
      ended.map((item) => ({
        ...item,
        ended_at: item.name === "plan" ? item.ended_at : null,
        status: item.name === "plan" ? item.status : "running",
      })),
    );
    const { model } = await open("s1", { live: "r1", row: { live_run: "r1", status: "running" } });
    await vi.waitFor(() => expect($(".timeline-run-bar")?.getAttribute("data-status")).toBe("running"));
    backend.runs = [runRecord("r1", "s1")];
    backend.spans.set("r1", ended);
    model.onRunEvent({
      type: "run_finished",
      run_id: "r1",
      session_id: "s1",
      status: "success",
      exit_code: 0,
      elapsed_ms: 5_000,
      stopped_by: null,
      error: null,
    });
    model.update({ ...model.row!, live_run: null, status: "success" }, null);
    await vi.advanceTimersByTimeAsync(3_600_000);
    await vi.waitFor(() => expect($(".timeline-run-bar")?.getAttribute("data-status")).toBe("success"));
    expect($(".timeline-run-bar .timeline-duration")?.textContent).toBe("✓ 5.0 s");
    // The header's elapsed time is the same run's start to its end, not the folder's times.
    expect($("#session-elapsed")?.textContent).toBe("0:05");
  });

  it("follows the clock only for a live run, in place, and not at all while nothing is live", async () => {
    let clock = Date.parse("2026-11-29T12:00:06Z");
    backend.runs = [
      runRecord("r0", "s1", { started_at: "2026-11-29T11:00:00Z", ended_at: "2026-11-29T11:00:04Z" }),
      runRecord("r1", "s1", { status: "running", ended_at: null }),
    ];
    backend.spans.set("r0", [span(9, "run", "2026-11-29T11:00:00Z", "2026-11-29T11:00:04Z", "r0")]);
    backend.spans.set("r1", [
      span(1, "run", "2026-11-29T12:00:00Z", null),
      span(2, "plan", "2026-11-29T12:00:00Z", null),
    ]);
    const context = (await sessionModel(backend, "s1")).context;
    context.now = () => clock;
    const { model } = await open("s1", { live: "r1", context, row: { live_run: "r1", status: "running" } });
    await vi.waitFor(() => expect(document.querySelectorAll(".timeline-run")).toHaveLength(2));
    const rows = [...document.querySelectorAll(".timeline-row")];
    const oldRun = $(".timeline-run[data-run-id='r0']")!;
    const oldHtml = oldRun.outerHTML;
    const planDuration = () => $(".timeline-node[data-node='plan'] .timeline-duration")?.textContent;
    expect(planDuration()).toBe("● 6.0 s");
    clock += 2_000;
    model.tick();
    flushSync();
    expect(planDuration()).toBe("● 8.0 s");
    expect($("#session-elapsed")?.textContent).toBe("0:08");
    // The same rows, updated in place; the ended run untouched.
    expect([...document.querySelectorAll(".timeline-row")]).toEqual(rows);
    expect(oldRun.outerHTML).toBe(oldHtml);

    // Nothing live: a tick changes nothing.
    model.update({ ...model.row!, live_run: null, status: "success" }, null);
    flushSync();
    const before = model.now;
    clock += 60_000;
    model.tick();
    expect(model.now).toBe(before);
  });

  it("leaves no timer behind while nothing is live (idle means idle)", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const { model } = await open("s1");
    await vi.waitFor(() => expect(document.querySelectorAll(".timeline-node")).toHaveLength(2));
    for (const { id } of SESSION_TABS) {
      model.showTab(id);
      await vi.advanceTimersByTimeAsync(1_500);
    }
    expect(vi.getTimerCount()).toBe(0);
    // A run that ends under the view: the Ended moment is the one timer, then none.
    model.update({ ...model.row!, live_run: "r1", status: "running" }, "r1");
    model.update({ ...model.row!, live_run: null, status: "success" }, null);
    await vi.advanceTimersByTimeAsync(3_500);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("lists the folder's nodes without a time axis for a session the studio did not run", async () => {
    await open("folder-only");
    await vi.waitFor(() => expect($(".timeline-node[data-node='scan']")).not.toBeNull());
    expect(panel().textContent).toContain("not run by the studio");
    expect($(".timeline-axis")).toBeNull();
  });
});

describe("the Output tab", () => {
  it("shows the run's output lines, stderr marked, markup as text", async () => {
    await open("s1");
    await userEvent.click(tab("output"));
    await vi.waitFor(() => expect(document.querySelectorAll("#output .output-line")).toHaveLength(2));
    expect(panel().getAttribute("data-panel")).toBe("output");
    expect([...document.querySelectorAll("#output-run option")].map((option) => option.getAttribute("value"))).toEqual([
      "r1",
    ]);
    expect($(".output-line.stderr .line-text")?.textContent).toBe(EVIL);
    expect($("img")).toBeNull();
  });

  it("follows the output of a live run as the run-output event says it grew", async () => {
    const { model } = await open("s1", { live: "r1", row: { live_run: "r1", status: "running" } });
    await userEvent.click(tab("output"));
    await vi.waitFor(() => expect(document.querySelectorAll("#output .output-line")).toHaveLength(2));
    backend.output.get("r1")!.push({ seq: 3, stream: "stdout", at_ms: 3, node: "write", text: "third" });
    model.onRunOutput({ run_id: "r1", session_id: "s1", lines: 3 });
    await vi.waitFor(() => expect($("#output .output-line:last-child")?.textContent).toContain("third"));
  });

  it("keeps its viewer, and the reader's place, while another tab is shown", async () => {
    await open("s1");
    await userEvent.click(tab("output"));
    await vi.waitFor(() => expect(document.querySelectorAll("#output .output-line")).toHaveLength(2));
    const viewer = $(".output-view");
    await userEvent.click(tab("logs"));
    expect(panel().getAttribute("data-panel")).toBe("logs");
    expect($<HTMLElement>("#panel-output")?.hidden).toBe(true);
    await userEvent.click(tab("output"));
    expect($(".output-view")).toBe(viewer);
    expect($<HTMLElement>("#panel-output")?.hidden).toBe(false);
  });

  it("opens at a line asked for (a search hit)", async () => {
    backend.output.set(
      "r1",
      Array.from({ length: 3_000 }, (_, i) => ({
        seq: i + 1,
        stream: "stdout" as const,
        at_ms: i,
        node: null,
        text: `line ${i + 1}`,
      })),
    );
    const { model } = await open("s1");
    model.showOutputLine("r1", 2_500);
    await vi.waitFor(() => expect($(".output-line.marked")?.getAttribute("data-seq")).toBe("2500"));
    expect(tab("output").getAttribute("aria-selected")).toBe("true");
  });

  it("shows raw_stream_output.txt, saying so, for a session without a studio run", async () => {
    backend.details.set("folder-only", {
      ...(await backend.sessionGet("folder-only")),
      raw_stream_output: { path: "/p/.zibby/output/sessions/folder-only/raw_stream_output.txt", bytes: 12 },
    });
    backend.files.set("folder-only", new Map([["raw_stream_output.txt", `\x1b[32mgreen\x1b[0m ${EVIL}\n`]]));
    await open("folder-only", { tab: "output" });
    await vi.waitFor(() => expect($("#raw-stream-output .file-text")?.textContent).toBe(`green ${EVIL}\n`));
    expect($("#raw-stream-output .ansi-fg-2")?.textContent).toBe("green");
    expect(panel().textContent).toContain("raw_stream_output.txt");
    expect($("img")).toBeNull();
  });

  it("says there is no output for a session without a run or a capture", async () => {
    await open("folder-only", { tab: "output" });
    await vi.waitFor(() => expect(panel().textContent).toContain("no raw_stream_output.txt"));
  });
});

describe("the Nodes, Logs, Conversation and Files tabs", () => {
  it("shows each node's prompt and result, formatted or raw", async () => {
    const detail = await backend.sessionGet("s1");
    const path = "/p/.zibby/output/sessions/s1/plan";
    detail.nodes[0]!.artifacts = {
      ...detail.nodes[0]!.artifacts,
      prompt: { path: `${path}/prompt.txt`, bytes: 30 },
      prompt_preview: "Plan the",
      result: { path: `${path}/result.json`, bytes: 20 },
      result_value: { steps: [1, 2] },
    };
    backend.details.set("s1", detail);
    backend.files.set(
      "s1",
      new Map([
        ["plan/prompt.txt", `Plan the ${EVIL}`],
        ["plan/result.json", '{"steps":[1,2]}'],
      ]),
    );
    await open("s1", { tab: "nodes" });
    await vi.waitFor(() => expect($(".node-card[data-node='plan']")).not.toBeNull());
    const card = $(".node-card[data-node='plan']")!;
    expect(card.querySelector("[data-artifact='raw-output']")?.textContent).toContain("none");
    const prompt = card.querySelector<HTMLDetailsElement>("[data-artifact='prompt']")!;
    prompt.open = true;
    prompt.dispatchEvent(new Event("toggle"));
    await vi.waitFor(() => expect(prompt.querySelector(".artifact-text")?.textContent).toBe(`Plan the ${EVIL}`));
    const result = card.querySelector<HTMLDetailsElement>("[data-artifact='result']")!;
    result.open = true;
    result.dispatchEvent(new Event("toggle"));
    await vi.waitFor(() =>
      expect(result.querySelector("[data-view='formatted'] .json-key")?.textContent).toBe('"steps"'),
    );
    expect(result.querySelector("[data-view='formatted']")?.textContent).toBe('{"steps": [1,2]}');
    await userEvent.click(result.querySelector(".segmented button:last-child")!);
    expect(result.querySelector<HTMLElement>("[data-view='raw']")?.hidden).toBe(false);
    expect(result.querySelector<HTMLElement>("[data-view='formatted']")?.hidden).toBe(true);
    expect(result.querySelector("[data-view='raw']")?.textContent).toBe('{"steps":[1,2]}');
    expect($("img")).toBeNull();
  });

  it("lists logs with their event and elapsed time, and the conversation as bubbles", async () => {
    backend.logs.set("s1", [
      {
        at: "2026-11-29T12:00:00Z",
        level: "info",
        event: "node_end",
        message: `plan ended ${EVIL}`,
        run_id: "r1",
        fields: { elapsed_ms: 2_400, node: "plan" },
      },
    ]);
    backend.messages.set("s1", [
      { seq: 1, role: "user", text: EVIL, created_at: "2026-11-29T12:00:00Z" },
      { seq: 2, role: "assistant", text: "done", created_at: "2026-11-29T12:00:05Z" },
    ]);
    await open("s1");
    await userEvent.click(tab("logs"));
    await vi.waitFor(() => expect($(".log-line[data-event='node_end']")).not.toBeNull());
    const log = $(".log-line")!;
    expect(log.querySelector(".log-elapsed")?.textContent).toBe("2.4 s");
    expect(log.querySelector(".log-level")?.textContent).toBe("info");
    expect(log.querySelector(".log-message")?.textContent).toContain(EVIL);
    await userEvent.click(tab("conversation"));
    await vi.waitFor(() => expect(document.querySelectorAll(".message")).toHaveLength(2));
    expect($(".message[data-role='user'] .message-text")?.textContent).toBe(EVIL);
    expect($("img")).toBeNull();
  });

  it("reads the logs again as the session is read again", async () => {
    const { model } = await open("s1", { tab: "logs" });
    await vi.waitFor(() => expect(panel().textContent).toContain("No log lines"));
    backend.logs.set("s1", [
      { at: "2026-11-29T12:00:00Z", level: "info", event: "run.started", message: "go", run_id: "r1", fields: null },
    ]);
    await model.reload();
    await vi.waitFor(() => expect($(".log-line[data-event='run.started']")).not.toBeNull());
  });

  it("says why the logs could not be read", async () => {
    backend.sessionLogs = () => refusal("gone");
    await open("s1", { tab: "logs" });
    await vi.waitFor(() => expect($(".error .error-message")?.textContent).toBe("gone"));
    expect($(".error-title")?.textContent).toContain("The logs could not be read");
  });

  it("lists the files and shows one in place, text as text, binary by its size, big ones in chunks", async () => {
    const big = "x".repeat(300 * 1024);
    backend.files.set(
      "s1",
      new Map<string, string | { binary: number }>([
        ["a.txt", EVIL],
        ["image.png", { binary: 2048 }],
        ["big.log", big],
      ]),
    );
    await open("s1");
    await userEvent.click(tab("files"));
    await vi.waitFor(() => expect(document.querySelectorAll(".file-entry")).toHaveLength(3));
    // A list of items, each a button.
    for (const child of $(".file-list")!.children) expect(child.tagName).toBe("LI");
    await userEvent.click($(".file-entry[data-path='a.txt']")!);
    await vi.waitFor(() => expect($("#file-viewer .file-text")?.textContent).toBe(EVIL));
    expect($(".file-entry[data-path='a.txt']")?.getAttribute("aria-current")).toBe("true");
    expect($("img")).toBeNull();
    await userEvent.click($(".file-entry[data-path='image.png']")!);
    await vi.waitFor(() => expect($("#file-viewer .file-status")?.textContent).toBe("binary file, 2,048 bytes"));
    await userEvent.click($(".file-entry[data-path='big.log']")!);
    await vi.waitFor(() => expect($("#file-viewer .file-text")?.textContent).toHaveLength(256 * 1024));
    const more = $<HTMLButtonElement>("#file-viewer .load-more")!;
    expect(more.hidden).toBe(false);
    await userEvent.click(more);
    await vi.waitFor(() => expect($("#file-viewer .file-text")?.textContent).toHaveLength(big.length));
    expect(more.hidden).toBe(true);
    // Back on the Files tab later, the same file is shown.
    await userEvent.click(tab("logs"));
    await userEvent.click(tab("files"));
    await vi.waitFor(() => expect($("#file-viewer")?.getAttribute("data-path")).toBe("big.log"));
  });
});

describe("Continue and Re-run node", () => {
  it("continues the session with a prompt: Enter sends, Shift+Enter does not", async () => {
    const { context } = await open("s1");
    await userEvent.click($("#session-continue")!);
    const prompt = $<HTMLTextAreaElement>("#continue-prompt")!;
    await vi.waitFor(() => expect(document.activeElement).toBe(prompt));
    expect(screen.getByRole("form", { name: "Continue the session" })).not.toBeNull();
    await userEvent.type(prompt, "and the tests{Shift>}{Enter}{/Shift}");
    expect(backend.calls.filter((call) => call.startsWith("runStart"))).toEqual([]);
    await userEvent.type(prompt, "{Backspace}{Enter}");
    await vi.waitFor(() => expect(backend.calls).toContain("runStart(writer, and the tests, s1)"));
    await vi.waitFor(() => expect(context.runStarted).toHaveBeenCalledOnce());
    // The new run is live: the form closed, Stop enabled, the Output tab open.
    await vi.waitFor(() => expect($<HTMLButtonElement>("#session-stop")?.disabled).toBe(false));
    expect($("#continue-prompt")).toBeNull();
    expect(tab("output").getAttribute("aria-selected")).toBe("true");
  });

  it("keeps what is typed in the Continue box, and its focus, while the session is read again", async () => {
    const { model } = await open("s1");
    await userEvent.click($("#session-continue")!);
    const prompt = $<HTMLTextAreaElement>("#continue-prompt")!;
    await userEvent.type(prompt, "half a th");
    const reads = () => backend.calls.filter((call) => call === "sessionGet(s1)").length;
    const before = reads();
    model.update({ ...model.row!, updated_at: new Date(Date.now() + 5_000).toISOString() }, null);
    await vi.waitFor(() => expect(reads()).toBeGreaterThan(before), { timeout: 3_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect($("#continue-prompt")).toBe(prompt);
    expect(document.activeElement).toBe(prompt);
    expect(prompt.value).toBe("half a th");
  });

  it("closes the Continue form with Escape, keeping the view open", async () => {
    const { context } = await open("s1");
    await userEvent.click($("#session-continue")!);
    const outside = vi.fn();
    document.addEventListener("keydown", outside);
    await userEvent.type($("#continue-prompt")!, "{Escape}");
    document.removeEventListener("keydown", outside);
    expect($("#continue-prompt")).toBeNull();
    expect(outside).not.toHaveBeenCalled();
    expect(context.close).not.toHaveBeenCalled();
  });

  it("re-runs a chosen node with the session's agent", async () => {
    await open("s1");
    await userEvent.click($("#session-rerun")!);
    expect($("#session-rerun")?.getAttribute("aria-expanded")).toBe("true");
    await vi.waitFor(() => expect(document.querySelectorAll("#rerun-node option")).toHaveLength(2));
    expect(screen.getByRole("form", { name: "Re-run a node" })).not.toBeNull();
    expect(screen.getByLabelText("Node")).toBe($("#rerun-node"));
    await userEvent.selectOptions($("#rerun-node")!, "write");
    await userEvent.click($("#rerun-start")!);
    await vi.waitFor(() => expect(backend.calls).toContain("runReplay(s1, write, writer)"));
  });

  it("asks for an agent when the session names none", async () => {
    backend.details.set("folder-only", await backend.sessionGet("folder-only"));
    await open("folder-only");
    await userEvent.click($("#session-rerun")!);
    await vi.waitFor(() => expect($("#rerun-agent")).not.toBeNull());
    expect([...document.querySelectorAll("#rerun-agent option")].map((option) => option.textContent)).toEqual([
      "writer",
    ]);
    await userEvent.click($("#rerun-start")!);
    await vi.waitFor(() => expect(backend.calls).toContain("runReplay(folder-only, scan, writer)"));
  });

  it("says why a run could not start, in place", async () => {
    backend.runReplay = () => refusal(`no ${EVIL}`, "agent_not_found");
    await open("s1");
    await userEvent.click($("#session-rerun")!);
    await vi.waitFor(() => expect(document.querySelectorAll("#rerun-node option")).toHaveLength(2));
    await userEvent.click($("#rerun-start")!);
    await vi.waitFor(() => expect($(".error .error-code")?.textContent).toBe("agent_not_found"));
    expect($(".error .error-message")?.textContent).toBe(`no ${EVIL}`);
    expect($("img")).toBeNull();
  });
});
