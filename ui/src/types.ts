// The shapes that cross IPC. They are generated from the Rust types (./generated/ipc.ts, by
// `scripts/gen-ipc-types.sh`; a shell unit test fails while it is stale): this module only gives
// some of them the names the UI knows them by, and adds the UI's own argument shapes.

export type {
  Agent,
  Change,
  DiffLine,
  Hunk,
  JsonDiff,
  NodeDiff,
  NodeSide,
  PathDiff,
  RunDiff,
  RunSummary,
  TextDiff,
  WordPart,
  CommandError,
  CommandName,
  CostSource,
  ErrorCode,
  ExportedBundle,
  FileChunk,
  FileEntry,
  FileRef,
  LogLine,
  Message,
  NodeArtifacts,
  NodeSummary,
  NodeUsage,
  OutputFind,
  OutputLine,
  OutputPage,
  Problem,
  RunEvent,
  RunRecord,
  SearchHit,
  SearchHitKind,
  SessionInfo,
  SessionNode,
  SessionOpened,
  SessionListing,
  SessionRow,
  SessionSummary,
  Span,
  SpanKind,
  StartedRun,
  Status,
  StoppedBy,
  Tokens,
  UsageFormat,
  UsageTotal,
  WatchNotice,
  WorkspaceInfo,
} from "./generated/ipc";

import type { Launch, Level, QuitRequested, RunOutput, Session, StoppedBy, Stream } from "./generated/ipc";

/** How a stop stops (`run_stop`; core `stop::Stopping`, the same words as `StoppedBy`). */
export type Stopping = StoppedBy;

/** What running an agent of a workspace's `.zibby/studio.toml` would do (core `agents::Launch`). */
export type AgentLaunch = Launch;

/** One session read in full (`session_get`; core `Session`). */
export type SessionDetail = Session;

export type LogLevel = Level;

export type OutputStream = Stream;

/** The `run-output` event: the run has `lines` lines stored so far. */
export type RunOutputEvent = RunOutput;

/** The `quit-requested` event: the app is closing while runs are live; the window asks what to do
 * with them and answers with `app_quit`. */
export type QuitRequest = QuitRequested;

// The UI's own shapes: the arguments of some `Backend` calls (the commands take them as separate
// snake_case arguments).

export interface RunStartRequest {
  agent: string;
  prompt: string;
  /** Continue this session; a new one otherwise. */
  session_id?: string;
}

/** One node execution of a comparison, from a hunk on ("more"; `runs_compare`'s focus). */
export interface CompareFocus {
  node: string;
  occurrence: number;
  skipHunks: number;
}

export interface OutputFindQuery {
  fromSeq: number;
  backward: boolean;
  query: string;
}

export interface OutputQuery {
  fromSeq: number;
  limit: number;
  node?: string | null;
  stream?: OutputStream | null;
}
