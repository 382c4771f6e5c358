// The sessions table, virtualised: rows have one fixed height, and only the rows in view (and a
// margin) are in the DOM between two spacer rows, so 10,000 sessions scroll as smoothly as ten.
// Updates patch it in place: a row is rebuilt only when what it shows changed, and the scroller
// (its position) and the selection survive every reload.

import { badge, button, el } from "./elements";
import { exactTime, relativeTime } from "./format";
import type { SessionRow } from "./types";
import { coversView, revealRow, virtualWindow } from "./virtual";

export const ROW_HEIGHT = 46;
/** Rows drawn beyond each edge of the view. */
const MARGIN_ROWS = 12;
/** The height of the sticky header row, which hides the top of the scroller. */
const HEAD_HEIGHT = 33;
/** The view assumed when the page has no layout (tests). */
const FALLBACK_VIEWPORT = 600;

/** Why a live session's Delete is disabled. */
export const DELETE_LIVE_TITLE = "Stop the run first: a live session cannot be deleted";

export interface TableActions {
  togglePin(sessionId: string, pin: boolean): void;
  askDelete(sessionId: string): void;
  openSession(sessionId: string): void;
}

export interface SessionsTable {
  element: HTMLElement;
  /** `compact`: beside the session view, only the pin, session, status and last update columns. */
  update(
    rows: readonly SessionRow[],
    now: Date,
    live: ReadonlySet<string>,
    selected: string | null,
    compact?: boolean,
  ): void;
  /** Scrolls just enough to show a session's row. */
  reveal(sessionId: string): void;
}

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

export function createSessionsTable(actions: TableActions): SessionsTable {
  const topSpacer = spacerRow();
  const bottomSpacer = spacerRow();
  const body = el("tbody", {}, topSpacer, bottomSpacer);
  const head = el("thead", {});
  const table = el("table", { class: "sessions", attrs: { "aria-rowcount": "0" } }, head, body);
  const element = el("div", { class: "table-wrap" }, table);

  let rows: readonly SessionRow[] = [];
  let now = new Date();
  let live: ReadonlySet<string> = new Set();
  let selected: string | null = null;
  let compact: boolean | null = null;
  /** The rows in the DOM, by session id, with what they were drawn from. */
  let drawn = new Map<string, { key: string; tr: HTMLTableRowElement }>();
  /** The rows drawn, as indexes into `rows`. */
  let drawnRange = { first: 0, end: 0 };

  const viewport = () => Math.max(0, (element.clientHeight || FALLBACK_VIEWPORT) - HEAD_HEIGHT);

  function currentWindow(margin = MARGIN_ROWS) {
    return virtualWindow({
      scrollTop: element.scrollTop,
      viewport: viewport(),
      count: rows.length,
      rowHeight: ROW_HEIGHT,
      margin,
    });
  }

  function render(): void {
    // A rebuilt row would drop the focus of its pin or delete button: it is given back below.
    const active = document.activeElement;
    const focusedRow = active instanceof HTMLElement ? active.closest("tr[data-session-id]") : null;
    const focusedId = focusedRow && body.contains(focusedRow) ? focusedRow.getAttribute("data-session-id") : null;
    const focusedControl = focusedId !== null ? active!.getAttribute("data-testid") : null;
    const window = currentWindow();
    const next = new Map<string, { key: string; tr: HTMLTableRowElement }>();
    const trs: HTMLTableRowElement[] = [];
    for (let index = window.first; index < window.end; index++) {
      const session = rows[index]!;
      const isLive = live.has(session.id);
      const isSelected = session.id === selected;
      const key = rowKey(session, now, isLive, isSelected, compact === true);
      const old = drawn.get(session.id);
      const tr =
        old && old.key === key ? old.tr : sessionRow(session, now, isLive, isSelected, compact === true, actions);
      tr.setAttribute("aria-rowindex", String(index + 2));
      next.set(session.id, { key, tr });
      trs.push(tr);
    }
    drawn = next;
    drawnRange = { first: window.first, end: window.end };
    topSpacer.style.height = `${window.offset}px`;
    bottomSpacer.style.height = `${Math.max(0, window.height - window.offset - trs.length * ROW_HEIGHT)}px`;
    table.setAttribute("aria-rowcount", String(rows.length + 1));
    const current = [...body.children].slice(1, -1);
    if (current.length !== trs.length || current.some((tr, i) => tr !== trs[i])) {
      body.replaceChildren(topSpacer, ...trs, bottomSpacer);
    }
    if (focusedId !== null && focusedControl !== null && document.activeElement !== active) {
      next.get(focusedId)?.tr.querySelector<HTMLElement>(`[data-testid='${focusedControl}']`)?.focus();
    }
  }

  // A scroll within the margin shows rows already drawn: nothing to do (a redraw costs a layout).
  element.addEventListener(
    "scroll",
    () => {
      if (!coversView(drawnRange, currentWindow(0))) render();
    },
    { passive: true },
  );

  return {
    element,
    update(nextRows, nextNow, nextLive, nextSelected, nextCompact = false) {
      if (nextCompact !== compact) {
        compact = nextCompact;
        head.replaceChildren(headRow(compact));
        table.classList.toggle("compact", compact);
        for (const spacer of [topSpacer, bottomSpacer])
          spacer.firstElementChild!.setAttribute("colspan", String(columnCount(compact)));
      }
      rows = nextRows;
      now = nextNow;
      live = nextLive;
      selected = nextSelected;
      render();
    },
    reveal(sessionId) {
      const index = rows.findIndex((row) => row.id === sessionId);
      if (index === -1) return;
      const top = revealRow(index, element.scrollTop, viewport(), ROW_HEIGHT);
      if (top !== element.scrollTop) {
        element.scrollTop = top;
        render();
      }
    },
  };
}

