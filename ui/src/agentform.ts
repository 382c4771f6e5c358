// The agent form: adds or edits an agent of `.zibby/studio.toml`. The command is an argument list,
// one argument per line, never a shell string; env is KEY=VALUE lines. The parsing is pure and
// tested; the form (components/AgentForm.svelte) keeps what is typed while it saves and when the
// save is refused.

import type { Agent } from "./types";

export interface AgentFields {
  name: string;
  run: string;
  cwd: string;
  env: string;
  replay: string;
}

/** One argument per line; blank lines are skipped, spaces inside a line are kept. */
export function argLines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.replace(/\r$/, ""))
    .filter((line) => line.trim() !== "");
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** KEY=VALUE lines (the value may hold `=`); the lines that are not, by number. */
export function envLines(text: string): { env: Record<string, string>; bad: number[] } {
  const env: Record<string, string> = {};
  const bad: number[] = [];
  text.split("\n").forEach((raw, index) => {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "") return;
    const equals = line.indexOf("=");
    const key = equals === -1 ? "" : line.slice(0, equals).trim();
    if (!ENV_NAME.test(key)) bad.push(index + 1);
    else env[key] = line.slice(equals + 1);
  });
  return { env, bad };
}

/** The agent the fields describe, or what is wrong with them; what the form does not show of the
 * agent it edits (`editing`: its `inherit_env` and budget) is kept as it was. */
export function agentFromFields(
  fields: AgentFields,
  editing: Agent | null = null,
): { agent: Agent } | { problem: string } {
  const name = fields.name.trim();
  if (name === "") return { problem: "The agent needs a name." };
  if (/\s/.test(name)) return { problem: "The name cannot contain spaces." };
  const run = argLines(fields.run);
  if (run.length === 0) return { problem: "The command needs at least the program to run." };
  const { env, bad } = envLines(fields.env);
  if (bad.length > 0) {
    return {
      problem: `Environment line${bad.length > 1 ? "s" : ""} ${bad.join(", ")}: write KEY=VALUE (a letter or _ first).`,
    };
  }
  const agent: Agent = { name, run };
  const replay = argLines(fields.replay);
  if (replay.length > 0) agent.replay = replay;
  if (fields.cwd.trim() !== "") agent.cwd = fields.cwd.trim();
  if (Object.keys(env).length > 0) agent.env = env;
  if (editing?.inherit_env !== undefined) agent.inherit_env = editing.inherit_env;
  if (editing?.max_cost_usd !== undefined) agent.max_cost_usd = editing.max_cost_usd;
  if (editing?.max_tokens !== undefined) agent.max_tokens = editing.max_tokens;
  return { agent };
}

export function fieldsFromAgent(agent: Agent | null): AgentFields {
  return {
    name: agent?.name ?? "",
    run: (agent?.run ?? []).join("\n"),
    cwd: agent?.cwd ?? "",
    env: Object.entries(agent?.env ?? {})
      .map(([key, value]) => `${key}=${value}`)
      .join("\n"),
    replay: (agent?.replay ?? []).join("\n"),
  };
}
