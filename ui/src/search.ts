// The search box over the table: asks the backend (debounced) and lists the hits under it; a hit
// opens its session (the Output tab at its line, for output hits).

import { ansiNodes, markMatches, parseAnsi } from "./ansi";
import { el, errorBox } from "./elements";
import { debounce } from "./schedule";
import type { CommandError, SearchHit } from "./types";

/** How long typing must pause before the backend is asked. */
export const SEARCH_DELAY_MS = 200;
/** The hits asked for. */
export const SEARCH_LIMIT = 100;

export type SearchResults =
  | { kind: "idle" }
  | { kind: "searching"; query: string }
  | { kind: "ok"; query: string; hits: SearchHit[] }
  | { kind: "error"; query: string; error: CommandError };

export interface SearchActions {
  /** The query changed (already debounced); "" clears the results. */
  search(query: string): void;
  openHit(hit: SearchHit): void;
}

export interface SearchBox {
  element: HTMLElement;
  input: HTMLInputElement;
  update(results: SearchResults): void;
}

const KIND_LABEL: Partial<Record<string, string>> = { output: "output", message: "message", log: "log", node: "node" };

export function createSearchBox(actions: SearchActions): SearchBox {
  const input = el("input", {
    class: "field search-input",
    attrs: {
      id: "search",
      type: "search",
      placeholder: "Search output, messages, logs  ( / )",
      "aria-label": "Search sessions",
      autocomplete: "off",
      spellcheck: "false",
    },
  });
  const list = el("div", { class: "search-results", attrs: { role: "listbox", "aria-label": "Search results" } });
  list.hidden = true;
  const element = el("div", { class: "search" }, input, list);
  const searchSoon = debounce((query: string) => actions.search(query), SEARCH_DELAY_MS);

  input.addEventListener("input", () => {
    const query = input.value.trim();
    if (query === "") {
      searchSoon.cancel();
      actions.search("");
    } else {
      searchSoon(query);
    }
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      input.value = "";
      searchSoon.cancel();
      actions.search("");
      input.blur();
    } else if (event.key === "ArrowDown") {
      const first = list.querySelector<HTMLElement>(".search-hit");
      if (first) {
        event.preventDefault();
        first.focus();
      }
    }
  });
  list.addEventListener("keydown", (event) => {
    const hit = (event.target as Element).closest<HTMLElement>(".search-hit");
    if (!hit) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const sibling = (
        event.key === "ArrowDown" ? hit.nextElementSibling : hit.previousElementSibling
      ) as HTMLElement | null;
      (sibling?.classList.contains("search-hit") ? sibling : event.key === "ArrowUp" ? input : hit).focus();
    } else if (event.key === "Escape") {
      event.stopPropagation();
      input.focus();
    }
  });

  function hitElement(hit: SearchHit, query: string): HTMLElement {
    const item = el(
      "div",
      {
        class: "search-hit",
        attrs: { "data-session-id": hit.session_id, "data-kind": hit.kind, role: "option", tabindex: "0" },
      },
      el(
        "div",
        { class: "search-hit-where" },
        el("span", { class: `search-kind kind-${hit.kind}` }, KIND_LABEL[hit.kind] ?? hit.kind),
        el("code", { class: "search-session" }, hit.session_id),
        hit.node && el("span", { class: "search-node muted" }, "node ", el("code", {}, hit.node)),
        el("span", { class: "search-line muted" }, `line ${hit.line}`),
      ),
      el("div", { class: "search-text" }, ...ansiNodes(markMatches(parseAnsi(hit.text).segments, query.split(/\s+/)))),
    );
    const open = () => {
      list.hidden = true;
      actions.openHit(hit);
    };
    item.addEventListener("click", open);
    item.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        open();
      }
    });
    return item;
  }

  let drawn: SearchResults = { kind: "idle" };
  return {
    element,
    input,
    update(results) {
      if (results === drawn) return;
      drawn = results;
      list.hidden = results.kind === "idle";
      switch (results.kind) {
        case "idle":
          list.replaceChildren();
          return;
        case "searching":
          if (!list.querySelector(".search-hit"))
            list.replaceChildren(el("p", { class: "search-note muted" }, "Searching…"));
          return;
        case "error":
          list.replaceChildren(errorBox("The search failed", results.error));
          return;
        case "ok":
          list.replaceChildren(
            el(
              "p",
              { class: "search-note muted" },
              results.hits.length === 0
                ? `Nothing matches “${results.query}”.`
                : results.hits.length >= SEARCH_LIMIT
                  ? `The first ${SEARCH_LIMIT} matches`
                  : results.hits.length === 1
                    ? "1 match"
                    : `${results.hits.length} matches`,
            ),
            ...results.hits.map((hit) => hitElement(hit, results.query)),
          );
      }
    },
  };
}
