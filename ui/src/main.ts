import "./style.css";

import { startApp } from "./app";
import { tauriBackend } from "./backend";

const root = document.getElementById("app");
if (!root) throw new Error("index.html has no #app element");
void startApp(root, tauriBackend).refresh();
