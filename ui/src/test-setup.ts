// Set up before each test file (vite.config.ts: test.setupFiles).
//
// Every wait of the tests is bounded in real time, and vitest's `vi.waitFor` gives up after 1 s
// unless told otherwise: on a loaded CI machine (load 10 on 2 cores) a test's table took longer
// than that to fill, and failed. Here a wait gives up after 10 s unless the test says otherwise
// (a failing test still fails, later).
import { vi } from "vitest";

const waitFor = vi.waitFor.bind(vi);
vi.waitFor = ((callback: Parameters<typeof waitFor>[0], options?: Parameters<typeof waitFor>[1]) =>
  waitFor(callback, typeof options === "number" ? options : { timeout: 10_000, ...options })) as typeof vi.waitFor;
