// The window's DOM, drawn from a `ViewState` on every change. The parts that hold what the user is
// doing (the Run bar, the search box, the filters, the table's scroll position, the session view,
// an open form) are built once and updated in place; the rest is drawn again when its inputs change.
//
// Session data comes from agents and their files: it is untrusted text. It reaches the page only as
// text nodes and attribute values (`el` below), never as HTML.

import { createAgentForm, type AgentForm, type AgentFormActions } from "./agentform";
import { badge, button, el, errorBox } from "./elements";
import { createFilterBar, filterSessions, isFiltered, type FilterBar, type SessionFilters } from "./filters";
import { liveRunsStrip, type LiveRunActions } from "./liveruns";
import { quitDialog, type QuitAnswer } from "./quitdialog";
import { trustDialog } from "./trust";
import { createRunBar, type RunBar, type RunBarActions } from "./runbar";
import { isLive, type LiveRun } from "./runs";
import { createSearchBox, type SearchActions, type SearchBox, type SearchResults } from "./search";
import { createSessionsTable, type SessionsTable, type TableActions } from "./table";
import type { Agent, AgentLaunch, CommandError, QuitRequest, SessionRow, WatchNotice, WorkspaceInfo } from "./types";
import { workspaceSwitcher, type WorkspaceActions, type WorkspaceMenu } from "./workspace";

export { badge, errorBox };

export type Loaded<T> = { kind: "loading" } | { kind: "ok"; value: T } | { kind: "error"; error: CommandError };

export interface AgentFormState {
  /** The agent being edited; `null`: a new one. */
  editing: Agent | null;
  saving: boolean;
  error: CommandError | null;
}

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
  filters: SessionFilters;
  search: SearchResults;
  /** The workspace switcher's menu, when open. */
  workspaceMenu: WorkspaceMenu | null;
  /** The agent form, when open. */
  agentForm: AgentFormState | null;
  /** The app is closing with live runs: what to do with them. */
  quitRequest: QuitRequest | null;
  /** The sessions are polled, not watched live (and why). */
  watchNotice: WatchNotice | null;
  /** A run waits for the user to trust the agents file it comes from. */
  trustRequest: { launch: AgentLaunch; answer: (trust: boolean) => void } | null;
}

export interface Actions
  extends RunBarActions, LiveRunActions, TableActions, SearchActions, WorkspaceActions, AgentFormActions {
  refresh(): void;
  /** Pins (`pin` true) or unpins a session. */
  togglePin(sessionId: string, pin: boolean): void;
  /** Asks to delete a session (`null`: never mind); the dialog then confirms it. */
  askDelete(sessionId: string | null): void;
  deleteSession(sessionId: string): void;
  /** Selects a session and opens its view. */
  openSession(sessionId: string): void;
  setFilters(filters: SessionFilters): void;
  /** The answer to closing the app with live runs. */
  answerQuit(choice: QuitAnswer): void;
}

/** The sessions the table shows: the state's, through its filters. */
export function visibleSessions(state: ViewState): readonly SessionRow[] {
  return state.sessions.kind === "ok" ? filterSessions(state.sessions.value, state.filters) : [];
}

/** The parts of the page that live across renders, and what each was last drawn from. */
interface Page {
  /** The actions of the last render (the parts built once call through it). */
  actions: Actions;
  header: HTMLElement;
  runBar: RunBar;
  runBarError: HTMLElement;
  liveRuns: HTMLElement;
  sessionsHead: HTMLElement;
  sessionsCount: HTMLElement;
  sessionsMessages: HTMLElement;
  sessionsBody: HTMLElement;
  filterBar: FilterBar;
  searchBox: SearchBox;
  table: SessionsTable;
  workbench: HTMLElement;
  sessionSlot: HTMLElement;
  dialogSlot: HTMLElement;
  agentForm: AgentForm | null;
  drawn: {
    header?: readonly unknown[];
    runs?: readonly LiveRun[];
    body?: readonly unknown[];
    messages?: readonly unknown[];
    dialog?: readonly unknown[];
    selected?: string | null;
  };
}

