// A backend in memory, for the unit tests (and a browser without the desktop shell): sessions,
// agents, runs, output and files as the test gives them, pins kept on the rows, events sent with
// `emit`, `sessionsChanged`, `emitOutput`, `workspaceChanged` and `agentsChanged`. The shell sends
// each event in a task of its own, so the window has drawn one before the next arrives: these are
// delivered the same way (drawn at once, `flushSync`), so a test reads the page right after.

import { flushSync } from "svelte";

import { stripAnsi } from "./ansi";
import { cloudStatus } from "./testdata";
import type { Backend } from "./backend";
import type {
  Agent,
  Launch,
  CommandError,
  CompareFocus,
  ErrorCode,
  FileChunk,
  LogLine,
  Message,
  OutputLine,
  QuitRequested,
  LocalSessions,
  RunEvent,
  RunOutput,
  RunDiff,
  RunRecord,
  SavedView,
  SearchHit,
  NodeArtifacts,
  Session,
  SessionNode,
  SessionOpened,
  SessionRow,
  Span,
  StartedRun,
  RemoteStatus,
  CloudImported,
  CloudStatus,
  WatchNotice,
  WorkspaceInfo,
  UsageTotal,
  TraceSetting,
} from "./types";

/** A node of a session's detail; its artifacts none but those given. */
export function detailNode(
  name: string,
  status: SessionNode["status"],
  path: string | null,
  artifacts: Partial<NodeArtifacts> = {},
): SessionNode {
  return {
    name,
    status,
    path,
    artifacts: {
      prompt: null,
      prompt_preview: null,
      raw_output: null,
      result: null,
      result_value: null,
      raw_stream: null,
      ...artifacts,
    },
    usage: null,
  };
}

/** A refusal, as the shell rejects a command with it (a `CommandError`, not an `Error`). */
export function refusal(code: ErrorCode, message: string, details?: unknown): CommandError {
  return details === undefined ? { code, message } : { code, message, details };
}

/** A file of a fake session folder: its text, or `{ binary: bytes }`. */
export type FakeFile = string | { binary: number };

