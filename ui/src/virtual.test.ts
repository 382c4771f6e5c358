import { describe, expect, it } from "vitest";

import { coversView, isAtEnd, revealRow, scrollTopOf, virtualWindow } from "./virtual";

describe("virtualWindow", () => {
  const base = { viewport: 200, rowHeight: 20, margin: 5 };

  it("draws the visible rows and a margin, nothing more", () => {
    const window = virtualWindow({ ...base, scrollTop: 1000, count: 10_000 });
    // Rows 50..59 are visible; 5 more each side.
    expect(window).toEqual({ first: 45, end: 65, offset: 900, height: 200_000 });
  });

  it("stops at both ends of the list", () => {
    expect(virtualWindow({ ...base, scrollTop: 0, count: 10_000 })).toMatchObject({ first: 0, end: 15, offset: 0 });
    expect(virtualWindow({ ...base, scrollTop: 10_000_000, count: 100 })).toMatchObject({ first: 85, end: 100 });
    expect(virtualWindow({ ...base, scrollTop: 0, count: 3 })).toEqual({ first: 0, end: 3, offset: 0, height: 60 });
    expect(virtualWindow({ ...base, scrollTop: 0, count: 0 })).toEqual({ first: 0, end: 0, offset: 0, height: 0 });
  });

  it("maps the scroll position proportionally when the list is taller than a browser allows", () => {
    const count = 50_000_000; // a 1 GB output of short lines
    const maxHeight = 1_000_000;
    const top = virtualWindow({ ...base, scrollTop: 0, count, maxHeight });
    expect(top).toMatchObject({ first: 0, offset: 0, height: maxHeight });

    const bottom = virtualWindow({ ...base, scrollTop: maxHeight - 200, count, maxHeight });
    expect(bottom.end).toBe(count);
    // The last row ends exactly at the bottom of the scroll space.
    expect(bottom.offset + (bottom.end - bottom.first) * 20).toBeCloseTo(maxHeight, 6);

    const middle = virtualWindow({ ...base, scrollTop: (maxHeight - 200) / 2, count, maxHeight });
    expect(middle.first).toBeGreaterThan(count / 2 - 20);
    expect(middle.end).toBeLessThan(count / 2 + 20);
    expect(middle.end - middle.first).toBeLessThanOrEqual(21);
  });
});

describe("scrollTopOf", () => {
  it("puts a row at the top, and is the inverse of virtualWindow when scaled", () => {
    expect(scrollTopOf(50, { viewport: 200, count: 10_000, rowHeight: 20 })).toBe(1000);
    expect(scrollTopOf(9_999, { viewport: 200, count: 10_000, rowHeight: 20 })).toBe(199_800);
    const scaled = { viewport: 200, count: 50_000_000, rowHeight: 20, maxHeight: 1_000_000 };
    const scrollTop = scrollTopOf(30_000_000, scaled);
    const window = virtualWindow({ ...scaled, scrollTop, margin: 0 });
    expect(window.first).toBe(30_000_000);
  });
});

describe("revealRow", () => {
  it("scrolls only as far as needed to show the row", () => {
    expect(revealRow(5, 0, 200, 20)).toBe(0);
    expect(revealRow(10, 0, 200, 20)).toBe(20);
    expect(revealRow(3, 100, 200, 20)).toBe(60);
  });
});

describe("isAtEnd", () => {
  it("is true at the bottom and within the slack, false above", () => {
    expect(isAtEnd(800, 200, 1000, 0)).toBe(true);
    expect(isAtEnd(790, 200, 1000, 20)).toBe(true);
    expect(isAtEnd(700, 200, 1000, 20)).toBe(false);
    expect(isAtEnd(0, 200, 100, 0)).toBe(true);
  });
});

describe("coversView", () => {
  it("is true while the rows in view are among those drawn", () => {
    const drawn = { first: 40, end: 100 };
    expect(coversView(drawn, { first: 45, end: 95 })).toBe(true);
    expect(coversView(drawn, { first: 40, end: 100 })).toBe(true);
    expect(coversView(drawn, { first: 39, end: 60 })).toBe(false);
    expect(coversView(drawn, { first: 80, end: 101 })).toBe(false);
  });
});
