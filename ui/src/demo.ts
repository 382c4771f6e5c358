// A workspace in memory for running the UI in a plain browser (`npm run dev`), without the desktop
// shell: a few hundred sessions, one with a long coloured output, spans, logs, messages and files.
// Loaded only when the page has no Tauri (see main.ts); the app itself never uses it.

import { detailNode, fakeBackend, type FakeBackend } from "./fake-backend";
import { row, runRecord } from "./testdata";
import type { OutputLine, Status } from "./types";

const ESC = "\x1b";

export interface DemoOptions {
  /** How many finished sessions besides the live one (`?sessions=10000`). */
  sessions?: number;
  /** No sessions and no agents (`?empty`). */
  empty?: boolean;
}

export function demoBackend(options: DemoOptions = {}, now = Date.now()): FakeBackend {
  const at = (ms: number) => new Date(now - ms).toISOString();
  const statuses: Status[] = ["success", "success", "error", "cancelled", "success", "interrupted"];
  const agents = ["writer", "planner", "reviewer"];
  const backend = fakeBackend({
    workspace: { root: "/home/demo/project", sessions_dir: "/home/demo/project/.zibby/output/sessions" },
    agents: agents.map((name) => ({ name, run: ["zibby", "agent", "run", name, "--session", "{session_id}"] })),
    sessions: [
      row("1795952464415_live", {
        title: "Refactor the login flow and add tests",
        agent: "writer",
        status: "running",
        live_run: "run-live",
        current_node: "write",
        created_at: at(95_000),
        updated_at: at(2_000),
        messages: 3,
        nodes: [
          { name: "plan", status: "success" },
          { name: "write", status: "running" },
        ],
      }),
      ...Array.from({ length: options.sessions ?? 400 }, (_, i) =>
        row(`${1795952464415 - (i + 1) * 7_919_000}_${((i + 1) * 2654435761).toString(36).slice(-4)}`, {
          title:
            i % 3 === 0
              ? null
              : `Task ${i}: ${["fix the flaky test", "write the release notes", "plan the migration"][i % 3]}`,
          agent: i % 4 === 0 ? null : agents[i % 3]!,
          status: statuses[i % statuses.length]!,
          pinned: i === 5 || i === 12,
          created_at: at(600_000 + i * 3_600_000),
          updated_at: at(300_000 + i * 3_600_000),
          messages: i % 5,
          current_node: "report",
          nodes: [
            { name: "plan", status: "success" },
            { name: "execute", status: statuses[i % statuses.length]! },
            { name: "report", status: statuses[i % statuses.length]! },
          ],
        }),
      ),
    ],
  });
  backend.recent = ["/home/demo/project", "/home/demo/other-project"];
  if (options.empty) {
    backend.sessions = [];
    backend.agents = [];
    return backend;
  }
  // A session the studio did not run: only its folder, with a raw stream capture.
  backend.sessions.push(
    row("1795900000000_cli", {
      title: null,
      agent: null,
      status: "error",
      created_at: at(86_400_000),
      updated_at: at(86_000_000),
      nodes: [{ name: "scan", status: "error" }],
    }),
  );
  backend.details.set("1795900000000_cli", {
    id: "1795900000000_cli",
    path: "/home/demo/project/.zibby/output/sessions/1795900000000_cli",
    layout: "documented",
    agent: null,
    title: null,
    status: "error",
    current_node: "scan",
    created_at: at(86_400_000),
    updated_at: at(86_000_000),
    info: null,
    result: null,
    events: [],
    raw_stream_output: { path: "raw_stream_output.txt", bytes: 120 },
    tags: [],
    problems: [],
    nodes: [detailNode("scan", "error", null)],
  });
  backend.files.set(
    "1795900000000_cli",
    new Map([
      [
        "raw_stream_output.txt",
        `${ESC}[1mscan${ESC}[0m starting\n${ESC}[31merror:${ESC}[0m cannot open ${ESC}[4mconfig.yml${ESC}[0m\n`,
      ],
    ]),
  );
  backend.runs = [
    runRecord("run-live", "1795952464415_live", {
      status: "running",
      started_at: at(95_000),
      ended_at: null,
      exit_code: null,
    }),
    runRecord("run-first", "1795952464415_live", { started_at: at(3_600_000), ended_at: at(3_540_000) }),
  ];
  backend.spans.set("run-live", [
    {
      id: 1,
      parent_id: null,
      run_id: "run-live",
      name: "run",
      kind: "run",
      depth: 0,
      started_at: at(95_000),
      ended_at: null,
      status: "running",
    },
    {
      id: 2,
      parent_id: 1,
      run_id: "run-live",
      name: "plan",
      kind: "node",
      depth: 1,
      started_at: at(94_000),
      ended_at: at(60_000),
      status: "success",
    },
    {
      id: 3,
      parent_id: 2,
      run_id: "run-live",
      name: "research",
      kind: "node",
      depth: 2,
      started_at: at(90_000),
      ended_at: at(70_000),
      status: "success",
    },
    {
      id: 4,
      parent_id: 1,
      run_id: "run-live",
      name: "write",
      kind: "node",
      depth: 1,
      started_at: at(59_000),
      ended_at: null,
      status: "running",
    },
  ]);
  const colours = [
    `${ESC}[32m✓${ESC}[0m`,
    `${ESC}[33mwarn${ESC}[0m`,
    `${ESC}[1;34minfo${ESC}[0m`,
    `${ESC}[38;5;208m256${ESC}[0m`,
    `${ESC}[38;2;200;100;255mtruecolor${ESC}[0m`,
  ];
  const lines: OutputLine[] = Array.from({ length: 120_000 }, (_, i) => ({
    seq: i + 1,
    stream: i % 97 === 0 ? "stderr" : "stdout",
    at_ms: i * 5,
    node: i < 40_000 ? "plan" : "write",
    text: `${colours[i % colours.length]} step ${i + 1}: ${i % 97 === 0 ? "retrying the request" : "working through the files"} <b>not bold</b>`,
  }));
  backend.output.set("run-live", lines);
  backend.output.set("run-first", lines.slice(0, 200));
  backend.logs.set("1795952464415_live", [
    {
      at: at(95_000),
      level: "info",
      event: "run_started",
      message: "run started",
      run_id: "run-live",
      fields: { pid: 4242 },
    },
    {
      at: at(60_000),
      level: "info",
      event: "node_end",
      message: "plan ended",
      run_id: "run-live",
      fields: { node: "plan", elapsed_ms: 34_000 },
    },
    {
      at: at(30_000),
      level: "warn",
      event: "slow_output",
      message: "no output for 20 s",
      run_id: "run-live",
      fields: {},
    },
  ]);
  backend.messages.set("1795952464415_live", [
    { seq: 1, role: "user", text: "Refactor the login flow and add tests", created_at: at(3_600_000) },
    {
      seq: 2,
      role: "assistant",
      text: "Done: the flow is split in three functions,\nwith a test for each.",
      created_at: at(3_540_000),
    },
    { seq: 3, role: "user", text: "Now the <b>error</b> paths too.", created_at: at(95_000) },
  ]);
  backend.files.set(
    "1795952464415_live",
    new Map<string, string | { binary: number }>([
      [".session-info.json", '{"session_path": "…", "current_node": "write"}'],
      ["plan/prompt.txt", "Plan the refactoring of the login flow."],
      ["plan/result.json", '{"steps": ["split", "test", "document"]}'],
      ["write/raw_output.txt", "Writing…\n".repeat(50)],
      ["screenshot.png", { binary: 48_213 }],
    ]),
  );
  const detail = {
    id: "1795952464415_live",
    path: "/home/demo/project/.zibby/output/sessions/1795952464415_live",
    layout: "engine" as const,
    agent: null,
    title: null,
    status: "running" as const,
    current_node: "write",
    created_at: at(95_000),
    updated_at: at(2_000),
    info: null,
    result: null,
    events: [],
    raw_stream_output: null,
    tags: [],
    problems: [],
    nodes: [
      {
        name: "plan",
        status: "success" as const,
        path: "/home/demo/project/.zibby/output/sessions/1795952464415_live/plan",
        artifacts: {
          prompt: { path: "plan/prompt.txt", bytes: 39 },
          prompt_preview: "Plan the refactoring of the login flow.",
          raw_output: null,
          result: { path: "plan/result.json", bytes: 40 },
          result_value: { steps: ["split", "test", "document"] },
          raw_stream: null,
        },
      },
      detailNode("write", "running", "/home/demo/project/.zibby/output/sessions/1795952464415_live/write", {
        raw_output: { path: "write/raw_output.txt", bytes: 450 },
      }),
    ],
  };
  backend.details.set(detail.id, detail);

  // The live run prints on.
  setInterval(() => {
    const seq = lines.length + 1;
    lines.push({
      seq,
      stream: "stdout",
      at_ms: seq * 5,
      node: "write",
      text: `${ESC}[36m${new Date().toLocaleTimeString()}${ESC}[0m line ${seq}`,
    });
    backend.emitOutput({ run_id: "run-live", session_id: detail.id, lines: lines.length });
  }, 250);
  return backend;
}
