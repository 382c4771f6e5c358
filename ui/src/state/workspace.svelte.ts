// The open workspace: what the header shows, its menu of recent workspaces, and whether its
// sessions are watched live or polled.

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import { settle, type Loaded } from "../loaded";
import type { CommandError, WatchNotice, WorkspaceInfo } from "../types";

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

  readonly #backend: Backend;
  /** What the window does once another workspace is open (everything of the old one goes). */
  readonly #switched: () => Promise<void>;
  /** The workspace this window is opening (its `workspace-changed` echo needs no second reload). */
  #switchingTo: string | null = null;

  constructor(backend: Backend, switched: () => Promise<void>) {
    this.#backend = backend;
    this.#switched = switched;
  }

  /** The shell says the workspace changed: news unless it is the open one or this window's own switch. */
  changed(workspace: WorkspaceInfo): void {
    const open = this.info.kind === "ok" ? this.info.value.root : null;
    if (workspace.root === this.#switchingTo || workspace.root === open) return;
    void this.#switched();
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
        await this.#switched();
      } catch (error) {
        this.#failed(error);
      }
    })();
  }

  pick(): void {
    void (async () => {
      try {
        const picked = await this.#backend.workspacePick();
        if (picked === null) return; // cancelled: the menu stays as it was
        await this.#switched();
      } catch (error) {
        this.#failed(error);
      }
    })();
  }

  #failed(error: unknown): void {
    if (this.menu) this.menu = { ...this.menu, error: toCommandError(error) };
  }
}
