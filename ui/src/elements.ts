// Building DOM from untrusted text (for the imperative islands): strings always become text
// nodes, never HTML. The Svelte components get the same from Svelte's text interpolation.

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
