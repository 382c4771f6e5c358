// The sessions table's tag filter and the saved views' sidebar, end to end against the fake
// backend: a tag chosen narrows the table, a view saves the filters and search text, applies them
// again, is marked while the table shows it, and is deleted; the backend keeps them.

import { flushSync } from "svelte";
import { beforeEach, describe, expect, it, vi } from "vitest";

import { startApp } from "./app";
import { fakeBackend, refusal, type FakeBackend } from "./fake-backend";
import { freshRoot, row } from "./testdata";

let backend: FakeBackend;
let root: HTMLElement;

beforeEach(() => {
  root = freshRoot();
  backend = fakeBackend({
    agents: [{ name: "writer", run: ["w"] }],
    sessions: [
      row("a", { status: "success", agent: "writer", tags: ["nightly", "flaky"] }),
      row("b", { status: "error", agent: "planner", tags: ["nightly"] }),
      row("c", { status: "error", agent: "writer" }),
    ],
  });
});

async function start(): Promise<void> {
  const app = startApp(root, backend);
  await app.ready;
  await app.refresh();
}

const ids = () => [...root.querySelectorAll("tr[data-session-id]")].map((tr) => tr.getAttribute("data-session-id"));
const choose = (css: string, value: string) => {
  const select = root.querySelector(css) as HTMLSelectElement;
  select.value = value;
  select.dispatchEvent(new Event("change", { bubbles: true }));
  flushSync();
};
const views = () => [...root.querySelectorAll(".saved-view")].map((view) => view.getAttribute("data-view"));
const currentView = () => root.querySelector(".view-apply[aria-current='true']")?.textContent ?? null;

describe("the tag filter", () => {
  it("narrows the table to the sessions holding every tag chosen, and shows tags as chips", async () => {
    await start();
    expect(ids()).toEqual(["a", "b", "c"]);
    const chips = [...root.querySelectorAll("tr[data-session-id='a'] .row-tags .tag-chip")];
    expect(chips.map((chip) => chip.textContent)).toEqual(["nightly", "flaky"]);
    choose("#filter-tag", "nightly");
    expect(ids()).toEqual(["a", "b"]);
    choose("#filter-tag", "flaky");
    expect(ids()).toEqual(["a"]);
    expect(root.querySelector(".sessions-head .count")?.textContent).toBe("1 of 3");
    root.querySelector<HTMLButtonElement>("[aria-label='Stop filtering by the tag nightly']")!.click();
    flushSync();
    expect(ids()).toEqual(["a"]);
    root.querySelector<HTMLButtonElement>("[aria-label='Stop filtering by the tag flaky']")!.click();
    flushSync();
    expect(ids()).toEqual(["a", "b", "c"]);
  });
});

describe("saved views", () => {
  it("save the table's filters under a name, apply them again, and are deleted", async () => {
    backend.views = [{ name: "writer's", filters: { agent: "writer" }, saved_at: "2026-12-01T00:00:00Z" }];
    await start();
    await vi.waitFor(() => expect(views()).toEqual(["writer's"]));
    expect(currentView()).toBeNull();

    choose("#filter-status", "error");
    choose("#filter-tag", "nightly");
    expect(ids()).toEqual(["b"]);
    root.querySelector<HTMLButtonElement>("#view-save-start")!.click();
    flushSync();
    const name = root.querySelector<HTMLInputElement>("#view-name")!;
    expect(document.activeElement).toBe(name);
    name.value = "nightly failures";
    name.dispatchEvent(new Event("input", { bubbles: true }));
    name.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    await vi.waitFor(() => expect(views()).toEqual(["nightly failures", "writer's"]));
    expect(backend.views.find((view) => view.name === "nightly failures")?.filters).toEqual({
      status: "error",
      tags: ["nightly"],
    });
    expect(currentView()).toBe("nightly failures");

    // Another view: its filters replace the table's.
    root.querySelector<HTMLButtonElement>('[data-view="writer\'s"] .view-apply')!.click();
    flushSync();
    expect(ids()).toEqual(["a", "c"]);
    expect(currentView()).toBe("writer's");
    expect(root.querySelector(".filters .filter-tag")).toBeNull();
    root.querySelector<HTMLButtonElement>("[data-view='nightly failures'] .view-apply")!.click();
    flushSync();
    expect(ids()).toEqual(["b"]);
    expect((root.querySelector("#filter-status") as HTMLSelectElement).value).toBe("error");

    root.querySelector<HTMLButtonElement>("[aria-label='Delete the view nightly failures']")!.click();
    await vi.waitFor(() => expect(views()).toEqual(["writer's"]));
    expect(backend.calls).toContain("viewDelete(nightly failures)");
  });

  it("keep the search text, and say why a name is refused", async () => {
    await start();
    await vi.waitFor(() => expect(root.querySelector(".views-none")).not.toBeNull());
    const search = root.querySelector<HTMLInputElement>("#search")!;
    const type = (input: HTMLInputElement, text: string) => {
      input.value = text;
      input.dispatchEvent(new Event("input", { bubbles: true }));
      flushSync();
    };
    type(search, "timeout");
    root.querySelector<HTMLButtonElement>("#view-save-start")!.click();
    flushSync();
    type(root.querySelector<HTMLInputElement>("#view-name")!, "  timeouts ");
    root.querySelector<HTMLButtonElement>("#view-save")!.click();
    await vi.waitFor(() => expect(views()).toEqual(["timeouts"]));
    expect(backend.views[0]?.filters).toEqual({ search: "timeout" });
    type(search, "");
    expect(currentView()).toBeNull();
    root.querySelector<HTMLButtonElement>("[data-view='timeouts'] .view-apply")!.click();
    flushSync();
    expect(search.value).toBe("timeout");
    expect(currentView()).toBe("timeouts");

    backend.viewSave = () => Promise.reject(refusal("invalid_view_name", "the view name is refused"));
    root.querySelector<HTMLButtonElement>("#view-save-start")!.click();
    flushSync();
    type(root.querySelector<HTMLInputElement>("#view-name")!, "another");
    root.querySelector<HTMLButtonElement>("#view-save")!.click();
    await vi.waitFor(() =>
      expect(root.querySelector("#saved-views [data-error-code='invalid_view_name']")?.textContent).toContain(
        "the view name is refused",
      ),
    );
    expect(views()).toEqual(["timeouts"]);
  });
});
