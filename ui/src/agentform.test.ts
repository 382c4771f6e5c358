import { describe, expect, it } from "vitest";

import { agentFromFields, argLines, envLines, fieldsFromAgent } from "./agentform";

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

  it("keeps what the form does not show of the agent it edits: its budget and inherit_env", () => {
    const editing = { name: "writer", run: ["x"], inherit_env: ["PATH"], max_cost_usd: 0.5, max_tokens: 1000 };
    expect(agentFromFields(fields, editing)).toEqual({
      agent: {
        name: "writer",
        run: ["zibby", "agent run", "{prompt}"],
        inherit_env: ["PATH"],
        max_cost_usd: 0.5,
        max_tokens: 1000,
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
