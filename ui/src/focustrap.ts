// Modal dialogs keep the keyboard inside them and give the focus back where it was: a Svelte
// action (`use:trapFocus`) for the dialog's element. Tab and Shift+Tab cycle through the
// dialog's controls; the element named by `initial` (a selector) gets the focus first.

const FOCUSABLE =
  "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

export function focusables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((element) => !element.hidden);
}

export function trapFocus(node: HTMLElement, initial?: string): { destroy(): void } {
  const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== "Tab") return;
    const items = focusables(node);
    if (items.length === 0) {
      event.preventDefault();
      return;
    }
    const first = items[0]!;
    const last = items[items.length - 1]!;
    const active = document.activeElement;
    if (event.shiftKey && (active === first || !node.contains(active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || !node.contains(active))) {
      event.preventDefault();
      first.focus();
    }
  };
  // The focus leaving the dialog (a click outside it) comes back in.
  const onFocusIn = (event: FocusEvent) => {
    if (event.target instanceof Node && !node.contains(event.target)) (focusables(node)[0] ?? node).focus();
  };

  node.addEventListener("keydown", onKeyDown);
  document.addEventListener("focusin", onFocusIn);
  queueMicrotask(() => {
    const start = (initial ? node.querySelector<HTMLElement>(initial) : null) ?? focusables(node)[0] ?? node;
    start.focus();
  });

  return {
    destroy() {
      node.removeEventListener("keydown", onKeyDown);
      document.removeEventListener("focusin", onFocusIn);
      // Back where it was, when that is still on the page.
      if (before?.isConnected) queueMicrotask(() => before.focus());
    },
  };
}
