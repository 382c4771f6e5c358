import { beforeEach, describe, expect, it, vi } from "vitest";

import { STOPPING_LABEL } from "./liveruns";
import type { LiveRun } from "./runs";
import { NO_FILTERS } from "./filters";
import { DELETE_LIVE_TITLE } from "./table";
import type { CommandError, SessionRow } from "./types";
import { row } from "./testdata";
import { renderApp, shellQuote, type Actions, type ViewState } from "./view";

const now = new Date("2026-11-29T12:00:00Z");

function session(overrides: Partial<SessionRow> = {}): SessionRow {
  return row("1795952464415_3prb", {
    current_node: "report",
    created_at: "2026-11-29T11:41:04.415Z",
    updated_at: "2026-11-29T11:55:00.000Z",
    nodes: [
      { name: "plan", status: "success" },
      { name: "execute", status: "success" },
      { name: "report", status: "success" },
    ],
    ...overrides,
  });
}

function state(overrides: Partial<ViewState> = {}): ViewState {
  return {
    workspace: { kind: "ok", value: { root: "/p", sessions_dir: "/p/.zibby/output/sessions" } },
    sessions: { kind: "ok", value: [session()] },
    agents: { kind: "ok", value: [] },
    runs: [],
    runsNow: now.getTime(),
    starting: false,
    runError: null,
    pinError: null,
    confirmDelete: null,
    deleteError: null,
    refreshing: false,
    now,
    openSession: null,
    sessionView: null,
    selected: null,
    filters: NO_FILTERS,
    search: { kind: "idle" },
    workspaceMenu: null,
    agentForm: null,
    quitRequest: null,
    trustRequest: null,
    watchNotice: null,
    ...overrides,
  };
}

let root: HTMLElement;
const noActions: Actions = {
  refresh() {},
  togglePin() {},
  runStart: () => Promise.resolve(false),
  runStop() {},
  dismissRun() {},
  askDelete() {},
  deleteSession() {},
  openSession() {},
  setFilters() {},
  search() {},
  openHit() {},
  toggleWorkspaceMenu() {},
  openWorkspace() {},
  pickWorkspace() {},
  editAgent() {},
  saveAgent() {},
  closeAgentForm() {},
  answerQuit() {},
};

function spyActions() {
  return {
    refresh: vi.fn(),
    togglePin: vi.fn<Actions["togglePin"]>(),
    runStart: vi.fn<Actions["runStart"]>().mockResolvedValue(true),
    runStop: vi.fn<Actions["runStop"]>(),
    dismissRun: vi.fn<Actions["dismissRun"]>(),
    askDelete: vi.fn<Actions["askDelete"]>(),
    deleteSession: vi.fn<Actions["deleteSession"]>(),
    openSession: vi.fn<Actions["openSession"]>(),
    setFilters: vi.fn<Actions["setFilters"]>(),
    search: vi.fn<Actions["search"]>(),
    openHit: vi.fn<Actions["openHit"]>(),
    toggleWorkspaceMenu: vi.fn<Actions["toggleWorkspaceMenu"]>(),
    openWorkspace: vi.fn<Actions["openWorkspace"]>(),
    pickWorkspace: vi.fn<Actions["pickWorkspace"]>(),
    editAgent: vi.fn<Actions["editAgent"]>(),
    saveAgent: vi.fn<Actions["saveAgent"]>(),
    closeAgentForm: vi.fn<Actions["closeAgentForm"]>(),
    answerQuit: vi.fn<Actions["answerQuit"]>(),
  } satisfies Actions;
}

function liveRun(overrides: Partial<LiveRun> = {}): LiveRun {
  return {
    runId: "r1",
    sessionId: "1795952464415_3prb",
    startedAt: now.getTime() - 7_000,
    nodes: [
      { name: "plan", status: "success" },
      { name: "write", status: "running" },
    ],
    currentNode: "write",
    stop: "none",
    stopError: null,
    end: null,
    ...overrides,
  };
}

const agents = [
  { name: "writer", run: ["w"] },
  { name: "planner", run: ["p"] },
];

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
    expect(row.querySelector("td.progress .progress-count")?.textContent).toBe("3/3");
    expect(row.querySelector("td.progress")?.getAttribute("title")).toBe(
      "plan: success\nexecute: success\nreport: success",
    );
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
    const error: CommandError = { code: "workspace_not_found", message: "workspace not found: /nope" };
    renderApp(root, state({ workspace: { kind: "error", error }, sessions: { kind: "error", error } }), noActions);
    expect(root.querySelectorAll(".error")).toHaveLength(1);
    expect(root.querySelector(".error-title")?.textContent).toContain("workspace could not be opened");
    expect((root.querySelector("#refresh") as HTMLButtonElement).disabled).toBe(true);
  });
});

