// Building DOM from untrusted text: strings always become text nodes, never HTML. Also the small
// pieces every view uses (status badges, error boxes).

import type { CommandError, Status } from "./types";

export type Child = Node | string | null | undefined | false;

export interface Props {
  class?: string;
  title?: string;
  attrs?: Record<string, string>;
}

/** Creates an element; strings become text nodes, so they are never parsed as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.class) element.className = props.class;
  if (props.title) element.title = props.title;
  for (const [name, value] of Object.entries(props.attrs ?? {})) element.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

/** A `<button type="button">` that calls `onClick`. */
export function button(props: Props, label: Child, onClick: () => void): HTMLButtonElement {
  const element = el("button", { ...props, attrs: { type: "button", ...props.attrs } }, label);
  element.addEventListener("click", onClick);
  return element;
}

export function badge(status: Status): HTMLElement {
  return el(
    "span",
    { class: `badge status-${status}`, attrs: { "data-status": status } },
    el("span", { class: "badge-dot", attrs: { "aria-hidden": "true" } }),
    status,
  );
}

/** A failed command in place: what failed, its code, its message. */
export function errorBox(title: string, error: CommandError): HTMLElement {
  return el(
    "div",
    { class: "error", attrs: { role: "alert", "data-error-code": error.code } },
    el("div", { class: "error-title" }, title, " ", el("code", { class: "error-code" }, error.code)),
    el("p", { class: "error-message" }, error.message),
  );
}
