import { describe, expect, it, vi } from "vitest";

import { agentFromFields, argLines, createAgentForm, envLines, fieldsFromAgent } from "./agentform";
import type { ErrorCode } from "./types";

const fields = { name: "writer", run: "zibby\nagent run\n{prompt}\n", cwd: "", env: "", replay: "" };

describe("argLines", () => {
  it("makes one argument per line, keeping spaces and skipping blank lines", () => {
    expect(argLines("zibby\r\nagent run\n\n  {prompt}\n")).toEqual(["zibby", "agent run", "  {prompt}"]);
    expect(argLines("")).toEqual([]);
  });
});

describe("envLines", () => {
  it("reads KEY=VALUE lines, values keeping their = signs, and names the bad lines", () => {
    expect(envLines("A=1\nURL=a=b\n\nB=")).toEqual({ env: { A: "1", URL: "a=b", B: "" }, bad: [] });
    expect(envLines("A=1\nno equals\n1X=2\n=3").bad).toEqual([2, 3, 4]);
  });
});

describe("agentFromFields", () => {
  it("builds the agent, leaving out what is empty", () => {
    expect(agentFromFields(fields)).toEqual({ agent: { name: "writer", run: ["zibby", "agent run", "{prompt}"] } });
    expect(agentFromFields({ ...fields, cwd: " sub ", env: "K=v", replay: "zibby\n{node}" })).toEqual({
      agent: {
        name: "writer",
        run: ["zibby", "agent run", "{prompt}"],
        cwd: "sub",
        env: { K: "v" },
        replay: ["zibby", "{node}"],
      },
    });
  });

  it("says what is missing or wrong", () => {
    expect(agentFromFields({ ...fields, name: " " })).toEqual({ problem: "The agent needs a name." });
    expect(agentFromFields({ ...fields, name: "my agent" })).toEqual({ problem: "The name cannot contain spaces." });
    expect(agentFromFields({ ...fields, run: "\n" })).toEqual({
      problem: "The command needs at least the program to run.",
    });
    const oops = agentFromFields({ ...fields, env: "oops" });
    expect("problem" in oops ? oops.problem : oops).toContain("line 1");
  });

  it("round-trips an agent through the fields", () => {
    const agent = { name: "w", run: ["a", "b c"], cwd: "x", env: { K: "v=1" }, replay: ["r", "{node}"] };
    expect(agentFromFields(fieldsFromAgent(agent))).toEqual({ agent });
  });
});

describe("the agent form", () => {
  it("saves what is typed as an argument list, with the name it had", () => {
    const actions = { saveAgent: vi.fn(), closeAgentForm: vi.fn() };
    const form = createAgentForm({ name: "old", run: ["x"] }, actions);
    document.body.append(form.element);
    (form.element.querySelector("#agent-name") as HTMLInputElement).value = "new";
    (form.element.querySelector("#agent-run") as HTMLTextAreaElement).value = "prog\n--flag\n{prompt}";
    form.element.dispatchEvent(new Event("submit", { cancelable: true }));
    expect(actions.saveAgent).toHaveBeenCalledWith({ name: "new", run: ["prog", "--flag", "{prompt}"] }, "old");
    form.element.remove();
  });

  it("shows a problem in place instead of saving, and a refused save as an error", () => {
    const actions = { saveAgent: vi.fn(), closeAgentForm: vi.fn() };
    const form = createAgentForm(null, actions);
    form.element.dispatchEvent(new Event("submit", { cancelable: true }));
    expect(actions.saveAgent).not.toHaveBeenCalled();
    expect(form.element.querySelector(".error .error-message")?.textContent).toBe("The agent needs a name.");
    form.update(false, { code: "config_invalid" as ErrorCode, message: "cannot write .zibby/studio.toml" });
    expect(form.element.querySelector(".error .error-code")?.textContent).toBe("config_invalid");
    form.element.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    expect(actions.closeAgentForm).toHaveBeenCalled();
  });
});
