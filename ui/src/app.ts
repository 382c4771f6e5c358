// Starts the window: the state, and App mounted on `root`. What main.ts calls, and what the
// tests of the whole window call (with the fake backend and a clock of their own).

import { mount, tick, unmount } from "svelte";

import type { Backend } from "./backend";
import App from "./components/App.svelte";
import { AppState } from "./state/app.svelte";

export interface StartedApp {
  /** Reloads the workspace, its sessions and its agents; resolves once the page shows them. */
  refresh(): Promise<void>;
  /** Resolves once the app listens to the backend's events. */
  ready: Promise<void>;
  state: AppState;
  /** Unmounts the window and stops its timers. */
  destroy(): void;
}

export function startApp(root: HTMLElement, backend: Backend, clock?: () => Date): StartedApp {
  const state = new AppState(backend, clock);
  const component = mount(App, { target: root, props: { app: state } });
  return {
    // Resolves once the page shows what was read.
    refresh: () => state.refresh().then(() => tick()),
    ready: state.ready,
    state,
    destroy() {
      void unmount(component);
      state.destroy();
    },
  };
}
