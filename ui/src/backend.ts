// The one seam between the UI and the desktop shell: the only module that imports @tauri-apps/api.
// Everything else talks to a `Backend`, so the UI can run against a fake one (tests, a browser).

import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";

import {
  AGENTS_CHANGED,
  IMPORT_FAILED,
  QUIT_REQUESTED,
  REMOTE_CONNECTING,
  REMOTE_OPEN_REQUESTED,
  CLOUD_OPEN_REQUESTED,
  CLOUD_STATUS,
  REMOTE_STATUS,
  RUN_EVENT,
  RUN_OUTPUT,
  SESSION_OPENED,
  SESSIONS_CHANGED,
  WATCH_NOTICE,
  WORKSPACE_CHANGED,
} from "./generated/ipc";
import type {
  Agent,
  CommandError,
  CommandName,
  Commands,
  CompareFocus,
  ViewFilters,
  ErrorCode,
  ExportedBundle,
  FileChunk,
  FileEntry,
  LogLine,
  Message,
  OutputFind,
  OutputFindQuery,
  OutputPage,
  OutputQuery,
  QuitRequested,
  LocalSessions,
  RunEvent,
  RunOutput,
  RunRecord,
  RunStartRequest,
  SavedView,
  TraceSetting,
  RunDiff,
  SearchHit,
  Session,
  SessionOpened,
  SessionListing,
  SessionsPage,
  Span,
  UsageTotal,
  StartedRun,
  RemoteStatus,
  CloudImported,
  CloudStatus,
  WatchNotice,
  WorkspaceInfo,
  StoppedBy,
  OutsideStop,
} from "./types";

/** The run whose agent's launch the window asks the shell to trust (`node`: its replay). */
export type TrustRequest = Commands["agents_trust"]["args"];

