import "./style.css";

import { tauriBackend, type Backend } from "./backend";
import { startApp } from "./app";
import { applyTheme, savedTheme } from "./theme";

const root = document.getElementById("app");
if (!root) throw new Error("index.html has no #app element");

// The theme chosen last time, before the first frame.
applyTheme(savedTheme());

function start(backend: Backend): void {
  // The backend on `window`, for the devtools console and the end-to-end tests. It grants nothing
  // that a script in this page could not already do through Tauri's IPC.
  Object.assign(window, { zibbyStudio: { backend } });
  void startApp(root!, backend).refresh();
}

if ("__TAURI_INTERNALS__" in window) {
  start(tauriBackend);
} else {
  // A plain browser (`npm run dev`): a demo workspace in memory, loaded only here.
  // `?sessions=10000` for a big table, `?empty` for a fresh workspace.
  const query = new URLSearchParams(location.search);
  const sessions = Number(query.get("sessions") ?? "400");
  void import("./demo").then(({ demoBackend }) => start(demoBackend({ sessions, empty: query.has("empty") })));
}
