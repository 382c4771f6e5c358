import { describe, expect, it } from "vitest";

import {
  ansiNodes,
  applySgr,
  markMatches,
  palette256,
  parseAnsi,
  PLAIN,
  stripAnsi,
  styleOf,
  type Segment,
} from "./ansi";

const ESC = "\x1b";

/** The segments as `[text, what is set]` pairs, for readable expectations. */
function shape(segments: readonly Segment[]): [string, string][] {
  return segments.map((segment) => [segment.text, describeStyle(segment)]);
}

function describeStyle(segment: Segment): string {
  const { classes, color, background } = styleOf(segment.style);
  return [...classes, color && `color:${color}`, background && `bg:${background}`].filter(Boolean).join(" ");
}

describe("parseAnsi", () => {
  it("leaves plain text alone", () => {
    expect(shape(parseAnsi("hello world").segments)).toEqual([["hello world", ""]]);
    expect(parseAnsi("").segments).toEqual([]);
  });

  it("reads the 16 basic colours, foreground and background, normal and bright", () => {
    const { segments } = parseAnsi(`${ESC}[31mred${ESC}[42mon green${ESC}[0m plain ${ESC}[93mbright${ESC}[104mbg`);
    expect(shape(segments)).toEqual([
      ["red", "ansi-fg-1"],
      ["on green", "ansi-fg-1 ansi-bg-2"],
      [" plain ", ""],
      ["bright", "ansi-fg-11"],
      ["bg", "ansi-fg-11 ansi-bg-12"],
    ]);
  });

  it("reads 256-colour and truecolor codes, with ; and with :", () => {
    expect(shape(parseAnsi(`${ESC}[38;5;196ma${ESC}[48;5;240mb`).segments)).toEqual([
      ["a", "color:rgb(255, 0, 0)"],
      ["b", "color:rgb(255, 0, 0) bg:rgb(88, 88, 88)"],
    ]);
    expect(shape(parseAnsi(`${ESC}[38;2;10;20;30mx${ESC}[48:2::1:2:3my${ESC}[38:5:4mz`).segments)).toEqual([
      ["x", "color:rgb(10, 20, 30)"],
      ["y", "color:rgb(10, 20, 30) bg:rgb(1, 2, 3)"],
      ["z", "ansi-fg-4 bg:rgb(1, 2, 3)"],
    ]);
  });

  it("reads bold, dim, italic, underline and their resets", () => {
    const line = `${ESC}[1mB${ESC}[2mBD${ESC}[22mN${ESC}[3;4mIU${ESC}[23mU${ESC}[24mN`;
    expect(shape(parseAnsi(line).segments)).toEqual([
      ["B", "ansi-bold"],
      ["BD", "ansi-bold ansi-dim"],
      ["N", ""],
      ["IU", "ansi-italic ansi-underline"],
      ["U", "ansi-underline"],
      ["N", ""],
    ]);
  });

  it("resets with ESC[m and ESC[0m, and with 39/49 only the colour", () => {
    expect(shape(parseAnsi(`${ESC}[1;31ma${ESC}[mb${ESC}[32;41mc${ESC}[39md${ESC}[49me`).segments)).toEqual([
      ["a", "ansi-fg-1 ansi-bold"],
      ["b", ""],
      ["c", "ansi-fg-2 ansi-bg-1"],
      ["d", "ansi-bg-1"],
      ["e", ""],
    ]);
  });

  it("swaps colours for inverse", () => {
    expect(shape(parseAnsi(`${ESC}[7;31mx`).segments)).toEqual([["x", "ansi-inverse-fg ansi-bg-1"]]);
  });

  it("drops every other escape sequence instead of showing it", () => {
    const line =
      `${ESC}[2K${ESC}[1G${ESC}[?25lcursor${ESC}[?25h ` +
      `${ESC}]0;window title${"\x07"}title ${ESC}]8;;https://x${ESC}\\link${ESC}]8;;${ESC}\\ ` +
      `${ESC}(Bcharset${ESC}=${ESC}7 done\x9b1mC1`;
    const { segments } = parseAnsi(line);
    expect(segments.map((segment) => segment.text).join("")).toBe("cursor title link charset doneC1");
    expect(shape(segments).at(-1)).toEqual(["C1", "ansi-bold"]);
  });

  it("drops a sequence cut off at the end of the line, and other control characters", () => {
    expect(stripAnsi(`ok${ESC}[38;5`)).toBe("ok");
    expect(stripAnsi(`ok${ESC}`)).toBe("ok");
    expect(stripAnsi("a\x00b\x07c\x7fd\te")).toBe("abcd\te");
  });

  it("keeps what a carriage return overwrote last, as a terminal shows it", () => {
    expect(stripAnsi("progress 10%\rprogress 50%\rprogress 100%")).toBe("progress 100%");
    expect(stripAnsi("line ending in CRLF\r")).toBe("line ending in CRLF");
    expect(stripAnsi("abc\bd")).toBe("abd");
  });

  it("carries the style over lines", () => {
    const first = parseAnsi(`${ESC}[32mgreen starts`);
    const second = parseAnsi("still green", first.end);
    expect(shape(second.segments)).toEqual([["still green", "ansi-fg-2"]]);
    expect(parseAnsi("plain").end).toBe(PLAIN);
  });

  it("ignores unknown codes and keeps the style object when nothing changed", () => {
    expect(applySgr(PLAIN, "5")).toBe(PLAIN);
    expect(applySgr(PLAIN, "0")).toBe(PLAIN);
    expect(applySgr(PLAIN, "38;5;999")).toBe(PLAIN);
  });
});

