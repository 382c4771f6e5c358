// A value the backend is asked for: still coming, there, or refused.

import type { CommandError } from "./types";

export type Loaded<T> = { kind: "loading" } | { kind: "ok"; value: T } | { kind: "error"; error: CommandError };
