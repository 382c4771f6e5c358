// Kept for the session view's imports (it is converted separately): the strip itself is
// components/LiveRuns.svelte, the label lives in sessions.ts.

export { STOPPING_LABEL } from "./sessions";
