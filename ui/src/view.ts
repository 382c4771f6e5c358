// The window's DOM, drawn from a `ViewState` on every change.
//
// Session data comes from agents and their files: it is untrusted text. It reaches the page only as
// text nodes and attribute values (`el` below), never as HTML.

import { badge, button, el, errorBox, type Child } from "./elements";
import { exactTime, nodeCount, relativeTime, statusMark } from "./format";
import { liveRunsStrip, type LiveRunActions } from "./liveruns";
import { createRunBar, type RunBar, type RunBarActions } from "./runbar";
import { isLive, type LiveRun } from "./runs";
import type { Agent, CommandError, NodeSummary, SessionRow, WorkspaceInfo } from "./types";

export { badge, errorBox };

export type Loaded<T> =
  | { kind: "loading" }
  | { kind: "ok"; value: T }
  | { kind: "error"; error: CommandError };

export interface ViewState {
  workspace: Loaded<WorkspaceInfo>;
  /** Pinned first, as the backend orders them. */
  sessions: Loaded<SessionRow[]>;
  agents: Loaded<Agent[]>;
  /** The runs this window started, live ones and ended ones not yet dismissed. */
  runs: LiveRun[];
  /** When `runs` last changed (ms): the elapsed times are drawn for this moment. */
  runsNow: number;
  /** A run is being started (the Run button waits). */
  starting: boolean;
  /** Why the last Run failed. */
  runError: CommandError | null;
  /** Why the last pin or unpin failed. */
  pinError: CommandError | null;
  /** The session whose deletion waits for a confirmation. */
  confirmDelete: string | null;
  /** Why the last delete failed. */
  deleteError: CommandError | null;
  /** A reload is under way (the previous data stays on screen meanwhile). */
  refreshing: boolean;
  now: Date;
  /** The session whose view is open beside the table. */
  openSession: string | null;
  /** Its view (built and kept by the app). */
  sessionView: HTMLElement | null;
  /** The selected row of the table. */
  selected: string | null;
}

export interface Actions extends RunBarActions, LiveRunActions {
  refresh(): void;
  /** Pins (`pin` true) or unpins a session. */
  togglePin(sessionId: string, pin: boolean): void;
  /** Asks to delete a session (`null`: never mind); the dialog then confirms it. */
  askDelete(sessionId: string | null): void;
  deleteSession(sessionId: string): void;
  /** Selects a session and opens its view. */
  openSession(sessionId: string): void;
}

/** The parts of the page that live across renders, and what each was last drawn from. */
interface Page {
  /** The actions of the last render (the Run bar, built once, calls through it). */
  actions: Actions;
  header: HTMLElement;
  runBar: RunBar;
  runBarError: HTMLElement;
  liveRuns: HTMLElement;
  sessions: HTMLElement;
  workbench: HTMLElement;
  sessionSlot: HTMLElement;
  dialogSlot: HTMLElement;
  drawn: { runs?: readonly LiveRun[]; sessions?: readonly unknown[]; confirmDelete?: string | null };
}

const pages = new WeakMap<HTMLElement, Page>();

function page(root: HTMLElement, actions: Actions): Page {
  const existing = pages.get(root);
  if (existing && root.contains(existing.sessions)) return existing;
  const built: Page = {
    actions,
    header: el("header", { class: "topbar" }),
    runBar: createRunBar({ runStart: (agent, prompt) => built.actions.runStart(agent, prompt) }),
    runBarError: el("div", { class: "agents-error-slot" }),
    liveRuns: el("div", { class: "live-runs-slot" }),
    sessions: el("div", { class: "sessions-slot" }),
    workbench: el("div", { class: "workbench" }),
    sessionSlot: el("div", { class: "session-slot" }),
    dialogSlot: el("div", { class: "dialog-slot" }),
    drawn: {},
  };
  built.workbench.append(built.sessions, built.sessionSlot);
  root.replaceChildren(
    built.header,
    el("main", { class: "content" }, built.runBar.element, built.runBarError, built.liveRuns, built.workbench),
    built.dialogSlot,
  );
  pages.set(root, built);
  return built;
}

/** Draws `state`. The Run bar is updated in place (a prompt being typed survives), and the live
 * runs and the sessions are redrawn only when what they show changed. */
