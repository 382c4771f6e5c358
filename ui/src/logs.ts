// What the Logs and Conversation tabs show, as text (components/session/LogsView.svelte and
// ConversationView.svelte draw it).

import type { LogLine } from "./types";

/** Logs beyond this many are left out (the newest are kept). */
export const MOST_LOG_LINES = 5_000;

/** "12:03:04.512", local time. */
export function clockTime(iso: string): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return iso;
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}.${pad(time.getMilliseconds(), 3)}`;
}

/** A log line's fields as an object (the store sends `null` for a line without any). */
export function fieldsOf(line: LogLine): Record<string, unknown> {
  const fields: unknown = line.fields;
  return typeof fields === "object" && fields !== null && !Array.isArray(fields)
    ? (fields as Record<string, unknown>)
    : {};
}

/** The fields other than `elapsed_ms`, as `key=value` text. */
export function fieldsLabel(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([key]) => key !== "elapsed_ms")
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" ");
}

/** The lines the Logs tab shows: the newest MOST_LOG_LINES (`most`). */
export function newestLogs<T>(logs: readonly T[], most = MOST_LOG_LINES): readonly T[] {
  return logs.length > most ? logs.slice(-most) : logs;
}
