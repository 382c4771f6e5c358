import { render } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";

import Badge from "./Badge.svelte";

describe("Badge", () => {
  it("shows the status as a word and as data-status", () => {
    const { container } = render(Badge, { status: "error" });
    const badge = container.querySelector(".badge");
    expect(badge?.getAttribute("data-status")).toBe("error");
    expect(badge?.classList.contains("status-error")).toBe(true);
    expect(badge?.textContent).toBe("error");
  });
});