export function renderApp(root: HTMLElement, state: ViewState, actions: Actions): void {
  const parts = page(root, actions);
  parts.actions = actions;
  parts.header.replaceChildren(...headerParts(state, actions));

  const agents = state.agents.kind === "ok" ? state.agents.value : [];
  parts.runBar.element.hidden = agents.length === 0;
  parts.runBar.update(agents, state.runError, state.starting);
  parts.runBarError.replaceChildren(
    ...(state.agents.kind === "error" && state.workspace.kind === "ok"
      ? [errorBox("The agents of .zibby/studio.toml could not be read", state.agents.error)]
      : []),
  );

  if (parts.drawn.runs !== state.runs) {
    const strip = liveRunsStrip(state.runs, state.runsNow, actions);
    parts.liveRuns.replaceChildren(...(strip ? [strip] : []));
    parts.drawn.runs = state.runs;
  }
  parts.workbench.classList.toggle("split", state.sessionView !== null);
  if (state.sessionView === null) parts.sessionSlot.replaceChildren();
  else if (parts.sessionSlot.firstChild !== state.sessionView) parts.sessionSlot.replaceChildren(state.sessionView);
  if (parts.drawn.confirmDelete !== state.confirmDelete) {
    parts.dialogSlot.replaceChildren(...(state.confirmDelete ? [deleteDialog(state.confirmDelete, actions)] : []));
    parts.drawn.confirmDelete = state.confirmDelete;
  }

  const sessionsInputs = [
    state.workspace,
    state.sessions,
    state.refreshing,
    state.now,
    state.pinError,
    state.deleteError,
    state.runs,
    state.selected,
  ];
  if (!sameItems(parts.drawn.sessions, sessionsInputs)) {
    parts.sessions.replaceChildren(sessionsCard(state, actions));
    parts.drawn.sessions = sessionsInputs;
  }
}

function sameItems(a: readonly unknown[] | undefined, b: readonly unknown[]): boolean {
  return a !== undefined && a.length === b.length && a.every((item, i) => item === b[i]);
}

function headerParts(state: ViewState, actions: Actions): Node[] {
  const refresh = button({ class: "button", attrs: { id: "refresh" } }, "Refresh", () => actions.refresh());
  refresh.disabled = state.refreshing || state.workspace.kind !== "ok";

  let where: Node;
  switch (state.workspace.kind) {
    case "ok":
      where = el(
        "span",
        {
          class: "workspace-box",
          title: `${state.workspace.value.root}\nSessions folder: ${state.workspace.value.sessions_dir}`,
        },
        el("code", { class: "workspace-path" }, state.workspace.value.root),
      );
      break;
    case "loading":
      where = el("span", { class: "muted" }, "opening…");
      break;
    case "error":
      where = el("span", { class: "muted" }, "not open");
      break;
  }

  return [
    el(
      "div",
      { class: "brand" },
      el("span", { class: "logo", attrs: { "aria-hidden": "true" } }, "Z"),
      el("span", { class: "brand-name" }, "Zibby Studio"),
    ),
    el("div", { class: "workspace" }, el("span", { class: "workspace-label" }, "Workspace"), where),
    refresh,
  ];
}

function sessionsCard(state: ViewState, actions: Actions): HTMLElement {
  const { workspace, sessions } = state;
  let count: string | null = null;
  let body: Node;
  if (workspace.kind === "error") {
    body = errorBox("The workspace could not be opened", workspace.error);
  } else if (sessions.kind === "error") {
    body = errorBox("The sessions could not be listed", sessions.error);
  } else if (sessions.kind === "loading" || workspace.kind === "loading") {
    body = el("p", { class: "loading muted" }, "Reading sessions…");
  } else if (sessions.value.length === 0) {
    body = emptyState(workspace.value);
  } else {
    count = sessions.value.length === 1 ? "1 session" : `${sessions.value.length} sessions`;
    const live = new Set(state.runs.filter(isLive).map((run) => run.sessionId));
    body = sessionsTable(sessions.value, state.now, live, state.selected, actions);
  }
  return el(
    "section",
    { class: "card", attrs: { "aria-labelledby": "sessions-title" } },
    el(
      "div",
      { class: "card-head" },
      el("h1", { attrs: { id: "sessions-title" } }, "Sessions"),
      count && el("span", { class: "count" }, count),
      state.refreshing && sessions.kind !== "loading" && el("span", { class: "muted refreshing" }, "refreshing…"),
    ),
    state.pinError && errorBox("The pin could not be changed", state.pinError),
    state.deleteError && errorBox("The session could not be deleted", state.deleteError),
    body,
  );
}

function emptyState(workspace: WorkspaceInfo): HTMLElement {
  return el(
    "div",
    { class: "empty" },
    el("h2", {}, "No sessions yet"),
    el(
      "p",
      {},
      "Zibby Studio lists the runs it finds in ",
      el("code", {}, workspace.sessions_dir),
      ".",
    ),
    el(
      "p",
      {},
      "Run an agent with ",
      el("code", {}, "ZIBBY_EMIT_GRAPH_MARKERS=1"),
      " in this folder, or run the demo from a Zibby Studio checkout:",
    ),
    el("pre", { class: "command" }, `cargo run -p zibby-test-agent -- fill-demo ${shellQuote(workspace.root)}`),
    el("p", { class: "muted" }, "Then press Refresh."),
  );
}

