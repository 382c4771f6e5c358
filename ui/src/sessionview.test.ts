import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { startApp } from "./app";
import { fakeBackend, type FakeBackend } from "./fake-backend";
import { DELETE_LIVE_TITLE } from "./table";
import { row, runRecord } from "./testdata";

const EVIL = "<img src=x onerror=alert(1)>";

let backend: FakeBackend;
let root: HTMLElement;

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  document.body.append(root);
  backend = fakeBackend({
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
    {
      id: 1,
      parent_id: null,
      run_id: "r1",
      name: "run",
      kind: "run",
      depth: 0,
      started_at: "2026-11-29T12:00:00Z",
      ended_at: "2026-11-29T12:00:05Z",
      status: "success",
    },
    {
      id: 2,
      parent_id: 1,
      run_id: "r1",
      name: "plan",
      kind: "node",
      depth: 1,
      started_at: "2026-11-29T12:00:00Z",
      ended_at: "2026-11-29T12:00:02Z",
      status: "success",
    },
    {
      id: 3,
      parent_id: 1,
      run_id: "r1",
      name: "write",
      kind: "node",
      depth: 1,
      started_at: "2026-11-29T12:00:02Z",
      ended_at: "2026-11-29T12:00:05Z",
      status: "success",
    },
  ]);
  backend.output.set("r1", [
    { seq: 1, stream: "stdout", at_ms: 1, node: "plan", text: "planning" },
    { seq: 2, stream: "stderr", at_ms: 2, node: "write", text: EVIL },
  ]);
});
afterEach(() => vi.useRealTimers());

async function openSession(id: string): Promise<HTMLElement> {
  const app = startApp(root, backend);
  await app.ready;
  await app.refresh();
  (root.querySelector(`tr[data-session-id='${id}'] td.session`) as HTMLElement).click();
  await vi.waitFor(() => expect(root.querySelector(`#session-view[data-session-id='${id}']`)).not.toBeNull());
  return root.querySelector("#session-view") as HTMLElement;
}

const tab = (name: string) => root.querySelector(`[data-tab='${name}']`) as HTMLButtonElement;
const panel = () => root.querySelector("[data-panel]") as HTMLElement;

