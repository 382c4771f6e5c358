// Where the output view gets its lines: never the whole output (it can be 1 GB), only pages of
// PAGE_LINES lines fetched on demand.
//
// - `IndexedSource` (no filter): line i is seq i + 1, so any line can be fetched directly (the view
//   opens at the tail); only the lines asked for are fetched, and kept by page in an LRU cache.
// - `ScannedSource` (a node or stream filter): which lines match is known only by reading forward,
//   so matching lines are read from the start, page after page, as the view needs them.

import { LRUCache } from "lru-cache";

import type { Backend } from "./backend";
import type { OutputLine, Stream } from "./types";

export const PAGE_LINES = 500;
/** Pages kept in memory (of PAGE_LINES lines each). */
export const CACHED_PAGES = 40;
/** A filtered view keeps at most this many matching lines. */
export const MAX_SCANNED_LINES = 200_000;

export interface OutputFilter {
  node: string | null;
  stream: Stream | null;
}

export interface LineSource {
  /** Lines known so far (for a filter: the matching lines read so far). */
  count(): number;
  /** The line at an index, if it is loaded. */
  line(index: number): OutputLine | undefined;
  /** Fetches what is missing of [first, end); resolves `true` when something new arrived. */
  load(first: number, end: number): Promise<boolean>;
  /** Reads further (a filter); resolves `false` when everything written so far was read. */
  more(): Promise<boolean>;
  /** The run has `total` lines now. */
  grew(total: number): void;
  /** The index of the line with this seq, when it can be known without reading. */
  indexOfSeq(seq: number): number | null;
  /** Something to say about what is shown ("first 200,000 matching lines"), or null. */
  note(): string | null;
}

export class IndexedSource implements LineSource {
  private total: number;
  /** Loaded lines by page, the least recently used dropped past CACHED_PAGES (lru-cache: 5x as
   * fast as the Map-based LRU it replaced, docs/benchmarks.md); a page may have gaps (only the
   * lines asked for are fetched). */
  private readonly pages = new LRUCache<number, OutputLine[]>({ max: CACHED_PAGES });
  private readonly inFlight = new Map<number, Promise<boolean>>();

  constructor(
    private readonly backend: Backend,
    private readonly runId: string,
    total: number,
  ) {
    this.total = total;
  }

  count(): number {
    return this.total;
  }

  line(index: number): OutputLine | undefined {
    return this.pages.get(Math.floor(index / PAGE_LINES))?.[index % PAGE_LINES];
  }

  /** Fetches the missing lines of [first, end), and only those: one request per page (from its
   * first missing line to its last), so a view following a flood fetches what it shows, not
   * whole pages. */
  async load(first: number, end: number): Promise<boolean> {
    const last = Math.min(end, this.total);
    const fetches: Promise<boolean>[] = [];
    for (let page = Math.floor(first / PAGE_LINES); page * PAGE_LINES < last; page++) {
      fetches.push(this.loadWithin(page, Math.max(first, page * PAGE_LINES), Math.min(last, (page + 1) * PAGE_LINES)));
    }
    return (await Promise.all(fetches)).some(Boolean);
  }

  /** Fetches the missing lines of [from, to), which lie in `page`; resolves `true` when lines came. */
  private async loadWithin(page: number, from: number, to: number): Promise<boolean> {
    // One request per page at a time: what it brings is known before asking again.
    for (let pending = this.inFlight.get(page); pending; pending = this.inFlight.get(page)) {
      await pending.catch(() => false);
    }
    const loaded = this.pages.get(page);
    const base = page * PAGE_LINES;
    while (from < to && loaded?.[from - base]) from++;
    while (to > from && loaded?.[to - 1 - base]) to--;
    if (from === to) return false;
    const fetching = this.fetchLines(page, from, to).finally(() => this.inFlight.delete(page));
    this.inFlight.set(page, fetching);
    return fetching;
  }

  private async fetchLines(page: number, from: number, to: number): Promise<boolean> {
    const result = await this.backend.runOutput(this.runId, { fromSeq: from + 1, limit: to - from });
    let loaded = this.pages.get(page);
    if (!loaded) {
      loaded = [];
      this.pages.set(page, loaded);
    }
    const base = page * PAGE_LINES;
    for (const line of result.lines) {
      const offset = line.seq - 1 - base;
      if (offset >= 0 && offset < PAGE_LINES) loaded[offset] = line;
    }
    if (result.total > this.total) this.grew(result.total);
    return result.lines.length > 0;
  }

  more(): Promise<boolean> {
    return Promise.resolve(false);
  }

  grew(total: number): void {
    this.total = Math.max(this.total, total);
  }

  /** Where the loaded lines at the tail end: the line count when the last line is loaded; while
   * the newest lines are being fetched, the end of the ones before them (0: none loaded there). A
   * view following a flood shows those rather than placeholders. */
  loadedTail(): number {
    if (this.total === 0 || this.line(this.total - 1)) return this.total;
    let tail = 0;
    for (const [page, lines] of this.pages.entries())
      tail = Math.max(tail, Math.min(this.total, page * PAGE_LINES + lines.length));
    return tail;
  }

  indexOfSeq(seq: number): number | null {
    return seq >= 1 ? seq - 1 : null;
  }

  note(): string | null {
    return null;
  }
}

export class ScannedSource implements LineSource {
  private readonly lines: OutputLine[] = [];
  private nextSeq = 1;
  /** Everything written so far was read. */
  private caughtUp = false;
  private reading: Promise<boolean> | null = null;

  constructor(
    private readonly backend: Backend,
    private readonly runId: string,
    private readonly filter: OutputFilter,
  ) {}

  count(): number {
    return this.lines.length;
  }

  line(index: number): OutputLine | undefined {
    return this.lines[index];
  }

  async load(_first: number, end: number): Promise<boolean> {
    let grew = false;
    while (end > this.lines.length - PAGE_LINES / 5 && (await this.more())) grew = true;
    return grew;
  }

  more(): Promise<boolean> {
    if (this.caughtUp || this.lines.length >= MAX_SCANNED_LINES) return Promise.resolve(false);
    this.reading ??= this.readPage().finally(() => (this.reading = null));
    return this.reading;
  }

  private async readPage(): Promise<boolean> {
    const page = await this.backend.runOutput(this.runId, {
      fromSeq: this.nextSeq,
      limit: PAGE_LINES,
      node: this.filter.node,
      stream: this.filter.stream,
    });
    this.lines.push(...page.lines.slice(0, MAX_SCANNED_LINES - this.lines.length));
    if (page.next_seq === null) {
      this.caughtUp = true;
      const last = page.lines[page.lines.length - 1];
      this.nextSeq = Math.max(this.nextSeq, page.total + 1, last ? last.seq + 1 : 0);
    } else {
      this.nextSeq = page.next_seq;
    }
    return page.lines.length > 0 || !this.caughtUp;
  }

  grew(_total: number): void {
    this.caughtUp = false;
  }

  indexOfSeq(seq: number): number | null {
    const index = this.lines.findIndex((line) => line.seq >= seq);
    return index === -1 ? null : index;
  }

  note(): string | null {
    if (this.lines.length >= MAX_SCANNED_LINES) {
      return `the first ${MAX_SCANNED_LINES.toLocaleString("en-US")} matching lines; narrow the filter to see more`;
    }
    return "filtered lines are read from the start";
  }
}
