// The session view: one session in full beside the table. A header (title, id, agent, status,
// elapsed time, and Stop, Re-run node, Continue, Pin, Reveal, Delete) over six tabs: Timeline,
// Output, Nodes, Logs, Conversation, Files. It reads what it shows from the backend itself, and
// follows the session live: run events and output events of its runs, and the table's reloads
// (a changed row means its files changed).

import type { Backend } from "./backend";
import { badge, button, el, errorBox } from "./elements";
import { toCommandError } from "./errors";
import { fileViewer, filesPanel } from "./files";
import { elapsedLabel } from "./format";
import { STOPPING_LABEL } from "./liveruns";
import { conversationView, logsView } from "./logs";
import { nodeCards } from "./nodecards";
import { createRunOutputs } from "./runoutputs";
import { throttle } from "./schedule";
import { DELETE_LIVE_TITLE, progressOf } from "./table";
import { nodesWithoutTimes, timelineView, type RunSpans } from "./timeline";
import type {
  Agent,
  CommandError,
  RunEvent,
  RunOutputEvent,
  RunRecord,
  SessionDetail,
  SessionRow,
  Span,
  StartedRun,
} from "./types";

export type SessionTab = "timeline" | "output" | "nodes" | "logs" | "conversation" | "files";

export const SESSION_TABS: readonly { id: SessionTab; label: string }[] = [
  { id: "timeline", label: "Timeline" },
  { id: "output", label: "Output" },
  { id: "nodes", label: "Nodes" },
  { id: "logs", label: "Logs" },
  { id: "conversation", label: "Conversation" },
  { id: "files", label: "Files" },
];

/** How often the session is read again while it changes. */
const RELOAD_EVERY_MS = 1_000;
/** How often a live run's spans are read again while its nodes begin and end. */
const SPANS_EVERY_MS = 500;
/** The timeline shows this many runs of a session at most (the newest). */
const MOST_TIMELINE_RUNS = 20;

export interface SessionViewContext {
  backend: Backend;
  agents(): readonly Agent[];
  /** Stops a run (graceful, or `force`); rejects with why it could not. */
  stopRun(runId: string, force: boolean): Promise<unknown>;
  askDelete(sessionId: string): void;
  togglePin(sessionId: string, pin: boolean): void;
  /** A run this view started (Continue, Re-run node). */
  runStarted(started: StartedRun): void;
  close(): void;
  now(): number;
}

export interface SessionView {
  element: HTMLElement;
  sessionId: string;
  /** The session's row after a table reload (`null`: not listed any more), and its live run. */
  update(row: SessionRow | null, liveRunId: string | null): void;
  onRunEvent(event: RunEvent): void;
  onRunOutput(event: RunOutputEvent): void;
  /** Once a second: the elapsed time and the running bars. */
  tick(): void;
  showTab(tab: SessionTab): void;
  /** Opens the Output tab on a run, at a line (a search hit). */
  showOutputLine(runId: string, seq: number): void;
  /** Stop (the S key): graceful the first time, forced the second. */
  stop(): void;
  liveRun(): string | null;
}

type StopState = { runId: string; forced: boolean } | null;

