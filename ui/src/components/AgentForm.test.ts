import { render } from "@testing-library/svelte";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import type { Agent, CommandError } from "../types";
import AgentForm from "./AgentForm.svelte";

function form(props: { editing?: Agent | null; error?: CommandError | null } = {}) {
  const onsave = vi.fn();
  const onclose = vi.fn();
  const result = render(AgentForm, {
    editing: props.editing ?? null,
    saving: false,
    error: props.error ?? null,
    onsave,
    onclose,
  });
  return { ...result, onsave, onclose };
}

describe("the agent form", () => {
  it("saves what is typed as an argument list, with the name it had", async () => {
    const user = userEvent.setup();
    const { container, onsave } = form({ editing: { name: "old", run: ["x"] } });
    const name = container.querySelector("#agent-name") as HTMLInputElement;
    expect(name.value).toBe("old");
    await user.clear(name);
    await user.type(name, "new");
    const run = container.querySelector("#agent-run") as HTMLTextAreaElement;
    await user.clear(run);
    await user.type(run, "prog{Enter}--flag{Enter}{{prompt}");
    await user.click(container.querySelector("#agent-save")!);
    expect(onsave).toHaveBeenCalledWith({ name: "new", run: ["prog", "--flag", "{prompt}"] }, "old");
  });

  it("shows a problem in place instead of saving, a refused save as an error, and closes on Escape", async () => {
    const user = userEvent.setup();
    const { container, onsave, onclose, rerender } = form();
    await user.click(container.querySelector("#agent-save")!);
    expect(onsave).not.toHaveBeenCalled();
    expect(container.querySelector(".error .error-message")?.textContent).toBe("The agent needs a name.");
    await user.type(container.querySelector("#agent-name")!, "a");
    await user.type(container.querySelector("#agent-run")!, "b");
    await user.click(container.querySelector("#agent-save")!);
    await rerender({ error: { code: "io", message: "cannot write .zibby/studio.toml" } });
    expect(container.querySelector(".error .error-code")?.textContent).toBe("io");
    expect((container.querySelector("#agent-name") as HTMLInputElement).value).toBe("a");
    await user.keyboard("{Escape}");
    expect(onclose).toHaveBeenCalled();
  });

  it("is a modal dialog that starts on the name", async () => {
    const { container } = form();
    const dialog = container.querySelector("[role='dialog']")!;
    expect(dialog.getAttribute("aria-modal")).toBe("true");
    expect(document.getElementById(dialog.getAttribute("aria-labelledby")!)?.textContent).toContain("Add an agent");
    await vi.waitFor(() => expect(document.activeElement?.id).toBe("agent-name"));
  });
});