const pages = new WeakMap<HTMLElement, Page>();

function page(root: HTMLElement, actions: Actions): Page {
  const existing = pages.get(root);
  if (existing && root.contains(existing.workbench)) return existing;
  // The parts built once call the actions of the latest render.
  const latest = new Proxy({} as Actions, {
    get: (_target, name: keyof Actions) => built.actions[name].bind(built.actions),
  });
  const built: Page = {
    actions,
    header: el("header", { class: "topbar" }),
    runBar: createRunBar(latest),
    runBarError: el("div", { class: "agents-error-slot" }),
    liveRuns: el("div", { class: "live-runs-slot" }),
    sessionsHead: el("div", { class: "card-head sessions-head" }),
    sessionsCount: el("span", { class: "count" }),
    sessionsMessages: el("div", { class: "sessions-messages" }),
    sessionsBody: el("div", { class: "sessions-body" }),
    filterBar: createFilterBar((filters) => latest.setFilters(filters)),
    searchBox: createSearchBox(latest),
    table: createSessionsTable(latest),
    workbench: el("div", { class: "workbench" }),
    sessionSlot: el("div", { class: "session-slot" }),
    dialogSlot: el("div", { class: "dialog-slot" }),
    agentForm: null,
    drawn: {},
  };
  built.sessionsHead.append(
    el("h1", { attrs: { id: "sessions-title" } }, "Sessions"),
    built.sessionsCount,
    el("span", { class: "head-gap" }),
    built.filterBar.element,
    built.searchBox.element,
  );
  const card = el(
    "section",
    { class: "card sessions-card", attrs: { "aria-labelledby": "sessions-title" } },
    built.sessionsHead,
    built.sessionsMessages,
    built.sessionsBody,
  );
  built.workbench.append(el("div", { class: "sessions-slot" }, card), built.sessionSlot);
  root.replaceChildren(
    built.header,
    el("main", { class: "content" }, built.runBar.element, built.runBarError, built.liveRuns, built.workbench),
    built.dialogSlot,
  );
  pages.set(root, built);
  return built;
}

/** Draws `state`: the parts whose inputs changed. */
export function renderApp(root: HTMLElement, state: ViewState, actions: Actions): void {
  const parts = page(root, actions);
  parts.actions = actions;

  const headerInputs = [state.workspace, state.refreshing, state.workspaceMenu];
  if (!sameItems(parts.drawn.header, headerInputs)) {
    parts.header.replaceChildren(...headerParts(state, actions));
    parts.drawn.header = headerInputs;
  }

  const agents = state.agents.kind === "ok" ? state.agents.value : [];
  parts.runBar.element.hidden = state.workspace.kind !== "ok" || state.agents.kind !== "ok";
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

  drawSessions(parts, state, actions);

  const split = state.sessionView !== null;
  if (parts.workbench.classList.contains("split") !== split) {
    parts.workbench.classList.toggle("split", split);
    // The table's height changed: keep the selected row in view.
    if (state.selected !== null) parts.table.reveal(state.selected);
  }
  if (state.sessionView === null) parts.sessionSlot.replaceChildren();
  else if (parts.sessionSlot.firstChild !== state.sessionView) parts.sessionSlot.replaceChildren(state.sessionView);

  drawDialogs(parts, state, actions);
}

