// The state of one open session view, as runes: what it shows (the session's row, its detail and
// runs, the spans of those runs), what is going on (the live run, a stop asked, a form open) and
// what it does (reading the session again as it changes, stopping, starting runs). The window's
// state holds the open session's model and tells it what changed; `components/session/SessionView`
// draws it.

import type { Backend } from "./backend";
import { toCommandError } from "./errors";
import { elapsedLabel } from "./format";
import { throttle } from "./schedule";
import type {
  Agent,
  CloudImported,
  CommandError,
  ExportedBundle,
  LocalSessions,
  RemoteStatus,
  RunEvent,
  RunOutput,
  RunRecord,
  Session,
  SessionRow,
  Span,
  StartedRun,
  Status,
} from "./types";

/** What Export… puts in a bundle as it is and what it redacts, said before (its tooltip) and after
 * (under "Exported to …"): whoever gets a bundle reads it (issue 40, point 9). */
export const EXPORT_INCLUDES =
  "Save this session as one .zip bundle to share. Its prompts and what the agent printed and wrote go in as they are, any token in them too; its commands, errors and log lines have their secrets redacted, and its config is left out.";

/** What the window says under "Exported to …". */
export function exportedNote(secretsRedacted: number): string {
  const secrets = secretsRedacted === 1 ? "1 secret" : `${secretsRedacted} secrets`;
  return `Included as they are: the prompts and what the agent printed and wrote, any token in them too. Redacted: ${secrets} in its commands, errors and log lines; its config left out.`;
}

/** The forms under a session's header: Re-run node, Continue, Compare with a local session. */
export type SessionForm = "rerun" | "continue" | "compare-local";

export type SessionTab = "timeline" | "output" | "nodes" | "logs" | "conversation" | "files";

export const SESSION_TABS: readonly { id: SessionTab; label: string }[] = [
  { id: "timeline", label: "Timeline" },
  { id: "output", label: "Output" },
  { id: "nodes", label: "Nodes" },
  { id: "logs", label: "Logs" },
  { id: "conversation", label: "Conversation" },
  { id: "files", label: "Files" },
];

/** What an open session needs of the window. */
export interface SessionViewContext {
  backend: Backend;
  /** The open workspace's host and path when it is on another machine (Reveal becomes "Copy remote path"). */
  remote(): RemoteStatus | null;
  /** The workspace is a bucket prefix: Re-run, Continue, Stop and Delete are absent. */
  readOnly(): boolean;
  /** The workspace's agents (read as they change). */
  agents(): readonly Agent[];
  /** Stops a run (graceful, or `force`); rejects with why it could not. */
  stopRun(runId: string, force: boolean): Promise<unknown>;
  /** A run this view started (Continue, Re-run node). */
  runStarted(started: StartedRun): void;
  now(): number;
}

/** How often the session is read again while it changes. */
const RELOAD_EVERY_MS = 1_000;
/** How often a live run's spans are read again while its nodes begin and end. */
const SPANS_EVERY_MS = 500;
/** The timeline shows this many runs of a session at most (the newest). */
export const MOST_TIMELINE_RUNS = 20;
/** How long the Stop control says "Ended" (disabled) after the run ended under it. */
export const ENDED_SHOWN_MS = 3_000;

/**
 * Where the run controls are: `idle` (nothing live: Stop disabled), `live` (Stop), `stopping`
 * (a graceful stop asked: Stop disabled, Force stop), `forcing` (both disabled), `ended` (the run
 * ended while shown: Stop says so, disabled, for ENDED_SHOWN_MS), `outside` (the session reads
 * `running` but the studio did not start its run: a graceful Stop only), `outside-asked` (that
 * stop asked: Stop disabled, never Force stop).
 */
export type StopPhase = "idle" | "live" | "stopping" | "forcing" | "ended" | "outside" | "outside-asked";

