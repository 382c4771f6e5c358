// The session view: one session in full beside the table. A header (title, id, agent, status,
// elapsed time, and Stop, Re-run node, Continue, Pin, Reveal, Delete) over six tabs: Timeline,
// Output, Nodes, Logs, Conversation, Files. It reads what it shows from the backend itself, and
// follows the session live: run events and output events of its runs, and the table's reloads
// (a changed row means its files changed).
//
// This is the adapter the app uses: it mounts `components/session/SessionView.svelte` over a
// `SessionModel` (the state, as runes) into `element`, and forwards the app's calls to the model.

import { mount, unmount } from "svelte";

import SessionViewComponent from "./components/session/SessionView.svelte";
import { SessionModel, type SessionTab, type SessionViewContext } from "./sessionmodel.svelte";
import type { RunEvent, RunOutputEvent, SessionRow } from "./types";

export { MOST_TIMELINE_RUNS, SESSION_TABS, SessionModel } from "./sessionmodel.svelte";
export type { SessionTab, SessionViewContext } from "./sessionmodel.svelte";

export interface SessionView {
  /** Holds `#session-view` (the element itself is `display: contents`). */
  element: HTMLElement;
  sessionId: string;
  /** The session's row after a table reload (`null`: not listed any more), and its live run. */
  update(row: SessionRow | null, liveRunId: string | null): void;
  onRunEvent(event: RunEvent): void;
  onRunOutput(event: RunOutputEvent): void;
  /** Once a second: the elapsed time and the running bars (nothing moves while nothing is live). */
  tick(): void;
  showTab(tab: SessionTab): void;
  /** Opens the Output tab on a run, at a line (a search hit). */
  showOutputLine(runId: string, seq: number): void;
  /** Stop (the S key): graceful the first time, forced the second. */
  stop(): void;
  liveRun(): string | null;
  /** Unmounts the view and stops its timers (optional for the app: making the next view does it
   * for the one before). */
  destroy?(): void;
}

/** The view made last. The app shows one session at a time and drops a view without telling it;
 * a mounted component stays reachable from Svelte's event delegation until it is unmounted, so
 * making a view unmounts the one before (at most one dropped view is held). */
let latest: SessionView | null = null;

export function createSessionView(
  sessionId: string,
  context: SessionViewContext,
  initialRow: SessionRow | null,
  initialLiveRun: string | null,
  initialTab: SessionTab = "timeline",
): SessionView {
  const model = new SessionModel(sessionId, context, initialRow, initialLiveRun, initialTab);
  // The component's root is `section#session-view`; this holder is where Svelte listens for the
  // events it delegates, so it is the element the app moves into its layout.
  const element = document.createElement("div");
  element.className = "session-view-host";
  element.style.display = "contents";
  const component = mount(SessionViewComponent, { target: element, props: { model } });
  let mounted = true;

  latest?.destroy?.();
  const view: SessionView = {
    element,
    sessionId,
    update: (row, liveRunId) => model.update(row, liveRunId),
    onRunEvent: (event) => model.onRunEvent(event),
    onRunOutput: (event) => model.onRunOutput(event),
    tick: () => model.tick(),
    showTab: (tab) => model.showTab(tab),
    showOutputLine: (runId, seq) => model.showOutputLine(runId, seq),
    stop() {
      if (model.liveRunId === null) return;
      model.stop(model.stopState?.runId === model.liveRunId);
    },
    liveRun: () => model.liveRunId,
    destroy() {
      if (!mounted) return;
      mounted = false;
      model.destroy();
      void unmount(component);
      if (latest === view) latest = null;
    },
  };
  latest = view;
  return view;
}
