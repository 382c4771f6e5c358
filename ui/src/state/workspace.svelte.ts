// The open workspace: what the header shows, its menu of recent workspaces, and whether its
// sessions are watched live or polled; for a workspace on another machine, its host and whether
// its link was lost, and the form that opens one (`host:path`).

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import { settle, type Loaded } from "../loaded";
import type { CloudStatus, CommandError, RemoteStatus, WatchNotice, WorkspaceInfo } from "../types";

/** The Open Remote Workspace form. */
export interface RemoteForm {
  target: string;
  /** Connecting (ssh, the server put on the host when missing). */
  opening: boolean;
  /** Why the last try failed (it names the host). */
  error: CommandError | null;
}

/** The Open Cloud Workspace form. */
export interface CloudForm {
  url: string;
  /** An S3-compatible store's URL; empty: the provider's variables (`AWS_ENDPOINT_URL`, …). */
  endpoint: string;
  /** A profile of the credential chain (`AWS_PROFILE`'s files, SSO); empty: the chain's own. */
  profile: string;
  /** A new limit for every bucket's cache (a size: `500M`, `2G`); empty: unchanged. */
  cacheLimit: string;
  /** Empty this bucket's cache first: everything is fetched again. */
  clearCache: boolean;
  /** The limit now (`2G`), once read: what an empty `cacheLimit` keeps. */
  limitNow: string | null;
  /** Opening: a mirror fetched before opens at once; one never fetched lists the prefix first. */
  opening: boolean;
  /** Why the last try failed (it names the source). */
  error: CommandError | null;
}

export interface WorkspaceMenu {
  recent: Loaded<string[]>;
  /** Why the last switch failed. */
  error: CommandError | null;
}

export class WorkspaceState {
  info = $state.raw<Loaded<WorkspaceInfo>>({ kind: "loading" });
  menu = $state.raw<WorkspaceMenu | null>(null);
  /** The sessions are polled rather than watched (the watch budget is used up). */
  watchNotice = $state.raw<WatchNotice | null>(null);
  /** The open workspace's host and path when it is on another machine (`lost`: the link dropped). */
  remote = $state.raw<RemoteStatus | null>(null);
  remoteForm = $state.raw<RemoteForm | null>(null);
  /** The open workspace's bucket URL when it is a bucket prefix: read-only (no run, stop, delete). */
  cloud = $state.raw<CloudStatus | null>(null);
  cloudForm = $state.raw<CloudForm | null>(null);
  /** The remote workspace the app is connecting to (a launch's `ssh://…`), while it is. */
  connecting = $state.raw<string | null>(null);

  readonly #backend: Backend;
  /** The last status the shell sent (any workspace's): a reload's reply may be older than it. */
  #toldCloud: CloudStatus | null = null;

  /** The shell says the cloud workspace's status changed (its check done, a refresh failed or works
   * again): kept while that workspace is open, unless what is shown is newer. */
  cloudStatus(status: CloudStatus): void {
    this.#toldCloud = status;
    if (this.cloud?.target === status.target && status.revision > this.cloud.revision) this.cloud = status;
  }

  /** The cloud workspace as a reload read it (`null`: none open), or the status the shell sent of
   * it since, when that is newer (sent while the reload was under way). */
  setCloud(read: CloudStatus | null): void {
    const told = this.#toldCloud;
    this.cloud = read && told?.target === read.target && told.revision > read.revision ? told : read;
  }

  /** What the window does once another workspace is open (everything of the old one goes). */
  readonly #switched: () => Promise<void>;
  /** How many of those are under way. */
  #settling = 0;
  /** The workspace this window is opening (its `workspace-changed` echo needs no second reload). */
  #switchingTo: string | null = null;

  constructor(backend: Backend, switched: () => Promise<void>) {
    this.#backend = backend;
    this.#switched = switched;
  }

  /** The shell says the workspace changed: news unless it is the open one or this window's own switch. */
  changed(workspace: WorkspaceInfo): void {
    const open = this.info.kind === "ok" ? this.info.value.root : null;
    if (this.remoteForm?.opening || this.cloudForm?.opening) return; // this window's own switch: it reloads when done
    if (workspace.root === this.#switchingTo || workspace.root === open) return;
    void this.#settle();
  }

  /** A switch is under way: the shell may be on the new workspace while the window still shows the old
   * one, so a listing read now could be laid under the old one's state (its read-only badge, its
   * host). The switch reads the new workspace's listing itself. */
  get switching(): boolean {
    return (
      this.#switchingTo !== null ||
      this.#settling > 0 ||
      (this.cloudForm?.opening ?? false) ||
      (this.remoteForm?.opening ?? false)
    );
  }

  /** Everything of the new workspace is read again. */
  async #settle(): Promise<void> {
    this.#settling += 1;
    try {
      await this.#switched();
    } finally {
      this.#settling -= 1;
    }
  }

