import { describe, expect, it } from "vitest";

import { fakeBackend } from "./fake-backend";
import { createRunOutputs, runLabel } from "./runoutputs";
import { runRecord } from "./testdata";

const older = runRecord("r1", "s", { started_at: "2026-11-29T12:00:00Z" });
const newer = runRecord("r2", "s", { started_at: "2026-11-29T13:00:00Z", status: "running", replayed_node: "write" });
const shownRun = (element: HTMLElement) => element.querySelector(".output-view")?.getAttribute("data-run-id");

describe("the runs of the Output tab", () => {
  it("lists the runs newest first and shows the newest; a newer run takes its place", () => {
    const outputs = createRunOutputs(fakeBackend(), () => {});
    outputs.update([older], []);
    expect(shownRun(outputs.element)).toBe("r1");
    outputs.update([newer, older], []);
    expect(shownRun(outputs.element)).toBe("r2");
    expect(
      [...outputs.element.querySelectorAll("#output-run option")].map((option) => option.getAttribute("value")),
    ).toEqual(["r2", "r1"]);
  });

  it("stays on an older run the reader chose", () => {
    const outputs = createRunOutputs(fakeBackend(), () => {});
    outputs.update([newer, older], []);
    const picker = outputs.element.querySelector("#output-run") as HTMLSelectElement;
    picker.value = "r1";
    picker.dispatchEvent(new Event("change"));
    expect(shownRun(outputs.element)).toBe("r1");
    outputs.update([runRecord("r3", "s", { started_at: "2026-11-29T14:00:00Z" }), newer, older], []);
    expect(shownRun(outputs.element)).toBe("r1");
  });

  it("passes output growth to the run shown only", () => {
    const outputs = createRunOutputs(fakeBackend(), () => {});
    outputs.update([newer, older], []);
    expect(outputs.grew("r2", 10)).toBe(true);
    expect(outputs.grew("r1", 10)).toBe(false);
  });

  it("labels a run by what it was, its status and when", () => {
    expect(runLabel(newer, true)).toMatch(/^replay of write · running · .+ \(latest\)$/);
    expect(runLabel(older, false)).toMatch(/^success · /);
  });
});
