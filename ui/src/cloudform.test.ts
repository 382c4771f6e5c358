// The Open Cloud Workspace form against the fake backend: the cache's limit (shown as it is now,
// changed when a size is typed) and emptying the bucket's cache first reach the shell with the
// bucket's URL.

import { flushSync } from "svelte";
import { beforeEach, describe, expect, it } from "vitest";

import { startApp } from "./app";
import { fakeBackend, type FakeBackend } from "./fake-backend";
import { cloudStatus, row } from "./testdata";

let backend: FakeBackend;
let root: HTMLElement;

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  document.body.append(root);
  backend = fakeBackend({ sessions: [row("a", { status: "success" })] });
});

const settled = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
  flushSync();
};

function type(selector: string, value: string): void {
  const input = document.querySelector<HTMLInputElement>(selector)!;
  input.value = value;
  input.dispatchEvent(new Event("input", { bubbles: true }));
  flushSync();
}

async function openForm(): Promise<void> {
  const app = startApp(root, backend);
  await app.ready;
  await app.refresh();
  backend.cloudOpenRequested();
  await settled();
}

describe("the Open Cloud Workspace form", () => {
  it("shows the cache's limit now, and sends a new one and emptying the cache with the URL", async () => {
    await openForm();
    const limit = document.querySelector<HTMLInputElement>("#cloud-cache-limit")!;
    expect(limit.placeholder).toBe("2G now");
    expect(limit.value).toBe("");
    type("#cloud-url", "s3://team/ci");
    type("#cloud-cache-limit", "500M");
    const clear = document.querySelector<HTMLInputElement>("#cloud-clear-cache")!;
    clear.click();
    flushSync();
    document.querySelector<HTMLButtonElement>("#cloud-open")!.click();
    await settled();
    expect(backend.calls).toContain("workspaceOpenCloud(s3://team/ci, null, null, 500M, true)");
    expect(document.querySelector("[data-testid='cloud-form']")).toBeNull();
  });

  it("starts from the bucket open now, its endpoint and profile", async () => {
    backend.cloud = cloudStatus("s3://team/ci", { endpoint: "http://127.0.0.1:9000", profile: "reader" });
    await openForm();
    const value = (selector: string) => document.querySelector<HTMLInputElement>(selector)!.value;
    expect([value("#cloud-url"), value("#cloud-endpoint"), value("#cloud-profile")]).toEqual([
      "s3://team/ci",
      "http://127.0.0.1:9000",
      "reader",
    ]);
  });

  it("leaves the limit and the cache as they are when neither is asked", async () => {
    await openForm();
    type("#cloud-url", "s3://team/ci");
    document.querySelector<HTMLButtonElement>("#cloud-open")!.click();
    await settled();
    expect(backend.calls).toContain("workspaceOpenCloud(s3://team/ci, null, null, null, false)");
  });
});
