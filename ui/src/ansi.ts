// ANSI escape sequences in agent output: SGR colours and styles become styled segments; every other
// escape sequence (cursor moves, titles, modes) is dropped, never shown as raw bytes. Pure text in,
// segments out; `ansiNodes` turns segments into DOM with text nodes and `element.style`, never HTML.

export type AnsiColor = { kind: "palette"; index: number } | { kind: "rgb"; r: number; g: number; b: number };

export interface AnsiStyle {
  fg: AnsiColor | null;
  bg: AnsiColor | null;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  inverse: boolean;
  strike: boolean;
}

export interface Segment {
  text: string;
  style: AnsiStyle;
}

export const PLAIN: AnsiStyle = Object.freeze({
  fg: null,
  bg: null,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  inverse: false,
  strike: false,
});

const ESC = "\x1b";
const CSI_C1 = "\x9b";
const BEL = "\x07";

export function isPlain(style: AnsiStyle): boolean {
  return (
    style.fg === null &&
    style.bg === null &&
    !style.bold &&
    !style.dim &&
    !style.italic &&
    !style.underline &&
    !style.inverse &&
    !style.strike
  );
}

/** Splits one line of output into styled segments. `start` is the style in force before it
 * (terminal styles carry over lines); `end` is the style in force after it. A carriage return
 * followed by more text overwrites what came before (progress bars show their last state). */
export function parseAnsi(line: string, start: AnsiStyle = PLAIN): { segments: Segment[]; end: AnsiStyle } {
  const segments: Segment[] = [];
  let style = start;
  let text = "";
  let overwrite = false;

  const flush = () => {
    if (text === "") return;
    const last = segments[segments.length - 1];
    if (last && last.style === style) last.text += text;
    else segments.push({ text, style });
    text = "";
  };

  let i = 0;
  while (i < line.length) {
    const char = line[i]!;
    if (char === ESC || char === CSI_C1) {
      const sequence = readEscape(line, i);
      if (sequence.sgr !== null) {
        const next = applySgr(style, sequence.sgr);
        if (next !== style) {
          flush();
          style = next;
        }
      }
      i = sequence.end;
      continue;
    }
    const code = char.charCodeAt(0);
    if (code >= 0x20 && code !== 0x7f) {
      // A run of printable characters at once (most of a line): one slice, not one per character.
      let end = i + 1;
      while (end < line.length) {
        const next = line.charCodeAt(end);
        if (next < 0x20 || next === 0x7f || next === 0x9b) break;
        end += 1;
      }
      if (overwrite) {
        segments.length = 0;
        text = "";
        overwrite = false;
      }
      text += line.slice(i, end);
      i = end;
      continue;
    }
    if (char === "\r") {
      overwrite = true;
    } else if (char === "\b") {
      if (text !== "") text = text.slice(0, -1);
    } else if (char === "\t") {
      if (overwrite) {
        segments.length = 0;
        text = "";
        overwrite = false;
      }
      text += char;
    }
    i += 1;
  }
  flush();
  return { segments, end: style };
}

/** The escape sequence at `start`: where it ends, and its SGR parameters when it is one. */
function readEscape(line: string, start: number): { end: number; sgr: string | null } {
  let i = start;
  if (line[i] === CSI_C1) return readCsi(line, i + 1);
  i += 1; // ESC
  const kind = line[i];
  if (kind === undefined) return { end: i, sgr: null };
  if (kind === "[") return readCsi(line, i + 1);
  if (kind === "]" || kind === "P" || kind === "X" || kind === "^" || kind === "_") {
    // OSC, DCS, SOS, PM, APC: a string up to BEL or ESC \ (or the end of the line).
    i += 1;
    while (i < line.length) {
      if (line[i] === BEL) return { end: i + 1, sgr: null };
      if (line[i] === ESC && line[i + 1] === "\\") return { end: i + 2, sgr: null };
      i += 1;
    }
    return { end: i, sgr: null };
  }
  // nF sequences (ESC, intermediates 0x20-0x2f, a final byte) and two-byte ones (ESC 7, ESC =).
  while (i < line.length && line.charCodeAt(i) >= 0x20 && line.charCodeAt(i) <= 0x2f) i += 1;
  return { end: Math.min(line.length, i + 1), sgr: null };
}

function readCsi(line: string, from: number): { end: number; sgr: string | null } {
  let i = from;
  while (i < line.length) {
    const code = line.charCodeAt(i);
    if (code >= 0x40 && code <= 0x7e) {
      const params = line.slice(from, i);
      // Private sequences (`ESC [ ? 25 h`, `ESC [ > 4 m`) are not SGR even when they end in `m`.
      const sgr = line[i] === "m" && /^[\d;:]*$/.test(params) ? params : null;
      return { end: i + 1, sgr };
    }
    if (code < 0x20) return { end: i, sgr: null }; // broken sequence: drop what was read
    i += 1;
  }
  return { end: i, sgr: null };
}

