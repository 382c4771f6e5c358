import { beforeEach, describe, expect, it } from "vitest";

import type { SessionSummary } from "./types";
import { renderApp, shellQuote, type ViewState } from "./view";

const now = new Date("2026-11-29T12:00:00Z");

function session(overrides: Partial<SessionSummary> = {}): SessionSummary {
  return {
    id: "1795952464415_3prb",
    path: "/p/.zibby/output/sessions/1795952464415_3prb",
    status: "success",
    current_node: "report",
    created_at: "2026-11-29T11:41:04.415Z",
    updated_at: "2026-11-29T11:55:00.000Z",
    nodes: [
      { name: "plan", status: "success" },
      { name: "execute", status: "success" },
      { name: "report", status: "success" },
    ],
    problems: [],
    ...overrides,
  };
}

function state(overrides: Partial<ViewState> = {}): ViewState {
  return {
    workspace: { kind: "ok", value: { root: "/p", sessions_dir: "/p/.zibby/output/sessions" } },
    sessions: { kind: "ok", value: [session()] },
    refreshing: false,
    now,
    ...overrides,
  };
}

let root: HTMLElement;
const noActions = { refresh() {} };

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  document.body.append(root);
});

describe("the sessions table", () => {
  it("has one row per session, keyed by id, with the columns filled in", () => {
    renderApp(root, state(), noActions);
    const rows = root.querySelectorAll("tr[data-session-id]");
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.getAttribute("data-session-id")).toBe("1795952464415_3prb");
    expect(row.querySelector(".session-id")?.textContent).toBe("1795952464415_3prb");
    expect(row.querySelector(".badge")?.getAttribute("data-status")).toBe("success");
    expect(row.querySelector(".current-node")?.textContent).toBe("report");
    expect(row.querySelector(".nodes")?.textContent).toBe("3 nodes: plan ✓ execute ✓ report ✓");
    const time = row.querySelector("td.updated time");
    expect(time?.textContent).toBe("5 min ago");
    expect(time?.getAttribute("title")).not.toBe("");
    expect(root.querySelector(".workspace-path")?.textContent).toBe("/p");
  });

  it("renders agent-provided strings as text, never as HTML", () => {
    const evil = '<img src=x onerror="window.pwned=1">';
    renderApp(
      root,
      state({
        sessions: {
          kind: "ok",
          value: [
            session({
              id: evil,
              current_node: evil,
              nodes: [{ name: evil, status: "error" }],
              problems: [{ file: evil, reason: evil }],
            }),
          ],
        },
      }),
      noActions,
    );
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector(".session-id")?.textContent).toBe(evil);
    expect(root.querySelector(".current-node")?.textContent).toBe(evil);
    expect(root.querySelector("[onerror]")).toBeNull();
  });

  it("shows a problem count when files of a session could not be read", () => {
    renderApp(
      root,
      state({ sessions: { kind: "ok", value: [session({ problems: [{ file: "a.json", reason: "bad" }] })] } }),
      noActions,
    );
    expect(root.querySelector(".problems")?.textContent).toBe("⚠ 1 problem");
  });
});

describe("other states", () => {
  it("says how to get sessions instead of showing an empty table", () => {
    renderApp(root, state({ sessions: { kind: "ok", value: [] } }), noActions);
    expect(root.querySelector("table")).toBeNull();
    const text = root.querySelector(".empty")?.textContent ?? "";
    expect(text).toContain("Run an agent with ZIBBY_EMIT_GRAPH_MARKERS=1 in this folder");
    expect(text).toContain("cargo run -p zibby-test-agent -- fill-demo /p");
  });

  it("shows a backend error's code and message in place", () => {
    renderApp(
      root,
      state({ sessions: { kind: "error", error: { code: "io", message: "cannot read /p: denied" } } }),
      noActions,
    );
    const error = root.querySelector(".error");
    expect(error?.getAttribute("data-error-code")).toBe("io");
    expect(error?.querySelector(".error-code")?.textContent).toBe("io");
    expect(error?.querySelector(".error-message")?.textContent).toBe("cannot read /p: denied");
  });

  it("blames the workspace when it could not be opened", () => {
    const error = { code: "workspace_not_found", message: "workspace not found: /nope" };
    renderApp(root, state({ workspace: { kind: "error", error }, sessions: { kind: "error", error } }), noActions);
    expect(root.querySelectorAll(".error")).toHaveLength(1);
    expect(root.querySelector(".error-title")?.textContent).toContain("workspace could not be opened");
    expect((root.querySelector("#refresh") as HTMLButtonElement).disabled).toBe(true);
  });
});

describe("shellQuote", () => {
  it("leaves plain paths alone and quotes the rest", () => {
    expect(shellQuote("/home/me/project")).toBe("/home/me/project");
    expect(shellQuote("/home/me/my project")).toBe("'/home/me/my project'");
    expect(shellQuote("/it's")).toBe(`'/it'\\''s'`);
  });
});
