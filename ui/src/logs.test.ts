import { render } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";

import ConversationView from "./components/session/ConversationView.svelte";
import LogsView from "./components/session/LogsView.svelte";
import { fieldsLabel, MOST_LOG_LINES, newestLogs } from "./logs";
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

describe("the Logs tab", () => {
  it("shows elapsed_ms as a duration and the other fields as key=value", () => {
    const { container } = render(LogsView, { logs: [line({ fields: { elapsed_ms: 2_400, node: "plan", n: 3 } })] });
    expect(container.querySelector(".log-elapsed")?.textContent).toBe("2.4 s");
    expect(container.querySelector(".log-fields")?.textContent).toBe(" node=plan n=3");
  });

  it("takes a line without fields (null from the store)", () => {
    const { container } = render(LogsView, { logs: [line({ fields: null, level: "error" })] });
    expect(container.querySelector(".log-line")?.getAttribute("data-level")).toBe("error");
    expect(container.querySelector(".log-elapsed")?.textContent).toBe("");
  });

  it("keeps the newest lines of a long log", () => {
    const logs = Array.from({ length: MOST_LOG_LINES + 3 }, (_, i) => i);
    expect(newestLogs(logs)).toHaveLength(MOST_LOG_LINES);
    expect(newestLogs(logs)[0]).toBe(3);
    expect(newestLogs([1, 2])).toEqual([1, 2]);
  });

  it("says when there is nothing", () => {
    expect(render(LogsView, { logs: [] }).container.textContent).toContain("No log lines");
    expect(render(ConversationView, { messages: [] }).container.textContent).toContain("No conversation messages");
  });
});

describe("fieldsLabel", () => {
  it("writes strings as they are and the rest as JSON", () => {
    expect(fieldsLabel({ a: "x y", b: { c: 1 }, elapsed_ms: 5 })).toBe('a=x y b={"c":1}');
  });
});