/** The style after an SGR sequence (`params` is what comes between `ESC [` and `m`). */
export function applySgr(style: AnsiStyle, params: string): AnsiStyle {
  const codes = params === "" ? ["0"] : params.split(";");
  const next: AnsiStyle = { ...style };
  let i = 0;
  while (i < codes.length) {
    const raw = codes[i]!;
    // Colon forms: 38:5:n, 38:2::r:g:b, 38:2:r:g:b; 4:3 (curly underline) and the like.
    if (raw.includes(":")) {
      const parts = raw.split(":");
      const head = Number(parts[0]);
      if (head === 38 || head === 48 || head === 58) {
        const color = colorFrom(withoutColorSpace(parts.slice(1)));
        if (head === 38) next.fg = color ?? next.fg;
        if (head === 48) next.bg = color ?? next.bg;
      } else if (head === 4) {
        next.underline = parts[1] !== "0";
      }
      i += 1;
      continue;
    }
    const code = raw === "" ? 0 : Number(raw);
    if (code === 38 || code === 48 || code === 58) {
      const mode = codes[i + 1];
      const take = mode === "5" ? 2 : mode === "2" ? 4 : 1;
      const color = colorFrom(codes.slice(i + 1, i + 1 + take));
      if (code === 38 && color) next.fg = color;
      if (code === 48 && color) next.bg = color;
      i += 1 + take;
      continue;
    }
    applyCode(next, code);
    i += 1;
  }
  return sameStyle(next, style) ? style : next;
}

/** `2::r:g:b` and `2:cs:r:g:b` name a colour space before the channels; `2:r:g:b` does not. */
function withoutColorSpace(parts: string[]): string[] {
  return parts[0] === "2" && parts.length >= 5 ? [parts[0], ...parts.slice(2)] : parts;
}

function colorFrom(parts: string[]): AnsiColor | null {
  const numbers = parts.map((part) => (part === "" ? 0 : Number(part)));
  if (numbers[0] === 5 && numbers.length >= 2) {
    const index = numbers[1]!;
    return Number.isInteger(index) && index >= 0 && index <= 255 ? { kind: "palette", index } : null;
  }
  if (numbers[0] === 2 && numbers.length >= 4) {
    const [r, g, b] = numbers.slice(1, 4).map((n) => Math.max(0, Math.min(255, n || 0)));
    return { kind: "rgb", r: r!, g: g!, b: b! };
  }
  return null;
}

/** Applies one SGR code to `style`, a copy of the style in force (changed in place: one copy per
 * sequence, not one per code). */
function applyCode(style: AnsiStyle, code: number): void {
  if (code === 0) Object.assign(style, PLAIN);
  else if (code === 1) style.bold = true;
  else if (code === 2) style.dim = true;
  else if (code === 3) style.italic = true;
  else if (code === 4) style.underline = true;
  else if (code === 7) style.inverse = true;
  else if (code === 9) style.strike = true;
  else if (code === 21 || code === 24) style.underline = false;
  else if (code === 22) style.bold = style.dim = false;
  else if (code === 23) style.italic = false;
  else if (code === 27) style.inverse = false;
  else if (code === 29) style.strike = false;
  else if (code >= 30 && code <= 37) style.fg = { kind: "palette", index: code - 30 };
  else if (code === 39) style.fg = null;
  else if (code >= 40 && code <= 47) style.bg = { kind: "palette", index: code - 40 };
  else if (code === 49) style.bg = null;
  else if (code >= 90 && code <= 97) style.fg = { kind: "palette", index: code - 90 + 8 };
  else if (code >= 100 && code <= 107) style.bg = { kind: "palette", index: code - 100 + 8 };
  // blink, fonts, frames and the rest: not shown
}

function sameColor(a: AnsiColor | null, b: AnsiColor | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.kind === "palette" && b.kind === "palette") return a.index === b.index;
  if (a.kind === "rgb" && b.kind === "rgb") return a.r === b.r && a.g === b.g && a.b === b.b;
  return false;
}

function sameStyle(a: AnsiStyle, b: AnsiStyle): boolean {
  return (
    sameColor(a.fg, b.fg) &&
    sameColor(a.bg, b.bg) &&
    a.bold === b.bold &&
    a.dim === b.dim &&
    a.italic === b.italic &&
    a.underline === b.underline &&
    a.inverse === b.inverse &&
    a.strike === b.strike
  );
}