describe("the pin column", () => {
  it("has a star per row that says whether the session is pinned", () => {
    const sessions = [session({ id: "a", pinned: true }), session({ id: "b" })];
    renderApp(root, state({ sessions: { kind: "ok", value: sessions } }), noActions);
    const stars = [...root.querySelectorAll("[data-testid='pin']")];
    expect(stars.map((star) => star.getAttribute("aria-pressed"))).toEqual(["true", "false"]);
    expect(stars.map((star) => star.getAttribute("title"))).toEqual(["Unpin", "Pin"]);
    expect(stars.map((star) => star.textContent)).toEqual(["★", "☆"]);
    expect(root.querySelector("tr[data-session-id='a']")?.classList.contains("pinned")).toBe(true);
  });

  it("asks to pin an unpinned session, and to unpin a pinned one", () => {
    const actions = spyActions();
    const sessions = [session({ id: "a", pinned: true }), session({ id: "b" })];
    renderApp(root, state({ sessions: { kind: "ok", value: sessions } }), actions);
    (root.querySelector("tr[data-session-id='b'] [data-testid='pin']") as HTMLButtonElement).click();
    (root.querySelector("tr[data-session-id='a'] [data-testid='pin']") as HTMLButtonElement).click();
    expect(actions.togglePin.mock.calls).toEqual([
      ["b", true],
      ["a", false],
    ]);
  });

  it("shows the session's title under its id, as text", () => {
    const title = "<b>fix the login</b>";
    renderApp(root, state({ sessions: { kind: "ok", value: [session({ title, agent: "writer" })] } }), noActions);
    expect(root.querySelector(".session-title")?.textContent).toBe(title);
    expect(root.querySelector(".session-title b")).toBeNull();
  });
});

describe("the Run bar", () => {
  it("offers to add an agent when the workspace has none, and lists them when it has", () => {
    const actions = spyActions();
    renderApp(root, state(), actions);
    expect((root.querySelector("#run-bar .run-row") as HTMLElement).hidden).toBe(true);
    expect((root.querySelector("#run-bar .no-agents") as HTMLElement).hidden).toBe(false);
    (root.querySelector("#run-agent-add") as HTMLButtonElement).click();
    expect(actions.editAgent).toHaveBeenCalledWith(null);
    renderApp(root, state({ agents: { kind: "ok", value: agents } }), noActions);
    expect((root.querySelector("#run-bar .run-row") as HTMLElement).hidden).toBe(false);
    const options = [...root.querySelectorAll("#run-agent option")].map((option) => option.textContent);
    expect(options).toEqual(["writer", "planner"]);
  });

  it("runs the selected agent on Enter, keeps Shift+Enter for a new line, and clears the prompt", async () => {
    const actions = spyActions();
    renderApp(root, state({ agents: { kind: "ok", value: agents } }), actions);
    (root.querySelector("#run-agent") as HTMLSelectElement).value = "planner";
    const prompt = root.querySelector("#run-prompt") as HTMLTextAreaElement;
    prompt.value = "plan the release";
    prompt.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", shiftKey: true, bubbles: true }));
    expect(actions.runStart).not.toHaveBeenCalled();
    prompt.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    expect(actions.runStart).toHaveBeenCalledWith("planner", "plan the release");
    await vi.waitFor(() => expect(prompt.value).toBe(""));
  });

  it("does not run an empty prompt", () => {
    const actions = spyActions();
    renderApp(root, state({ agents: { kind: "ok", value: agents } }), actions);
    (root.querySelector("#run-button") as HTMLButtonElement).click();
    expect(actions.runStart).not.toHaveBeenCalled();
  });

  it("keeps what is being typed when the page is drawn again", () => {
    renderApp(root, state({ agents: { kind: "ok", value: agents } }), noActions);
    const prompt = root.querySelector("#run-prompt") as HTMLTextAreaElement;
    prompt.value = "half a thought";
    renderApp(root, state({ agents: { kind: "ok", value: agents }, runs: [liveRun()] }), noActions);
    expect(root.querySelector("#run-prompt")).toBe(prompt);
    expect(prompt.value).toBe("half a thought");
  });

  it("calls the actions of the latest render", () => {
    const first = spyActions();
    const latest = spyActions();
    renderApp(root, state({ agents: { kind: "ok", value: agents } }), first);
    renderApp(root, state({ agents: { kind: "ok", value: agents } }), latest);
    (root.querySelector("#run-prompt") as HTMLTextAreaElement).value = "go";
    (root.querySelector("#run-button") as HTMLButtonElement).click();
    expect(first.runStart).not.toHaveBeenCalled();
    expect(latest.runStart).toHaveBeenCalledWith("writer", "go");
  });

  it("shows why a run could not start", () => {
    const runError: CommandError = { code: "agent_not_found", message: "no agent `x` in /p/.zibby/studio.toml" };
    renderApp(root, state({ agents: { kind: "ok", value: agents }, runError }), noActions);
    expect(root.querySelector("#run-bar .error")?.getAttribute("data-error-code")).toBe("agent_not_found");
  });
});