export interface FakeBackend extends Backend {
  /** Sends a run event to whoever listens, as the shell would. */
  emit(event: RunEvent): void;
  /** Tells whoever listens that session folders changed, as the shell's watcher would. */
  sessionsChanged(): void;
  /** Tells whoever listens that a run printed, as the shell would. */
  emitOutput(event: RunOutput): void;
  /** Tells whoever listens that the sessions are polled, as the shell's watcher would. */
  watchNotice(notice: WatchNotice): void;
  /** Tells whoever listens that the workspace was switched elsewhere. */
  workspaceChanged(workspace: WorkspaceInfo): void;
  /** Asks whoever listens what to do with live runs, as the shell does when the app closes. */
  quitRequested(request: QuitRequested): void;
  /** Tells whoever listens that `.zibby/studio.toml` changed, as the shell's watcher would. */
  agentsChanged(): void;
  /** Asks whoever listens to show a session, as the shell does after an import or `zstudio open`. */
  sessionOpened(sessionId: string): void;
  /** Tells whoever listens that an import from the menu or a drop failed. */
  importFailed(error: CommandError): void;
  /** Where the save dialog of Export… answers (`null`: cancelled). */
  exportTo: string | null;
  /** How many secrets an export says it redacted. */
  exportRedacts: number;
  /** The sessions' notes, by id. */
  notes: Record<string, string>;
  /** The workspace's saved views, by name. */
  views: SavedView[];
  /** The session the command line asked for, until taken. */
  requested: string | null;
  /** While set, `agentsList` is refused with it (a broken `.zibby/studio.toml`). */
  agentsBroken: CommandError | null;
  workspace: WorkspaceInfo;
  sessions: SessionRow[];
  /** What the core says all sessions cost (`SessionListing.usage`). */
  sessionsUsage: UsageTotal | null;
  /** The sessions a page says are being checked against their folders (`SessionsPage.checking`). */
  checking: string[];
  agents: Agent[];
  /** The workspace's Traces setting (`tracesSetting`); `tracesSettingSave` writes it unless
   * `declinesOpening` (the user says no to the shell's question). */
  traces: TraceSetting;
  recent: string[];
  /** What the folder picker answers. */
  picked: WorkspaceInfo | null;
  /** The remote workspace open (`workspaceOpenRemote`), or a refusal to open one. */
  remote: RemoteStatus | null;
  remoteRefusal: CommandError | null;
  /** The user says no to the shell's question before a host or a bucket opens. */
  declinesOpening: boolean;
  /** The cloud workspace open (`workspaceOpenCloud`): read-only. */
  cloud: CloudStatus | null;
  /** The app menu asks for the Open Cloud Workspace form. */
  cloudOpenRequested(): void;
  /** The shell says the cloud workspace's status changed (its check done, a refresh failed or works again). */
  cloudStatus(status: CloudStatus): void;
  /** What `cloudSessionImport` answers (`null`: the picker was cancelled), or its refusal. */
  cloudImported: CloudImported | null;
  cloudImportRefusal: CommandError | null;
  /** The remote workspace being connected to. */
  connecting: string | null;
  /** The shell says connecting began (a target) or ended (`null`). */
  remoteConnecting(target: string | null): void;
  /** The text "Copy remote path" put on the clipboard. */
  copied: string | null;
  /** The shell says the remote link was lost. */
  remoteStatus(status: RemoteStatus): void;
  /** The app menu asks for the Open Remote Workspace form. */
  remoteOpenRequested(): void;
  /** Session details by id; a session without one gets one made from its row. */
  details: Map<string, Session>;
  messages: Map<string, Message[]>;
  logs: Map<string, LogLine[]>;
  runs: RunRecord[];
  spans: Map<string, Span[]>;
  output: Map<string, OutputLine[]>;
  /** How many lines a find reads per call (the store's budget, small to test going on). */
  findBudget: number;
  /** Files by session id, then by path relative to the session folder. */
  files: Map<string, Map<string, FakeFile>>;
  /** While set, runs of agents are refused as `agents_untrusted` with it, until it is trusted. */
  untrusted: Launch | null;
  /** What the user answers in the shell's own trust dialog (`agentsTrust`). */
  nativeTrustAnswer: boolean;
  /** The calls made, as `name(args)` strings, in order. */
  calls: string[];
  /** What `runsCompare` answers (a refusal naming the ids by default). */
  compare: (a: string, b: string, focus?: CompareFocus) => RunDiff;
  /** The workspace here and its sessions (`sessionsLocal`). */
  local: LocalSessions;
}

/** Calls each listener with the event, then draws what changed (as after a task of the shell's). */
function deliver<A extends unknown[]>(listeners: Iterable<(...args: A) => void>, ...args: A): void {
  for (const listener of listeners) listener(...args);
  flushSync();
}