/** The text without any escape sequence (what find-in-output searches). */
export function stripAnsi(line: string): string {
  return parseAnsi(line)
    .segments.map((segment) => segment.text)
    .join("");
}

const CUBE = [0, 95, 135, 175, 215, 255];

/** The colour of an xterm 256-colour index from 16 up (0-15 follow the theme, through classes). */
export function palette256(index: number): [number, number, number] {
  if (index >= 232) {
    const gray = 8 + 10 * (index - 232);
    return [gray, gray, gray];
  }
  const cube = index - 16;
  return [CUBE[Math.floor(cube / 36)]!, CUBE[Math.floor(cube / 6) % 6]!, CUBE[cube % 6]!];
}

/** How a style is drawn: theme classes for the 16 basic colours and the attributes, inline colours
 * for the rest. */
export function styleOf(style: AnsiStyle): { classes: string[]; color: string | null; background: string | null } {
  const classes: string[] = [];
  let fg = style.fg;
  let bg = style.bg;
  if (style.inverse) {
    [fg, bg] = [bg, fg];
    if (fg === null) classes.push("ansi-inverse-fg");
    if (bg === null) classes.push("ansi-inverse-bg");
  }
  let color: string | null = null;
  let background: string | null = null;
  if (fg) {
    if (fg.kind === "palette" && fg.index < 16) classes.push(`ansi-fg-${fg.index}`);
    else color = cssColor(fg);
  }
  if (bg) {
    if (bg.kind === "palette" && bg.index < 16) classes.push(`ansi-bg-${bg.index}`);
    else background = cssColor(bg);
  }
  if (style.bold) classes.push("ansi-bold");
  if (style.dim) classes.push("ansi-dim");
  if (style.italic) classes.push("ansi-italic");
  if (style.underline) classes.push("ansi-underline");
  if (style.strike) classes.push("ansi-strike");
  return { classes, color, background };
}

function cssColor(color: AnsiColor): string {
  const [r, g, b] = color.kind === "rgb" ? [color.r, color.g, color.b] : palette256(color.index);
  return `rgb(${r}, ${g}, ${b})`;
}

/** Marks the parts of the segments that match `query` (case-insensitive): each returned piece says
 * whether it is a match. Several queries (the words of a search) are marked each. */
export function markMatches(
  segments: readonly Segment[],
  query: string | readonly string[],
): (Segment & { match: boolean })[] {
  const needles = (typeof query === "string" ? [query] : query)
    .map((needle) => needle.toLowerCase())
    .filter((needle) => needle !== "");
  if (needles.length === 0) return segments.map((segment) => ({ ...segment, match: false }));
  const full = segments.map((segment) => segment.text).join("");
  const haystack = full.toLowerCase();
  const found: [number, number][] = [];
  for (const needle of needles) {
    for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) {
      found.push([at, at + needle.length]);
    }
  }
  // Overlapping matches (of different words) are marked as one.
  found.sort((a, b) => a[0] - b[0]);
  const ranges: [number, number][] = [];
  for (const range of found) {
    const last = ranges[ranges.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else ranges.push([range[0], range[1]]);
  }
  const pieces: (Segment & { match: boolean })[] = [];
  let offset = 0;
  for (const segment of segments) {
    const begin = offset;
    const end = offset + segment.text.length;
    let cursor = begin;
    for (const [from, to] of ranges) {
      if (to <= cursor || from >= end) continue;
      const matchFrom = Math.max(from, cursor);
      const matchTo = Math.min(to, end);
      if (matchFrom > cursor) pieces.push({ ...segment, text: full.slice(cursor, matchFrom), match: false });
      pieces.push({ ...segment, text: full.slice(matchFrom, matchTo), match: true });
      cursor = matchTo;
    }
    if (cursor < end) pieces.push({ ...segment, text: full.slice(cursor, end), match: false });
    offset = end;
  }
  return pieces;
}

/** DOM for segments: a text node per plain piece, a `<span>` with classes and `element.style` per
 * styled one, a `<mark>` around matches. Text is always a text node. */
export function ansiNodes(segments: readonly (Segment & { match?: boolean })[]): Node[] {
  return segments.map((segment) => {
    let node: Node = document.createTextNode(segment.text);
    if (!isPlain(segment.style)) {
      const span = document.createElement("span");
      const { classes, color, background } = styleOf(segment.style);
      if (classes.length > 0) span.className = classes.join(" ");
      if (color) span.style.color = color;
      if (background) span.style.backgroundColor = background;
      span.append(node);
      node = span;
    }
    if (segment.match) {
      const mark = document.createElement("mark");
      mark.className = "find-match";
      mark.append(node);
      node = mark;
    }
    return node;
  });
}
