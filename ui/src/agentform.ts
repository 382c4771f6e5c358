// The agent form: adds or edits an agent of `.zibby/studio.toml`. The command is an argument list,
// one argument per line, never a shell string; env is KEY=VALUE lines. The parsing is pure and
// tested; the form keeps what is typed while it saves and when the save is refused.

import { button, el, errorBox } from "./elements";
import type { Agent, CommandError } from "./types";

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

/** The agent the fields describe, or what is wrong with them. */
export function agentFromFields(fields: AgentFields): { agent: Agent } | { problem: string } {
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

export interface AgentFormActions {
  saveAgent(agent: Agent, previousName: string | null): void;
  closeAgentForm(): void;
}

export interface AgentForm {
  element: HTMLElement;
  /** The agent being edited (`null`: a new one). */
  editing: Agent | null;
  update(saving: boolean, error: CommandError | null): void;
}

export function createAgentForm(editing: Agent | null, actions: AgentFormActions): AgentForm {
  const initial = fieldsFromAgent(editing);
  const name = el("input", {
    class: "field",
    attrs: { id: "agent-name", type: "text", spellcheck: "false", autocomplete: "off" },
  });
  name.value = initial.name;
  const run = textArea("agent-run", initial.run, 4, "zibby\nagent\nrun\nmy-agent\n--session\n{session_id}");
  const cwd = el("input", {
    class: "field",
    attrs: { id: "agent-cwd", type: "text", spellcheck: "false", placeholder: "(the workspace folder)" },
  });
  cwd.value = initial.cwd;
  const env = textArea("agent-env", initial.env, 2, "KEY=value");
  const replay = textArea(
    "agent-replay",
    initial.replay,
    3,
    "zibby\nagent\nrun\nmy-agent\n--session\n{session_id}\n--node\n{node}",
  );
  const problemSlot = el("div", { class: "form-problem-slot" });
  const save = el(
    "button",
    { class: "button primary", attrs: { type: "submit", id: "agent-save" } },
    editing ? "Save" : "Add agent",
  );
  const cancel = button({ class: "button", attrs: { id: "agent-cancel" } }, "Cancel", () => actions.closeAgentForm());

  const form = el(
    "form",
    {
      class: "dialog agent-form",
      attrs: { id: "agent-form", role: "dialog", "aria-modal": "true", "aria-labelledby": "agent-form-title" },
    },
    el(
      "h2",
      { attrs: { id: "agent-form-title" } },
      editing ? "Edit agent " : "Add an agent",
      editing && el("code", {}, editing.name),
    ),
    el(
      "p",
      { class: "muted form-intro" },
      "Saved in the workspace's ",
      el("code", {}, ".zibby/studio.toml"),
      ". The command is run directly, not through a shell.",
    ),
    field("Name", "agent-name", name),
    field(
      "Command",
      "agent-run",
      run,
      "One argument per line: the program first, then each argument as it is (no quoting).",
    ),
    field("Working directory", "agent-cwd", cwd, "Optional; relative to the workspace."),
    field("Environment", "agent-env", env, "Optional; one KEY=VALUE per line."),
    field("Replay command", "agent-replay", replay, "Optional; what Re-run node runs, one argument per line."),
    el(
      "p",
      { class: "muted placeholders" },
      "Placeholders in arguments: ",
      el("code", {}, "{prompt}"),
      " the prompt, ",
      el("code", {}, "{session_id}"),
      " the session's id, ",
      el("code", {}, "{session_path}"),
      " its folder, ",
      el("code", {}, "{node}"),
      " the node to re-run (replay only).",
    ),
    problemSlot,
    el("div", { class: "form-buttons" }, cancel, save),
  );

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const result = agentFromFields({
      name: name.value,
      run: run.value,
      cwd: cwd.value,
      env: env.value,
      replay: replay.value,
    });
    if ("problem" in result) {
      problemSlot.replaceChildren(
        errorBox("The agent is not complete", { code: "invalid_agent", message: result.problem }),
      );
      return;
    }
    problemSlot.replaceChildren();
    actions.saveAgent(result.agent, editing?.name ?? null);
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      actions.closeAgentForm();
    }
  });
  queueMicrotask(() => name.focus());

  return {
    element: form,
    editing,
    update(saving, error) {
      save.disabled = saving;
      save.textContent = saving ? "Saving…" : editing ? "Save" : "Add agent";
      if (error) problemSlot.replaceChildren(errorBox("The agent could not be saved", error));
      else if (!saving && problemSlot.querySelector("[data-error-code]:not([data-error-code='invalid_agent'])"))
        problemSlot.replaceChildren();
    },
  };
}

function textArea(id: string, value: string, rows: number, placeholder: string): HTMLTextAreaElement {
  const area = el("textarea", {
    class: "field mono",
    attrs: { id, rows: String(rows), spellcheck: "false", placeholder },
  });
  area.value = value;
  return area;
}

function field(label: string, id: string, control: HTMLElement, help?: string): HTMLElement {
  return el(
    "div",
    { class: "form-field" },
    el("label", { attrs: { for: id } }, label),
    control,
    help && el("p", { class: "muted form-help" }, help),
  );
}