describe("the Live runs strip", () => {
  it("is not there without runs", () => {
    renderApp(root, state(), noActions);
    expect(root.querySelector(".live-runs")).toBeNull();
  });

  it("shows each run's session, current node, node badges and elapsed time", () => {
    renderApp(root, state({ runs: [liveRun()] }), noActions);
    const run = root.querySelector(".live-run[data-run-id='r1']")!;
    expect(root.querySelector(".live-runs h1")?.textContent).toBe("Live runs");
    expect(run.querySelector(".live-session-id")?.textContent).toBe("1795952464415_3prb");
    expect(run.querySelector(".live-current-node")?.textContent).toBe("▸ write");
    const badges = [...run.querySelectorAll(".live-nodes .node")];
    expect(badges.map((node) => [node.getAttribute("data-node"), node.getAttribute("data-status")])).toEqual([
      ["plan", "success"],
      ["write", "running"],
    ]);
    expect(run.querySelector(".elapsed")?.textContent).toBe("0:07");
  });

  it("turns Stop into a waiting label and offers Force stop", () => {
    const actions = spyActions();
    renderApp(root, state({ runs: [liveRun()] }), actions);
    (root.querySelector(".live-run .stop") as HTMLButtonElement).click();
    expect(actions.runStop).toHaveBeenCalledWith("r1", false);

    renderApp(root, state({ runs: [liveRun({ stop: "graceful" })] }), actions);
    const stop = root.querySelector(".live-run .stop") as HTMLButtonElement;
    expect(stop.textContent).toBe(STOPPING_LABEL);
    expect(stop.disabled).toBe(true);
    (root.querySelector(".live-run .force-stop") as HTMLButtonElement).click();
    expect(actions.runStop).toHaveBeenLastCalledWith("r1", true);
  });

  it("shows how a run ended, and lets it be dismissed", () => {
    const actions = spyActions();
    const end = {
      status: "cancelled" as const,
      elapsedMs: 4_200,
      exitCode: 0,
      stoppedBy: "graceful" as const,
      error: null,
    };
    renderApp(root, state({ runs: [liveRun({ end, currentNode: null })] }), actions);
    const run = root.querySelector(".live-run")!;
    expect(run.getAttribute("data-status")).toBe("cancelled");
    expect(run.querySelector(".badge")?.textContent).toBe("cancelled");
    expect(run.querySelector(".elapsed")?.textContent).toBe("0:04");
    expect(run.querySelector(".stop")).toBeNull();
    (run.querySelector(".dismiss") as HTMLButtonElement).click();
    expect(actions.dismissRun).toHaveBeenCalledWith("r1");
  });

  it("renders run strings as text", () => {
    const evil = '<img src=x onerror="window.pwned=1">';
    const end = { status: "error" as const, elapsedMs: 1, exitCode: 1, stoppedBy: null, error: evil };
    renderApp(
      root,
      state({ runs: [liveRun({ sessionId: evil, nodes: [{ name: evil, status: "error" }], currentNode: null, end })] }),
      noActions,
    );
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector(".live-session-id")?.textContent).toBe(evil);
    expect(root.querySelector(".live-run-error")?.textContent).toBe(evil);
    expect(root.querySelector(".live-current-node")?.textContent).toBe("exited with 1");
  });
});

describe("shellQuote", () => {
  it("leaves plain paths alone and quotes the rest", () => {
    expect(shellQuote("/home/me/project")).toBe("/home/me/project");
    expect(shellQuote("/home/me/my project")).toBe("'/home/me/my project'");
    expect(shellQuote("/it's")).toBe(`'/it'\\''s'`);
  });
});

describe("delete", () => {
  beforeEach(() => {
    root = document.createElement("div");
  });

  it("asks first, naming the session and what cannot be undone", () => {
    const actions = spyActions();
    renderApp(root, state(), actions);
    (root.querySelector("[data-testid='delete']") as HTMLButtonElement).click();
    expect(actions.askDelete).toHaveBeenCalledWith("1795952464415_3prb");

    renderApp(root, state({ confirmDelete: "1795952464415_3prb" }), actions);
    const dialog = root.querySelector("[data-testid='delete-dialog']") as HTMLElement;
    expect(dialog.textContent).toContain("1795952464415_3prb");
    expect(dialog.textContent).toContain("cannot be undone");
    (root.querySelector("[data-testid='cancel-delete']") as HTMLButtonElement).click();
    expect(actions.askDelete).toHaveBeenLastCalledWith(null);
    (root.querySelector("[data-testid='confirm-delete']") as HTMLButtonElement).click();
    expect(actions.deleteSession).toHaveBeenCalledWith("1795952464415_3prb");
  });

  it("is disabled, saying why, while the session's run is live", () => {
    renderApp(root, state({ runs: [liveRun()] }), spyActions());
    const remove = root.querySelector("[data-testid='delete']") as HTMLButtonElement;
    expect(remove.disabled).toBe(true);
    expect(remove.title).toBe(DELETE_LIVE_TITLE);
  });
});