  /** The switch is over (the new workspace is read). */
  switchDone(): void {
    this.#switchingTo = null;
  }

  /** What belonged to the workspace before. */
  reset(): void {
    this.menu = null;
    this.watchNotice = null;
  }

  toggleMenu(open: boolean): void {
    if (!open) {
      this.menu = null;
      return;
    }
    this.menu = { recent: { kind: "loading" }, error: null };
    void settle(this.#backend.workspacesRecent()).then((recent) => {
      if (this.menu) this.menu = { ...this.menu, recent };
    });
  }

  open(path: string): void {
    void (async () => {
      try {
        this.#switchingTo = path;
        const opened = await this.#backend.workspaceOpen(path);
        if (opened === null) {
          this.#switchingTo = null; // the user said no to the folder: nothing changes
          return;
        }
        await this.#settle();
      } catch (error) {
        this.#switchingTo = null;
        this.#failed(error);
      }
    })();
  }

  pick(): void {
    void (async () => {
      try {
        const picked = await this.#backend.workspacePick();
        if (picked === null) return; // cancelled: the menu stays as it was
        await this.#settle();
      } catch (error) {
        this.#failed(error);
      }
    })();
  }

  /** Shows the Open Remote Workspace form (the app menu, the switcher's menu). */
  askRemote(): void {
    this.menu = null;
    this.remoteForm = { target: this.remoteForm?.target ?? "", opening: false, error: null };
  }

  closeRemoteForm(): void {
    if (!this.remoteForm?.opening) this.remoteForm = null;
  }

  /** Opens `target` (`host:path`) as the workspace; the form stays open with the error on failure,
   * and as it was when the user said no to the shell's question (a host not opened before). */
  openRemote(target: string): void {
    this.remoteForm = { target, opening: true, error: null };
    void (async () => {
      try {
        const opened = await this.#backend.workspaceOpenRemote(target.trim());
        if (opened === null) {
          this.remoteForm = { target, opening: false, error: null };
          return;
        }
        this.remoteForm = null;
        await this.#settle();
      } catch (error) {
        this.remoteForm = { target, opening: false, error: toCommandError(error) };
      }
    })();
  }

  /** Shows the Open Cloud Workspace form (the app menu, the switcher's menu). */
  askCloud(): void {
    this.menu = null;
    // What was typed before, else the bucket open now (to empty its cache, say).
    const before = this.cloudForm ?? {
      url: this.cloud?.url ?? "",
      endpoint: this.cloud?.endpoint ?? "",
      profile: this.cloud?.profile ?? "",
    };
    this.cloudForm = {
      url: before.url,
      endpoint: before.endpoint,
      profile: before.profile,
      cacheLimit: "",
      clearCache: false,
      limitNow: null,
      opening: false,
      error: null,
    };
    void this.#backend.cloudCacheLimit().then(
      (limitNow) => {
        if (this.cloudForm) this.cloudForm = { ...this.cloudForm, limitNow };
      },
      () => {},
    );
  }

  closeCloudForm(): void {
    if (!this.cloudForm?.opening) this.cloudForm = null;
  }

  /** Opens the form's bucket prefix (at its endpoint, with its profile, when given) read-only, its
   * cache limit set and its cache emptied first when asked; the form stays open with the error on
   * failure, and as it was when the user said no to the shell's question (a bucket, or an
   * endpoint, not opened before). */
  openCloud(asked: Pick<CloudForm, "url" | "endpoint" | "profile" | "cacheLimit" | "clearCache">): void {
    const form = { limitNow: this.cloudForm?.limitNow ?? null, ...asked, error: null };
    this.cloudForm = { ...form, opening: true };
    const given = (field: string) => (field.trim() === "" ? null : field.trim());
    void (async () => {
      try {
        const opened = await this.#backend.workspaceOpenCloud(
          asked.url.trim(),
          given(asked.endpoint),
          given(asked.profile),
          given(asked.cacheLimit),
          asked.clearCache,
        );
        if (opened === null) {
          this.cloudForm = { ...form, opening: false };
          return;
        }
        this.cloudForm = null;
        await this.#settle();
      } catch (error) {
        this.cloudForm = { ...form, opening: false, error: toCommandError(error) };
      }
    })();
  }

  #failed(error: unknown): void {
    if (this.menu) this.menu = { ...this.menu, error: toCommandError(error) };
  }
}
