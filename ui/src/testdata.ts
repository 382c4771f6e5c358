// Builders for the tests: rows, runs and details with sensible defaults.

import type { CloudStatus, RunEvent, RunRecord, SessionRow, Span } from "./types";

export function row(id: string, overrides: Partial<SessionRow> = {}): SessionRow {
  return {
    id,
    path: `/p/.zibby/output/sessions/${id}`,
    status: "success",
    current_node: null,
    created_at: null,
    updated_at: new Date().toISOString(),
    nodes: [],
    problems: [],
    pinned: false,
    pinned_at: null,
    title: null,
    agent: null,
    messages: 0,
    live_run: null,
    tags: [],
    has_note: false,
    usage: null,
    ...overrides,
  };
}

/** An open cloud workspace's status: current, no error. */
export function cloudStatus(url: string, overrides: Partial<CloudStatus> = {}): CloudStatus {
  return {
    url,
    endpoint: null,
    profile: null,
    target: url,
    error: null,
    checking: false,
    listing: false,
    listed: 0,
    fetched: 0,
    to_fetch: 0,
    revision: 1,
    ...overrides,
  };
}

export function runRecord(id: string, sessionId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    id,
    session_id: sessionId,
    workspace: "/p",
    agent: "writer",
    command: ["w"],
    pid: null,
    process_group: null,
    status: "success",
    detached: false,
    started_at: "2026-11-29T12:00:00Z",
    ended_at: "2026-11-29T12:00:05Z",
    exit_code: 0,
    error: null,
    stopped_by: null,
    stop_requested: null,
    keeper_dir: null,
    replayed_node: null,
    origin: null,
    budget: null,
    usage: null,
    ...overrides,
  };
}

/** The moment the span builders count from. */
export const T0 = Date.parse("2026-11-29T12:00:00Z");
/** `ms` after [`T0`], as the store writes times. */
export const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A span of run `r1`, from `from` to `to` ms after [`T0`] (`null`: still running); span 1 is the
 * run, the others its nodes. */
export function span(id: number, name: string, from: number, to: number | null, overrides: Partial<Span> = {}): Span {
  return {
    id,
    parent_id: id === 1 ? null : 1,
    run_id: "r1",
    name,
    kind: id === 1 ? "run" : "node",
    depth: id === 1 ? 0 : 1,
    started_at: at(from),
    ended_at: to === null ? null : at(to),
    status: to === null ? "running" : "success",
    ...overrides,
  };
}

/** The `run_finished` event of run `runId` of session `sessionId`: a success unless overridden. */
export function runFinished(
  runId: string,
  sessionId: string,
  overrides: Partial<Extract<RunEvent, { type: "run_finished" }>> = {},
): RunEvent {
  return {
    type: "run_finished",
    run_id: runId,
    session_id: sessionId,
    status: "success",
    exit_code: 0,
    elapsed_ms: 5,
    stopped_by: null,
    error: null,
    ...overrides,
  };
}

/** An empty page with one element for the app to start in. */
export function freshRoot(): HTMLElement {
  document.body.replaceChildren();
  const root = document.createElement("div");
  document.body.append(root);
  return root;
}
