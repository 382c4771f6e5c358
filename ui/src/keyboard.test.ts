import { describe, expect, it } from "vitest";

import { keyCommand, moveSelection, type KeyPress } from "./keyboard";

function press(key: string, target: EventTarget | null = document.body, extra: Partial<KeyPress> = {}): KeyPress {
  return { key, ctrlKey: false, metaKey: false, altKey: false, isComposing: false, target, ...extra };
}

describe("keyCommand", () => {
  it("maps the window's keys", () => {
    expect(
      ["ArrowUp", "ArrowDown", "Enter", "/", "p", "P", "s", "S", "Delete", "Escape", "x"].map((key) =>
        keyCommand(press(key)),
      ),
    ).toEqual([
      "select-previous",
      "select-next",
      "open",
      "focus-search",
      "toggle-pin",
      "toggle-pin",
      "stop",
      "stop",
      "delete",
      "escape",
      null,
    ]);
  });

  it("leaves keys typed into fields alone, Escape too", () => {
    const fields = [
      document.createElement("input"),
      document.createElement("textarea"),
      document.createElement("select"),
    ];
    for (const field of fields) {
      for (const key of ["s", "p", "/", "Delete", "ArrowDown", "Enter", "Escape"])
        expect(keyCommand(press(key, field))).toBeNull();
    }
    const checkbox = document.createElement("input");
    checkbox.type = "checkbox";
    expect(keyCommand(press("s", checkbox))).toBe("stop");
  });

  it("leaves arrows to panels and lists, Enter to buttons, and ignores shortcuts with modifiers", () => {
    const panel = document.createElement("div");
    panel.className = "sv-panel";
    const inner = document.createElement("div");
    panel.append(inner);
    expect(keyCommand(press("ArrowDown", inner))).toBeNull();
    const tab = document.createElement("button");
    tab.setAttribute("role", "tab");
    expect(keyCommand(press("ArrowDown", tab))).toBeNull();
    expect(keyCommand(press("Enter", document.createElement("button")))).toBeNull();
    expect(keyCommand(press("ArrowDown", document.createElement("button")))).toBe("select-next");
    expect(keyCommand(press("s", document.createElement("button")))).toBe("stop");
    expect(keyCommand(press("p", document.body, { ctrlKey: true }))).toBeNull();
    expect(keyCommand(press("s", document.body, { metaKey: true }))).toBeNull();
  });
});

describe("moveSelection", () => {
  const ids = ["a", "b", "c"];
  it("steps through the rows and stops at the ends", () => {
    expect(moveSelection(ids, "b", 1)).toBe("c");
    expect(moveSelection(ids, "c", 1)).toBe("c");
    expect(moveSelection(ids, "b", -1)).toBe("a");
    expect(moveSelection(ids, "a", -1)).toBe("a");
  });

  it("starts at the first (down) or last (up) row, and selects nothing in an empty table", () => {
    expect(moveSelection(ids, null, 1)).toBe("a");
    expect(moveSelection(ids, "gone", -1)).toBe("c");
    expect(moveSelection([], null, 1)).toBeNull();
  });
});