export interface Backend {
  workspaceGet(): Promise<WorkspaceInfo>;
  /** Pinned first (most recently pinned first), then most recently updated first. */
  sessionsList(): Promise<SessionListing>;
  /** `limit` rows of `sessionsList`'s order from `offset`, with how many there are in all and
   * which of them are being checked against their folders. */
  sessionsPage(offset: number, limit: number): Promise<SessionsPage>;
  /** What all the sessions cost (`sessionsList`'s `usage`), without listing them. */
  sessionsCost(): Promise<UsageTotal | null>;
  pinAdd(sessionId: string): Promise<void>;
  pinRemove(sessionId: string): Promise<void>;
  /** Adds tags to a session (each held to the tag rules); its tags after. */
  tagsAdd(sessionId: string, tags: string[]): Promise<string[]>;
  /** Removes tags from a session; its tags after. */
  tagsRemove(sessionId: string, tags: string[]): Promise<string[]>;
  /** A session's note (`null`: none). */
  noteGet(sessionId: string): Promise<string | null>;
  /** Sets a session's note (`null` or "" removes it). */
  noteSet(sessionId: string, note: string | null): Promise<void>;
  /** The workspace's saved views (the table's filters under a name), by name. */
  viewsList(): Promise<SavedView[]>;
  /** Saves filters under a name (replacing a view of that name); the views after. */
  viewSave(name: string, filters: ViewFilters): Promise<SavedView[]>;
  /** Deletes a saved view; the views after. */
  viewDelete(name: string): Promise<SavedView[]>;
  agentsList(): Promise<Agent[]>;
  runStart(request: RunStartRequest): Promise<StartedRun>;
  /** Resolves with how it stops: `graceful` (the current node finishes first), or `forced` (also a second stop). */
  runStop(runId: string, force: boolean): Promise<StoppedBy>;
  /** Asks the run of a session the studio did not start to stop before its next node (its stop
   * files only: never forced); refused unless the session reads `running`. */
  sessionStopOutside(sessionId: string): Promise<OutsideStop>;
  runsList(sessionId?: string): Promise<RunRecord[]>;
  /** Deletes a session's records and moves its folder to the trash; refused while its run is live. */
  sessionDelete(sessionId: string): Promise<void>;
  /** Absolute paths, most recent first; includes the open one. */
  workspacesRecent(): Promise<string[]>;
  /** Switches the app's workspace. */
  /** Opens a folder as the workspace; the shell first asks the user (natively) about a folder it
   * has not opened before. Resolves to null when they said no. */
  workspaceOpen(path: string): Promise<WorkspaceInfo | null>;
  /** The native folder picker, then opens the folder; `null` when cancelled. */
  workspacePick(): Promise<WorkspaceInfo | null>;
  /** Opens a workspace on another machine (`host:path`, `ssh://host/path`) over ssh, once the user
   * said yes in the shell's own dialog to a host not opened before; `null` when they said no. */
  workspaceOpenRemote(target: string): Promise<RemoteStatus | null>;
  /** The open workspace's host and path when it is on another machine; `null` for one here. */
  workspaceRemote(): Promise<RemoteStatus | null>;
  /** Opens a bucket prefix (`s3://bucket/prefix`, at `endpoint` and with the credential chain's
   * `profile` when given) as the workspace, read-only; `cacheLimit` (a size, `2G`) when given
   * becomes every bucket's limit, and `clearCache` empties this bucket's cache first. A bucket (or
   * an endpoint) not opened before is asked about in the shell's own dialog: `null` when the user
   * said no. */
  workspaceOpenCloud(
    url: string,
    endpoint: string | null,
    profile: string | null,
    cacheLimit: string | null,
    clearCache: boolean,
  ): Promise<WorkspaceInfo | null>;
  /** The limit of each bucket's cache, as a size (`2G`). */
  cloudCacheLimit(): Promise<string>;
  /** Copies a session of the open cloud workspace into the local workspace opened last (else one
   * the folder picker asks for; `null`: cancelled) and its store. */
  cloudSessionImport(sessionId: string): Promise<CloudImported | null>;
  /** Calls `handler` when the cloud workspace's refresh fails (`error`) or works again. */
  onCloudStatus(handler: (status: CloudStatus) => void): Promise<() => void>;
  /** The open workspace's bucket URL when it is a bucket prefix (read-only); `null` otherwise. */
  workspaceCloud(): Promise<CloudStatus | null>;
  /** Calls `handler` when the app menu's "Open Cloud Workspace…" asks for the form. */
  onCloudOpenRequested(handler: () => void): Promise<() => void>;
  /** The remote workspace being connected to (as given), while one is. */
  workspaceConnecting(): Promise<string | null>;
  /** Calls `handler` when connecting to a remote workspace begins (its target) and ends (`null`). */
  onRemoteConnecting(handler: (target: string | null) => void): Promise<() => void>;
  /** Calls `handler` when the remote workspace's link was lost. */
  onRemoteStatus(handler: (status: RemoteStatus) => void): Promise<() => void>;
  /** Calls `handler` when the app menu's "Open Remote Workspace…" asks for the form. */
  onRemoteOpenRequested(handler: () => void): Promise<() => void>;
  /** Puts `text` on the clipboard ("Copy remote path"). */
  copyText(text: string): Promise<void>;
  sessionGet(sessionId: string): Promise<Session>;
  sessionMessages(sessionId: string): Promise<Message[]>;
  /** Oldest first. */
  sessionLogs(sessionId: string): Promise<LogLine[]>;
  runSpans(runId: string): Promise<Span[]>;
  /** At most `limit` lines with `seq >= fromSeq` that match the filters. */
  runOutput(runId: string, query: OutputQuery): Promise<OutputPage>;
  /** The first line from `fromSeq` (or back from it) containing `query`, ignoring case and
   * colours; a call reads a bounded number of lines and says where to go on. */
  runOutputFind(runId: string, query: OutputFindQuery): Promise<OutputFind>;
  /** Sorted by path. */
  sessionFiles(sessionId: string): Promise<FileEntry[]>;
  /** `path`: relative to the session folder, or absolute inside it. */
  sessionFileRead(sessionId: string, path: string, offset: number, limit: number): Promise<FileChunk>;
  /** Opens the session folder in the file manager. */
  sessionReveal(sessionId: string): Promise<void>;
  search(query: string, limit: number): Promise<SearchHit[]>;
  runReplay(sessionId: string, node: string, agent: string): Promise<StartedRun>;
  /** Adds or replaces (`previousName`) an agent of `.zibby/studio.toml`; resolves to all the agents. */
  agentSave(agent: Agent, previousName: string | null): Promise<Agent[]>;
  /** Where the workspace's runs are sent as traces: the exporter's variables, else its `[otlp]`. */
  tracesSetting(): Promise<TraceSetting>;
  /** Writes the workspace's `[otlp]` endpoint and protocol (`null` endpoint: runs no longer sent). A
   * new endpoint is asked about in the shell's own dialog first: `null` when the user said no. */
  tracesSettingSave(endpoint: string | null, protocol: string | null): Promise<TraceSetting | null>;
  /** Asks the shell to trust the launch of this run, refused as `agents_untrusted`: the shell
   * works the launch out itself and asks the user in the system's dialog; resolves to whether the
   * launch is trusted now (false: the user said no there). */
  agentsTrust(run: TrustRequest): Promise<boolean>;
  /** Calls `handler` with every run event from now on; resolves to a function that stops that. */
  onRunEvent(handler: (event: RunEvent) => void): Promise<() => void>;
  /** Calls `handler` whenever a session folder appears, changes or goes (from any source). */
  onSessionsChanged(handler: () => void): Promise<() => void>;
  /** Calls `handler` as runs print (at most ~10 times a second per run). */
  onRunOutput(handler: (event: RunOutput) => void): Promise<() => void>;
  /** Calls `handler` when the sessions are polled instead of watched live (the watch budget is used up). */
  onWatchNotice(handler: (notice: WatchNotice) => void): Promise<() => void>;
  /** Calls `handler` when the workspace was switched elsewhere (the app menu, a second launch). */
  onWorkspaceChanged(handler: (workspace: WorkspaceInfo) => void): Promise<() => void>;
  /** Calls `handler` when the app is closing with live runs: the window must answer with `appQuit`. */
  onQuitRequested(handler: (request: QuitRequested) => void): Promise<() => void>;
  /** Calls `handler` when the workspace's `.zibby/studio.toml` changed (its agents may have). */
  onAgentsChanged(handler: () => void): Promise<() => void>;
  /** Quits the app, stopping the live runs or (`keepRuns`) leaving them running. */
  appQuit(keepRuns: boolean): Promise<void>;
  /** Two runs compared node by node (`a`, `b`: run or session ids); with `focus`, one node
   * execution's further hunks. */
  runsCompare(a: string, b: string, focus?: CompareFocus): Promise<RunDiff>;
  /** The sessions of the workspace here the window had open before its remote one. */
  sessionsLocal(): Promise<LocalSessions>;
  /** Session `a` of the open remote workspace compared with session `b` of the workspace here
   * (`sessionsLocal`), as `runsCompare` compares two runs. */
  runsCompareAcross(a: string, b: string, focus?: CompareFocus): Promise<RunDiff>;
  /** Export…: the native save dialog, then the session written there as a bundle; `null` when cancelled. */
  sessionExport(sessionId: string): Promise<ExportedBundle | null>;
  /** The session the app's command line asked for (`zstudio open`), once; `null` after. */
  sessionRequested(): Promise<string | null>;
  /** Calls `handler` when the shell asks to show a session (imported from the menu or a drop, or `zstudio open`). */
  onSessionOpened(handler: (opened: SessionOpened) => void): Promise<() => void>;
  /** Calls `handler` when an import from the menu or a drop failed. */
  onImportFailed(handler: (error: CommandError) => void): Promise<() => void>;
}

