// The session view as the window drives it: its model told of run events, listings, clock ticks
// and keys, and the component redrawing what changed.

import { render } from "@testing-library/svelte";
import { flushSync } from "svelte";
import { describe, expect, it, vi } from "vitest";

import SessionView from "./SessionView.svelte";
import { sessionBackend, sessionModel, viewProps } from "./testing";

describe("the session view, as the window drives its model", () => {
  it("draws what the window tells the model, and stops by the S key: graceful, then forced", async () => {
    const backend = sessionBackend();
    const rows = (await backend.sessionsList()).sessions;
    const { model, context } = await sessionModel(backend, "s1", { live: "r-live", tab: "nodes" });
    const { container } = render(SessionView, viewProps(model, context));
    const section = container.querySelector("#session-view[data-session-id='s1']");
    expect(section).not.toBeNull();
    expect(container.querySelector("[data-panel]")?.getAttribute("data-panel")).toBe("nodes");
    expect(model.liveRunId).toBe("r-live");

    // S: graceful, then forced.
    model.stopByKey();
    flushSync();
    expect(context.stopRun).toHaveBeenLastCalledWith("r-live", false);
    model.stopByKey();
    expect(context.stopRun).toHaveBeenLastCalledWith("r-live", true);

    model.onRunEvent({
      type: "run_finished",
      run_id: "r-live",
      session_id: "s1",
      status: "cancelled",
      exit_code: null,
      elapsed_ms: 10,
      stopped_by: "forced",
      error: null,
    });
    model.update({ ...rows[0]!, status: "cancelled" }, null);
    flushSync();
    expect(model.liveRunId).toBeNull();
    expect(section?.querySelector("#session-stop")?.textContent).toBe("Stopped");
    model.stopByKey(); // nothing live: nothing asked
    expect(context.stopRun).toHaveBeenCalledTimes(2);

    model.showTab("logs");
    flushSync();
    expect(container.querySelector("[data-panel]")?.getAttribute("data-panel")).toBe("logs");
    model.tick();

    model.destroy();
    await vi.waitFor(() => expect(backend.calls).toContain("sessionGet(s1)"));
  });
});