/** What Stop can do for a run the studio did not start (its tooltip before, its answer after). */
export const OUTSIDE_STOP_TITLE =
  "Stop before its next node. The studio did not start this run, so it cannot force it (S)";
export const OUTSIDE_STOP_ASKED =
  "Asked to stop before its next node. The studio did not start this run, so it cannot force it.";

export interface ActionError {
  title: string;
  error: CommandError;
}

/** An output view the Output tab shows, as the model reaches it. */
export interface OutputsHandle {
  /** A run printed: `true` when it is the run shown. */
  grew(runId: string, lines: number): boolean;
  /** The output shown (of run `runId`, or whichever when `null`) reads on from the lines it
   * holds: what was written while no notice could say so is fetched, nothing twice. */
  catchUp(runId: string | null): void;
}

export class SessionModel {
  readonly sessionId: string;
  readonly context: SessionViewContext;
  readonly backend: Backend;

  row: SessionRow | null = $state.raw(null);
  liveRunId: string | null = $state(null);
  detail: Session | null = $state.raw(null);
  detailError: CommandError | null = $state.raw(null);
  /** The session's runs, newest first. */
  runs: readonly RunRecord[] = $state.raw([]);
  tab: SessionTab = $state("timeline");
  stopState: { runId: string; forced: boolean } | null = $state.raw(null);
  /** The run that ended while shown here, for a moment (the Stop control says so). */
  ended: { runId: string; status: Status } | null = $state.raw(null);
  /** Force stop is offered: from the first stop asked until another run goes live (disabled once
   * the run ended; it stays rather than vanish from under the pointer). */
  forceShown = $state(false);
  actionError: ActionError | null = $state.raw(null);
  /** A graceful stop was asked of the session's outside run (see `outside`). */
  outsideStopAsked = $state(false);
  openForm: SessionForm | null = $state(null);
  /** The sessions of the workspace here, for "Compare with local…" (a remote workspace's). */
  local = $state.raw<LocalSessions | null>(null);
  localError = $state.raw<CommandError | null>(null);
  busy = $state(false);
  /** The clock, ms since the epoch: set on every read, and ticking only while a run is live. */
  now = $state(0);
  /** The spans of the runs the Timeline shows, by run: a new map on every read, never changed. */
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- replaced whole, never mutated
  spans: ReadonlyMap<string, readonly Span[]> = $state.raw(new Map());
  /** Reads of the session so far: the Logs and Conversation tabs read theirs again on each. */
  reloads = $state(0);
  /** The file the Files tab shows. */
  openFile: string | null = $state(null);
  /** A line the Output tab shows once it has that run (a search hit). */
  pendingLine: { runId: string; seq: number } | null = $state.raw(null);
  /** The Output tab was opened: its viewer is kept from then on (hidden on other tabs). */
  outputOpened = $state(false);
  /** The Output tab's viewer, while there is one. */
  outputs: OutputsHandle | null = null;

  readonly live = $derived(this.liveRunId !== null);
  readonly status: Status = $derived.by(() => {
    const status = this.row?.status ?? this.detail?.status ?? "unknown";
    return this.liveRunId !== null && status !== "running" ? "running" : status;
  });
  readonly nodes: readonly { name: string; status: Status }[] = $derived(this.row?.nodes ?? this.detail?.nodes ?? []);
  /** The node names a run could be re-run from or the output filtered by. */
  readonly nodeNames: readonly string[] = $derived(
    (this.detail?.nodes ?? this.row?.nodes ?? [])
      .map((node) => node.name)
      .filter((name, index, names) => names.indexOf(name) === index),
  );
  /** The workspace's agents, as the window has them now. */
  get agents(): readonly Agent[] {
    return this.context.agents();
  }
  readonly agentsKnown = $derived(this.row?.agent ? true : this.agents.length > 0);
  /** The session reads `running` but no run of the studio's is live: someone else started it
   * (a terminal, CI), and only its stop files can reach it. */
  readonly outside = $derived(this.liveRunId === null && this.status === "running");