function drawSessions(parts: Page, state: ViewState, actions: Actions): void {
  const { workspace, sessions } = state;
  const all = sessions.kind === "ok" ? sessions.value : [];
  const shown = visibleSessions(state);
  parts.filterBar.update(all, state.filters);
  parts.searchBox.update(state.search);
  parts.sessionsCount.textContent =
    sessions.kind !== "ok" || all.length === 0
      ? ""
      : shown.length === all.length
        ? all.length === 1
          ? "1 session"
          : `${all.length.toLocaleString("en-US")} sessions`
        : `${shown.length.toLocaleString("en-US")} of ${all.length.toLocaleString("en-US")}`;
  parts.sessionsHead.classList.toggle("refreshing", state.refreshing && sessions.kind !== "loading");

  const messages = [state.pinError, state.deleteError, state.watchNotice];
  if (!sameItems(parts.drawn.messages, messages)) {
    parts.sessionsMessages.replaceChildren(
      ...[
        state.watchNotice &&
          errorBox("Sessions are polled, not watched live", {
            code: "watch_polling",
            message: state.watchNotice.reason,
          }),
        state.pinError && errorBox("The pin could not be changed", state.pinError),
        state.deleteError && errorBox("The session could not be deleted", state.deleteError),
      ].filter((item): item is HTMLElement => Boolean(item)),
    );
    parts.drawn.messages = messages;
  }

  let body: "table" | Node;
  if (workspace.kind === "error") body = errorBox("The workspace could not be opened", workspace.error);
  else if (sessions.kind === "error") body = errorBox("The sessions could not be listed", sessions.error);
  else if (sessions.kind === "loading" || workspace.kind === "loading")
    body = el("p", { class: "loading muted" }, "Reading sessions…");
  else if (all.length === 0) body = emptyState(workspace.value, actions);
  else if (shown.length === 0 && isFiltered(state.filters)) {
    body = el(
      "div",
      { class: "no-match" },
      el("p", {}, "No session matches the filters."),
      button({ class: "button small", attrs: { id: "clear-filters" } }, "Clear filters", () =>
        actions.setFilters({ status: "all", agent: "all", pinnedOnly: false }),
      ),
    );
  } else body = "table";

  if (body === "table") {
    const live = new Set(state.runs.filter(isLive).map((run) => run.sessionId));
    for (const row of all) if (row.live_run) live.add(row.id);
    parts.table.update(shown, state.now, live, state.selected, state.sessionView !== null);
    if (state.selected !== null && parts.drawn.selected !== state.selected) parts.table.reveal(state.selected);
    parts.drawn.selected = state.selected;
    if (parts.sessionsBody.firstChild !== parts.table.element) parts.sessionsBody.replaceChildren(parts.table.element);
    parts.drawn.body = undefined;
  } else {
    const inputs = [workspace, sessions, state.filters];
    if (!sameItems(parts.drawn.body, inputs) || parts.sessionsBody.firstChild === parts.table.element) {
      parts.sessionsBody.replaceChildren(body);
      parts.drawn.body = inputs;
    }
  }
}

function drawDialogs(parts: Page, state: ViewState, actions: Actions): void {
  if (state.quitRequest) {
    const inputs = [state.quitRequest];
    if (!sameItems(parts.drawn.dialog, inputs)) {
      parts.dialogSlot.replaceChildren(quitDialog(state.quitRequest, (choice) => actions.answerQuit(choice)));
      parts.drawn.dialog = inputs;
      parts.agentForm = null;
    }
    return;
  }
  if (state.trustRequest) {
    const inputs = [state.trustRequest];
    if (!sameItems(parts.drawn.dialog, inputs)) {
      parts.dialogSlot.replaceChildren(trustDialog(state.trustRequest.launch, state.trustRequest.answer));
      parts.drawn.dialog = inputs;
      parts.agentForm = null;
    }
    return;
  }
  if (state.agentForm) {
    if (
      !parts.agentForm ||
      parts.agentForm.editing !== state.agentForm.editing ||
      !parts.dialogSlot.contains(parts.agentForm.element)
    ) {
      parts.agentForm = createAgentForm(state.agentForm.editing, parts.actions);
      parts.dialogSlot.replaceChildren(parts.agentForm.element);
    }
    parts.agentForm.update(state.agentForm.saving, state.agentForm.error);
    parts.drawn.dialog = undefined;
    return;
  }
  parts.agentForm = null;
  const inputs = [state.confirmDelete];
  if (!sameItems(parts.drawn.dialog, inputs)) {
    parts.dialogSlot.replaceChildren(...(state.confirmDelete ? [deleteDialog(state.confirmDelete, actions)] : []));
    parts.drawn.dialog = inputs;
  }
}

