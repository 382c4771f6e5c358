import { describe, expect, it } from "vitest";

import { fieldsLabel, logsView } from "./logs";
import type { LogLine } from "./types";

const line = (overrides: Partial<LogLine>): LogLine => ({
  at: "2026-11-29T12:00:00Z",
  level: "info",
  event: "node_end",
  message: "plan ended",
  run_id: null,
  fields: {},
  ...overrides,
});

describe("logsView", () => {
  it("shows elapsed_ms as a duration and the other fields as key=value", () => {
    const view = logsView([line({ fields: { elapsed_ms: 2_400, node: "plan", n: 3 } })]);
    expect(view.querySelector(".log-elapsed")?.textContent).toBe("2.4 s");
    expect(view.querySelector(".log-fields")?.textContent).toBe(" node=plan n=3");
  });

  it("takes a line without fields (null from the store)", () => {
    const view = logsView([line({ fields: null, level: "error" })]);
    expect(view.querySelector(".log-line")?.getAttribute("data-level")).toBe("error");
    expect(view.querySelector(".log-elapsed")?.textContent).toBe("");
  });
});

describe("fieldsLabel", () => {
  it("writes strings as they are and the rest as JSON", () => {
    expect(fieldsLabel({ a: "x y", b: { c: 1 }, elapsed_ms: 5 })).toBe('a=x y b={"c":1}');
  });
});