  /** The session is not one of the workspace's: the listing has no row for it and its folder is
   * not found (an id from a link or a command line). Nothing can be continued or re-run there. */
  readonly missing = $derived(this.row === null && this.detailError?.code === "session_not_found");
  readonly stopPhase: StopPhase = $derived.by(() => {
    if (this.liveRunId === null && this.ended) return "ended";
    if (this.liveRunId === null && this.outside) return this.outsideStopAsked ? "outside-asked" : "outside";
    if (this.liveRunId === null) return "idle";
    if (this.stopState?.runId !== this.liveRunId) return "live";
    return this.stopState.forced ? "forcing" : "stopping";
  });
  /**
   * One definition of elapsed everywhere (the Live runs strip, the Timeline, `run_finished`): the
   * last run's start to its end, to now while it lives. A session the studio never ran: its
   * first to its last change.
   */
  readonly elapsed: string = $derived.by(() => {
    const last = this.runs[0];
    if (last) {
      const start = Date.parse(last.started_at);
      const end = last.ended_at === null || last.id === this.liveRunId ? this.now : Date.parse(last.ended_at);
      return Number.isNaN(start) || Number.isNaN(end) ? "" : elapsedLabel(Math.max(0, end - start));
    }
    const created = this.row?.created_at ?? this.detail?.created_at ?? null;
    if (created === null) return "";
    const start = Date.parse(created);
    const end =
      this.liveRunId !== null ? this.now : Date.parse(this.row?.updated_at ?? this.detail?.updated_at ?? created);
    return Number.isNaN(start) || Number.isNaN(end) ? "" : elapsedLabel(end - start);
  });

  private readonly reloadSoon: ReturnType<typeof throttle>;
  private readonly refreshSpans: ReturnType<typeof throttle>;
  private endedTimer: ReturnType<typeof setTimeout> | null = null;
  private destroyed = false;

  constructor(
    sessionId: string,
    context: SessionViewContext,
    row: SessionRow | null,
    liveRunId: string | null,
    tab: SessionTab = "timeline",
  ) {
    this.sessionId = sessionId;
    this.context = context;
    this.backend = context.backend;
    this.row = row;
    this.liveRunId = liveRunId;
    this.now = context.now();
    this.reloadSoon = throttle(() => void this.reload(), RELOAD_EVERY_MS);
    this.refreshSpans = throttle(() => void this.loadSpans(), SPANS_EVERY_MS);
    this.showTab(tab);
    void this.reload();
    // The listing says whether it has a note: asked for only then (a round trip to a host).
    if (row === null || row.has_note) void this.loadNote();
  }

  // ---- tags and its note (the store's, here or on the host) ----

  /** Its tags, as the store keeps them. */
  readonly tags: readonly string[] = $derived(this.row?.tags ?? []);
  /** Its note (`null`: none). */
  note: string | null = $state(null);
  /** Whether its note is being edited. */
  editingNote = $state(false);

  private async loadNote(): Promise<void> {
    try {
      this.note = await this.backend.noteGet(this.sessionId);
    } catch {
      // A session the store does not know has no note: nothing to say.
      this.note = null;
    }
  }

  /** Adds the tags `typed` names (several at once, comma-separated); whether it did. */
  async addTags(typed: string): Promise<boolean> {
    const words = typed.split(",").map((tag) => tag.trim());
    const tags = words.filter((tag, at) => tag !== "" && words.indexOf(tag) === at);
    if (tags.length === 0) return false;
    return this.retag("The tags could not be added", () => this.backend.tagsAdd(this.sessionId, tags));
  }

  async removeTag(tag: string): Promise<boolean> {
    return this.retag("The tag could not be removed", () => this.backend.tagsRemove(this.sessionId, [tag]));
  }

