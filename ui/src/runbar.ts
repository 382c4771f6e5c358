// The Run bar: an agent of the workspace, a prompt, Run. It is built once and updated in place, so
// that what the user is typing survives every re-render of the page.

import { button, el, errorBox } from "./elements";
import type { Agent, CommandError } from "./types";

export interface RunBarActions {
  /** Starts the agent on the prompt; resolves `true` when the run started (the prompt is cleared). */
  runStart(agent: string, prompt: string): Promise<boolean>;
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
    el("p", { class: "run-hint muted" }, "Enter runs it, Shift+Enter starts a new line."),
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
    run.disabled = isStarting || names.length === 0;
    run.textContent = isStarting ? "Starting…" : "Run";
    errorSlot.replaceChildren(...(error ? [errorBox("The run could not start", error)] : []));
  }

  return { element: form, update };
}
