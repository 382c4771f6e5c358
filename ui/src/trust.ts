// Agents come from the workspace's `.zibby/studio.toml`, which a cloned repository can fill with
// any command: the shell refuses to run one from a file (by content) the user has not trusted in
// this workspace, with what it would run. `askingToTrust` wraps the backend so that every way a
// run starts (the Run bar, Continue, Re-run node) asks once, then trusts and starts again. The
// question is components/TrustDialog.svelte.

import type { Backend } from "./backend";
import type { Launch } from "./types";

/** The launch an `agents_untrusted` refusal carries, else null. */
export function untrustedLaunch(error: unknown): Launch | null {
  if (typeof error !== "object" || error === null) return null;
  const { code, details } = error as { code?: unknown; details?: unknown };
  if (code !== "agents_untrusted" || typeof details !== "object" || details === null) return null;
  const launch = details as Launch;
  return typeof launch.digest === "string" && typeof launch.shown === "object" && launch.shown !== null ? launch : null;
}

/** `backend`, whose run starts ask `ask` when refused as untrusted; a "no" keeps the refusal. */
export function askingToTrust(backend: Backend, ask: (launch: Launch) => Promise<boolean>): Backend {
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
