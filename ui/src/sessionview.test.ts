import { flushSync } from "svelte";
import { describe, expect, it, vi } from "vitest";

import { sessionBackend, testContext } from "./components/session/testing";
import { createSessionView } from "./sessionview";

describe("createSessionView, the adapter the app mounts", () => {
  it("mounts the view into its element and forwards the app's calls", async () => {
    const backend = sessionBackend();
    const rows = (await backend.sessionsList()).sessions;
    const context = testContext(backend);
    const view = createSessionView("s1", context, rows[0]!, "r-live", "nodes");
    document.body.replaceChildren(view.element);
    expect(view.sessionId).toBe("s1");
    expect(view.element.style.display).toBe("contents");
    const section = view.element.querySelector("#session-view[data-session-id='s1']");
    expect(section).not.toBeNull();
    expect(view.element.querySelector("[data-panel]")?.getAttribute("data-panel")).toBe("nodes");
    expect(view.liveRun()).toBe("r-live");

    // S: graceful, then forced.
    view.stop();
    flushSync();
    expect(context.stopRun).toHaveBeenLastCalledWith("r-live", false);
    view.stop();
    expect(context.stopRun).toHaveBeenLastCalledWith("r-live", true);

    view.onRunEvent({
      type: "run_finished",
      run_id: "r-live",
      session_id: "s1",
      status: "cancelled",
      exit_code: null,
      elapsed_ms: 10,
      stopped_by: "forced",
      error: null,
    });
    view.update({ ...rows[0]!, status: "cancelled" }, null);
    flushSync();
    expect(view.liveRun()).toBeNull();
    expect(section?.querySelector("#session-stop")?.textContent).toBe("Stopped");
    view.stop(); // nothing live: nothing asked
    expect(context.stopRun).toHaveBeenCalledTimes(2);

    view.showTab("logs");
    flushSync();
    expect(view.element.querySelector("[data-panel]")?.getAttribute("data-panel")).toBe("logs");
    view.tick();

    view.destroy?.();
    expect(view.element.querySelector("#session-view")).toBeNull();
    await vi.waitFor(() => expect(backend.calls).toContain("sessionGet(s1)"));
  });

  it("unmounts the view before when the next one is made (the app drops views without a word)", async () => {
    const backend = sessionBackend();
    const rows = (await backend.sessionsList()).sessions;
    const first = createSessionView("s1", testContext(backend), rows[0]!, null);
    const second = createSessionView("folder-only", testContext(backend), rows[1]!, null);
    expect(first.element.querySelector("#session-view")).toBeNull();
    expect(second.element.querySelector("#session-view[data-session-id='folder-only']")).not.toBeNull();
    second.destroy?.();
  });
});
