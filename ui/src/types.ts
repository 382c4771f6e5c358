// The shapes that cross IPC. They are generated from the Rust types (./generated/ipc.ts, by
// `scripts/gen-ipc-types.sh`; a shell unit test fails while it is stale), under their Rust names:
// this module re-exports them, and adds the UI's own argument shapes of some `Backend` calls.

export type {
  Agent,
  Filters as ViewFilters,
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
  Commands,
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
  SavedView,
  TraceSetting,
  SearchHit,
  SearchHitKind,
  SessionInfo,
  SessionNode,
  SessionOpened,
  SessionListing,
  SessionsPage,
  SessionRow,
  SessionSummary,
  Span,
  SpanKind,
  StartedRun,
  OutsideStop,
  Status,
  StoppedBy,
  Tokens,
  UsageFormat,
  UsageTotal,
  WatchNotice,
  RemoteStatus,
  CloudStatus,
  CloudImported,
  LinkState,
  WorkspaceInfo,
  Launch,
  Level,
  QuitRequested,
  LocalSessions,
  RunOutput,
  Session,
  Stream,
} from "./generated/ipc";

import type { Stream } from "./generated/ipc";

// The UI's own shapes: the arguments of some `Backend` calls (the commands take them as separate
// snake_case arguments).

export interface RunStartRequest {
  agent: string;
  prompt: string;
  /** Continue this session; a new one otherwise. */
  session_id?: string;
  /** This run's budget in US dollars, instead of the agent's `max_cost_usd`. */
  max_cost_usd?: number;
}

/** A comparison across machines: A a session of the open remote workspace (on `host`), B one of
 * the workspace here at `root` (`runs_compare_across`). */
export interface CompareAcross {
  host: string;
  root: string;
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
  stream?: Stream | null;
}