describe("the session view", () => {
  it("opens from a row, with a header naming the session, and closes with its Back button", async () => {
    const view = await openSession("s1");
    expect(root.querySelector("tr[data-session-id='s1']")?.getAttribute("aria-selected")).toBe("true");
    expect(view.querySelector(".sv-title")?.textContent).toBe("fix the login");
    expect(view.querySelector(".sv-id")?.textContent).toBe("s1");
    expect(view.querySelector("#session-status")?.getAttribute("data-status")).toBe("success");
    expect(view.querySelector("#session-status")?.classList.contains("badge")).toBe(true);
    expect(view.querySelector(".sv-agent")?.textContent).toBe("agent writer");
    expect(root.querySelector("#session-stop")).toBeNull();
    (root.querySelector("#session-close") as HTMLButtonElement).click();
    expect(root.querySelector("#session-view")).toBeNull();
  });

  it("shows the runs' spans as a waterfall on the Timeline tab", async () => {
    await openSession("s1");
    await vi.waitFor(() => expect(root.querySelectorAll(".timeline-node")).toHaveLength(2));
    expect(panel().getAttribute("data-panel")).toBe("timeline");
    expect(tab("timeline").getAttribute("aria-selected")).toBe("true");
    const write = root.querySelector(".timeline-node[data-node='write']")!;
    expect(write.getAttribute("data-status")).toBe("success");
    expect(write.querySelector(".timeline-duration")?.textContent).toBe("✓ 3.0 s");
  });

  it("reads the spans again as the session's run goes from node to node", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    backend.sessions = backend.sessions.map((r) => (r.id === "s1" ? { ...r, live_run: "r1", status: "running" } : r));
    await openSession("s1");
    await vi.waitFor(() => expect(root.querySelectorAll(".timeline-node")).toHaveLength(2));
    const spanReads = () => backend.calls.filter((call) => call === "runSpans(r1)").length;
    const before = spanReads();
    backend.spans.get("r1")!.push({
      id: 4,
      parent_id: 1,
      run_id: "r1",
      name: "review",
      kind: "node",
      depth: 1,
      started_at: "2026-11-29T12:00:05Z",
      ended_at: null,
      status: "running",
    });
    backend.emit({ type: "node_begin", run_id: "r1", node: "review", depth: 1, t_ms: 5_000 });
    backend.emit({ type: "node_begin", run_id: "other-run", node: "x", depth: 0, t_ms: 1 });
    await vi.advanceTimersByTimeAsync(600);
    await vi.waitFor(() =>
      expect(root.querySelector(".timeline-node[data-node='review']")?.getAttribute("data-status")).toBe("running"),
    );
    expect(spanReads()).toBeGreaterThan(before);
  });

  it("reads the spans again once the run ended, so its bar ends at its end however late it is looked at", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    // Read while live: no ends yet. Then the run ends and the runs are read again first.
    backend.runs = [runRecord("r1", "s1", { status: "running", ended_at: null })];
    const ended = backend.spans.get("r1")!;
    backend.spans.set(
      "r1",
      ended.map((span) => ({
        ...span,
        ended_at: span.name === "plan" ? span.ended_at : null,
        status: span.name === "plan" ? span.status : "running",
      })),
    );
    backend.sessions = backend.sessions.map((r) => (r.id === "s1" ? { ...r, live_run: "r1", status: "running" } : r));
    await openSession("s1");
    await vi.waitFor(() =>
      expect(root.querySelector(".timeline-run-bar")?.getAttribute("data-status")).toBe("running"),
    );
    backend.runs = [runRecord("r1", "s1")];
    backend.spans.set("r1", ended);
    backend.sessions = backend.sessions.map((r) => (r.id === "s1" ? { ...r, live_run: null, status: "success" } : r));
    backend.emit({
      type: "run_finished",
      run_id: "r1",
      session_id: "s1",
      status: "success",
      exit_code: 0,
      elapsed_ms: 5_000,
      stopped_by: null,
      error: null,
    });
    backend.sessionsChanged();
    await vi.advanceTimersByTimeAsync(3_600_000);
    await vi.waitFor(() =>
      expect(root.querySelector(".timeline-run-bar")?.getAttribute("data-status")).toBe("success"),
    );
    expect(root.querySelector(".timeline-run-bar .timeline-duration")?.textContent).toBe("✓ 5.0 s");
    // The header's elapsed time is the same run's start to its end, not the folder's times.
    expect(root.querySelector("#session-elapsed")?.textContent).toBe("0:05");
  });

  it("lists the folder's nodes without a time axis for a session the studio did not run", async () => {
    await openSession("folder-only");
    await vi.waitFor(() => expect(root.querySelector(".timeline-node[data-node='scan']")).not.toBeNull());
    expect(panel().textContent).toContain("not run by the studio");
  });

  it("shows the run's output lines, stderr marked, markup as text", async () => {
    await openSession("s1");
    tab("output").click();
    await vi.waitFor(() => expect(root.querySelectorAll("#output .output-line")).toHaveLength(2));
    expect(panel().getAttribute("data-panel")).toBe("output");
    expect([...root.querySelectorAll("#output-run option")].map((option) => option.getAttribute("value"))).toEqual([
      "r1",
    ]);
    const stderr = root.querySelector(".output-line.stderr .line-text");
    expect(stderr?.textContent).toBe(EVIL);
    expect(root.querySelector("img")).toBeNull();
  });

  it("follows the output of a live run as the run-output event says it grew", async () => {
    backend.sessions = backend.sessions.map((r) => (r.id === "s1" ? { ...r, live_run: "r1", status: "running" } : r));
    await openSession("s1");
    tab("output").click();
    await vi.waitFor(() => expect(root.querySelectorAll("#output .output-line")).toHaveLength(2));
    backend.output.get("r1")!.push({ seq: 3, stream: "stdout", at_ms: 3, node: "write", text: "third" });
    backend.emitOutput({ run_id: "r1", session_id: "s1", lines: 3 });
    await vi.waitFor(() =>
      expect(root.querySelector("#output .output-line:last-child")?.textContent).toContain("third"),
    );
  });

  it("shows raw_stream_output.txt, saying so, for a session without a studio run", async () => {
    backend.details.set("folder-only", {
      ...(await backend.sessionGet("folder-only")),
      raw_stream_output: { path: "/p/.zibby/output/sessions/folder-only/raw_stream_output.txt", bytes: 12 },
    });
    backend.files.set("folder-only", new Map([["raw_stream_output.txt", `\x1b[32mgreen\x1b[0m ${EVIL}\n`]]));
    await openSession("folder-only");
    tab("output").click();
    await vi.waitFor(() =>
      expect(root.querySelector("#raw-stream-output .file-text")?.textContent).toBe(`green ${EVIL}\n`),
    );
    expect(root.querySelector("#raw-stream-output .ansi-fg-2")?.textContent).toBe("green");
    expect(panel().textContent).toContain("raw_stream_output.txt");
    expect(root.querySelector("img")).toBeNull();
  });

  it("shows each node's prompt and result, formatted or raw", async () => {
    const detail = await backend.sessionGet("s1");
    const path = "/p/.zibby/output/sessions/s1/plan";
    detail.nodes[0]!.artifacts = {
      ...detail.nodes[0]!.artifacts,
      prompt: { path: `${path}/prompt.txt`, bytes: 30 },
      prompt_preview: "Plan the",
      result: { path: `${path}/result.json`, bytes: 20 },
      result_value: { steps: [1, 2] },
    };
    backend.details.set("s1", detail);
    backend.files.set(
      "s1",
      new Map([
        ["plan/prompt.txt", `Plan the ${EVIL}`],
        ["plan/result.json", '{"steps":[1,2]}'],
      ]),
    );
    await openSession("s1");
    tab("nodes").click();
    await vi.waitFor(() => expect(root.querySelector(".node-card[data-node='plan']")).not.toBeNull());
    const card = root.querySelector(".node-card[data-node='plan']")!;
    const prompt = card.querySelector("[data-artifact='prompt']") as HTMLDetailsElement;
    prompt.open = true;
    prompt.dispatchEvent(new Event("toggle"));
    await vi.waitFor(() => expect(prompt.querySelector(".artifact-text")?.textContent).toBe(`Plan the ${EVIL}`));
    const result = card.querySelector("[data-artifact='result']") as HTMLDetailsElement;
    result.open = true;
    result.dispatchEvent(new Event("toggle"));
    await vi.waitFor(() =>
      expect(result.querySelector("[data-view='formatted'] .json-key")?.textContent).toBe('"steps"'),
    );
    expect(result.querySelector("[data-view='formatted']")?.textContent).toBe('{"steps": [1,2]}');
    (result.querySelector(".segmented button:last-child") as HTMLButtonElement).click();
    expect((result.querySelector("[data-view='raw']") as HTMLElement).hidden).toBe(false);
    expect(result.querySelector("[data-view='raw']")?.textContent).toBe('{"steps":[1,2]}');
    expect(root.querySelector("img")).toBeNull();
  });

  it("lists logs with their event and elapsed time, and the conversation as bubbles", async () => {
    backend.logs.set("s1", [
      {
        at: "2026-11-29T12:00:00Z",
        level: "info",
        event: "node_end",
        message: `plan ended ${EVIL}`,
        run_id: "r1",
        fields: { elapsed_ms: 2_400, node: "plan" },
      },
    ]);
    backend.messages.set("s1", [
      { seq: 1, role: "user", text: EVIL, created_at: "2026-11-29T12:00:00Z" },
      { seq: 2, role: "assistant", text: "done", created_at: "2026-11-29T12:00:05Z" },
    ]);
    await openSession("s1");
    tab("logs").click();
    await vi.waitFor(() => expect(root.querySelector(".log-line[data-event='node_end']")).not.toBeNull());
    const log = root.querySelector(".log-line")!;
    expect(log.querySelector(".log-elapsed")?.textContent).toBe("2.4 s");
    expect(log.querySelector(".log-level")?.textContent).toBe("info");
    expect(log.querySelector(".log-message")?.textContent).toContain(EVIL);
    tab("conversation").click();
    await vi.waitFor(() => expect(root.querySelectorAll(".message")).toHaveLength(2));
    expect(root.querySelector(".message[data-role='user'] .message-text")?.textContent).toBe(EVIL);
    expect(root.querySelector("img")).toBeNull();
  });

  it("lists the files and shows one in place, text as text, binary by its size, big ones in chunks", async () => {
    const big = "x".repeat(300 * 1024);
    backend.files.set(
      "s1",
      new Map<string, string | { binary: number }>([
        ["a.txt", EVIL],
        ["image.png", { binary: 2048 }],
        ["big.log", big],
      ]),
    );
    await openSession("s1");
    tab("files").click();
    await vi.waitFor(() => expect(root.querySelectorAll(".file-entry")).toHaveLength(3));
    (root.querySelector(".file-entry[data-path='a.txt']") as HTMLElement).click();
    await vi.waitFor(() => expect(root.querySelector("#file-viewer .file-text")?.textContent).toBe(EVIL));
    expect(root.querySelector("img")).toBeNull();
    (root.querySelector(".file-entry[data-path='image.png']") as HTMLElement).click();
    await vi.waitFor(() =>
      expect(root.querySelector("#file-viewer .file-status")?.textContent).toBe("binary file, 2,048 bytes"),
    );
    (root.querySelector(".file-entry[data-path='big.log']") as HTMLElement).click();
    await vi.waitFor(() => expect(root.querySelector("#file-viewer .file-text")?.textContent).toHaveLength(256 * 1024));
    const more = root.querySelector("#file-viewer .load-more") as HTMLButtonElement;
    expect(more.hidden).toBe(false);
    more.click();
    await vi.waitFor(() => expect(root.querySelector("#file-viewer .file-text")?.textContent).toHaveLength(big.length));
    expect(more.hidden).toBe(true);
  });

  it("stops a live run gracefully, then offers Force stop, and never deletes meanwhile", async () => {
    backend.sessions = backend.sessions.map((r) =>
      r.id === "s1" ? { ...r, live_run: "r-live", status: "running" } : r,
    );
    await openSession("s1");
    const remove = root.querySelector("#session-delete") as HTMLButtonElement;
    expect(remove.disabled).toBe(true);
    expect(remove.title).toBe(DELETE_LIVE_TITLE);
    (root.querySelector("#session-stop") as HTMLButtonElement).click();
    expect(backend.calls).toContain("runStop(r-live, false)");
    expect(root.querySelector("#session-stop")?.textContent).toBe("Stopping: the current node finishes first");
    (root.querySelector("#session-force-stop") as HTMLButtonElement).click();
    expect(backend.calls).toContain("runStop(r-live, true)");
    expect(backend.calls.some((call) => call.startsWith("sessionDelete"))).toBe(false);
  });

  it("shows a stop asked elsewhere (the Live runs strip, the S key) as stopping, with Force stop", async () => {
    backend.sessions = backend.sessions.map((r) =>
      r.id === "s1" ? { ...r, live_run: "r-live", status: "running" } : r,
    );
    await openSession("s1");
    expect(root.querySelector("#session-stop")?.textContent).toBe("Stop");
    backend.emit({ type: "stopping", run_id: "r-live", forced: false, elsewhere: false });
    expect(root.querySelector("#session-stop")?.textContent).toBe("Stopping: the current node finishes first");
    expect(root.querySelector("#session-force-stop")).not.toBeNull();
    expect(backend.calls.some((call) => call.startsWith("runStop"))).toBe(false);
  });

  it("continues the session with a prompt: Enter sends, Shift+Enter does not", async () => {
    await openSession("s1");
    (root.querySelector("#session-continue") as HTMLButtonElement).click();
    const prompt = root.querySelector("#continue-prompt") as HTMLTextAreaElement;
    prompt.value = "and the tests";
    prompt.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", shiftKey: true, bubbles: true }));
    expect(backend.calls.filter((call) => call.startsWith("runStart"))).toEqual([]);
    prompt.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    await vi.waitFor(() => expect(backend.calls).toContain("runStart(writer, and the tests, s1)"));
    await vi.waitFor(() => expect(root.querySelector(".live-run .live-session-id")?.textContent).toBe("s1"));
  });

  it("keeps what is typed in the Continue box, and its focus, while the session is read again", async () => {
    await openSession("s1");
    (root.querySelector("#session-continue") as HTMLButtonElement).click();
    const prompt = root.querySelector("#continue-prompt") as HTMLTextAreaElement;
    prompt.focus();
    prompt.value = "half a th";
    backend.sessions = backend.sessions.map((r) =>
      r.id === "s1" ? { ...r, updated_at: new Date(Date.now() + 5_000).toISOString() } : r,
    );
    backend.sessionsChanged();
    const reads = () => backend.calls.filter((call) => call === "sessionGet(s1)").length;
    const before = reads();
    await vi.waitFor(() => expect(reads()).toBeGreaterThan(before), { timeout: 3_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(root.querySelector("#continue-prompt")).toBe(prompt);
    expect(document.activeElement).toBe(prompt);
    expect(prompt.value).toBe("half a th");
  });

  it("re-runs a chosen node with the session's agent", async () => {
    await openSession("s1");
    (root.querySelector("#session-rerun") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(root.querySelectorAll("#rerun-node option")).toHaveLength(2));
    (root.querySelector("#rerun-node") as HTMLSelectElement).value = "write";
    (root.querySelector("#rerun-start") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(backend.calls).toContain("runReplay(s1, write, writer)"));
  });

  it("keeps the focus on a header button when the header is drawn again", async () => {
    await openSession("s1");
    (root.querySelector("#session-pin") as HTMLButtonElement).focus();
    (root.querySelector("#session-pin") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(root.querySelector("#session-pin")?.getAttribute("aria-pressed")).toBe("true"));
    expect(document.activeElement?.id).toBe("session-pin");
  });

  it("pins, reveals and asks before deleting", async () => {
    await openSession("s1");
    (root.querySelector("#session-pin") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(root.querySelector("#session-pin")?.getAttribute("aria-pressed")).toBe("true"));
    (root.querySelector("#session-reveal") as HTMLButtonElement).click();
    expect(backend.calls).toContain("sessionReveal(s1)");
    (root.querySelector("#session-delete") as HTMLButtonElement).click();
    const dialog = root.querySelector("[data-testid='delete-dialog']")!;
    expect(dialog.textContent).toContain("s1");
    expect(dialog.textContent).toContain("cannot be undone");
    (root.querySelector("[data-testid='confirm-delete']") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(root.querySelector("#session-view")).toBeNull());
    expect(backend.calls).toContain("sessionDelete(s1)");
  });
});
