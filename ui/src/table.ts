// Kept for the session view's imports (it is converted separately): the table itself is
// components/SessionsTable.svelte, these facts live in sessions.ts.

export { DELETE_LIVE_TITLE, progressOf } from "./sessions";
