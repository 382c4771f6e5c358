// The IPC contract holds: `backend.ts` invokes every command through the generated `Commands`
// table (src/generated/ipc.ts, from the Rust signatures in src-tauri/src/commands.rs), so a command
// whose argument is renamed or retyped on the Rust side, or whose result changes, fails the UI's
// type check (`npm run build`). Shown here with the TypeScript compiler over `backend.ts`: as
// generated it checks clean; with the generated table changed as the Rust side would change it,
// it does not.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";
import { describe, expect, it } from "vitest";

const ui = join(dirname(fileURLToPath(import.meta.url)), "..");
const backendFile = join(ui, "src", "backend.ts");
const generatedFile = join(ui, "src", "generated", "ipc.ts");
const generated = readFileSync(generatedFile, "utf8");

function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(ui, "tsconfig.json"), (path) => ts.sys.readFile(path));
  return ts.parseJsonConfigFileContent(config.config, ts.sys, ui).options;
}

const options = compilerOptions();
let previous: ts.Program | undefined;

/** The type errors in `backend.ts` with `src/generated/ipc.ts` as `table` says. */
function errorsWith(table: string): string[] {
  const host = ts.createCompilerHost(options, true);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (path) => (path === generatedFile ? table : readFile(path));
  host.getSourceFile = (path, language, onError, fresh) =>
    path === generatedFile
      ? ts.createSourceFile(path, table, language, true)
      : getSourceFile(path, language, onError, fresh);
  const program = ts.createProgram([backendFile], options, host, previous);
  previous = program;
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(backendFile))
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
}

/** The generated table with one command's entry changed (the entry must be there). */
function changed(command: string, from: string, to: string): string {
  const entry = generated.split("\n").find((line) => line.startsWith(`  ${command}: {`));
  expect(entry, `the generated table has ${command}`).toBeDefined();
  expect(entry).toContain(from);
  return generated.replace(entry!, entry!.replace(from, to));
}

describe("the generated IPC contract", () => {
  it("is what backend.ts invokes through: as generated, it type-checks", () => {
    expect(generated).toContain("export type Commands = {");
    expect(errorsWith(generated)).toEqual([]);
  });

  it("fails the type check when a command's argument is renamed", () => {
    const errors = errorsWith(changed("run_output", "from_seq: number", "first_seq: number"));
    expect(errors.join("\n")).toMatch(/from_seq|first_seq/);
  });

  it("fails the type check when a command's argument is retyped", () => {
    expect(errorsWith(changed("run_stop", "force: boolean", "force: string"))).not.toEqual([]);
    expect(errorsWith(changed("session_file_read", "offset: number", "offset: string"))).not.toEqual([]);
  });

  it("fails the type check when a command gains an argument or its result changes", () => {
    expect(errorsWith(changed("pin_add", "session_id: string", "session_id: string; note: string"))).not.toEqual([]);
    expect(errorsWith(changed("run_spans", "result: Array<Span>", "result: Array<LogLine>"))).not.toEqual([]);
  });

  it("fails the type check when a command is renamed", () => {
    expect(errorsWith(changed("session_logs", "session_logs:", "session_log_lines:"))).not.toEqual([]);
  });
});
