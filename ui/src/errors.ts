// Any failure as the `CommandError` the views show (a rejected command already is one).

import type { CommandError } from "./types";

export function toCommandError(error: unknown): CommandError {
  if (typeof error === "object" && error !== null && "code" in error && "message" in error) {
    return { code: String(error.code), message: String(error.message) };
  }
  return { code: "internal", message: String(error) };
}