  private async retag(title: string, change: () => Promise<string[]>): Promise<boolean> {
    this.actionError = null;
    try {
      const tags = await change();
      if (this.row) this.row = { ...this.row, tags };
      return true;
    } catch (error) {
      this.actionError = { title, error: toCommandError(error) };
      return false;
    }
  }

  /** Saves `text` as its note ("" removes it); whether it did. */
  async saveNote(text: string): Promise<boolean> {
    this.actionError = null;
    const note = text.trim() === "" ? null : text;
    try {
      await this.backend.noteSet(this.sessionId, note);
      this.note = note;
      this.editingNote = false;
      return true;
    } catch (error) {
      this.actionError = { title: "The note could not be saved", error: toCommandError(error) };
      return false;
    }
  }

  // ---- what the app tells it ----

  /** The session's row after a table reload (`null`: not listed any more), and its live run. */
  update(row: SessionRow | null, liveRunId: string | null): void {
    const changed =
      row?.updated_at !== this.row?.updated_at ||
      row?.status !== this.row?.status ||
      liveRunId !== this.liveRunId ||
      row?.live_run !== this.row?.live_run;
    if (row) this.row = row;
    this.setLive(liveRunId, row?.status ?? null);
    if (changed) this.reloadSoon();
  }

  onRunEvent(event: RunEvent): void {
    if (event.type === "run_started" && event.session_id === this.sessionId) {
      this.setLive(event.run_id, null);
      this.reloadSoon();
      return;
    }
    if (!this.isOurRun(event.run_id)) return;
    // A stop asked elsewhere (the Live runs strip, the S key) shows here too.
    if (event.type === "stopping" && event.run_id === this.liveRunId) {
      const forced = event.forced || (this.stopState?.runId === event.run_id && this.stopState.forced);
      this.stopState = { runId: event.run_id, forced };
      this.forceShown = true;
      return;
    }
    if (event.type === "node_begin" || event.type === "node_end" || event.type === "node_discarded") {
      this.refreshSpans();
    }
    if (event.type === "run_finished") {
      if (this.liveRunId === event.run_id) this.setLive(null, event.status);
      this.stopState = null;
      // Its last lines may have had no notice (a remote run that ended while no server followed
      // it is recorded whole as it is told of).
      this.outputs?.catchUp(event.run_id);
      this.refreshSpans();
      this.reloadSoon();
    }
  }

  onRunOutput(event: RunOutput): void {
    if (event.session_id !== this.sessionId) return;
    const shown = this.outputs?.grew(event.run_id, event.lines) ?? false;
    if (!shown && !this.runs.some((run) => run.id === event.run_id)) this.reloadSoon();
  }

  /** The remote workspace's link is back: what was written meanwhile is read, from what the
   * view holds (the output by line number, the session and its runs again). */
  resume(): void {
    // A read that failed while the link was down is read again now: its error goes.
    if (this.actionError?.error.code === "remote_link") this.actionError = null;
    this.outputs?.catchUp(null);
    this.reloadSoon();
  }

  /** Once a second from the app: only a live run's clock moves (idle means idle). */
  tick(): void {
    if (this.liveRunId !== null) this.now = this.context.now();
  }

  showTab(tab: SessionTab): void {
    this.tab = tab;
    if (tab === "output") this.outputOpened = true;
    if (tab === "timeline") void this.loadSpans();
  }

  /** Opens the Output tab on a run, at a line (a search hit). */
  showOutputLine(runId: string, seq: number): void {
    this.pendingLine = { runId, seq };
    this.showTab("output");
  }

  /** Stop (the button, the S key): graceful, or forced. */
  stop(force: boolean): void {
    const runId = this.liveRunId;
    if (runId === null) {
      if (!force) this.stopOutside();
      return;
    }
    this.stopState = { runId, forced: force || (this.stopState?.runId === runId && this.stopState.forced) };
    this.forceShown = true;
    this.actionError = null;
    this.context.stopRun(runId, force).catch((error: unknown) => {
      if (this.liveRunId !== runId) return; // it ended meanwhile
      this.stopState = null;
      this.actionError = { title: "The run could not be stopped", error: toCommandError(error) };
    });
  }

