// Reading a session's files in place: the Files tab's list and viewer, and the text viewer the
// Nodes and Output tabs reuse. Big files are read in chunks ("Load more"); binary files are named,
// not shown. File contents are untrusted: text nodes only.

import { ansiNodes, parseAnsi } from "./ansi";
import type { Backend } from "./backend";
import { button, el, errorBox } from "./elements";
import { bytesLabel, exactTime, relativeTime } from "./format";
import type { FileChunk, FileEntry } from "./types";
import { toCommandError } from "./errors";
import { jsonTree, MOST_TREE_CHARS } from "./json";

/** How much of a file one read brings. */
export const FILE_CHUNK_BYTES = 256 * 1024;

export interface TextViewerOptions {
  /** Draw ANSI colours (output captures) rather than the text as is. */
  ansi?: boolean;
  id?: string;
}

/** A file's text, read chunk by chunk. */
export function fileViewer(
  backend: Backend,
  sessionId: string,
  path: string,
  options: TextViewerOptions = {},
): HTMLElement {
  const pre = el("pre", { class: "file-text" });
  const status = el("p", { class: "file-status muted" });
  const more = button({ class: "button small load-more" }, "Load more", () => void read());
  more.hidden = true;
  const errorSlot = el("div");
  const element = el(
    "div",
    { class: "file-viewer", attrs: { ...(options.id ? { id: options.id } : {}), "data-path": path } },
    pre,
    el("div", { class: "file-foot" }, status, more),
    errorSlot,
  );
  let offset = 0;
  /** The end of the last chunk when it stopped inside a line (ANSI lines are drawn whole). */
  let partialLine = "";

  function append(chunk: FileChunk): void {
    if (chunk.binary) {
      pre.remove();
      status.textContent = `binary file, ${chunk.bytes_total.toLocaleString("en-US")} bytes`;
      more.hidden = true;
      return;
    }
    if (options.ansi) {
      const text = partialLine + chunk.text;
      const lines = text.split("\n");
      // The end of a chunk inside a line waits for the next chunk; the file's own end is drawn.
      const last = lines.pop() ?? "";
      partialLine = chunk.next_offset === null ? "" : last;
      if (chunk.next_offset === null && last !== "") lines.push(last);
      const ends = lines.map(
        (_, index) => index < lines.length - 1 || text.endsWith("\n") || chunk.next_offset !== null,
      );
      lines.forEach((line, index) => pre.append(...ansiNodes(parseAnsi(line).segments), ends[index] ? "\n" : ""));
    } else {
      pre.append(chunk.text);
    }
    offset = chunk.next_offset ?? chunk.bytes_total;
    more.hidden = chunk.next_offset === null;
    status.textContent =
      chunk.next_offset === null
        ? `${bytesLabel(chunk.bytes_total)}`
        : `${bytesLabel(offset)} of ${bytesLabel(chunk.bytes_total)} shown`;
  }

  async function read(): Promise<void> {
    more.disabled = true;
    try {
      append(await backend.sessionFileRead(sessionId, path, offset, FILE_CHUNK_BYTES));
      errorSlot.replaceChildren();
    } catch (error) {
      errorSlot.replaceChildren(errorBox("The file could not be read", toCommandError(error)));
    } finally {
      more.disabled = false;
    }
  }

  void read();
  return element;
}

/** Text that may be JSON: formatted (pretty) by default when it parses, with a Formatted/Raw switch. */
export function jsonSwitch(raw: string, parsed?: unknown): HTMLElement {
  let value = parsed;
  if (value === undefined) {
    try {
      value = JSON.parse(raw);
    } catch {
      return el("pre", { class: "artifact-text" }, raw);
    }
  }
  const formatted =
    raw.length > MOST_TREE_CHARS
      ? el("pre", { class: "artifact-text", attrs: { "data-view": "formatted" } }, JSON.stringify(value, null, 2))
      : el("div", { class: "artifact-text json-tree", attrs: { "data-view": "formatted" } }, jsonTree(value));
  const rawText = el("pre", { class: "artifact-text", attrs: { "data-view": "raw" } }, raw);
  rawText.hidden = true;
  const formattedButton = button({ class: "seg", attrs: { "aria-pressed": "true" } }, "Formatted", () => show(true));
  const rawButton = button({ class: "seg", attrs: { "aria-pressed": "false" } }, "Raw", () => show(false));
  function show(pretty: boolean): void {
    formatted.hidden = !pretty;
    rawText.hidden = pretty;
    formattedButton.setAttribute("aria-pressed", String(pretty));
    rawButton.setAttribute("aria-pressed", String(!pretty));
  }
  return el(
    "div",
    { class: "json-switch" },
    el("div", { class: "segmented", attrs: { role: "group", "aria-label": "View" } }, formattedButton, rawButton),
    formatted,
    rawText,
  );
}

/** The Files tab: the session folder's files; a click shows one below the list. */
export function filesPanel(
  backend: Backend,
  sessionId: string,
  now: () => Date,
): { element: HTMLElement; refresh(): Promise<void> } {
  const list = el("ul", { class: "file-list" });
  const viewerSlot = el("div", { class: "file-viewer-slot" });
  const element = el("div", { class: "files-panel" }, list, viewerSlot);
  let selected: string | null = null;

  function entry(file: FileEntry): HTMLElement {
    const item = el(
      "li",
      {
        class: file.path === selected ? "file-entry selected" : "file-entry",
        attrs: {
          "data-path": file.path,
          tabindex: "0",
          role: "button",
          "aria-pressed": String(file.path === selected),
        },
      },
      el("code", { class: "file-path" }, file.path),
      el("span", { class: "file-size muted" }, bytesLabel(file.bytes)),
      el(
        "time",
        {
          class: "file-modified muted",
          title: exactTime(new Date(file.modified_at)),
          attrs: { datetime: file.modified_at },
        },
        relativeTime(new Date(file.modified_at), now()),
      ),
    );
    const open = () => {
      selected = file.path;
      for (const other of list.querySelectorAll(".file-entry")) {
        const isSelected = other === item;
        other.classList.toggle("selected", isSelected);
        other.setAttribute("aria-pressed", String(isSelected));
      }
      viewerSlot.replaceChildren(
        el("div", { class: "file-viewer-head" }, el("code", {}, file.path)),
        fileViewer(backend, sessionId, file.path, { id: "file-viewer" }),
      );
    };
    item.addEventListener("click", open);
    item.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        open();
      }
    });
    return item;
  }

  async function refresh(): Promise<void> {
    try {
      const files = await backend.sessionFiles(sessionId);
      list.replaceChildren(
        ...(files.length === 0 ? [el("li", { class: "muted" }, "The session folder is empty.")] : files.map(entry)),
      );
    } catch (error) {
      list.replaceChildren(el("li", {}, errorBox("The files could not be listed", toCommandError(error))));
    }
  }

  return { element, refresh };
}
