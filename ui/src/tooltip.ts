// A tooltip of our own for the window's controls, instead of the native `title` (WebKitGTK can
// leave a native tooltip on screen after its element is removed). Shown on hover and on keyboard
// focus, described to assistive technology through `aria-describedby`, and removed with its
// control: `destroy` (a Svelte action's unmount, or an imperative caller) takes it away.
//
// Svelte:      <button use:tooltip={"Stop after the current node (S)"}>Stop</button>
// Imperative:  const tip = tooltip(button, "Stop"); tip.update("Stopping…"); tip.destroy();
//
// The text is set as text (never HTML). `null` or "" means no tooltip.

/** How long the pointer rests on a control before its tooltip shows. */
export const TOOLTIP_DELAY_MS = 400;

let nextId = 1;

export interface TooltipHandle {
  update(text: string | null | undefined): void;
  destroy(): void;
}

export function tooltip(node: HTMLElement, text: string | null | undefined): TooltipHandle {
  const id = `tooltip-${nextId++}`;
  let label = text ?? "";
  let tip: HTMLElement | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;

  // The description exists while the control does (screen readers read it on focus); it is
  // visually hidden until shown.
  const describe = () => {
    const described = (node.getAttribute("aria-describedby") ?? "").split(/\s+/).filter((part) => part !== "");
    const others = described.filter((part) => part !== id);
    const next = label === "" ? others : [...others, id];
    if (next.length === 0) node.removeAttribute("aria-describedby");
    else node.setAttribute("aria-describedby", next.join(" "));
  };

  function ensure(): HTMLElement {
    if (!tip) {
      tip = document.createElement("div");
      tip.id = id;
      tip.className = "tooltip";
      tip.setAttribute("role", "tooltip");
      tip.hidden = true;
      document.body.append(tip);
    }
    tip.textContent = label;
    return tip;
  }

  function place(element: HTMLElement): void {
    const box = node.getBoundingClientRect();
    const width = element.offsetWidth;
    const height = element.offsetHeight;
    const viewWidth = document.documentElement.clientWidth || window.innerWidth;
    const left = Math.max(4, Math.min(box.left + box.width / 2 - width / 2, viewWidth - width - 4));
    const below = box.bottom + 6;
    const top = below + height > window.innerHeight && box.top - height - 6 > 0 ? box.top - height - 6 : below;
    element.style.left = `${Math.round(left)}px`;
    element.style.top = `${Math.round(top)}px`;
  }

  function show(): void {
    cancel();
    if (label === "" || !node.isConnected) return;
    const element = ensure();
    element.hidden = false;
    place(element);
  }

  function hide(): void {
    cancel();
    if (tip) tip.hidden = true;
  }

  function cancel(): void {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  }

  const onEnter = () => {
    cancel();
    timer = setTimeout(show, TOOLTIP_DELAY_MS);
  };
  const onFocus = () => {
    if (node.matches(":focus-visible")) show();
  };
  const onKey = (event: KeyboardEvent) => {
    if (event.key === "Escape" && tip && !tip.hidden) hide();
  };

  // One signal removes them all with the tooltip.
  const listening = new AbortController();
  const options = { signal: listening.signal };
  node.addEventListener("pointerenter", onEnter, options);
  node.addEventListener("pointerleave", hide, options);
  node.addEventListener("pointerdown", hide, options);
  node.addEventListener("focus", onFocus, options);
  node.addEventListener("blur", hide, options);
  node.addEventListener("keydown", onKey, options);
  if (label !== "") ensure();
  describe();

  return {
    update(next) {
      label = next ?? "";
      if (tip) tip.textContent = label;
      if (label === "") hide();
      else ensure();
      describe();
    },
    destroy() {
      cancel();
      listening.abort();
      tip?.remove();
      tip = null;
      label = "";
      describe();
    },
  };
}
