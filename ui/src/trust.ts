// Agents come from the workspace's `.zibby/studio.toml`, which a cloned repository can fill with
// any command: the shell refuses to run one from a file (by content) the user has not trusted in
// this workspace, with what it would run. `askingToTrust` wraps the backend so that every way a
// run starts (the Run bar, Continue, Re-run node) asks once, then trusts and starts again.

import type { Backend } from "./backend";
import { button, el } from "./elements";
import type { AgentLaunch } from "./types";

/** The launch an `agents_untrusted` refusal carries, else null. */
export function untrustedLaunch(error: unknown): AgentLaunch | null {
  if (typeof error !== "object" || error === null) return null;
  const { code, details } = error as { code?: unknown; details?: unknown };
  if (code !== "agents_untrusted" || typeof details !== "object" || details === null) return null;
  const launch = details as AgentLaunch;
  return typeof launch.digest === "string" && Array.isArray(launch.argv) ? launch : null;
}

/** `backend`, whose run starts ask `ask` when refused as untrusted; a "no" keeps the refusal. */
export function askingToTrust(backend: Backend, ask: (launch: AgentLaunch) => Promise<boolean>): Backend {
  async function attempt<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (error) {
      const launch = untrustedLaunch(error);
      if (launch === null || !(await ask(launch))) throw error;
      await backend.agentsTrust(launch.digest);
      // The file may have changed meanwhile: then it asks again, about what it says now.
      return attempt(start);
    }
  }
  const wrapped = Object.create(backend) as Backend;
  wrapped.runStart = (request) => attempt(() => backend.runStart(request));
  wrapped.runReplay = (sessionId, node, agent) => attempt(() => backend.runReplay(sessionId, node, agent));
  return wrapped;
}

/** The question, with exactly what would run. Cancel has the focus. */
export function trustDialog(launch: AgentLaunch, answer: (trust: boolean) => void): HTMLElement {
  const cancel = button({ class: "button", attrs: { id: "trust-cancel" } }, "Cancel", () => answer(false));
  const field = (label: string, value: HTMLElement | string) =>
    el("div", { class: "trust-field" }, el("dt", {}, label), el("dd", {}, value));
  const command = launch.argv.map((arg) => JSON.stringify(arg)).join(" ");
  const dialog = el(
    "div",
    {
      class: "confirm trust-dialog",
      attrs: { id: "trust-dialog", role: "alertdialog", "aria-modal": "true", "aria-labelledby": "trust-title" },
    },
    el("h2", { attrs: { id: "trust-title" } }, "Run an agent this workspace declares?"),
    el(
      "p",
      {},
      "This workspace's agents file can name any command. Run it only if you trust where the file comes from; the studio asks again for another agent or replay, and whenever this command, its folder or its environment changes.",
    ),
    el(
      "dl",
      { class: "trust-launch" },
      field("Agent", el("code", { attrs: { id: "trust-agent" } }, launch.agent)),
      field("Command", el("code", { attrs: { id: "trust-command" } }, command)),
      field("In", el("code", { attrs: { id: "trust-cwd" } }, launch.cwd)),
      field(
        "Environment",
        el(
          "code",
          { attrs: { id: "trust-env" } },
          launch.env.length === 0 ? "(none set)" : launch.env.map(([key, value]) => `${key}=${value}`).join(" "),
        ),
      ),
      field("File", el("code", {}, launch.agents_file)),
    ),
    el(
      "div",
      { class: "confirm-buttons" },
      cancel,
      button({ class: "button primary", attrs: { id: "trust-run" } }, "Trust and run", () => answer(true)),
    ),
  );
  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      answer(false);
    }
  });
  queueMicrotask(() => cancel.focus());
  return dialog;
}
