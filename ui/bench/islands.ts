// Our ANSI parser and the output view's page cache against maintained libraries, over realistic
// input: `npx vite-node bench/islands.ts` (figures in docs/benchmarks.md, "UI islands").
//
// - ANSI: 100,000 coloured lines as agents print them, parsed with the style carried from line to
//   line (as the output view does), by `parseAnsi` and by ansi-sequence-parser. The library only
//   reads `ESC [ … m`: it leaves every other sequence in the text (an OSC title, `ESC [ ? 25 l`
//   shown as raw bytes), reads `ESC [ 2 K` as running to the next "m" of the text, has no colon
//   forms and no carriage return. So it is measured alone, and behind a pre-pass doing what it
//   does not (the only way it could stand in for ours).
// - LRU: the page cache (40 pages) under 1,000,000 lookups of a window drifting forward, by the
//   Map-based LRU the UI had and by lru-cache.

import { createAnsiSequenceParser, type Color, type ParseToken } from "ansi-sequence-parser";
import { LRUCache } from "lru-cache";

import { parseAnsi, PLAIN, type AnsiColor, type AnsiStyle, type Segment } from "../src/ansi";

const ESC = "\x1b";

function colouredLines(count: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    switch (i % 8) {
      case 0:
        out.push(`${ESC}[32m✓${ESC}[0m node plan: step ${i} ${ESC}[2mdone in ${i % 97} ms${ESC}[0m`);
        break;
      case 1:
        out.push(`plain line ${i}: reading src/module_${i % 50}.ts and writing the summary of what it found`);
        break;
      case 2:
        out.push(`${ESC}[1m${ESC}[34m== section ${i} ==${ESC}[0m`);
        break;
      case 3:
        out.push(`${ESC}[38;5;208mwarn${ESC}[39m: retrying request ${i} (${ESC}[33m${i % 5}${ESC}[0m of 5)`);
        break;
      case 4:
        out.push(
          `${ESC}[38;2;120;200;80mtool${ESC}[0m call ${ESC}[1;36mgrep${ESC}[0m -n "p_${i}" ${ESC}[4msrc/${ESC}[24m`,
        );
        break;
      case 5:
        out.push(`${ESC}[31merror${ESC}[0m: ${ESC}[91mexpected 3 got ${i % 7}${ESC}[0m at line ${i}`);
        break;
      case 6:
        out.push(`progress ${ESC}[32m####${ESC}[0m 40%\rprogress ${ESC}[32m##########${ESC}[0m 100%`);
        break;
      default:
        out.push(`${ESC}[90m${new Date(1_800_000_000_000 + i).toISOString()}${ESC}[0m assistant: next node ${i}`);
    }
  }
  return out;
}

const NAMED = [
  "black",
  "red",
  "green",
  "yellow",
  "blue",
  "magenta",
  "cyan",
  "white",
  "brightBlack",
  "brightRed",
  "brightGreen",
  "brightYellow",
  "brightBlue",
  "brightMagenta",
  "brightCyan",
  "brightWhite",
];

function colorOf(color: Color | null): AnsiColor | null {
  if (color === null) return null;
  if (color.type === "named") return { kind: "palette", index: NAMED.indexOf(color.name) };
  if (color.type === "table") return { kind: "palette", index: color.index };
  return { kind: "rgb", r: color.rgb[0], g: color.rgb[1], b: color.rgb[2] };
}

/** The library's tokens as the segments the view draws. */
function segmentsOf(tokens: ParseToken[]): Segment[] {
  return tokens.map((token) => ({
    text: token.value,
    style: {
      fg: colorOf(token.foreground),
      bg: colorOf(token.background),
      bold: token.decorations.has("bold"),
      dim: token.decorations.has("dim"),
      italic: token.decorations.has("italic"),
      underline: token.decorations.has("underline"),
      inverse: token.decorations.has("reverse"),
      strike: token.decorations.has("strikethrough"),
    },
  }));
}

// eslint-disable-next-line no-control-regex -- escape sequences are what it matches
const SEQUENCE = /\x1b\[([0-?]*)[ -/]*([@-~])|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?/g;

/** What the library would need in front of it: every sequence but SGR dropped, a carriage return's
 * last state kept. */
function prePass(line: string): string {
  const cr = line.lastIndexOf("\r");
  const shown = cr >= 0 && cr < line.length - 1 ? line.slice(cr + 1) : line;
  return shown.replace(SEQUENCE, (sequence, params: string | undefined, final: string | undefined) =>
    final === "m" && /^[\d;]*$/.test(params ?? "") ? sequence : "",
  );
}

/** The LRU the UI had (virtual.ts until it moved to lru-cache). */
class MapLru<K, V> {
  private readonly map = new Map<K, V>();
  constructor(readonly capacity: number) {}
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K);
  }
}

let sink = 0;

function measure(label: string, run: () => void, runs = 15): number {
  run();
  run();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(runs / 2)]!;
  console.log(
    `${label.padEnd(58)} median ${median.toFixed(1).padStart(6)} ms  (${times[0]!.toFixed(1)}-${times.at(-1)!.toFixed(1)})`,
  );
  return median;
}

const lines = colouredLines(100_000);
console.log(`ANSI: ${lines.length.toLocaleString("en-US")} coloured lines, style carried over lines`);
const ours = measure("parseAnsi (ours)", () => {
  let style: AnsiStyle = PLAIN;
  for (const line of lines) {
    const parsed = parseAnsi(line, style);
    style = parsed.end;
    sink += parsed.segments.length;
  }
});
const library = measure("ansi-sequence-parser, as segments (SGR only)", () => {
  const parser = createAnsiSequenceParser();
  for (const line of lines) sink += segmentsOf(parser.parse(line)).length;
});
const both = measure("pre-pass + ansi-sequence-parser, as segments", () => {
  const parser = createAnsiSequenceParser();
  for (const line of lines) sink += segmentsOf(parser.parse(prePass(line))).length;
});
console.log(
  `  library alone / ours ${(library / ours).toFixed(2)}x, pre-pass + library / ours ${(both / ours).toFixed(2)}x`,
);

function lookups(cache: { get(key: number): unknown; set(key: number, value: string[]): unknown }): void {
  const page: string[] = [];
  for (let i = 0; i < 1_000_000; i++) {
    const key = (i >> 6) + (i % 7) - 3;
    if (cache.get(key) === undefined) cache.set(key, page);
  }
}
console.log("LRU: 40 pages, 1,000,000 lookups of a window drifting forward");
const mapLru = measure("Map-based LRU (the UI's until now)", () => lookups(new MapLru<number, string[]>(40)));
const lruCache = measure("lru-cache", () => lookups(new LRUCache<number, string[]>({ max: 40 })));
console.log(`  lru-cache / Map-based ${(lruCache / mapLru).toFixed(2)}x`);
if (sink < 0) console.log(sink);