describe("palette256", () => {
  it("maps the colour cube and the gray ramp", () => {
    expect(palette256(16)).toEqual([0, 0, 0]);
    expect(palette256(231)).toEqual([255, 255, 255]);
    expect(palette256(67)).toEqual([95, 135, 175]);
    expect(palette256(232)).toEqual([8, 8, 8]);
    expect(palette256(255)).toEqual([238, 238, 238]);
  });
});

describe("markMatches", () => {
  it("splits segments where a match starts and ends, across styles, ignoring case", () => {
    const { segments } = parseAnsi(`say ${ESC}[31mHEL${ESC}[0mlo hello`);
    const pieces = markMatches(segments, "hello");
    expect(pieces.map((piece) => [piece.text, piece.match])).toEqual([
      ["say ", false],
      ["HEL", true],
      ["lo", true],
      [" ", false],
      ["hello", true],
    ]);
  });

  it("marks each word of a search, overlapping ones as one", () => {
    const pieces = markMatches(parseAnsi("timeout while reading the time").segments, ["time", "out", "read"]);
    expect(pieces.filter((piece) => piece.match).map((piece) => piece.text)).toEqual(["timeout", "read", "time"]);
  });

  it("marks nothing for an empty query", () => {
    expect(markMatches(parseAnsi("abc").segments, "").every((piece) => !piece.match)).toBe(true);
  });
});

describe("ansiNodes", () => {
  it("makes text nodes and styled spans, never elements from the text", () => {
    const evil = '<img src=x onerror="window.pwned=1">';
    const holder = document.createElement("div");
    holder.append(...ansiNodes(markMatches(parseAnsi(`${ESC}[1;38;2;1;2;3m${evil}${ESC}[0m tail`).segments, "img")));
    expect(holder.querySelector("img")).toBeNull();
    expect(holder.textContent).toBe(`${evil} tail`);
    const span = holder.querySelector("span")!;
    expect(span.className).toBe("ansi-bold");
    expect(span.style.color).toBe("rgb(1, 2, 3)");
    expect(holder.querySelectorAll("mark.find-match")).toHaveLength(1);
  });
});