export function fakeBackend(
  init: { workspace?: WorkspaceInfo; sessions?: SessionRow[]; sessionsUsage?: UsageTotal; agents?: Agent[] } = {},
): FakeBackend {
  const listeners = new Set<(event: RunEvent) => void>();
  const sessionListeners = new Set<() => void>();
  const outputListeners = new Set<(event: RunOutput) => void>();
  const workspaceListeners = new Set<(workspace: WorkspaceInfo) => void>();
  const noticeListeners = new Set<(notice: WatchNotice) => void>();
  const quitListeners = new Set<(request: QuitRequested) => void>();
  const agentsListeners = new Set<() => void>();
  const openedListeners = new Set<(opened: SessionOpened) => void>();
  const importFailedListeners = new Set<(error: CommandError) => void>();
  const remoteListeners = new Set<(status: RemoteStatus) => void>();
  const cloudStatusListeners = new Set<(status: CloudStatus) => void>();
  const remoteOpenListeners = new Set<() => void>();
  const cloudOpenListeners = new Set<() => void>();
  const connectingListeners = new Set<(target: string | null) => void>();
  let nextRun = 1;

  /** A session's tags made over by `change`; its tags after. */
  function retag(sessionId: string, change: (had: string[]) => string[]): string[] {
    let after: string[] = [];
    backend.sessions = backend.sessions.map((row) => {
      if (row.id !== sessionId) return row;
      after = change(row.tags);
      return { ...row, tags: after };
    });
    return after;
  }

  function detailOf(sessionId: string): Session {
    const detail = backend.details.get(sessionId);
    if (detail) return detail;
    const row = backend.sessions.find((candidate) => candidate.id === sessionId);
    if (!row) throw refusal("session_not_found", `no session \`${sessionId}\``);
    return {
      id: row.id,
      path: row.path,
      layout: "engine",
      agent: row.agent,
      title: row.title,
      status: row.status,
      current_node: row.current_node,
      created_at: row.created_at,
      updated_at: row.updated_at,
      info: null,
      nodes: row.nodes.map((node) => detailNode(node.name, node.status, `${row.path}/${node.name}`)),
      result: null,
      events: [],
      raw_stream_output: null,
      problems: row.problems,
      tags: row.tags,
    };
  }

  function refuseUntrusted(): void {
    const launch = backend.untrusted;
    if (launch) {
      throw refusal("agents_untrusted", `${launch.agents_file} is not trusted yet`, launch);
    }
  }

  function started(sessionId: string | null): StartedRun {
    const run: StartedRun = {
      run_id: `run-${nextRun}`,
      session_id: sessionId ?? `session-${nextRun}`,
      session_path: `/p/.zibby/output/sessions/${sessionId ?? `session-${nextRun}`}`,
      pid: 1000 + nextRun,
    };
    nextRun += 1;
    return run;
  }

  /** The listing's order: pinned first, then as held. */
  const listed = (): SessionRow[] => {
    const rows = backend.sessions.map((row) => ({ ...row }));
    return [...rows.filter((row) => row.pinned), ...rows.filter((row) => !row.pinned)];
  };
  const backend: FakeBackend = {
    workspace: init.workspace ?? { root: "/p", sessions_dir: "/p/.zibby/output/sessions" },
    sessions: init.sessions ?? [],
    sessionsUsage: init.sessionsUsage ?? null,
    checking: [],
    agents: init.agents ?? [],
    traces: { sending_to: null, from: null, endpoint: null, protocol: null },
    recent: [],
    picked: null,
    remote: null,
    remoteRefusal: null,
    declinesOpening: false,
    cloud: null,
    cloudOpenRequested() {
      deliver(cloudOpenListeners);
    },
    cloudStatus(status) {
      backend.cloud = status;
      deliver(cloudStatusListeners, status);
    },
    cloudImported: null,
    cloudImportRefusal: null,
    connecting: null,
    remoteConnecting(target) {
      backend.connecting = target;
      deliver(connectingListeners, target);
    },
    copied: null,
    remoteStatus(status) {
      backend.remote = status;
      deliver(remoteListeners, status);
    },
    remoteOpenRequested() {
      deliver(remoteOpenListeners);
    },
    details: new Map(),
    messages: new Map(),
    logs: new Map(),
    runs: [],
    spans: new Map(),
    output: new Map(),
    findBudget: 1_000,
    files: new Map(),
    untrusted: null,
    nativeTrustAnswer: true,
    local: { root: "/home/me/here", sessions: [] },
    agentsBroken: null,
    exportTo: null,
    exportRedacts: 0,
    notes: {},
    views: [],
    requested: null,
    calls: [],
    compare: (a, b) => {
      throw refusal("session_not_found", `no session \`${a}\` or \`${b}\` to compare`);
    },
    sessionOpened(sessionId) {
      deliver(openedListeners, { session_id: sessionId });
    },
    importFailed(error) {
      deliver(importFailedListeners, error);
    },
    emit(event) {
      deliver(listeners, event);
    },
    sessionsChanged() {
      deliver(sessionListeners);
    },
    emitOutput(event) {
      deliver(outputListeners, event);
    },
    watchNotice(notice) {
      deliver(noticeListeners, notice);
    },
    workspaceChanged(workspace) {
      backend.workspace = workspace;
      deliver(workspaceListeners, workspace);
    },
    quitRequested(request) {
      deliver(quitListeners, request);
    },
    agentsChanged() {
      deliver(agentsListeners);
    },
    async workspaceGet() {
      return backend.workspace;
    },
    async sessionsList() {
      backend.calls.push("sessionsList()");
      return { sessions: listed(), usage: backend.sessionsUsage };
    },
    async sessionsPage(offset, limit) {
      backend.calls.push(`sessionsPage(${offset}, ${limit})`);
      const rows = listed();
      const sessions = rows.slice(offset, offset + limit);
      const checking = sessions.filter((row) => backend.checking.includes(row.id)).map((row) => row.id);
      return { sessions, offset, total: rows.length, checking };
    },
    async sessionsCost() {
      backend.calls.push("sessionsCost()");
      return backend.sessionsUsage;
    },
    async pinAdd(sessionId) {
      backend.calls.push(`pinAdd(${sessionId})`);
      backend.sessions = backend.sessions.map((row) =>
        row.id === sessionId ? { ...row, pinned: true, pinned_at: new Date(0).toISOString() } : row,
      );
    },
    async pinRemove(sessionId) {
      backend.calls.push(`pinRemove(${sessionId})`);
      backend.sessions = backend.sessions.map((row) =>
        row.id === sessionId ? { ...row, pinned: false, pinned_at: null } : row,
      );
    },
    async tagsAdd(sessionId, tags) {
      backend.calls.push(`tagsAdd(${sessionId}, ${tags.join(", ")})`);
      return retag(sessionId, (had) => [...had, ...tags.filter((tag) => !had.includes(tag))]);
    },
    async tagsRemove(sessionId, tags) {
      backend.calls.push(`tagsRemove(${sessionId}, ${tags.join(", ")})`);
      return retag(sessionId, (had) => had.filter((tag) => !tags.includes(tag)));
    },
    async noteGet(sessionId) {
      backend.calls.push(`noteGet(${sessionId})`);
      return backend.notes[sessionId] ?? null;
    },
    async noteSet(sessionId, note) {
      backend.calls.push(`noteSet(${sessionId})`);
      if (note) backend.notes[sessionId] = note;
      else delete backend.notes[sessionId];
      backend.sessions = backend.sessions.map((row) => (row.id === sessionId ? { ...row, has_note: !!note } : row));
    },
    async viewsList() {
      backend.calls.push("viewsList()");
      return backend.views;
    },
    async viewSave(name, filters) {
      backend.calls.push(`viewSave(${name})`);
      if (name.trim() !== name || name === "")
        throw refusal("invalid_view_name", `the view name ${JSON.stringify(name)} is empty or has spaces at its ends`);
      const others = backend.views.filter((view) => view.name !== name);
      backend.views = [...others, { name, filters, saved_at: new Date(0).toISOString() }].sort((a, b) =>
        a.name < b.name ? -1 : 1,
      );
      return backend.views;
    },
    async viewDelete(name) {
      backend.calls.push(`viewDelete(${name})`);
      if (!backend.views.some((view) => view.name === name))
        throw refusal("view_not_found", `no saved view named ${JSON.stringify(name)}`);
      backend.views = backend.views.filter((view) => view.name !== name);
      return backend.views;
    },
    async agentsList() {
      backend.calls.push("agentsList()");
      if (backend.agentsBroken) throw backend.agentsBroken;
      return backend.agents;
    },
    async runStart(request) {
      backend.calls.push(
        request.session_id
          ? `runStart(${request.agent}, ${request.prompt}, ${request.session_id})`
          : request.max_cost_usd !== undefined
            ? `runStart(${request.agent}, ${request.prompt}, max $${request.max_cost_usd})`
            : `runStart(${request.agent}, ${request.prompt})`,
      );
      refuseUntrusted();
      return started(request.session_id ?? null);
    },
    async runStop(runId, force) {
      backend.calls.push(`runStop(${runId}, ${force})`);
      return force ? "forced" : "graceful";
    },
    async sessionStopOutside(sessionId) {
      backend.calls.push(`sessionStopOutside(${sessionId})`);
      const row = backend.sessions.find((session) => session.id === sessionId);
      if (!row) throw refusal("session_not_found", `no session ${sessionId}`);
      if (row.status !== "running" || row.live_run !== null) {
        throw refusal("run_not_live", `session ${sessionId} is ${row.status}`);
      }
      return { session_id: sessionId, stop_files: [`${row.path}/.zibby-studio-stop`, `${row.path}/.zibby-stop`] };
    },
    async runsList(sessionId) {
      return backend.runs.filter((run) => sessionId === undefined || run.session_id === sessionId);
    },
    async sessionDelete(sessionId) {
      backend.calls.push(`sessionDelete(${sessionId})`);
      backend.sessions = backend.sessions.filter((row) => row.id !== sessionId);
    },
    async workspacesRecent() {
      return backend.recent;
    },
    async workspaceOpen(path) {
      backend.calls.push(`workspaceOpen(${path})`);
      backend.workspace = { root: path, sessions_dir: `${path}/.zibby/output/sessions` };
      return backend.workspace;
    },
    async workspacePick() {
      backend.calls.push("workspacePick()");
      if (backend.picked) backend.workspace = backend.picked;
      return backend.picked;
    },
    async workspaceOpenRemote(target) {
      backend.calls.push(`workspaceOpenRemote(${target})`);
      if (backend.remoteRefusal) throw backend.remoteRefusal;
      if (backend.declinesOpening) return null;
      const colon = target.indexOf(":");
      const [host, path] = [target.slice(0, colon), target.slice(colon + 1)];
      backend.remote = { host, path, target: `ssh://${host}${path}`, link: { state: "connected" }, lost: null };
      backend.workspace = { root: path, sessions_dir: `${path}/.zibby/output/sessions` };
      return backend.remote;
    },
    async workspaceRemote() {
      return backend.remote;
    },
    async workspaceOpenCloud(url, endpoint, profile, cacheLimit, clearCache) {
      backend.calls.push(`workspaceOpenCloud(${url}, ${endpoint}, ${profile}, ${cacheLimit}, ${clearCache})`);
      if (backend.declinesOpening) return null;
      backend.cloud = cloudStatus(url, { endpoint, profile });
      backend.workspace = {
        root: "/cache/mirror/workspace",
        sessions_dir: "/cache/mirror/workspace/.zibby/output/sessions",
      };
      return backend.workspace;
    },
    async workspaceCloud() {
      return backend.cloud;
    },
    async cloudCacheLimit() {
      return "2G";
    },
    async cloudSessionImport(sessionId) {
      backend.calls.push(`cloudSessionImport(${sessionId})`);
      if (backend.cloudImportRefusal) throw backend.cloudImportRefusal;
      return backend.cloudImported;
    },
    async onCloudStatus(handler) {
      cloudStatusListeners.add(handler);
      return () => cloudStatusListeners.delete(handler);
    },
    async onCloudOpenRequested(handler) {
      cloudOpenListeners.add(handler);
      return () => cloudOpenListeners.delete(handler);
    },
    async workspaceConnecting() {
      return backend.connecting;
    },
    async onRemoteConnecting(handler) {
      connectingListeners.add(handler);
      return () => connectingListeners.delete(handler);
    },
    async onRemoteStatus(handler) {
      remoteListeners.add(handler);
      return () => remoteListeners.delete(handler);
    },
    async onRemoteOpenRequested(handler) {
      remoteOpenListeners.add(handler);
      return () => remoteOpenListeners.delete(handler);
    },
    async copyText(text) {
      backend.calls.push(`copyText(${text})`);
      backend.copied = text;
    },
    async sessionGet(sessionId) {
      backend.calls.push(`sessionGet(${sessionId})`);
      return detailOf(sessionId);
    },
    async sessionMessages(sessionId) {
      return backend.messages.get(sessionId) ?? [];
    },
    async sessionLogs(sessionId) {
      return backend.logs.get(sessionId) ?? [];
    },
    async runSpans(runId) {
      backend.calls.push(`runSpans(${runId})`);
      return backend.spans.get(runId) ?? [];
    },
    async runOutput(runId, query) {
      backend.calls.push(`runOutput(${runId}, ${query.fromSeq}, ${query.limit})`);
      const all = backend.output.get(runId) ?? [];
      const lines: OutputLine[] = [];
      let next: number | null = null;
      for (const line of all) {
        if (line.seq < query.fromSeq) continue;
        if (query.node && line.node !== query.node) continue;
        if (query.stream && line.stream !== query.stream) continue;
        if (lines.length === query.limit) {
          next = line.seq;
          break;
        }
        lines.push(line);
      }
      return { lines, next_seq: next, total: all.length };
    },
    async runOutputFind(runId, query) {
      backend.calls.push(
        `runOutputFind(${runId}, ${query.fromSeq}, ${query.backward ? "back" : "forward"}, ${query.query})`,
      );
      const all = backend.output.get(runId) ?? [];
      const wanted = query.query.toLowerCase();
      let scanned = 0;
      for (let seq = query.fromSeq; seq >= 1 && seq <= all.length; seq += query.backward ? -1 : 1) {
        if (scanned === backend.findBudget) return { seq: null, next_seq: seq, scanned };
        scanned += 1;
        if (
          stripAnsi(all[seq - 1]!.text)
            .toLowerCase()
            .includes(wanted)
        )
          return { seq, next_seq: null, scanned };
      }
      return { seq: null, next_seq: null, scanned };
    },
    async sessionFiles(sessionId) {
      const files = backend.files.get(sessionId) ?? new Map<string, FakeFile>();
      return [...files.entries()]
        .map(([path, file]) => ({
          path,
          bytes: typeof file === "string" ? new TextEncoder().encode(file).length : file.binary,
          modified_at: "2026-11-29T12:00:00Z",
        }))
        .sort((a, b) => a.path.localeCompare(b.path));
    },
    async sessionFileRead(sessionId, path, offset, limit): Promise<FileChunk> {
      backend.calls.push(`sessionFileRead(${sessionId}, ${path}, ${offset})`);
      const row = detailOf(sessionId);
      const relative = path.startsWith(`${row.path}/`) ? path.slice(row.path.length + 1) : path;
      const file = backend.files.get(sessionId)?.get(relative);
      if (file === undefined) throw refusal("io", `cannot read ${path}: no such file`);
      if (typeof file !== "string") {
        return { path: relative, offset, bytes_total: file.binary, text: "", next_offset: null, binary: true };
      }
      const end = Math.min(file.length, offset + limit);
      return {
        path: relative,
        offset,
        bytes_total: file.length,
        text: file.slice(offset, end),
        next_offset: end < file.length ? end : null,
        binary: false,
      };
    },
    async sessionReveal(sessionId) {
      backend.calls.push(`sessionReveal(${sessionId})`);
    },
    async search(query, limit) {
      backend.calls.push(`search(${query})`);
      const hits: SearchHit[] = [];
      const needle = query.toLowerCase();
      for (const run of backend.runs) {
        for (const line of backend.output.get(run.id) ?? []) {
          if (line.text.toLowerCase().includes(needle)) {
            hits.push({
              kind: "output",
              session_id: run.session_id,
              run_id: run.id,
              node: line.node,
              line: line.seq,
              text: line.text,
            });
          }
        }
      }
      for (const [sessionId, messages] of backend.messages) {
        for (const message of messages) {
          if (message.text.toLowerCase().includes(needle)) {
            hits.push({
              kind: "message",
              session_id: sessionId,
              run_id: null,
              node: null,
              line: message.seq,
              text: message.text,
            });
          }
        }
      }
      // What session folders' nodes printed: a `file` hit a line, as the store gives them.
      for (const [sessionId, files] of backend.files) {
        for (const [path, file] of files) {
          if (typeof file !== "string") continue;
          file.split("\n").forEach((text, index) => {
            if (!text.toLowerCase().includes(needle)) return;
            const node = path.split("/").at(-2) ?? null;
            hits.push({ kind: "file", session_id: sessionId, run_id: null, node, line: index + 1, text, path });
          });
        }
      }
      return hits.slice(0, limit);
    },
    async runReplay(sessionId, node, agent) {
      backend.calls.push(`runReplay(${sessionId}, ${node}, ${agent})`);
      refuseUntrusted();
      return started(sessionId);
    },
    async agentsTrust(run) {
      backend.calls.push(`agentsTrust(${run.agent}, ${run.prompt}, ${run.session_id}, ${run.node})`);
      if (!backend.nativeTrustAnswer) return false;
      if (backend.untrusted?.agent === run.agent) backend.untrusted = null;
      return true;
    },
    async tracesSetting() {
      return backend.traces;
    },
    async tracesSettingSave(endpoint, protocol) {
      backend.calls.push(`tracesSettingSave(${endpoint}, ${protocol})`);
      if (endpoint !== null && backend.declinesOpening) return null;
      const url = endpoint === null ? null : `${endpoint.replace(/\/+$/, "")}/v1/traces`;
      backend.traces = { sending_to: url, from: url && "/w/.zibby/studio.toml", endpoint, protocol };
      return backend.traces;
    },
    async agentSave(agent, previousName) {
      backend.calls.push(`agentSave(${agent.name}, ${previousName})`);
      const others = backend.agents.filter((candidate) => candidate.name !== (previousName ?? agent.name));
      backend.agents = [...others, agent];
      return backend.agents;
    },
    async onRunEvent(handler) {
      listeners.add(handler);
      return () => listeners.delete(handler);
    },
    async onSessionsChanged(handler) {
      sessionListeners.add(handler);
      return () => sessionListeners.delete(handler);
    },
    async onRunOutput(handler) {
      outputListeners.add(handler);
      return () => outputListeners.delete(handler);
    },
    async onWatchNotice(handler) {
      noticeListeners.add(handler);
      return () => noticeListeners.delete(handler);
    },
    async onWorkspaceChanged(handler) {
      workspaceListeners.add(handler);
      return () => workspaceListeners.delete(handler);
    },
    async onQuitRequested(handler) {
      quitListeners.add(handler);
      return () => quitListeners.delete(handler);
    },
    async onAgentsChanged(handler) {
      agentsListeners.add(handler);
      return () => agentsListeners.delete(handler);
    },
    async runsCompare(a, b, focus) {
      backend.calls.push(
        `runsCompare(${a}, ${b}${focus ? `, ${focus.node}#${focus.occurrence} from ${focus.skipHunks}` : ""})`,
      );
      return backend.compare(a, b, focus);
    },
    async sessionsLocal() {
      backend.calls.push("sessionsLocal()");
      return backend.local;
    },
    async runsCompareAcross(a, b, focus) {
      backend.calls.push(
        `runsCompareAcross(${a}, ${b}${focus ? `, ${focus.node}#${focus.occurrence} from ${focus.skipHunks}` : ""})`,
      );
      return backend.compare(a, b, focus);
    },
    async appQuit(keepRuns) {
      backend.calls.push(`appQuit(${keepRuns})`);
    },
    async sessionExport(sessionId) {
      backend.calls.push(`sessionExport(${sessionId})`);
      detailOf(sessionId);
      return backend.exportTo === null
        ? null
        : { session_id: sessionId, path: backend.exportTo, secrets_redacted: backend.exportRedacts };
    },
    async sessionRequested() {
      const requested = backend.requested;
      backend.requested = null;
      return requested;
    },
    async onSessionOpened(handler) {
      openedListeners.add(handler);
      return () => openedListeners.delete(handler);
    },
    async onImportFailed(handler) {
      importFailedListeners.add(handler);
      return () => importFailedListeners.delete(handler);
    },
  };
  return backend;
}
