// The Run bar: an agent of the workspace, a prompt, Run. It is built once and updated in place, so
// that what the user is typing survives every re-render of the page.

import { button, el, errorBox } from "./elements";
import type { Agent, CommandError } from "./types";

export interface RunBarActions {
  /** Starts the agent on the prompt; resolves `true` when the run started (the prompt is cleared). */
  runStart(agent: string, prompt: string): Promise<boolean>;
  /** Opens the agent form on an agent (`null`: a new one). */
  editAgent(name: string | null): void;
}

export interface RunBar {
  element: HTMLElement;
  update(agents: readonly Agent[], error: CommandError | null, starting: boolean): void;
}

export function createRunBar(actions: RunBarActions): RunBar {
  const select = el("select", { class: "run-agent", attrs: { id: "run-agent", "aria-label": "Agent" } });
  const prompt = el("textarea", {
    class: "run-prompt",
    attrs: {
      id: "run-prompt",
      rows: "2",
      placeholder: "What should the agent do?",
      "aria-label": "Prompt",
      spellcheck: "false",
    },
  });
  const run = button({ class: "button primary", attrs: { id: "run-button" } }, "Run", () => void submit());
  const errorSlot = el("div", { class: "run-error-slot" });
  const add = button(
    { class: "button small quiet", title: "Add an agent to .zibby/studio.toml", attrs: { id: "run-agent-add" } },
    "Add agent",
    () => actions.editAgent(null),
  );
  const edit = button(
    { class: "button small quiet", title: "Edit the selected agent", attrs: { id: "run-agent-edit" } },
    "Edit",
    () => actions.editAgent(select.value || null),
  );
  const noAgents = el(
    "p",
    { class: "no-agents muted" },
    "No agents in ",
    el("code", {}, ".zibby/studio.toml"),
    " yet: add one to run it from here.",
  );
  const form = el(
    "form",
    { class: "run-bar card", attrs: { id: "run-bar", "aria-label": "Run an agent" } },
    el(
      "div",
      { class: "run-row" },
      el("label", { class: "run-label", attrs: { for: "run-agent" } }, "Agent"),
      select,
      prompt,
      run,
    ),
    el(
      "div",
      { class: "run-foot" },
      noAgents,
      el("p", { class: "run-hint muted" }, "Enter runs it, Shift+Enter starts a new line."),
      edit,
      add,
    ),
    errorSlot,
  );

  let agentNames: string | null = null;
  let starting = false;

  async function submit(): Promise<void> {
    if (starting || run.disabled) return;
    if (prompt.value.trim() === "") {
      prompt.focus();
      return;
    }
    if (await actions.runStart(select.value, prompt.value)) prompt.value = "";
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submit();
  });
  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void submit();
    }
  });

  function update(agents: readonly Agent[], error: CommandError | null, isStarting: boolean): void {
    const names = agents.map((agent) => agent.name);
    if (names.join("\n") !== agentNames) {
      const selected = select.value;
      select.replaceChildren(...names.map((name) => el("option", { attrs: { value: name } }, name)));
      select.value = names.includes(selected) ? selected : (names[0] ?? "");
      agentNames = names.join("\n");
    }
    starting = isStarting;
    const row = form.querySelector<HTMLElement>(".run-row")!;
    row.hidden = names.length === 0;
    noAgents.hidden = names.length > 0;
    edit.hidden = names.length === 0;
    (form.querySelector(".run-hint") as HTMLElement).hidden = names.length === 0;
    run.disabled = isStarting || names.length === 0;
    run.textContent = isStarting ? "Starting…" : "Run";
    errorSlot.replaceChildren(...(error ? [errorBox("The run could not start", error)] : []));
  }

  return { element: form, update };
}