function spacerRow(): HTMLTableRowElement {
  return el(
    "tr",
    { class: "spacer", attrs: { "aria-hidden": "true" } },
    el("td", { attrs: { colspan: String(columnCount(false)) } }),
  );
}

function columnCount(compact: boolean): number {
  return compact ? 4 : 8;
}

function headRow(compact: boolean): HTMLTableRowElement {
  return el(
    "tr",
    {},
    el("th", { class: "pin-col", attrs: { scope: "col", "aria-label": "Pinned" } }),
    el("th", { class: "session-col", attrs: { scope: "col" } }, "Session"),
    !compact && el("th", { class: "col-agent", attrs: { scope: "col" } }, "Agent"),
    el("th", { class: "status-col", attrs: { scope: "col" } }, "Status"),
    !compact && el("th", { class: "col-progress", attrs: { scope: "col" } }, "Progress"),
    !compact && el("th", { class: "col-messages", attrs: { scope: "col", title: "Conversation messages" } }, "Msgs"),
    el("th", { class: "updated", attrs: { scope: "col" } }, compact ? "Updated" : "Last update"),
    !compact && el("th", { class: "actions-col", attrs: { scope: "col", "aria-label": "Actions" } }),
  );
}

/** What a row shows, as one string: the row is rebuilt only when it changes. */
function rowKey(session: SessionRow, now: Date, live: boolean, selected: boolean, compact: boolean): string {
  return JSON.stringify([
    session.id,
    session.title,
    session.agent,
    session.status,
    session.current_node,
    session.nodes,
    session.messages,
    session.pinned,
    session.updated_at,
    session.problems.length,
    relativeTime(new Date(session.updated_at), now),
    live,
    selected,
    compact,
  ]);
}

function sessionRow(
  session: SessionRow,
  now: Date,
  live: boolean,
  selected: boolean,
  compact: boolean,
  actions: TableActions,
): HTMLTableRowElement {
  const updated = new Date(session.updated_at);
  const classes = ["session-row", session.pinned && "pinned", selected && "selected"].filter(Boolean).join(" ");
  const tr = el(
    "tr",
    { class: classes, attrs: { "data-session-id": session.id, "aria-selected": String(selected) } },
    el("td", { class: "pin-cell" }, pinButton(session, actions)),
    el(
      "td",
      { class: "session" },
      el("div", { class: "clip", title: session.path }, el("span", { class: "session-id" }, session.id)),
      session.title &&
        el("div", { class: "clip", title: session.title }, el("span", { class: "session-title" }, session.title)),
    ),
    !compact &&
      el(
        "td",
        { class: "agent col-agent" },
        session.agent ? el("code", {}, session.agent) : el("span", { class: "muted" }, "—"),
      ),
    el("td", { class: "status" }, badge(session.status), problems(session)),
    !compact && progressCell(session),
    !compact &&
      el(
        "td",
        { class: "messages col-messages" },
        session.messages > 0 ? String(session.messages) : el("span", { class: "muted" }, "—"),
      ),
    el(
      "td",
      { class: "updated" },
      el("time", { title: exactTime(updated), attrs: { datetime: session.updated_at } }, relativeTime(updated, now)),
    ),
    !compact && el("td", { class: "row-actions" }, deleteButton(session, live, actions)),
  );
  tr.addEventListener("click", (event) => {
    if ((event.target as Element).closest("button")) return;
    actions.openSession(session.id);
  });
  return tr;
}

/** A bar of the nodes done, "done/total", and the current node; every node in the tooltip. */
function progressCell(session: SessionRow): HTMLTableCellElement {
  const { done, total } = progressOf(session);
  const title = session.nodes.map((node) => `${node.name}: ${node.status}`).join("\n");
  if (total === 0) return el("td", { class: "progress col-progress" }, el("span", { class: "muted" }, "no nodes"));
  const fill = el("span", { class: `progress-fill status-${session.status}` });
  fill.style.width = `${(done / total) * 100}%`;
  return el(
    "td",
    { class: "progress col-progress", title },
    el(
      "span",
      { class: "progress-line" },
      el("span", { class: "progress-bar", attrs: { "aria-hidden": "true" } }, fill),
      el("span", { class: "progress-count" }, `${done}/${total}`),
      session.current_node && el("span", { class: "current-node" }, session.current_node),
    ),
  );
}

/** A star: filled when the session is pinned. */
function pinButton(session: SessionRow, actions: TableActions): HTMLButtonElement {
  const label = session.pinned ? "Unpin" : "Pin";
  return button(
    {
      class: "pin",
      title: label,
      attrs: { "data-testid": "pin", "aria-pressed": String(session.pinned), "aria-label": `${label} ${session.id}` },
    },
    session.pinned ? "★" : "☆",
    () => actions.togglePin(session.id, !session.pinned),
  );
}

/** Delete: disabled, and saying why, while the session's run is live (Stop never deletes). */
function deleteButton(session: SessionRow, live: boolean, actions: TableActions): HTMLButtonElement {
  const remove = button(
    {
      class: "delete",
      title: live ? DELETE_LIVE_TITLE : "Delete this session",
      attrs: { "data-testid": "delete", "aria-label": `Delete ${session.id}` },
    },
    "Delete",
    () => actions.askDelete(session.id),
  );
  remove.disabled = live;
  return remove;
}

function problems(session: SessionRow): HTMLElement | null {
  if (session.problems.length === 0) return null;
  const list = session.problems.map((p) => `${p.file}: ${p.reason}`).join("\n");
  const label = session.problems.length === 1 ? "1 problem" : `${session.problems.length} problems`;
  return el("span", { class: "problems", title: list }, `⚠ ${label}`);
}
