// The window's DOM, rebuilt from a `ViewState` on every change.
//
// Session data comes from agents and their files: it is untrusted text. It reaches the page only as
// text nodes and attribute values (`el` below), never as HTML.

import { exactTime, nodeCount, relativeTime, statusMark } from "./format";
import type { CommandError, NodeSummary, SessionSummary, Status, WorkspaceInfo } from "./types";

export type Loaded<T> =
  | { kind: "loading" }
  | { kind: "ok"; value: T }
  | { kind: "error"; error: CommandError };

export interface ViewState {
  workspace: Loaded<WorkspaceInfo>;
  sessions: Loaded<SessionSummary[]>;
  /** A reload is under way (the previous data stays on screen meanwhile). */
  refreshing: boolean;
  now: Date;
}

export interface Actions {
  refresh(): void;
}

type Child = Node | string | null | undefined | false;

interface Props {
  class?: string;
  title?: string;
  attrs?: Record<string, string>;
}

/** Creates an element; strings become text nodes, so they are never parsed as HTML. */
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.class) element.className = props.class;
  if (props.title) element.title = props.title;
  for (const [name, value] of Object.entries(props.attrs ?? {})) element.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

export function renderApp(root: HTMLElement, state: ViewState, actions: Actions): void {
  root.replaceChildren(header(state, actions), el("main", { class: "content" }, sessionsCard(state)));
}

function header(state: ViewState, actions: Actions): HTMLElement {
  const refresh = el("button", { class: "button", attrs: { type: "button", id: "refresh" } }, "Refresh");
  refresh.disabled = state.refreshing || state.workspace.kind !== "ok";
  refresh.addEventListener("click", () => actions.refresh());

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

  return el(
    "header",
    { class: "topbar" },
    el(
      "div",
      { class: "brand" },
      el("span", { class: "logo", attrs: { "aria-hidden": "true" } }, "Z"),
      el("span", { class: "brand-name" }, "Zibby Studio"),
    ),
    el("div", { class: "workspace" }, el("span", { class: "workspace-label" }, "Workspace"), where),
    refresh,
  );
}

function sessionsCard(state: ViewState): HTMLElement {
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
    body = sessionsTable(sessions.value, state.now);
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
    body,
  );
}

export function errorBox(title: string, error: CommandError): HTMLElement {
  return el(
    "div",
    { class: "error", attrs: { role: "alert", "data-error-code": error.code } },
    el("div", { class: "error-title" }, title, " ", el("code", { class: "error-code" }, error.code)),
    el("p", { class: "error-message" }, error.message),
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

function sessionsTable(sessions: readonly SessionSummary[], now: Date): HTMLElement {
  const head = el(
    "thead",
    {},
    el(
      "tr",
      {},
      el("th", { attrs: { scope: "col" } }, "Session"),
      el("th", { attrs: { scope: "col" } }, "Status"),
      el("th", { attrs: { scope: "col" } }, "Current node"),
      el("th", { attrs: { scope: "col" } }, "Nodes"),
      el("th", { class: "updated", attrs: { scope: "col" } }, "Last update"),
    ),
  );
  const body = el("tbody", {}, ...sessions.map((session) => sessionRow(session, now)));
  return el("div", { class: "table-wrap" }, el("table", { class: "sessions" }, head, body));
}

function sessionRow(session: SessionSummary, now: Date): HTMLElement {
  const updated = new Date(session.updated_at);
  return el(
    "tr",
    { attrs: { "data-session-id": session.id } },
    el("td", { class: "session-id", title: session.path }, session.id),
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
  );
}

export function badge(status: Status): HTMLElement {
  return el(
    "span",
    { class: `badge status-${status}`, attrs: { "data-status": status } },
    el("span", { class: "badge-dot", attrs: { "aria-hidden": "true" } }),
    status,
  );
}

function problems(session: SessionSummary): HTMLElement | null {
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
