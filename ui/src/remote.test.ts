// A workspace on another machine in the window, against the fake backend: the form that opens
// one, the host in the workspace label, a lost link shown once on the workspace, and Reveal
// replaced by "Copy remote path".

import { flushSync } from "svelte";
import { beforeEach, describe, expect, it, vi } from "vitest";

import { startApp } from "./app";
import { fakeBackend, refusal, type FakeBackend } from "./fake-backend";
import type { LinkState, OutputLine } from "./types";
import { freshRoot, row, runFinished, runRecord, span } from "./testdata";

let backend: FakeBackend;
let root: HTMLElement;

beforeEach(() => {
  root = freshRoot();
  backend = fakeBackend({ sessions: [row("a", { status: "success" })] });
});

async function start(): Promise<void> {
  const app = startApp(root, backend);
  await app.ready;
  await app.refresh();
}

const settled = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
  flushSync();
};

function submit(target: string): void {
  const input = root.ownerDocument.querySelector<HTMLInputElement>("#remote-target")!;
  input.value = target;
  input.dispatchEvent(new Event("input", { bubbles: true }));
  flushSync();
  root.ownerDocument.querySelector<HTMLButtonElement>("#remote-open")!.click();
}

describe("a remote workspace", () => {
  it("opens from the menu's form and shows its host in the workspace label", async () => {
    await start();
    backend.remoteOpenRequested();
    expect(document.querySelector("[data-testid='remote-form']")).not.toBeNull();
    submit("buildbox:/srv/p");
    await settled();
    expect(backend.calls).toContain("workspaceOpenRemote(buildbox:/srv/p)");
    expect(document.querySelector("[data-testid='remote-form']")).toBeNull();
    expect(root.querySelector("#workspace-remote")?.textContent).toBe("buildbox:/srv/p");
  });

  it("keeps the form open with the error, which names the host", async () => {
    await start();
    backend.remoteRefusal = refusal("remote_link", "buildbox: not answering (Connection refused)");
    backend.remoteOpenRequested();
    submit("buildbox:/srv/p");
    await settled();
    expect(document.querySelector("[data-testid='remote-form']")?.textContent).toContain(
      "buildbox: not answering (Connection refused)",
    );
    expect(root.querySelector("#workspace-remote")).toBeNull();
  });

  it("keeps the form as it was, nothing opened, when the user says no to the shell's question", async () => {
    await start();
    backend.declinesOpening = true;
    backend.remoteOpenRequested();
    submit("buildbox:/srv/p");
    await settled();
    expect(backend.calls).toContain("workspaceOpenRemote(buildbox:/srv/p)");
    expect(document.querySelector<HTMLInputElement>("#remote-target")?.value).toBe("buildbox:/srv/p");
    expect(document.querySelector<HTMLButtonElement>("#remote-open")?.disabled).toBe(false);
    expect(root.querySelector("#workspace-remote")).toBeNull();
  });

  it("says once on the workspace that its link was lost", async () => {
    await start();
    backend.remoteOpenRequested();
    submit("buildbox:/srv/p");
    await settled();
    expect(root.querySelector("#remote-lost")).toBeNull();
    const reason = "the studio server closed the link";
    backend.remoteStatus({ ...backend.remote!, link: { state: "failed", reason }, lost: reason });
    expect(root.querySelector("#remote-lost")?.textContent).toContain("The connection to buildbox was lost");
    expect(root.querySelector("#remote-lost")?.textContent).toContain("the studio server closed the link");
    expect(root.querySelector("#remote-reconnecting")).toBeNull();
  });

  it("says on the workspace that its link is reconnecting, until it is back", async () => {
    await start();
    backend.remoteOpenRequested();
    submit("buildbox:/srv/p");
    await settled();
    const connected = backend.remote!;
    const link: LinkState = {
      state: "reconnecting",
      since_ms: 0,
      reason: "buildbox: the connection was lost",
      attempts: 2,
    };
    backend.remoteStatus({ ...connected, link });
    const notice = root.querySelector("#remote-reconnecting")?.textContent ?? "";
    expect(notice).toContain("Reconnecting to buildbox…");
    expect(notice).toContain("buildbox: the connection was lost");
    expect(notice).toContain("2 attempts so far");
    expect(root.querySelector("#remote-lost")).toBeNull();
    backend.remoteStatus(connected);
    expect(root.querySelector("#remote-reconnecting")).toBeNull();
  });
});

function outputLines(count: number): OutputLine[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: i + 1,
    stream: "stdout" as const,
    at_ms: i,
    node: "work",
    text: `line ${i + 1}`,
  }));
}