// The Tauri events' names, as the shell spells them (generated from its constants).
export {
  AGENTS_CHANGED,
  IMPORT_FAILED,
  QUIT_REQUESTED,
  REMOTE_CONNECTING,
  REMOTE_OPEN_REQUESTED,
  REMOTE_STATUS,
  RUN_EVENT,
  RUN_OUTPUT,
  SESSION_OPENED,
  SESSIONS_CHANGED,
  WATCH_NOTICE,
  WORKSPACE_CHANGED,
  CLOUD_STATUS,
} from "./generated/ipc";

/** A rejected command, as a `CommandError` (IPC failures get the code `ipc`). */
export class BackendError extends Error implements CommandError {
  readonly code: ErrorCode;
  readonly details?: unknown;

  constructor(error: CommandError) {
    super(error.message);
    this.name = "BackendError";
    this.code = error.code;
    if (error.details !== undefined) this.details = error.details;
  }
}

function isCommandError(value: unknown): value is CommandError {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as CommandError).code === "string" &&
    typeof (value as CommandError).message === "string"
  );
}

/**
 * Invokes a command of the shell. Its arguments and result are the command's Rust signature, as
 * the generated `Commands` table says: a renamed or retyped argument of a command fails the type
 * check here.
 */
async function call<K extends CommandName>(command: K, args: Commands[K]["args"]): Promise<Commands[K]["result"]> {
  try {
    return await invoke<Commands[K]["result"]>(command, args);
  } catch (error) {
    if (isCommandError(error)) throw new BackendError(error);
    throw new BackendError({ code: "ipc", message: String(error) });
  }
}

