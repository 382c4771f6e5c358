// Any failure as the `CommandError` the views show (a rejected command already is one).

import type { CommandError, ErrorCode } from "./types";

export function toCommandError(error: unknown): CommandError {
  if (typeof error === "object" && error !== null && "code" in error && "message" in error) {
    const details = "details" in error ? error.details : undefined;
    // A rejection carries one of the shell's codes (the generated `ErrorCode`), or the window's own.
    return {
      code: String(error.code) as ErrorCode,
      message: String(error.message),
      ...(details === undefined ? {} : { details }),
    };
  }
  return { code: "internal", message: String(error) };
}