const shownSeqs = () =>
  [...document.querySelectorAll("#output .output-line")].map((line) => Number(line.getAttribute("data-seq")));

async function openOutput(): Promise<void> {
  backend.runs = [runRecord("r1", "a", { status: "running" })];
  backend.output.set("r1", outputLines(12));
  await start();
  backend.remoteOpenRequested();
  submit("buildbox:/srv/p");
  await settled();
  (root.querySelector("tr[data-session-id='a'] .session-id") as HTMLElement).click();
  flushSync();
  await vi.waitFor(() => expect(root.querySelector("[data-tab='output']")).not.toBeNull());
  (root.querySelector("[data-tab='output']") as HTMLElement).click();
  flushSync();
  await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(12));
}

describe("a remote workspace's link back", () => {
  const down: LinkState = { state: "reconnecting", since_ms: 0, reason: "buildbox: lost", attempts: 1 };

  it("reads the open output on from the lines it holds: each line once, in order", async () => {
    await openOutput();
    const connected = backend.remote!;
    backend.remoteStatus({ ...connected, link: down });
    // Written on the host while the link was down: no notice told of them.
    backend.output.set("r1", outputLines(30));
    await settled();
    expect(shownSeqs().at(-1)).toBe(12);
    backend.remoteStatus(connected);
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(30));
    expect(shownSeqs()).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it("forgets what failed to be read while the link was down", async () => {
    await openOutput();
    const connected = backend.remote!;
    backend.remoteStatus({ ...connected, link: down });
    const runOutput = backend.runOutput.bind(backend);
    backend.runOutput = () => Promise.reject(refusal("remote_link", "buildbox: the link is down, connecting again"));
    backend.emitOutput({ run_id: "r1", session_id: "a", lines: 14 });
    await vi.waitFor(() => expect(root.querySelector("#session-view")?.textContent).toContain("the link is down"));
    backend.runOutput = runOutput;
    backend.output.set("r1", outputLines(14));
    backend.remoteStatus(connected);
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(14));
    expect(root.querySelector("#session-view")?.textContent).not.toContain("the link is down");
  });

  it("reads a run's last lines when its end is told", async () => {
    await openOutput();
    backend.output.set("r1", outputLines(20));
    const finished = runFinished("r1", "a");
    backend.emit(finished);
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(20));
    expect(shownSeqs()).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
});

describe("a remote workspace's live runs when the link is back", () => {
  const down: LinkState = { state: "reconnecting", since_ms: 0, reason: "buildbox: lost", attempts: 1 };
  const stripNodes = () =>
    [...document.querySelectorAll(".live-run[data-run-id='r1'] .node")].map(
      (node) => `${node.getAttribute("data-node")}:${node.getAttribute("data-status")}`,
    );

  it("read the nodes that began and ended while it was down, now and at the run's end", async () => {
    await start();
    backend.remoteOpenRequested();
    submit("buildbox:/srv/p");
    await settled();
    backend.emit({ type: "run_started", run_id: "r1", session_id: "a", pid: 1 });
    backend.emit({ type: "node_begin", run_id: "r1", node: "plan", depth: 0, t_ms: 1 });
    await settled();
    expect(stripNodes()).toEqual(["plan:running"]);
    const connected = backend.remote!;
    backend.remoteStatus({ ...connected, link: down });
    // On the host meanwhile: `plan` ended, `write` began. No event told of it.
    backend.spans.set("r1", [span(2, "plan", 0, 1), span(3, "write", 1, null)]);
    backend.remoteStatus(connected);
    await vi.waitFor(() => expect(stripNodes()).toEqual(["plan:success", "write:running"]));
    expect(root.querySelector(".live-run[data-run-id='r1'] .live-current-node")?.textContent).toContain("write");
    // `write` ended and `report` ran before the next server followed the run: its end is told
    // from the record alone.
    backend.spans.set("r1", [span(2, "plan", 0, 1), span(3, "write", 1, 2), span(4, "report", 2, 3)]);
    backend.emit(runFinished("r1", "a"));
    await vi.waitFor(() => expect(stripNodes()).toEqual(["plan:success", "write:success", "report:success"]));
  });
});

describe("a launch's remote workspace", () => {
  it("says it is connecting in place of the missing workspace, until it opens", async () => {
    backend.connecting = "ssh://buildbox/srv/p";
    await start();
    expect(root.querySelector("#remote-connecting")?.textContent).toContain("Connecting to ssh://buildbox/srv/p");
    backend.remoteConnecting(null);
    expect(root.querySelector("#remote-connecting")).toBeNull();
  });
});