export const tauriBackend: Backend = {
  workspaceGet: () => call("workspace_get", {}),
  sessionsList: () => call("sessions_list", {}),
  sessionsPage: (offset, limit) => call("sessions_page", { offset, limit }),
  sessionsCost: () => call("sessions_usage", {}),
  pinAdd: (sessionId) => call("pin_add", { session_id: sessionId }),
  pinRemove: (sessionId) => call("pin_remove", { session_id: sessionId }),
  tagsAdd: (sessionId, tags) => call("tags_add", { session_id: sessionId, tags }),
  tagsRemove: (sessionId, tags) => call("tags_remove", { session_id: sessionId, tags }),
  noteGet: (sessionId) => call("note_get", { session_id: sessionId }),
  noteSet: (sessionId, note) => call("note_set", { session_id: sessionId, note }),
  viewsList: () => call("views_list", {}),
  viewSave: (name, filters) => call("view_save", { name, filters }),
  viewDelete: (name) => call("view_delete", { name }),
  agentsList: () => call("agents_list", {}),
  runStart: (request) =>
    call("run_start", {
      agent: request.agent,
      prompt: request.prompt,
      session_id: request.session_id ?? null,
      max_cost_usd: request.max_cost_usd ?? null,
    }),
  runStop: (runId, force) => call("run_stop", { run_id: runId, force }),
  sessionStopOutside: (sessionId) => call("session_stop_outside", { session_id: sessionId }),
  runsList: (sessionId) => call("runs_list", { session_id: sessionId ?? null }),
  sessionDelete: (sessionId) => call("session_delete", { session_id: sessionId }),
  workspacesRecent: () => call("workspaces_recent", {}),
  workspaceOpen: (path) => call("workspace_open", { path }),
  workspacePick: () => call("workspace_pick", {}),
  workspaceOpenRemote: (target) => call("workspace_open_remote", { target }),
  workspaceRemote: () => call("workspace_remote", {}),
  workspaceOpenCloud: (url, endpoint, profile, cacheLimit, clearCache) =>
    call("workspace_open_cloud", { url, endpoint, profile, cache_limit: cacheLimit, clear_cache: clearCache }),
  cloudCacheLimit: () => call("cloud_cache_limit", {}),
  cloudSessionImport: (sessionId) => call("cloud_session_import", { session_id: sessionId }),
  onCloudStatus: (handler) => listen<CloudStatus>(CLOUD_STATUS, (event) => handler(event.payload)),
  workspaceCloud: () => call("workspace_cloud", {}),
  onCloudOpenRequested: (handler) => listen(CLOUD_OPEN_REQUESTED, () => handler()),
  workspaceConnecting: () => call("workspace_connecting", {}),
  onRemoteConnecting: (handler) => listen<string | null>(REMOTE_CONNECTING, (event) => handler(event.payload)),
  onRemoteStatus: (handler) => listen<RemoteStatus>(REMOTE_STATUS, (event) => handler(event.payload)),
  onRemoteOpenRequested: (handler) => listen(REMOTE_OPEN_REQUESTED, () => handler()),
  copyText: (text) => navigator.clipboard.writeText(text),
  sessionGet: (sessionId) => call("session_get", { session_id: sessionId }),
  sessionMessages: (sessionId) => call("session_messages", { session_id: sessionId }),
  sessionLogs: (sessionId) => call("session_logs", { session_id: sessionId }),
  runSpans: (runId) => call("run_spans", { run_id: runId }),
  runOutput: (runId, query) =>
    call("run_output", {
      run_id: runId,
      from_seq: query.fromSeq,
      limit: query.limit,
      node: query.node ?? null,
      stream: query.stream ?? null,
    }),
  runOutputFind: (runId, query) =>
    call("run_output_find", {
      run_id: runId,
      from_seq: query.fromSeq,
      backward: query.backward,
      query: query.query,
    }),
  sessionFiles: (sessionId) => call("session_files", { session_id: sessionId }),
  sessionFileRead: (sessionId, path, offset, limit) =>
    call("session_file_read", { session_id: sessionId, path, offset, limit }),
  sessionReveal: (sessionId) => call("session_reveal", { session_id: sessionId }),
  search: (query, limit) => call("search", { query, limit }),
  runReplay: (sessionId, node, agent) => call("run_replay", { session_id: sessionId, node, agent }),
  agentSave: (agent, previousName) => call("agent_save", { agent, previous_name: previousName }),
  tracesSetting: () => call("traces_setting", {}),
  tracesSettingSave: (endpoint, protocol) => call("traces_setting_save", { endpoint, protocol }),
  agentsTrust: (run) => call("agents_trust", run),
  onRunEvent: (handler) => listen<RunEvent>(RUN_EVENT, (event) => handler(event.payload)),
  onSessionsChanged: (handler) => listen(SESSIONS_CHANGED, () => handler()),
  onWatchNotice: (handler) => listen<WatchNotice>(WATCH_NOTICE, (event) => handler(event.payload)),
  onRunOutput: (handler) => listen<RunOutput>(RUN_OUTPUT, (event) => handler(event.payload)),
  onWorkspaceChanged: (handler) => listen<WorkspaceInfo>(WORKSPACE_CHANGED, (event) => handler(event.payload)),
  onQuitRequested: (handler) => listen<QuitRequested>(QUIT_REQUESTED, (event) => handler(event.payload)),
  onAgentsChanged: (handler) => listen(AGENTS_CHANGED, () => handler()),
  appQuit: (keepRuns) => call("app_quit", { keep_runs: keepRuns }),
  runsCompare: (a, b, focus) =>
    call("runs_compare", {
      a,
      b,
      node: focus?.node ?? null,
      occurrence: focus?.occurrence ?? null,
      skip_hunks: focus?.skipHunks ?? 0,
    }),
  sessionsLocal: () => call("sessions_local", {}),
  runsCompareAcross: (a, b, focus) =>
    call("runs_compare_across", {
      a,
      b,
      node: focus?.node ?? null,
      occurrence: focus?.occurrence ?? null,
      skip_hunks: focus?.skipHunks ?? 0,
    }),
  sessionExport: (sessionId) => call("session_export", { session_id: sessionId }),
  sessionRequested: () => call("session_requested", {}),
  onSessionOpened: (handler) => listen<SessionOpened>(SESSION_OPENED, (event) => handler(event.payload)),
  onImportFailed: (handler) => listen<CommandError>(IMPORT_FAILED, (event) => handler(event.payload)),
};
