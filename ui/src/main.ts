import "./style.css";

import { startApp } from "./app";
import { tauriBackend } from "./backend";

const root = document.getElementById("app");
if (!root) throw new Error("index.html has no #app element");
// The backend on `window`, for the devtools console and the end-to-end tests. It grants nothing
// that a script in this page could not already do through Tauri's IPC.
Object.assign(window, { zibbyStudio: { backend: tauriBackend } });
void startApp(root, tauriBackend).refresh();
