// The window's keys: which command a key press is. Pure: the app carries the commands out.
//
//   ↑/↓ select the previous/next session   Enter open it        / focus the search box
//   P pin or unpin                         S stop (S again: force)   Delete ask to delete
//   Escape close the dialog, menu or session view
//
// Keys typed into a field are the field's; so are arrows inside panels that scroll or list.

export type KeyCommand =
  "select-previous" | "select-next" | "open" | "focus-search" | "toggle-pin" | "stop" | "delete" | "escape";

export type KeyPress = Pick<KeyboardEvent, "key" | "ctrlKey" | "metaKey" | "altKey" | "isComposing" | "target">;

/** Whether the key goes into a field being typed in. */
export function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof Element)) return false;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
  }
  return target instanceof HTMLElement && target.isContentEditable;
}

/** Elements that use the arrows themselves (lists, menus, panels that scroll). */
const OWN_ARROWS = "[role='tab'], [role='option'], [role='menuitem'], [role='listbox'], [role='menu'], .sv-panel";
/** Elements that Enter activates. */
const OWN_ENTER = "button, a[href], summary, [role='button'], [role='tab'], [role='option'], [role='menuitem']";

function within(target: EventTarget | null, selector: string): boolean {
  return target instanceof Element && target.closest(selector) !== null;
}

export function keyCommand(event: KeyPress): KeyCommand | null {
  if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return null;
  if (isTyping(event.target)) return null;
  switch (event.key) {
    case "Escape":
      return "escape";
    case "ArrowUp":
      return within(event.target, OWN_ARROWS) ? null : "select-previous";
    case "ArrowDown":
      return within(event.target, OWN_ARROWS) ? null : "select-next";
    case "Enter":
      return within(event.target, OWN_ENTER) ? null : "open";
    case "/":
      return "focus-search";
    case "p":
    case "P":
      return "toggle-pin";
    case "s":
    case "S":
      return "stop";
    case "Delete":
      return "delete";
    default:
      return null;
  }
}

/** The session after moving the selection one step (`step` -1 or 1) through `ids`; the first one
 * when nothing is selected, the same one at either end. */
export function moveSelection(ids: readonly string[], selected: string | null, step: -1 | 1): string | null {
  if (ids.length === 0) return null;
  const index = selected === null ? -1 : ids.indexOf(selected);
  if (index === -1) return step === 1 ? ids[0]! : ids[ids.length - 1]!;
  return ids[Math.min(ids.length - 1, Math.max(0, index + step))]!;
}
