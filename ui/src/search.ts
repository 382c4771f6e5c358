// The search over the table: how long it waits and how many hits it asks for, and what it found.
// The box and its hits are components/Search.svelte.

import type { CommandError, SearchHit } from "./types";

/** How long typing must pause before the backend is asked. */
export const SEARCH_DELAY_MS = 200;
/** The hits asked for. */
export const SEARCH_LIMIT = 100;

export type SearchResults =
  | { kind: "idle" }
  | { kind: "searching"; query: string }
  | { kind: "ok"; query: string; hits: SearchHit[] }
  | { kind: "error"; query: string; error: CommandError };

export const KIND_LABEL: Partial<Record<string, string>> = {
  output: "output",
  message: "message",
  log: "log",
  node: "node",
  file: "file",
};

/** What the list of hits says above them. */
export function hitsNote(results: { query: string; hits: readonly SearchHit[] }): string {
  const count = results.hits.length;
  if (count === 0) return `Nothing matches “${results.query}”.`;
  if (count >= SEARCH_LIMIT) return `The first ${SEARCH_LIMIT} matches`;
  return count === 1 ? "1 match" : `${count} matches`;
}
