// Agents come from the workspace's `.zibby/studio.toml`, which a cloned repository can fill with
// any command: the shell refuses to run one from a file (by content) the user has not trusted in
// this workspace, with what it would run. `askingToTrust` wraps the backend so that every way a
// run starts (the Run bar, Continue, Re-run node) asks once, then trusts and starts again. The
// window's question is components/TrustDialog.svelte; its "Trust and run" then asks the shell,
// which shows the launch it works out itself in the system's dialog and trusts only on the user's
// yes there: the page cannot trust anything by itself.

import type { Backend, TrustRequest } from "./backend";
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
  async function attempt<T>(run: TrustRequest, start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (error) {
      const launch = untrustedLaunch(error);
      if (launch === null || !(await ask(launch))) throw error;
      // The user's no in the system's dialog keeps the refusal.
      if (!(await backend.agentsTrust(run))) throw error;
      // The file may have changed meanwhile: then it asks again, about what it says now.
      return attempt(run, start);
    }
  }
  const wrapped = Object.create(backend) as Backend;
  wrapped.runStart = (request) =>
    attempt({ agent: request.agent, prompt: request.prompt, session_id: request.session_id ?? null, node: null }, () =>
      backend.runStart(request),
    );
  wrapped.runReplay = (sessionId, node, agent) =>
    attempt({ agent, prompt: null, session_id: sessionId, node }, () => backend.runReplay(sessionId, node, agent));
  return wrapped;
}
