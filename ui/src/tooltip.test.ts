import { afterEach, describe, expect, it, vi } from "vitest";

import { tooltip, TOOLTIP_DELAY_MS } from "./tooltip";

afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

describe("tooltip", () => {
  it("describes its control, shows on hover after a pause, and goes with its control", () => {
    vi.useFakeTimers();
    const button = document.createElement("button");
    document.body.append(button);
    const tip = tooltip(button, "Stop after the current node (S)");
    const described = document.getElementById(button.getAttribute("aria-describedby")!)!;
    expect(described.getAttribute("role")).toBe("tooltip");
    expect(described.textContent).toBe("Stop after the current node (S)");
    expect(described.hidden).toBe(true);
    button.dispatchEvent(new PointerEvent("pointerenter"));
    vi.advanceTimersByTime(TOOLTIP_DELAY_MS);
    expect(described.hidden).toBe(false);
    tip.update("<img src=x onerror=alert(1)>");
    expect(described.textContent).toBe("<img src=x onerror=alert(1)>");
    expect(document.querySelector("img")).toBeNull();
    tip.destroy();
    expect(document.querySelector(".tooltip")).toBeNull();
    expect(button.hasAttribute("aria-describedby")).toBe(false);
  });

  it("has nothing to show without text", () => {
    const button = document.createElement("button");
    document.body.append(button);
    const tip = tooltip(button, null);
    expect(button.hasAttribute("aria-describedby")).toBe(false);
    expect(document.querySelector(".tooltip")).toBeNull();
    tip.update("Now");
    expect(document.querySelector(".tooltip")?.textContent).toBe("Now");
  });
});
