// Builders for the tests: rows, runs and details with sensible defaults.

import type { RunRecord, SessionRow } from "./types";

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
    ...overrides,
  };
}
