// The Nodes tab: per node of the session, its prompt, raw output and result, each read from the
// session folder when opened (formatted or raw when it is JSON).

import type { Backend } from "./backend";
import { badge, el, errorBox } from "./elements";
import { toCommandError } from "./errors";
import { FILE_CHUNK_BYTES, fileViewer, jsonSwitch } from "./files";
import { bytesLabel } from "./format";
import type { FileRef, SessionNode } from "./types";

export function nodeCards(backend: Backend, sessionId: string, nodes: readonly SessionNode[]): HTMLElement {
  if (nodes.length === 0) return el("p", { class: "muted panel-note" }, "The session folder records no nodes.");
  return el("div", { class: "node-cards" }, ...nodes.map((node) => nodeCard(backend, sessionId, node)));
}

function nodeCard(backend: Backend, sessionId: string, node: SessionNode): HTMLElement {
  const { artifacts } = node;
  return el(
    "article",
    { class: "node-card", attrs: { "data-node": node.name, "data-status": node.status } },
    el(
      "header",
      { class: "node-card-head" },
      el("code", { class: "node-name" }, node.name),
      badge(node.status),
      node.path && el("span", { class: "muted node-path", title: node.path }, node.path),
    ),
    artifact(backend, sessionId, "Prompt", "prompt", artifacts.prompt, artifacts.prompt_preview),
    artifact(backend, sessionId, "Raw output", "raw-output", artifacts.raw_output, null),
    artifact(backend, sessionId, "Result", "result", artifacts.result, null, artifacts.result_value),
  );
}

/** One file of a node, read when its section is opened. */
function artifact(
  backend: Backend,
  sessionId: string,
  title: string,
  kind: string,
  file: FileRef | null,
  preview: string | null,
  parsed: unknown = null,
): HTMLElement {
  if (file === null) {
    return el(
      "div",
      { class: "artifact missing", attrs: { "data-artifact": kind } },
      el("span", { class: "artifact-title" }, title),
      el("span", { class: "muted" }, "none"),
    );
  }
  const body = el("div", { class: "artifact-body" });
  const details = el(
    "details",
    { class: "artifact", attrs: { "data-artifact": kind } },
    el(
      "summary",
      {},
      el("span", { class: "artifact-title" }, title),
      el("span", { class: "muted artifact-size" }, bytesLabel(file.bytes)),
      preview && el("span", { class: "artifact-preview muted" }, preview),
    ),
    body,
  );
  let loaded = false;
  details.addEventListener("toggle", () => {
    if (!details.open || loaded) return;
    loaded = true;
    void load();
  });

  async function load(): Promise<void> {
    if (file!.bytes > FILE_CHUNK_BYTES) {
      // Too big to format: read it in chunks, as text.
      body.replaceChildren(fileViewer(backend, sessionId, file!.path));
      return;
    }
    body.replaceChildren(el("p", { class: "muted" }, "Reading…"));
    try {
      const chunk = await backend.sessionFileRead(sessionId, file!.path, 0, FILE_CHUNK_BYTES);
      if (chunk.binary) {
        body.replaceChildren(
          el("p", { class: "muted" }, `binary file, ${chunk.bytes_total.toLocaleString("en-US")} bytes`),
        );
        return;
      }
      body.replaceChildren(jsonSwitch(chunk.text, parsed ?? undefined));
    } catch (error) {
      body.replaceChildren(errorBox(`The ${title.toLowerCase()} could not be read`, toCommandError(error)));
    }
  }
  return details;
}
