// JSON as a collapsible tree (the Formatted view of a node's result or prompt): objects and arrays
// fold, the first two levels open. Keys and strings are text nodes.

import { el } from "./elements";

/** Above this many characters of JSON, the formatted view is indented text, not a tree. */
export const MOST_TREE_CHARS = 200_000;

export function jsonTree(value: unknown, depth = 0): Node {
  if (value === null || typeof value !== "object") return scalar(value);
  const isArray = Array.isArray(value);
  const entries: [string, unknown][] = isArray ? value.map((item, i) => [String(i), item]) : Object.entries(value);
  const [open, close] = isArray ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) return el("span", { class: "json-punct" }, open + close);
  const count = isArray ? plural(entries.length, "item") : plural(entries.length, "key");
  const node = el(
    "details",
    { class: "json-node", attrs: { "data-count": count } },
    // What a folded node shows after its bracket (style.css): its size and the closing bracket.
    el("summary", { class: "json-punct", attrs: { "data-count": count, "data-close": close } }, open),
    el(
      "div",
      { class: "json-children" },
      ...entries.map(([key, item], index) =>
        el(
          "div",
          { class: "json-entry" },
          !isArray && el("span", { class: "json-key" }, JSON.stringify(key)),
          !isArray && el("span", { class: "json-punct" }, ": "),
          jsonTree(item, depth + 1),
          index < entries.length - 1 && el("span", { class: "json-punct" }, ","),
        ),
      ),
    ),
    el("span", { class: "json-punct" }, close),
  );
  node.open = depth < 2;
  return node;
}

function scalar(value: unknown): HTMLElement {
  const kind = value === null ? "null" : typeof value;
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return el("span", { class: `json-${kind}` }, text);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