export function createSessionView(
  sessionId: string,
  context: SessionViewContext,
  initialRow: SessionRow | null,
  initialLiveRun: string | null,
  initialTab: SessionTab = "timeline",
): SessionView {
  const { backend } = context;
  let row = initialRow;
  let liveRunId = initialLiveRun;
  let detail: SessionDetail | null = null;
  let detailError: CommandError | null = null;
  let runs: RunRecord[] = [];
  let tab: SessionTab = initialTab;
  let stopState: StopState = null;
  let actionError: { title: string; error: CommandError } | null = null;
  let openForm: "rerun" | "continue" | null = null;
  let busy = false;

  const header = el("header", { class: "sv-head" });
  const formSlot = el("div", { class: "sv-form-slot" });
  const tabButtons = SESSION_TABS.map((item) => {
    const tabButton = button(
      {
        class: "tab",
        attrs: { "data-tab": item.id, role: "tab", id: `tab-${item.id}`, "aria-controls": "session-panel" },
      },
      item.label,
      () => showTab(item.id),
    );
    tabButton.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      event.preventDefault();
      const index = SESSION_TABS.findIndex((candidate) => candidate.id === tab);
      const next =
        SESSION_TABS[(index + (event.key === "ArrowRight" ? 1 : SESSION_TABS.length - 1)) % SESSION_TABS.length]!;
      showTab(next.id);
      tabButtons.find((candidate) => candidate.getAttribute("data-tab") === next.id)?.focus();
    });
    return tabButton;
  });
  const panel = el("div", { class: "sv-panel", attrs: { id: "session-panel", role: "tabpanel" } });
  const element = el(
    "section",
    {
      class: "session-view",
      attrs: { id: "session-view", "data-session-id": sessionId, "aria-label": `Session ${sessionId}` },
    },
    header,
    formSlot,
    el("div", { class: "tabs", attrs: { role: "tablist", "aria-label": "Session" } }, ...tabButtons),
    panel,
  );

  // ---- the header ----

  const continuePrompt = el("textarea", {
    class: "field continue-prompt",
    attrs: {
      id: "continue-prompt",
      rows: "3",
      placeholder: "Continue the conversation…",
      "aria-label": "Continue prompt",
      spellcheck: "false",
    },
  });
  const continueAgent = el("select", { class: "field small", attrs: { id: "continue-agent", "aria-label": "Agent" } });
  const continueSend = button(
    { class: "button primary small", attrs: { id: "continue-send" } },
    "Send",
    () => void sendContinue(),
  );
  continuePrompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void sendContinue();
    } else if (event.key === "Escape") {
      event.stopPropagation();
      closeForm();
    }
  });

  const rerunNode = el("select", { class: "field small", attrs: { id: "rerun-node", "aria-label": "Node" } });
  const rerunAgent = el("select", { class: "field small", attrs: { id: "rerun-agent", "aria-label": "Agent" } });
  const rerunStart = button(
    { class: "button primary small", attrs: { id: "rerun-start" } },
    "Re-run",
    () => void startRerun(),
  );

  /** The agent a new run of this session uses: the session's, else the one picked. */
  function agentFor(select: HTMLSelectElement): string | null {
    return row?.agent ?? (select.value || null);
  }

  /** Fills a select with names, keeping the choice; only when the names changed (an open list
   * would close). */
  function fillSelect(select: HTMLSelectElement, names: readonly string[]): void {
    const listed = [...select.options].map((option) => option.value);
    if (listed.length === names.length && listed.every((name, i) => name === names[i])) return;
    const chosen = select.value;
    select.replaceChildren(...names.map((name) => el("option", { attrs: { value: name } }, name)));
    select.value = names.includes(chosen) ? chosen : (names[0] ?? "");
  }

  // The forms are built once and updated in place: a reload while typing keeps the text and focus.
  const continueAgentSlot = el("span", { class: "muted" });
  const continueForm = el(
    "div",
    { class: "sv-form continue-form" },
    continuePrompt,
    el(
      "div",
      { class: "sv-form-row" },
      continueAgentSlot,
      el("span", { class: "muted hint" }, "Enter sends, Shift+Enter starts a new line."),
      button({ class: "button small" }, "Cancel", () => closeForm()),
      continueSend,
    ),
  );
  const rerunAgentSlot = el("span", { class: "muted" });
  const rerunNoNodes = el("span", { class: "muted" }, "The session has no nodes to re-run.");
  const rerunForm = el(
    "div",
    { class: "sv-form rerun-form" },
    el("label", { class: "muted" }, "Node ", rerunNode),
    rerunAgentSlot,
    rerunNoNodes,
    el("span", { class: "toolbar-gap" }),
    button({ class: "button small" }, "Cancel", () => closeForm()),
    rerunStart,
  );
  const formError = el("div", { class: "sv-form-error" });

  /** "Agent writer", or a choice of the workspace's agents when the session names none. */
  function drawAgent(slot: HTMLElement, select: HTMLSelectElement): void {
    fillSelect(
      select,
      context.agents().map((agent) => agent.name),
    );
    const agent = row?.agent ?? null;
    const shown = slot.getAttribute("data-agent");
    if (shown === (agent ?? "")) return;
    slot.setAttribute("data-agent", agent ?? "");
    slot.replaceChildren(...(agent ? ["Agent ", el("code", {}, agent)] : [el("label", {}, "Agent ", select)]));
  }

  function renderForm(): void {
    const form = openForm === "continue" ? continueForm : openForm === "rerun" ? rerunForm : null;
    if (openForm === "continue") {
      drawAgent(continueAgentSlot, continueAgent);
      continueSend.disabled = busy;
    } else if (openForm === "rerun") {
      const names = [...new Set((detail?.nodes ?? row?.nodes ?? []).map((node) => node.name))];
      fillSelect(rerunNode, names);
      drawAgent(rerunAgentSlot, rerunAgent);
      rerunNoNodes.hidden = names.length > 0;
      rerunStart.disabled = busy || names.length === 0;
    }
    formError.replaceChildren(...(actionError ? [errorBox(actionError.title, actionError.error)] : []));
    const wanted: HTMLElement[] = [];
    if (form) wanted.push(form);
    if (actionError) wanted.push(formError);
    const current = [...formSlot.children];
    if (current.length !== wanted.length || current.some((part, i) => part !== wanted[i]))
      formSlot.replaceChildren(...wanted);
  }

  function closeForm(): void {
    openForm = null;
    renderForm();
  }

  function toggleForm(form: "rerun" | "continue"): void {
    openForm = openForm === form ? null : form;
    actionError = null;
    renderForm();
    if (openForm === "continue") queueMicrotask(() => continuePrompt.focus());
    if (openForm === "rerun") queueMicrotask(() => rerunNode.focus());
  }

  async function sendContinue(): Promise<void> {
    const prompt = continuePrompt.value;
    const agent = agentFor(continueAgent);
    if (busy) return;
    if (prompt.trim() === "" || agent === null) {
      continuePrompt.focus();
      return;
    }
    await startRun("The run could not start", () => backend.runStart({ agent, prompt, session_id: sessionId }));
    if (actionError === null) continuePrompt.value = "";
  }

  async function startRerun(): Promise<void> {
    const node = rerunNode.value;
    const agent = agentFor(rerunAgent);
    if (busy || node === "" || agent === null) return;
    await startRun("The node could not be re-run", () => backend.runReplay(sessionId, node, agent));
  }

  async function startRun(title: string, start: () => Promise<StartedRun>): Promise<void> {
    busy = true;
    actionError = null;
    renderForm();
    try {
      const started = await start();
      liveRunId = started.run_id;
      openForm = null;
      context.runStarted(started);
      await reload();
      showTab("output");
    } catch (error) {
      actionError = { title, error: toCommandError(error) };
    } finally {
      busy = false;
      renderHeader();
      renderForm();
    }
  }

  function stop(force: boolean): void {
    const runId = liveRunId;
    if (runId === null) return;
    stopState = { runId, forced: force || (stopState?.runId === runId && stopState.forced) };
    actionError = null;
    renderHeader();
    renderForm();
    context.stopRun(runId, force).catch((error: unknown) => {
      if (liveRunId !== runId) return; // it ended meanwhile
      stopState = null;
      actionError = { title: "The run could not be stopped", error: toCommandError(error) };
      renderHeader();
      renderForm();
    });
  }

  /**
   * One definition of elapsed everywhere (the Live runs strip, the Timeline, `run_finished`): the
   * last run's start to its end, to now while it lives. A session the studio never ran: its
   * first to its last change.
   */
  function elapsedText(): string {
    const last = runs[0];
    if (last) {
      const start = Date.parse(last.started_at);
      const end = last.ended_at === null || last.id === liveRunId ? context.now() : Date.parse(last.ended_at);
      return Number.isNaN(start) || Number.isNaN(end) ? "" : elapsedLabel(Math.max(0, end - start));
    }
    const created = row?.created_at ?? detail?.created_at ?? null;
    if (created === null) return "";
    const start = Date.parse(created);
    const end = liveRunId !== null ? context.now() : Date.parse(row?.updated_at ?? detail?.updated_at ?? created);
    return Number.isNaN(start) || Number.isNaN(end) ? "" : elapsedLabel(end - start);
  }

  function renderHeader(): void {
    const status = row?.status ?? detail?.status ?? "unknown";
    const statusBadge = badge(liveRunId !== null && status !== "running" ? "running" : status);
    statusBadge.id = "session-status";
    const live = liveRunId !== null;
    const agentsKnown = row?.agent !== null && row?.agent !== undefined ? true : context.agents().length > 0;
    const noAgentTitle = "No agent: add one to .zibby/studio.toml (Run bar, Add agent)";

    const buttons: HTMLElement[] = [];
    if (live) {
      if (stopState?.runId === liveRunId) {
        const stopping = button(
          { class: "button small stop", attrs: { id: "session-stop" } },
          stopState.forced ? "Force stopping…" : STOPPING_LABEL,
          () => {},
        );
        stopping.disabled = true;
        buttons.push(stopping);
        if (!stopState.forced) {
          buttons.push(
            button(
              {
                class: "button small force-stop",
                title: "Signal the run's processes now (SIGTERM, then SIGKILL)",
                attrs: { id: "session-force-stop" },
              },
              "Force stop",
              () => stop(true),
            ),
          );
        }
      } else {
        buttons.push(
          button(
            { class: "button small stop", title: "Stop after the current node (S)", attrs: { id: "session-stop" } },
            "Stop",
            () => stop(false),
          ),
        );
      }
    }
    const rerun = button(
      {
        class: "button small",
        title: live ? "The session is running" : agentsKnown ? "Run one node of this session again" : noAgentTitle,
        attrs: { id: "session-rerun", "aria-expanded": String(openForm === "rerun") },
      },
      "Re-run node",
      () => toggleForm("rerun"),
    );
    rerun.disabled = live || !agentsKnown;
    const continueButton = button(
      {
        class: "button small",
        title: live
          ? "The session is running"
          : agentsKnown
            ? "Send the agent a follow-up prompt in this session"
            : noAgentTitle,
        attrs: { id: "session-continue", "aria-expanded": String(openForm === "continue") },
      },
      "Continue",
      () => toggleForm("continue"),
    );
    continueButton.disabled = live || !agentsKnown;
    const pinned = row?.pinned ?? false;
    const pin = button(
      {
        class: "button small",
        title: pinned ? "Unpin (P)" : "Pin (P)",
        attrs: { id: "session-pin", "aria-pressed": String(pinned) },
      },
      pinned ? "★ Pinned" : "☆ Pin",
      () => context.togglePin(sessionId, !pinned),
    );
    const reveal = button(
      { class: "button small", title: "Open the session folder in the file manager", attrs: { id: "session-reveal" } },
      "Reveal",
      () => {
        backend.sessionReveal(sessionId).catch((error: unknown) => {
          actionError = { title: "The folder could not be opened", error: toCommandError(error) };
          renderForm();
        });
      },
    );
    const remove = button(
      {
        class: "button small danger-quiet",
        title: live ? DELETE_LIVE_TITLE : "Delete this session (Delete)",
        attrs: { id: "session-delete" },
      },
      "Delete",
      () => context.askDelete(sessionId),
    );
    remove.disabled = live;
    buttons.push(rerun, continueButton, pin, reveal, remove);

    const title = row?.title ?? sessionId;
    const nodes = row?.nodes ?? detail?.nodes ?? [];
    const { done } = progressOf({ nodes });
    // Drawn again on every change of the session: the button that had the focus keeps it.
    const focused =
      document.activeElement instanceof HTMLElement && header.contains(document.activeElement)
        ? document.activeElement.id
        : "";
    header.replaceChildren(
      el(
        "div",
        { class: "sv-title-row" },
        button(
          {
            class: "button small icon close",
            title: "Close (Escape)",
            attrs: { id: "session-close", "aria-label": "Close the session" },
          },
          "←",
          () => context.close(),
        ),
        el("h2", { class: "sv-title", title }, title),
        statusBadge,
        el(
          "time",
          {
            class: "sv-elapsed",
            title:
              runs.length > 0
                ? "the last run: from its start to its end (to now while it runs)"
                : "from the first to the last change",
            attrs: { id: "session-elapsed" },
          },
          elapsedText(),
        ),
      ),
      el(
        "div",
        { class: "sv-meta" },
        el("code", { class: "sv-id", title: detail?.path ?? row?.path ?? "" }, sessionId),
        el(
          "span",
          { class: "sv-agent" },
          "agent ",
          row?.agent ? el("code", {}, row.agent) : el("span", { class: "muted" }, "unknown"),
        ),
        el("span", {}, `${done}/${nodes.length} nodes`),
        (row?.current_node ?? detail?.current_node) &&
          el("span", {}, "▸ ", el("code", {}, row?.current_node ?? detail?.current_node)),
        // A run just started may not have written its folder yet.
        detailError && !live && el("span", { class: "sv-problem" }, `could not be read: ${detailError.message}`),
      ),
      el("div", { class: "sv-actions" }, ...buttons),
    );
    if (focused) header.querySelector<HTMLElement>(`#${focused}`)?.focus();
  }

  // ---- the panels ----

  const spansByRun = new Map<string, Span[]>();

  function renderTimeline(): void {
    if (tab !== "timeline") return;
    if (runs.length === 0) {
      panel.replaceChildren(detail ? nodesWithoutTimes(detail.nodes) : loadingNote());
      return;
    }
    const shown: RunSpans[] = runs
      .slice(0, MOST_TIMELINE_RUNS)
      .map((run) => ({ run, spans: spansByRun.get(run.id) ?? [] }));
    const view = timelineView(shown, context.now());
    if (runs.length > MOST_TIMELINE_RUNS)
      view.prepend(
        el("p", { class: "muted timeline-note" }, `The newest ${MOST_TIMELINE_RUNS} of ${runs.length} runs.`),
      );
    panel.replaceChildren(view);
  }

  /** Reads the spans of the runs that may have changed (all the first time, then live ones). */
  async function loadSpans(all: boolean): Promise<void> {
    // Spans read while a run was live are read again once it ended (their ends were not written yet).
    const stale = (run: RunRecord) => (spansByRun.get(run.id) ?? []).some((span) => span.ended_at === null);
    const wanted = runs
      .slice(0, MOST_TIMELINE_RUNS)
      .filter((run) => all || !spansByRun.has(run.id) || run.ended_at === null || run.id === liveRunId || stale(run));
    await Promise.all(
      wanted.map(async (run) => {
        try {
          spansByRun.set(run.id, await backend.runSpans(run.id));
        } catch {
          spansByRun.set(run.id, spansByRun.get(run.id) ?? []);
        }
      }),
    );
    renderTimeline();
  }
  const refreshSpans = throttle(() => void loadSpans(false), SPANS_EVERY_MS);

  const runOutputs = createRunOutputs(backend, (error) => {
    actionError = { title: "The output could not be read", error: toCommandError(error) };
    renderForm();
  });

  /** Draws the Output tab, updating it in place (the line viewer keeps its scroll position). */
  function renderOutput(): void {
    if (tab !== "output") return;
    if (runs.length === 0) {
      if (panel.getAttribute("data-drawn") !== "output-without-runs" || !detail) {
        panel.replaceChildren(outputWithoutRuns());
        if (detail) panel.setAttribute("data-drawn", "output-without-runs");
      }
      return;
    }
    runOutputs.update(runs, [...new Set((detail?.nodes ?? row?.nodes ?? []).map((node) => node.name))]);
    if (runOutputs.element.parentElement !== panel) {
      panel.replaceChildren(runOutputs.element);
      panel.setAttribute("data-drawn", "output");
      runOutputs.redraw();
    }
  }

  function outputWithoutRuns(): HTMLElement {
    if (!detail) return loadingNote();
    if (detail.raw_stream_output) {
      return el(
        "div",
        { class: "output-panel" },
        el(
          "p",
          { class: "muted panel-note" },
          "The studio did not run this session, so it has no recorded output; this is the session folder's ",
          el("code", {}, "raw_stream_output.txt"),
          ".",
        ),
        fileViewer(backend, sessionId, detail.raw_stream_output.path, { ansi: true, id: "raw-stream-output" }),
      );
    }
    return el(
      "p",
      { class: "muted panel-note" },
      "No output: the studio did not run this session, and its folder has no raw_stream_output.txt. The Nodes tab shows what each node wrote.",
    );
  }

  function loadingNote(): HTMLElement {
    return el("p", { class: "muted panel-note" }, detailError ? "The session could not be read." : "Reading…");
  }

  let filesPanelState: ReturnType<typeof filesPanel> | null = null;
  /** The nodes the Nodes tab shows, as drawn. */
  let nodesDrawn = "";

  async function renderPanel(): Promise<void> {
    for (const tabButton of tabButtons) {
      const active = tabButton.getAttribute("data-tab") === tab;
      tabButton.setAttribute("aria-selected", String(active));
      tabButton.classList.toggle("active", active);
      tabButton.tabIndex = active ? 0 : -1;
    }
    panel.setAttribute("data-panel", tab);
    panel.setAttribute("aria-labelledby", `tab-${tab}`);
    switch (tab) {
      case "timeline":
        renderTimeline();
        return loadSpans(false);
      case "output":
        return renderOutput();
      case "nodes": {
        // Drawn again only when the nodes changed: a redraw would close the sections being read.
        const drawn = detail ? JSON.stringify(detail.nodes) : "";
        if (panel.getAttribute("data-drawn") !== "nodes" || drawn !== nodesDrawn) {
          panel.replaceChildren(detail ? nodeCards(backend, sessionId, detail.nodes) : loadingNote());
          panel.setAttribute("data-drawn", "nodes");
          nodesDrawn = drawn;
        }
        return;
      }
      case "logs":
        return show(tab, () => backend.sessionLogs(sessionId), logsView, "The logs could not be read");
      case "conversation":
        return show(tab, () => backend.sessionMessages(sessionId), conversationView, "The messages could not be read");
      case "files":
        filesPanelState ??= filesPanel(backend, sessionId, () => new Date(context.now()));
        panel.replaceChildren(filesPanelState.element);
        return filesPanelState.refresh();
    }
  }

  /** Reads a list and draws it, unless another tab was opened meanwhile. */
  async function show<T>(
    which: SessionTab,
    read: () => Promise<T>,
    draw: (value: T) => HTMLElement,
    failure: string,
  ): Promise<void> {
    if (!panel.hasChildNodes() || panel.getAttribute("data-drawn") !== which) panel.replaceChildren(loadingNote());
    panel.setAttribute("data-drawn", which);
    try {
      const value = await read();
      if (tab === which) panel.replaceChildren(draw(value));
    } catch (error) {
      if (tab === which) panel.replaceChildren(errorBox(failure, toCommandError(error)));
    }
  }

  function showTab(next: SessionTab): void {
    tab = next;
    panel.removeAttribute("data-drawn");
    void renderPanel();
  }

  // ---- loading and following ----

  async function reload(): Promise<void> {
    const [detailResult, runsResult] = await Promise.allSettled([
      backend.sessionGet(sessionId),
      backend.runsList(sessionId),
    ]);
    if (detailResult.status === "fulfilled") {
      detail = detailResult.value;
      detailError = null;
    } else {
      detailError = toCommandError(detailResult.reason);
    }
    if (runsResult.status === "fulfilled") {
      runs = [...runsResult.value].sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at));
    }
    renderHeader();
    if (openForm) renderForm();
    // The Files tab is read again only when opened (a reload would close the file being read).
    if (tab !== "files") await renderPanel();
  }
  const reloadSoon = throttle(() => void reload(), RELOAD_EVERY_MS);

  const isOurRun = (runId: string) => runId === liveRunId || runs.some((run) => run.id === runId);

  renderHeader();
  void renderPanel();
  void reload();

  return {
    element,
    sessionId,
    update(nextRow, nextLive) {
      const changed =
        nextRow?.updated_at !== row?.updated_at ||
        nextRow?.status !== row?.status ||
        nextLive !== liveRunId ||
        nextRow?.live_run !== row?.live_run;
      const repaint = changed || nextRow?.pinned !== row?.pinned || nextRow?.title !== row?.title;
      row = nextRow ?? row;
      if (nextLive !== liveRunId) {
        liveRunId = nextLive;
        if (stopState && stopState.runId !== liveRunId) stopState = null;
      }
      if (repaint) renderHeader();
      if (changed) reloadSoon();
    },
    onRunEvent(event) {
      if (event.type === "run_started" && event.session_id === sessionId) {
        liveRunId = event.run_id;
        renderHeader();
        reloadSoon();
        return;
      }
      if (!isOurRun(event.run_id)) return;
      // A stop asked elsewhere (the Live runs strip, the S key) shows here too.
      if (event.type === "stopping" && event.run_id === liveRunId) {
        stopState = {
          runId: event.run_id,
          forced: event.forced || (stopState?.runId === event.run_id && stopState.forced),
        };
        renderHeader();
        return;
      }
      if (event.type === "node_begin" || event.type === "node_end" || event.type === "node_discarded") refreshSpans();
      if (event.type === "run_finished") {
        if (liveRunId === event.run_id) liveRunId = null;
        stopState = null;
        renderHeader();
        refreshSpans();
        reloadSoon();
      }
    },
    onRunOutput(event) {
      if (event.session_id !== sessionId) return;
      if (!runOutputs.grew(event.run_id, event.lines) && !runs.some((run) => run.id === event.run_id)) reloadSoon();
    },
    tick() {
      const time = element.querySelector("#session-elapsed");
      if (time) time.textContent = elapsedText();
      if (tab === "timeline" && liveRunId !== null) renderTimeline();
    },
    showTab,
    showOutputLine(runId, seq) {
      runOutputs.showLine(runId, seq);
      showTab("output");
    },
    stop() {
      if (liveRunId === null) return;
      stop(stopState?.runId === liveRunId);
    },
    liveRun: () => liveRunId,
  };
}