function sameItems(a: readonly unknown[] | undefined, b: readonly unknown[]): boolean {
  return a !== undefined && a.length === b.length && a.every((item, i) => item === b[i]);
}

function headerParts(state: ViewState, actions: Actions): Node[] {
  const refresh = button(
    { class: "button", title: "Read the sessions again", attrs: { id: "refresh" } },
    "Refresh",
    () => actions.refresh(),
  );
  refresh.disabled = state.refreshing || state.workspace.kind !== "ok";
  return [
    el(
      "div",
      { class: "brand" },
      el("span", { class: "logo", attrs: { "aria-hidden": "true" } }, "Z"),
      el("span", { class: "brand-name" }, "Zibby Studio"),
    ),
    workspaceSwitcher(state.workspace, state.workspaceMenu, actions),
    el(
      "span",
      { class: "keys-hint muted", title: "↑/↓ select, Enter open, / search, P pin, S stop, Delete delete, Esc close" },
      "Keys: ↑↓ ⏎ / P S Del Esc",
    ),
    refresh,
  ];
}

function emptyState(workspace: WorkspaceInfo, actions: Actions): HTMLElement {
  const command = `cargo run -p zibby-test-agent -- fill-demo ${shellQuote(workspace.root)}`;
  const copy = button(
    { class: "button small", title: "Copy the command", attrs: { id: "copy-demo-command" } },
    "Copy",
    () => {
      void navigator.clipboard?.writeText(command).then(
        () => (copy.textContent = "Copied"),
        () => (copy.textContent = "Select and copy"),
      );
    },
  );
  return el(
    "div",
    { class: "empty" },
    el("h2", {}, "No sessions yet"),
    el("p", {}, "Zibby Studio lists the runs it finds in ", el("code", {}, workspace.sessions_dir), "."),
    el(
      "div",
      { class: "empty-ways" },
      el(
        "div",
        { class: "empty-way" },
        el("h3", {}, "Configure an agent"),
        el("p", {}, "Tell the studio how to run your agent, then start it from the Run bar."),
        button({ class: "button primary", attrs: { id: "agent-add" } }, "Add agent", () => actions.editAgent(null)),
      ),
      el(
        "div",
        { class: "empty-way" },
        el("h3", {}, "Or run the demo agent"),
        el(
          "p",
          {},
          "Run an agent with ",
          el("code", {}, "ZIBBY_EMIT_GRAPH_MARKERS=1"),
          " in this folder, or run the demo from a Zibby Studio checkout:",
        ),
        el("div", { class: "command-row" }, el("pre", { class: "command" }, command), copy),
      ),
    ),
    el("p", { class: "muted" }, "Sessions appear here as they are written."),
  );
}

/** Quotes a path for a POSIX shell when it needs it. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Asks before deleting, naming the session and what cannot be undone. */
function deleteDialog(sessionId: string, actions: Actions): HTMLElement {
  const confirm = button({ class: "button danger", attrs: { "data-testid": "confirm-delete" } }, "Delete", () =>
    actions.deleteSession(sessionId),
  );
  const cancel = button({ class: "button", attrs: { "data-testid": "cancel-delete" } }, "Cancel", () =>
    actions.askDelete(null),
  );
  const dialog = el(
    "div",
    {
      class: "confirm",
      attrs: {
        role: "alertdialog",
        "aria-modal": "true",
        "aria-labelledby": "confirm-title",
        "data-testid": "delete-dialog",
      },
    },
    el("h2", { attrs: { id: "confirm-title" } }, "Delete session ", el("code", {}, sessionId), "?"),
    el(
      "p",
      {},
      "Its folder goes to the system trash. The studio's records of it (runs, output, logs, messages) are deleted, and that cannot be undone.",
    ),
    el("div", { class: "confirm-buttons" }, cancel, confirm),
  );
  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      actions.askDelete(null);
    }
  });
  queueMicrotask(() => cancel.focus());
  return dialog;
}