/** Quotes a path for a POSIX shell when it needs it. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function sessionsTable(
  sessions: readonly SessionRow[],
  now: Date,
  live: ReadonlySet<string>,
  selected: string | null,
  actions: Actions,
): HTMLElement {
  const head = el(
    "thead",
    {},
    el(
      "tr",
      {},
      el("th", { class: "pin-col", attrs: { scope: "col", "aria-label": "Pinned" } }),
      el("th", { attrs: { scope: "col" } }, "Session"),
      el("th", { attrs: { scope: "col" } }, "Status"),
      el("th", { attrs: { scope: "col" } }, "Current node"),
      el("th", { attrs: { scope: "col" } }, "Nodes"),
      el("th", { class: "updated", attrs: { scope: "col" } }, "Last update"),
      el("th", { class: "actions-col", attrs: { scope: "col", "aria-label": "Actions" } }),
    ),
  );
  const body = el("tbody", {}, ...sessions.map((session) => sessionRow(session, now, live.has(session.id), session.id === selected, actions)));
  return el("div", { class: "table-wrap" }, el("table", { class: "sessions" }, head, body));
}

function sessionRow(session: SessionRow, now: Date, live: boolean, selected: boolean, actions: Actions): HTMLElement {
  const updated = new Date(session.updated_at);
  const tr = el(
    "tr",
    {
      class: [session.pinned && "pinned", selected && "selected"].filter(Boolean).join(" ") || undefined,
      attrs: { "data-session-id": session.id, "aria-selected": String(selected) },
    },
    el("td", { class: "pin-cell" }, pinButton(session, actions)),
    el(
      "td",
      { class: "session" },
      el("div", { class: "session-id", title: session.path }, session.id),
      session.title &&
        el("div", { class: "session-title", title: session.agent ? `agent: ${session.agent}` : undefined }, session.title),
    ),
    el("td", { class: "status" }, badge(session.status), problems(session)),
    el(
      "td",
      { class: "current-node" },
      session.current_node ?? el("span", { class: "muted" }, "—"),
    ),
    el("td", { class: "nodes" }, ...nodesCell(session.nodes)),
    el(
      "td",
      { class: "updated" },
      el(
        "time",
        { title: exactTime(updated), attrs: { datetime: session.updated_at } },
        relativeTime(updated, now),
      ),
    ),
    el("td", { class: "row-actions" }, deleteButton(session, live, actions)),
  );
  tr.addEventListener("click", (event) => {
    if ((event.target as Element).closest("button")) return;
    actions.openSession(session.id);
  });
  return tr;
}

/** Delete: disabled, and saying why, while the session's run is live (Stop never deletes). */
function deleteButton(session: SessionRow, live: boolean, actions: Actions): HTMLButtonElement {
  const remove = button(
    {
      class: "delete",
      title: live ? "Stop its run first: a session with a live run cannot be deleted" : "Delete this session",
      attrs: { "data-testid": "delete", "aria-label": `Delete ${session.id}` },
    },
    "Delete",
    () => actions.askDelete(session.id),
  );
  remove.disabled = live;
  return remove;
}

/** Asks before deleting, naming the session and what cannot be undone. */
function deleteDialog(sessionId: string, actions: Actions): HTMLElement {
  const confirm = button(
    { class: "button danger", attrs: { "data-testid": "confirm-delete" } },
    "Delete",
    () => actions.deleteSession(sessionId),
  );
  const cancel = button({ class: "button", attrs: { "data-testid": "cancel-delete" } }, "Cancel", () =>
    actions.askDelete(null),
  );
  const dialog = el(
    "div",
    { class: "confirm", attrs: { role: "alertdialog", "aria-labelledby": "confirm-title", "data-testid": "delete-dialog" } },
    el("h2", { attrs: { id: "confirm-title" } }, "Delete session ", el("code", {}, sessionId), "?"),
    el(
      "p",
      {},
      "Its folder goes to the system trash. The studio's records of it (runs, output, logs, messages) are deleted, and that cannot be undone.",
    ),
    el("div", { class: "confirm-buttons" }, cancel, confirm),
  );
  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") actions.askDelete(null);
  });
  queueMicrotask(() => cancel.focus());
  return dialog;
}

/** A star: filled when the session is pinned. */
function pinButton(session: SessionRow, actions: Actions): HTMLButtonElement {
  const label = session.pinned ? "Unpin" : "Pin";
  return button(
    {
      class: "pin",
      title: label,
      attrs: {
        "data-testid": "pin",
        "aria-pressed": String(session.pinned),
        "aria-label": `${label} ${session.id}`,
      },
    },
    session.pinned ? "★" : "☆",
    () => actions.togglePin(session.id, !session.pinned),
  );
}

function problems(session: SessionRow): HTMLElement | null {
  if (session.problems.length === 0) return null;
  const list = session.problems.map((p) => `${p.file}: ${p.reason}`).join("\n");
  const label = session.problems.length === 1 ? "1 problem" : `${session.problems.length} problems`;
  return el("span", { class: "problems", title: list }, `⚠ ${label}`);
}

/** "3 nodes: plan ✓ execute ✓ report ✓", each node a chip coloured by its status. */
function nodesCell(nodes: readonly NodeSummary[]): Child[] {
  if (nodes.length === 0) return [el("span", { class: "muted" }, nodeCount(nodes))];
  const cells: Child[] = [el("span", { class: "node-count" }, `${nodeCount(nodes)}:`)];
  for (const node of nodes) {
    cells.push(
      " ",
      el(
        "span",
        { class: `node status-${node.status}`, title: `${node.name}: ${node.status}` },
        `${node.name} ${statusMark(node.status)}`,
      ),
    );
  }
  return cells;
}
