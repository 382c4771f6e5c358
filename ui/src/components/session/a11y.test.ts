import { render } from "@testing-library/svelte";
import userEvent from "@testing-library/user-event";
import axe from "axe-core";
import { describe, expect, it, vi } from "vitest";

import { SESSION_TABS } from "../../sessionmodel.svelte";
import SessionView from "./SessionView.svelte";
import { sessionBackend, sessionModel, viewProps } from "./testing";

/** axe-core's rules that need no layout (colour contrast is checked in the real window). */
async function violations(): Promise<string[]> {
  const result = await axe.run(document.body, {
    rules: { "color-contrast": { enabled: false }, region: { enabled: false } },
  });
  return result.violations.map(
    (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`,
  );
}

describe("the session view's accessibility", () => {
  it("has no axe violations on any tab, live or not, with the forms open", async () => {
    const backend = sessionBackend();
    backend.files.set("s1", new Map([["a.txt", "text"]]));
    backend.logs.set("s1", [
      { at: "2026-11-29T12:00:00Z", level: "info", event: "run.started", message: "go", run_id: "r1", fields: null },
    ]);
    backend.messages.set("s1", [{ seq: 1, role: "user", text: "hi", created_at: "2026-11-29T12:00:00Z" }]);
    const { model, context } = await sessionModel(backend, "s1");
    render(SessionView, viewProps(model, context));
    await vi.waitFor(() => expect(document.querySelectorAll(".timeline-node")).toHaveLength(2));
    for (const { id } of SESSION_TABS) {
      await userEvent.click(document.querySelector(`[data-tab='${id}']`)!);
      await new Promise((resolve) => setTimeout(resolve, 30));
      if (id === "files") await userEvent.click(document.querySelector(".file-entry")!);
      expect(await violations(), id).toEqual([]);
    }
    await userEvent.click(document.querySelector("#session-rerun")!);
    expect(await violations(), "re-run form").toEqual([]);
    await userEvent.click(document.querySelector("#session-continue")!);
    expect(await violations(), "continue form").toEqual([]);
    model.update({ ...model.row!, live_run: "r1", status: "running" }, "r1");
    model.stop(false);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(await violations(), "live, stopping").toEqual([]);
    // axe over every tab takes about 5 s here alone: more than vitest's default 5 s on a busy machine.
  }, 30_000);
});
