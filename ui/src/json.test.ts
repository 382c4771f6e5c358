import { describe, expect, it } from "vitest";

import { jsonTree } from "./json";

function tree(value: unknown): HTMLElement {
  const holder = document.createElement("div");
  holder.append(jsonTree(value));
  return holder;
}

describe("jsonTree", () => {
  it("draws scalars by type, strings quoted, as text", () => {
    const evil = "<img src=x onerror=alert(1)>";
    const holder = tree({ s: evil, n: 1.5, b: false, z: null });
    expect([...holder.querySelectorAll(".json-key")].map((key) => key.textContent)).toEqual([
      '"s"',
      '"n"',
      '"b"',
      '"z"',
    ]);
    expect(holder.querySelector(".json-string")?.textContent).toBe(JSON.stringify(evil));
    expect(holder.querySelector(".json-number")?.textContent).toBe("1.5");
    expect(holder.querySelector(".json-boolean")?.textContent).toBe("false");
    expect(holder.querySelector(".json-null")?.textContent).toBe("null");
    expect(holder.querySelector("img")).toBeNull();
    expect(holder.textContent).toBe(`{"s": ${JSON.stringify(evil)},"n": 1.5,"b": false,"z": null}`);
  });

  it("folds objects and arrays, the first two levels open, saying how big each is", () => {
    const holder = tree({ a: { b: { c: [1, 2, 3] } }, empty: [] });
    const nodes = [...holder.querySelectorAll("details.json-node")] as HTMLDetailsElement[];
    expect(nodes.map((node) => [node.open, node.getAttribute("data-count")])).toEqual([
      [true, "2 keys"],
      [true, "1 key"],
      [false, "1 key"],
      [false, "3 items"],
    ]);
    expect(holder.textContent).toContain('"empty": []');
  });
});
