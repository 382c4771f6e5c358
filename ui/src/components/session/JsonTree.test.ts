import { render } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";

import JsonSwitch from "./JsonSwitch.svelte";
import JsonTree from "./JsonTree.svelte";

const evil = "<img src=x onerror=alert(1)>";

describe("the JSON tree", () => {
  it("draws scalars by type, strings quoted, as text", () => {
    const { container } = render(JsonTree, { value: { s: evil, n: 1.5, b: false, z: null } });
    expect([...container.querySelectorAll(".json-key")].map((key) => key.textContent)).toEqual([
      '"s"',
      '"n"',
      '"b"',
      '"z"',
    ]);
    expect(container.querySelector(".json-string")?.textContent).toBe(JSON.stringify(evil));
    expect(container.querySelector(".json-number")?.textContent).toBe("1.5");
    expect(container.querySelector(".json-boolean")?.textContent).toBe("false");
    expect(container.querySelector(".json-null")?.textContent).toBe("null");
    expect(container.querySelector("img")).toBeNull();
    expect(container.textContent).toBe(`{"s": ${JSON.stringify(evil)},"n": 1.5,"b": false,"z": null}`);
  });

  it("folds objects and arrays, the first two levels open, saying how big each is", () => {
    const { container } = render(JsonTree, { value: { a: { b: { c: [1, 2, 3] } }, empty: [] } });
    const nodes = [...container.querySelectorAll<HTMLDetailsElement>("details.json-node")];
    expect(nodes.map((node) => [node.open, node.getAttribute("data-count")])).toEqual([
      [true, "2 keys"],
      [true, "1 key"],
      [false, "1 key"],
      [false, "3 items"],
    ]);
    expect(container.textContent).toContain('"empty": []');
  });
});

describe("the Formatted/Raw switch", () => {
  it("shows JSON formatted first, raw on demand, and other text as it is", () => {
    const { container } = render(JsonSwitch, { raw: '{"a":1}' });
    const formatted = container.querySelector<HTMLElement>("[data-view='formatted']")!;
    const raw = container.querySelector<HTMLElement>("[data-view='raw']")!;
    expect([formatted.hidden, raw.hidden]).toEqual([false, true]);
    expect(container.querySelector("[role='group']")?.getAttribute("aria-label")).toBe("View");
    const plain = render(JsonSwitch, { raw: `not json ${evil}` }).container;
    expect(plain.querySelector(".artifact-text")?.textContent).toBe(`not json ${evil}`);
    expect(plain.querySelector(".segmented")).toBeNull();
    expect(plain.querySelector("img")).toBeNull();
  });
});
