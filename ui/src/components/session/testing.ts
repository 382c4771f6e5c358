// What the session view's component tests share: a fake backend with a session and its run, and a
// context whose callbacks are recorded.

import { vi, type Mock } from "vitest";

import { fakeBackend, type FakeBackend } from "../../fake-backend";
import { SessionModel, type SessionTab, type SessionViewContext } from "../../sessionmodel.svelte";
import { row, runRecord } from "../../testdata";
import type { CommandError, SessionRow, Span } from "../../types";

/** A refusal, as the shell rejects with. */
export function refusal(message: string, code: CommandError["code"] = "internal"): Promise<never> {
  const error: CommandError = { code, message };
  return Promise.reject(error);
}

export const EVIL = "<img src=x onerror=alert(1)>";

export function span(id: number, name: string, from: string, to: string | null, runId = "r1"): Span {
  return {
    id,
    parent_id: id === 1 ? null : 1,
    run_id: runId,
    name,
    kind: id === 1 ? "run" : "node",
    depth: id === 1 ? 0 : 1,
    started_at: from,
    ended_at: to,
    status: to === null ? "running" : "success",
  };
}

/** A workspace with `s1` (run `r1` by the studio: plan, write) and `folder-only` (no run). */
export function sessionBackend(): FakeBackend {
  const backend = fakeBackend({
    agents: [{ name: "writer", run: ["w"] }],
    sessions: [
      row("s1", {
        title: "fix the login",
        agent: "writer",
        created_at: "2026-11-29T12:00:00Z",
        nodes: [
          { name: "plan", status: "success" },
          { name: "write", status: "success" },
        ],
      }),
      row("folder-only", { nodes: [{ name: "scan", status: "error" }] }),
    ],
  });
  backend.runs = [runRecord("r1", "s1")];
  backend.spans.set("r1", [
    span(1, "run", "2026-11-29T12:00:00Z", "2026-11-29T12:00:05Z"),
    span(2, "plan", "2026-11-29T12:00:00Z", "2026-11-29T12:00:02Z"),
    span(3, "write", "2026-11-29T12:00:02Z", "2026-11-29T12:00:05Z"),
  ]);
  backend.output.set("r1", [
    { seq: 1, stream: "stdout", at_ms: 1, node: "plan", text: "planning" },
    { seq: 2, stream: "stderr", at_ms: 2, node: "write", text: EVIL },
  ]);
  return backend;
}

type Recorded = "stopRun" | "runStarted";

/** The model's context, and the view's events (`SessionView`'s props), recorded. */
export interface TestContext extends Omit<SessionViewContext, Recorded | "now"> {
  stopRun: Mock<SessionViewContext["stopRun"]>;
  askDelete: Mock<(sessionId: string) => void>;
  togglePin: Mock<(sessionId: string, pin: boolean) => void>;
  runStarted: Mock<SessionViewContext["runStarted"]>;
  close: Mock<() => void>;
  compareRuns: Mock<(a: string, b: string) => void>;
  now: () => number;
}

/** `SessionView`'s props: the model, and its events going to the recorded context. */
export function viewProps(model: SessionModel, context: TestContext) {
  return {
    model,
    onclose: context.close,
    ondelete: context.askDelete,
    onpin: context.togglePin,
    oncompare: context.compareRuns,
  };
}

/** A context over the backend, recording what the view asks of the app. */
export function testContext(backend: FakeBackend, now: () => number = () => Date.now()): TestContext {
  return {
    backend,
    remote: () => backend.remote,
    readOnly: () => backend.cloud !== null,
    agents: () => [{ name: "writer", run: ["w"] }],
    stopRun: vi.fn((runId: string, force: boolean) => backend.runStop(runId, force)),
    askDelete: vi.fn(),
    togglePin: vi.fn(),
    runStarted: vi.fn(),
    close: vi.fn(),
    compareRuns: vi.fn(),
    now,
  };
}

export async function sessionModel(
  backend: FakeBackend,
  sessionId: string,
  options: { live?: string | null; tab?: SessionTab; context?: TestContext; row?: Partial<SessionRow> } = {},
): Promise<{ model: SessionModel; context: TestContext }> {
  const context = options.context ?? testContext(backend);
  const listed = (await backend.sessionsList()).sessions.find((candidate) => candidate.id === sessionId) ?? null;
  const shown = listed && { ...listed, ...options.row };
  const model = new SessionModel(sessionId, context, shown, options.live ?? null, options.tab);
  return { model, context };
}
