import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { startApp } from "./app";
import type { Backend } from "./backend";

const workspace = { root: "/p", sessions_dir: "/p/.zibby/output/sessions" };

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("startApp", () => {
  it("shows what the backend returns, and reloads on Refresh", async () => {
    const sessionsList = vi.fn<Backend["sessionsList"]>().mockResolvedValue([]);
    const root = document.createElement("div");
    const app = startApp(root, { workspaceGet: async () => workspace, sessionsList });
    await app.refresh();
    expect(root.querySelector(".empty")).not.toBeNull();

    sessionsList.mockResolvedValue([
      {
        id: "run-1",
        path: "/p/.zibby/output/sessions/run-1",
        status: "running",
        current_node: "plan",
        created_at: null,
        updated_at: new Date().toISOString(),
        nodes: [{ name: "plan", status: "running" }],
        problems: [],
      },
    ]);
    (root.querySelector("#refresh") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(root.querySelector("tr[data-session-id='run-1']")).not.toBeNull());
    expect(sessionsList).toHaveBeenCalledTimes(2);
  });

  it("turns a rejected command into an error box with its code", async () => {
    const root = document.createElement("div");
    const app = startApp(root, {
      workspaceGet: async () => workspace,
      sessionsList: () => Promise.reject({ code: "io", message: "cannot read" }),
    });
    await app.refresh();
    expect(root.querySelector(".error")?.getAttribute("data-error-code")).toBe("io");
  });
});
