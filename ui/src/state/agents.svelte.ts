// The agents of the workspace's `.zibby/studio.toml`: the last good ones, and why the file could
// not be read again.

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import type { Loaded } from "../loaded";
import { untrustedLaunch } from "../trust";
import type { Agent, CommandError, Launch } from "../types";

export class AgentsState {
  loaded = $state.raw<Loaded<Agent[]>>({ kind: "loading" });
  /** Why the agents file could not be read again (the last good agents stay). */
  error = $state.raw<CommandError | null>(null);

  readonly #backend: Backend;
  readonly #askTrust: (launch: Launch) => Promise<boolean>;

  constructor(backend: Backend, askTrust: (launch: Launch) => Promise<boolean>) {
    this.#backend = backend;
    this.#askTrust = askTrust;
  }

  get list(): readonly Agent[] {
    return this.loaded.kind === "ok" ? this.loaded.value : [];
  }

  set(agents: Loaded<Agent[]>): void {
    if (agents.kind === "ok") {
      this.loaded = agents;
      this.error = null;
    } else if (agents.kind === "error" && this.loaded.kind === "ok") {
      // A broken file after a good one: the good agents stay, the error shows where they are chosen.
      this.error = agents.error;
    } else {
      this.loaded = agents;
    }
  }

  /** `.zibby/studio.toml` changed (`agents-changed`): its agents again, without Refresh. */
  async reload(): Promise<void> {
    try {
      this.set({ kind: "ok", value: await this.#backend.agentsList() });
    } catch (error) {
      const launch = untrustedLaunch(error);
      if (launch !== null) {
        if (
          (await this.#askTrust(launch)) &&
          (await this.#backend.agentsTrust({ agent: launch.agent, prompt: null, session_id: null, node: null }))
        ) {
          return this.reload();
        }
      }
      this.set({ kind: "error", error: toCommandError(error) });
    }
  }
}
