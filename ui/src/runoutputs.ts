// The Output tab's runs, told apart (components/session/RunOutputs.svelte, RunPicker.svelte).

import type { RunRecord } from "./types";

/** "Nov 29, 15:27" (the runs of a session, told apart). */
function shortTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
}

/** Who asked for a run when not the studio's own faces (`mcp`: a coding agent through `zstudio mcp`). */
const ORIGINS: Record<string, string> = { mcp: "via MCP" };

export function runLabel(run: RunRecord, newest: boolean): string {
  const replay = run.replayed_node ? `replay of ${run.replayed_node} · ` : "";
  const origin = run.origin ? ` · ${ORIGINS[run.origin] ?? `via ${run.origin}`}` : "";
  return `${replay}${run.status} · ${shortTime(run.started_at)}${origin}${newest ? " (latest)" : ""}`;
}

/**
 * The run the Output tab shows among `runs` (newest first): a line asked for shows its run; the
 * reader's choice stays, except that a newer run takes the place of the newest one when that was
 * the one shown; else the newest.
 */
export function chooseRun(
  runs: readonly RunRecord[],
  chosen: string | null,
  newest: string | null,
  pendingRun: string | null,
): string | null {
  const nextNewest = runs[0]?.id ?? null;
  const listed = (id: string | null) => id !== null && runs.some((run) => run.id === id);
  if (listed(pendingRun)) return pendingRun;
  if (chosen !== null && chosen === newest && nextNewest !== newest && pendingRun === null) return nextNewest;
  return listed(chosen) ? chosen : nextNewest;
}
