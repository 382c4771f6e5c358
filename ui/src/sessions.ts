// What the table and the session view both say about a session (pure).

import type { SessionRow } from "./types";

/** Why a live session's Delete is disabled. */
export const DELETE_LIVE_TITLE = "Stop the run first: a live session cannot be deleted";

/** What the Stop button says once pressed. */
export const STOPPING_LABEL = "Stopping: the current node finishes first";

/**
 * "3/5": the node executions that ended (any status but `running`) and those that began, as the
 * core's `SessionSummary::nodes_progress` counts them; the table's progress column and the
 * session header both show it.
 */
export function progressOf(session: Pick<SessionRow, "nodes">): { done: number; total: number } {
  const total = session.nodes.length;
  const done = session.nodes.filter((node) => node.status !== "running").length;
  return { done, total };
}

/** "1 session", "3 sessions", "2 of 3". */
export function countLabel(shown: number, all: number): string {
  if (all === 0) return "";
  if (shown === all) return all === 1 ? "1 session" : `${all.toLocaleString("en-US")} sessions`;
  return `${shown.toLocaleString("en-US")} of ${all.toLocaleString("en-US")}`;
}

/** Quotes a path for a POSIX shell when it needs it. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The last part of a path ("/home/me/project" → "project"). */
export function baseName(path: string): string {
  const parts = path.split(/[\\/]/).filter((part) => part !== "");
  return parts[parts.length - 1] ?? path;
}
