// A value the backend is asked for: still coming, there, or refused.

import { toCommandError } from "./errors";
import type { CommandError } from "./types";

export type Loaded<T> = { kind: "loading" } | { kind: "ok"; value: T } | { kind: "error"; error: CommandError };

/** What a promise comes to, as a `Loaded` (a rejection becomes its `CommandError`). */
export async function settle<T>(promise: Promise<T>): Promise<Loaded<T>> {
  try {
    return { kind: "ok", value: await promise };
  } catch (error) {
    return { kind: "error", error: toCommandError(error) };
  }
}