  /** Stop of a run the studio did not start: its stop files, graceful only. */
  private stopOutside(): void {
    if (!this.outside || this.outsideStopAsked) return;
    this.outsideStopAsked = true;
    this.actionError = null;
    this.backend.sessionStopOutside(this.sessionId).catch((error: unknown) => {
      this.outsideStopAsked = false;
      this.actionError = { title: "The run could not be stopped", error: toCommandError(error) };
    });
  }

  /** The S key: graceful the first time, forced the second (never forced for an outside run). */
  stopByKey(): void {
    if (this.liveRunId === null) {
      this.stop(false);
      return;
    }
    this.stop(this.stopState?.runId === this.liveRunId);
  }

  /** Stops the timers: the view is gone. */
  destroy(): void {
    this.destroyed = true;
    this.reloadSoon.cancel();
    this.refreshSpans.cancel();
    if (this.endedTimer !== null) clearTimeout(this.endedTimer);
    this.endedTimer = null;
  }

  // ---- the header's actions ----

  toggleForm(form: SessionForm): void {
    this.openForm = this.openForm === form ? null : form;
    this.actionError = null;
    if (this.openForm === "compare-local") void this.loadLocal();
  }

  /** Reads the sessions of the workspace here (what a remote session is compared with). */
  async loadLocal(): Promise<void> {
    this.localError = null;
    try {
      this.local = await this.backend.sessionsLocal();
    } catch (error) {
      this.local = null;
      this.localError = toCommandError(error);
    }
  }

  closeForm(): void {
    this.openForm = null;
  }

  /** The agent a new run of this session uses: the session's, else the one picked. */
  agentFor(picked: string): string | null {
    return this.row?.agent ?? (picked || null);
  }

  /** Continue: resolves `true` when the run started. */
  async continueWith(prompt: string, agent: string | null): Promise<boolean> {
    if (this.busy || prompt.trim() === "" || agent === null) return false;
    return this.startRun("The run could not start", () =>
      this.backend.runStart({ agent, prompt, session_id: this.sessionId }),
    );
  }

  async rerun(node: string, agent: string | null): Promise<boolean> {
    if (this.busy || node === "" || agent === null) return false;
    return this.startRun("The node could not be re-run", () => this.backend.runReplay(this.sessionId, node, agent));
  }

  /** Where Export… last wrote the session and what it redacted (`null` until it did). */
  exported: ExportedBundle | null = $state(null);

  /** Export…: the native save dialog (the shell's), then the bundle written there. */
  exportBundle(): void {
    this.actionError = null;
    this.backend.sessionExport(this.sessionId).then(
      (exported) => {
        if (exported !== null) this.exported = exported;
      },
      (error: unknown) => {
        this.actionError = { title: "The session could not be exported", error: toCommandError(error) };
      },
    );
  }

  /** Where "Import to local workspace" copied this cloud session, once it did. */
  importedTo: CloudImported | null = $state(null);
  importing = $state(false);

  /** Copies this session of the cloud workspace into the local workspace opened last (else one
   * the folder picker asks for) and its store. */
  importToLocal(): void {
    this.actionError = null;
    this.importing = true;
    this.backend.cloudSessionImport(this.sessionId).then(
      (imported) => {
        this.importing = false;
        if (imported !== null) this.importedTo = imported;
      },
      (error: unknown) => {
        this.importing = false;
        this.actionError = { title: "The session could not be imported", error: toCommandError(error) };
      },
    );
  }

  /** The session folder's path on the remote workspace's host, once put on the clipboard. */
  copiedPath: string | null = $state(null);

