import { render } from "@testing-library/svelte";
import userEvent from "@testing-library/user-event";
import { flushSync } from "svelte";
import { describe, expect, it, vi } from "vitest";

import RunOutputs from "./components/session/RunOutputs.svelte";
import { sessionModel } from "./components/session/testing";
import { fakeBackend } from "./fake-backend";
import { chooseRun, runLabel } from "./runoutputs";
import { row, runRecord } from "./testdata";

const older = runRecord("r1", "s", { started_at: "2026-11-29T12:00:00Z" });
const newer = runRecord("r2", "s", { started_at: "2026-11-29T13:00:00Z", status: "running", replayed_node: "write" });
const newest = runRecord("r3", "s", { started_at: "2026-11-29T14:00:00Z" });
const shownRun = () => document.querySelector(".output-view")?.getAttribute("data-run-id");

async function outputs(runs = [older]) {
  const backend = fakeBackend({ sessions: [row("s")] });
  backend.runs = runs;
  const { model } = await sessionModel(backend, "s", { tab: "output" });
  await model.reload();
  render(RunOutputs, { model });
  return { model, backend };
}

describe("the runs of the Output tab", () => {
  it("lists the runs newest first and shows the newest; a newer run takes its place", async () => {
    const { model, backend } = await outputs([older]);
    expect(shownRun()).toBe("r1");
    backend.runs = [older, newer];
    await model.reload();
    flushSync();
    expect(shownRun()).toBe("r2");
    expect([...document.querySelectorAll("#output-run option")].map((option) => option.getAttribute("value"))).toEqual([
      "r2",
      "r1",
    ]);
    // The picker is in the viewer's toolbar, labelled.
    expect(document.querySelector(".output-view .toolbar #output-run")).not.toBeNull();
    expect(document.querySelector("#output-run")?.closest("label")?.textContent).toContain("Run");
  });

  it("stays on an older run the reader chose", async () => {
    const { model, backend } = await outputs([newer, older]);
    await userEvent.selectOptions(document.querySelector<HTMLSelectElement>("#output-run")!, "r1");
    expect(shownRun()).toBe("r1");
    backend.runs = [newest, newer, older];
    await model.reload();
    flushSync();
    expect(shownRun()).toBe("r1");
    expect(document.querySelector<HTMLSelectElement>("#output-run")?.value).toBe("r1");
  });

  it("passes output growth to the run shown only", async () => {
    const { model } = await outputs([newer, older]);
    await vi.waitFor(() => expect(model.outputs).not.toBeNull());
    expect(model.outputs!.grew("r2", 10)).toBe(true);
    expect(model.outputs!.grew("r1", 10)).toBe(false);
  });

  it("labels a run by what it was, its status and when", () => {
    expect(runLabel(newer, true)).toMatch(/^replay of write · running · .+ \(latest\)$/);
    expect(runLabel(older, false)).toMatch(/^success · /);
    expect(runLabel(older, false)).not.toContain("via");
    expect(runLabel({ ...newest, origin: "mcp" }, true)).toMatch(/^success · .+ · via MCP \(latest\)$/);
  });
});

describe("chooseRun", () => {
  it("shows a line's run, keeps the reader's choice, and moves from the newest to a newer one", () => {
    expect(chooseRun([older], null, null, null)).toBe("r1");
    expect(chooseRun([newer, older], "r1", "r1", null)).toBe("r2");
    expect(chooseRun([newest, newer, older], "r1", "r2", null)).toBe("r1");
    expect(chooseRun([newer, older], "r2", "r2", "r1")).toBe("r1");
    expect(chooseRun([older], "gone", "r1", null)).toBe("r1");
    expect(chooseRun([], null, null, "r1")).toBeNull();
  });
});
