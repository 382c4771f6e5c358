// Closing the app while runs are live: stop them and quit, leave them running and quit (when the
// shell can keep them), or stay.

import { button, el } from "./elements";
import type { QuitRequest } from "./types";

export type QuitAnswer = "stop" | "keep" | "cancel";

export function quitDialog(request: QuitRequest, answer: (choice: QuitAnswer) => void): HTMLElement {
  const runs = request.live_runs === 1 ? "1 run is" : `${request.live_runs} runs are`;
  const cancel = button({ class: "button", attrs: { id: "quit-cancel" } }, "Cancel", () => answer("cancel"));
  const dialog = el(
    "div",
    {
      class: "confirm",
      attrs: { id: "quit-dialog", role: "alertdialog", "aria-modal": "true", "aria-labelledby": "quit-title" },
    },
    el("h2", { attrs: { id: "quit-title" } }, `${runs} still running`),
    el(
      "p",
      {},
      request.can_keep
        ? "Stop them as the app quits, or leave them running: they go on without the window, and the studio shows them again when it opens."
        : "Quitting stops them.",
    ),
    el(
      "div",
      { class: "confirm-buttons" },
      cancel,
      request.can_keep &&
        button({ class: "button", attrs: { id: "quit-keep" } }, "Leave running and quit", () => answer("keep")),
      button({ class: "button danger", attrs: { id: "quit-stop" } }, "Stop and quit", () => answer("stop")),
    ),
  );
  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      answer("cancel");
    }
  });
  queueMicrotask(() => cancel.focus());
  return dialog;
}