  /** A remote session's folder path to the clipboard (no file manager reaches it). */
  copyRemotePath(): void {
    const path = this.row?.path ?? this.detail?.path;
    if (!path) return;
    this.backend.copyText(path).then(
      () => (this.copiedPath = path),
      (error: unknown) => {
        this.actionError = { title: "The remote path could not be copied", error: toCommandError(error) };
      },
    );
  }

  reveal(): void {
    this.backend.sessionReveal(this.sessionId).catch((error: unknown) => {
      this.actionError = { title: "The folder could not be opened", error: toCommandError(error) };
    });
  }

  outputError(error: unknown): void {
    this.actionError = { title: "The output could not be read", error: toCommandError(error) };
  }

  private async startRun(title: string, start: () => Promise<StartedRun>): Promise<boolean> {
    this.busy = true;
    this.actionError = null;
    try {
      const started = await start();
      this.setLive(started.run_id, null);
      this.openForm = null;
      this.context.runStarted(started);
      await this.reload();
      this.showTab("output");
      return true;
    } catch (error) {
      this.actionError = { title, error: toCommandError(error) };
      return false;
    } finally {
      this.busy = false;
    }
  }

  // ---- reading ----

  /** Reads the session and its runs again. */
  async reload(): Promise<void> {
    const [detail, runs] = await Promise.allSettled([
      this.backend.sessionGet(this.sessionId),
      this.backend.runsList(this.sessionId),
    ]);
    if (this.destroyed) return;
    if (detail.status === "fulfilled") {
      this.detail = detail.value;
      this.detailError = null;
    } else {
      this.detailError = toCommandError(detail.reason);
    }
    if (runs.status === "fulfilled") {
      this.runs = [...runs.value].sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at));
    }
    this.now = this.context.now();
    this.reloads += 1;
    if (this.tab === "timeline") await this.loadSpans();
  }

  /** Reads the spans of the runs that may have changed (those never read, live ones, and those
   * read while live: their ends were not written yet). */
  async loadSpans(): Promise<void> {
    const known = this.spans;
    const stale = (run: RunRecord) => (known.get(run.id) ?? []).some((span) => span.ended_at === null);
    const wanted = this.runs
      .slice(0, MOST_TIMELINE_RUNS)
      .filter((run) => !known.has(run.id) || run.ended_at === null || run.id === this.liveRunId || stale(run));
    if (wanted.length === 0) return;
    const read = await Promise.all(
      wanted.map(async (run) => {
        try {
          // A fresh array per read (as from IPC): what is drawn from it is drawn again.
          return [run.id, [...(await this.backend.runSpans(run.id))]] as const;
        } catch {
          return [run.id, known.get(run.id) ?? []] as const;
        }
      }),
    );
    if (this.destroyed) return;
    // eslint-disable-next-line svelte/prefer-svelte-reactivity -- a new map, assigned whole below
    const next = new Map(this.spans);
    for (const [runId, spans] of read) next.set(runId, spans);
    this.spans = next;
  }

  private isOurRun(runId: string): boolean {
    return runId === this.liveRunId || this.runs.some((run) => run.id === runId);
  }

  /** The live run changes: a run that ends under the Stop control leaves it saying so, disabled,
   * for a moment (never another action in its place). */
  private setLive(liveRunId: string | null, status: Status | null): void {
    const previous = this.liveRunId;
    if (liveRunId === previous) return;
    this.liveRunId = liveRunId;
    if (this.stopState && this.stopState.runId !== liveRunId) this.stopState = null;
    if (this.endedTimer !== null) clearTimeout(this.endedTimer);
    this.endedTimer = null;
    if (liveRunId !== null) {
      this.ended = null;
      this.outsideStopAsked = false;
      if (previous === null) this.forceShown = false;
      this.now = this.context.now();
      return;
    }
    this.ended = { runId: previous!, status: status ?? "unknown" };
    this.now = this.context.now();
    this.endedTimer = setTimeout(() => {
      this.endedTimer = null;
      this.ended = null;
    }, ENDED_SHOWN_MS);
  }
}
