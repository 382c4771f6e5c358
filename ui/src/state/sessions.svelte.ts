// The workspace's sessions as the table shows them: the listing, its filters, order and search,
// which one is selected and which are marked to compare, and pins and deletes.
//
// The listing is read a page at a time (`sessionsPage`): the first screen is one page, and the
// table stands for every session (its scroll height is the total's), so the rows it draws are read
// as they come into view: next to the rows held when they join them, in their place when the table
// jumps far (a drag of its scroll bar), never more than MOST_HELD_ROWS at once. A change reads the
// rows held again (new sessions come in at the top, changed ones change in place). The filters and
// the order by cost cover every session: while one is set, the whole listing is held
// (`sessionsList`).

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import { filterSessions, isFiltered, NO_FILTERS, type SessionFilters } from "../filters";
import { settle, type Loaded } from "../loaded";
import { oneAtATime } from "../schedule";
import { SEARCH_LIMIT, type SearchResults } from "../search";
import { type CostSort, nextCostSort, sortByCost } from "../usage";
import type { CommandError, SessionListing, SessionRow, SessionsPage, UsageTotal } from "../types";

/** What every session costs is read again at most this often while sessions change (it sums the
 * whole workspace's: about 2 s of the core's time at 100,000 sessions), and when their count
 * changes. */
export const USAGE_EVERY_MS = 30_000;

/** The rows of the first page and of each page after it. */
export const PAGE_ROWS = 200;
/** The most rows one call reads (the core's own bound, `app::MAX_PAGE`). */
export const MOST_PAGE_ROWS = 5_000;
/** The most rows held while paging: scrolling on past them lets go of the farthest. The web view
 * holds what is near the view, not the whole history. */
export const MOST_HELD_ROWS = 2_000;

/** The rows held read again: `count` of them from row `start`, a page of at most MOST_PAGE_ROWS at
 * a time (one call for a screen or a few pages). When sessions went and `start` is past the end
 * now, the last `count` rows. */
async function readRows(backend: Backend, start: number, count: number): Promise<SessionsPage> {
  const first = await backend.sessionsPage(start, Math.min(count, MOST_PAGE_ROWS));
  if (first.sessions.length === 0 && start > 0) return readRows(backend, Math.max(0, first.total - count), count);
  const sessions = [...first.sessions];
  const checking = [...first.checking];
  let total = first.total;
  while (sessions.length < Math.min(count, total - start)) {
    const next = await backend.sessionsPage(start + sessions.length, Math.min(count - sessions.length, MOST_PAGE_ROWS));
    if (next.sessions.length === 0) break;
    sessions.push(...withoutHeld(next.sessions, sessions));
    checking.push(...next.checking);
    total = next.total;
  }
  return { sessions, offset: start, total, checking };
}

/** Which rows to read so that rows `first` to `end` are held, and how they join the `held` rows
 * from row `offset`: after or before them when they touch, else instead of them. */
export function rowsToRead(
  held: { offset: number; length: number },
  first: number,
  end: number,
  total: number,
): { start: number; length: number; join: "after" | "before" | "instead" } | null {
  end = Math.min(end, total);
  const heldEnd = held.offset + held.length;
  if (end <= first || (first >= held.offset && end <= heldEnd)) return null;
  if (first >= held.offset && first <= heldEnd)
    return { start: heldEnd, length: Math.min(MOST_PAGE_ROWS, Math.max(PAGE_ROWS, end - heldEnd)), join: "after" };
  if (end >= held.offset && end <= heldEnd) {
    const start = Math.max(0, Math.min(first, held.offset - PAGE_ROWS));
    return { start, length: held.offset - start, join: "before" };
  }
  // A jump: a page around the rows asked for, in place of the rows held.
  const middle = Math.floor((first + end) / 2);
  const start = Math.min(first, Math.max(0, Math.min(middle - PAGE_ROWS / 2, total - PAGE_ROWS)));
  return { start, length: Math.min(MOST_PAGE_ROWS, Math.max(PAGE_ROWS, end - start)), join: "instead" };
}

/** The rows of `page` not among `held` (a row moved up between two pages is held once). */
function withoutHeld(page: readonly SessionRow[], held: readonly SessionRow[]): SessionRow[] {
  const ids = new Set(held.map((row) => row.id));
  return page.filter((row) => !ids.has(row.id));
}

export class SessionsState {
  /** Pinned first, as the backend orders them: the rows held, from row `offset` of the listing
   * (every row while `whole`). */
  listing = $state.raw<Loaded<SessionRow[]>>({ kind: "loading" });
  /** Where the rows held begin in the whole listing (0 while `whole`). */
  offset = $state(0);
  /** How many sessions the workspace has in all. */
  total = $state(0);
  /** The rows shown as the store last saw them while their folders, which differ, are read again. */
  checking = $state.raw<ReadonlySet<string>>(new Set());
  /** The whole listing is held (a filter or the order by cost was set): every row read. */
  whole = $state(false);
  /** What all the workspace's sessions cost, as the core totals and words it (the last listing's). */
  usage = $state.raw<UsageTotal | null>(null);
  /** The moment relative times are drawn for. */
  now = $state.raw(new Date());
  selected = $state<string | null>(null);
  /** The sessions marked in the table to compare, in the order marked (two at most). */
  marked = $state.raw<readonly string[]>([]);
  filters = $state.raw<SessionFilters>(NO_FILTERS);
  /** The table's order by cost (its Cost column's header): none keeps pinned, then most recent. */
  costSort = $state<CostSort>("none");
  /** What the search box holds. */
  searchText = $state("");
  search = $state.raw<SearchResults>({ kind: "idle" });
  pinError = $state.raw<CommandError | null>(null);
  deleteError = $state.raw<CommandError | null>(null);

  /** The sessions the table shows: through the filters, in the table's order. */
  visible = $derived(
    this.listing.kind === "ok" ? sortByCost(filterSessions(this.listing.value, this.filters), this.costSort) : [],
  );
  /** How many sessions the table stands for: all of them, or those through the filters. */
  count = $derived(
    isFiltered(this.filters) ? this.visible.length : Math.max(this.total, this.offset + this.visible.length),
  );

  readonly #backend: () => Backend;
  readonly #clock: () => Date;
  /** Told whenever a listing arrives (the open session's row). */
  readonly #changed: () => void;
  #searchAsked = 0;

  constructor(backend: () => Backend, clock: () => Date, changed: () => void) {
    this.#backend = backend;
    this.#clock = clock;
    this.#changed = changed;
    this.now = clock();
  }

  rows(): readonly SessionRow[] {
    return this.listing.kind === "ok" ? this.listing.value : [];
  }

  rowOf(sessionId: string): SessionRow | null {
    return this.rows().find((row) => row.id === sessionId) ?? null;
  }

  /** The whole listing (a filter or the order by cost asked for it). */
  set(listing: Loaded<SessionListing>): void {
    if (listing.kind === "ok") {
      this.listing = { kind: "ok", value: listing.value.sessions };
      this.offset = 0;
      this.usage = listing.value.usage;
      this.total = listing.value.sessions.length;
      this.checking = new Set();
    } else {
      this.listing = listing;
    }
    this.#changed();
  }

  /** The rows held (the first screen, or the rows held read again). */
  setPage(page: Loaded<SessionsPage>): void {
    if (page.kind === "ok") {
      this.listing = { kind: "ok", value: page.value.sessions };
      this.offset = page.value.offset;
      this.total = page.value.total;
      this.checking = new Set(page.value.checking);
    } else {
      this.listing = page;
    }
    this.#changed();
  }

  /** When `usage` was last asked for, and for how many sessions. */
  #usageAsked = { at: -Infinity, total: -1 };

  /** What all the sessions cost, read apart from the rows (it is the whole workspace's): at most
   * every USAGE_EVERY_MS while the count stays the same, unless `now`. */
  async readUsage(now = true): Promise<void> {
    const at = this.#clock().getTime();
    if (!now && this.total === this.#usageAsked.total && at - this.#usageAsked.at < USAGE_EVERY_MS) return;
    this.#usageAsked = { at, total: this.total };
    const epoch = this.#epoch;
    const usage = await settle(this.#backend().sessionsCost());
    if (epoch === this.#epoch && usage.kind === "ok") this.usage = usage.value;
  }

  /** Whether the whole listing is needed: a filter or the order by cost covers every session. */
  get #wholeWanted(): boolean {
    return isFiltered(this.filters) || this.costSort !== "none";
  }

  /** Whether a workspace switch is under way (its own refresh reads the listing). */
  paused: () => boolean = () => false;
  /** Counts the workspaces shown: a listing read for one is not laid under the next. */
  #epoch = 0;
  /** Rows the table came to are being read. */
  #readingRows = false;

  /** The listing again: after a pin, and as runs start, go from node to node, and end (the rows
   * held, or the whole listing while it is wanted). One read at a time, once more after however
   * often it was asked meanwhile ([`oneAtATime`]): a run of 80,000 node executions asked at each
   * event, and its reads queued up in the shell, still read after the run ended. */
  readonly reload: () => Promise<void> = oneAtATime(() => this.#readListing());

  /** Not while the workspace is being switched, and a listing read when a switch began is
   * dropped: it could be either workspace's, and the switch reads the new one's with its state. */
  async #readListing(): Promise<void> {
    if (this.paused()) return;
    const epoch = this.#epoch;
    const stale = () => epoch !== this.#epoch || this.paused();
    // A failed reload keeps the rows on screen rather than replacing them with an error.
    const keeps = (read: Loaded<unknown>) => read.kind !== "ok" && this.listing.kind === "ok";
    if (this.#wholeWanted) {
      const listing = await settle(this.#backend().sessionsList());
      if (stale() || keeps(listing)) return;
      this.whole = true;
      this.set(listing);
    } else {
      // Back from the whole listing, the first page; else the rows held, where they are.
      const held = this.whole ? PAGE_ROWS : Math.max(PAGE_ROWS, this.rows().length);
      const page = await settle(readRows(this.#backend(), this.whole ? 0 : this.offset, held));
      if (stale() || keeps(page)) return;
      this.whole = false;
      this.setPage(page);
      void this.readUsage(false);
    }
    this.now = this.#clock();
  }

  /** The table draws rows `first` to `end` of the listing: those not held are read (joined to the
   * rows held, or in their place after a jump), and the farthest let go past MOST_HELD_ROWS. */
  async reach(first: number, end: number): Promise<void> {
    if (this.whole || this.#readingRows || this.listing.kind !== "ok" || this.paused()) return;
    const held = this.listing.value;
    const read = rowsToRead({ offset: this.offset, length: held.length }, first, end, this.total);
    if (read === null) return;
    this.#readingRows = true;
    const epoch = this.#epoch;
    try {
      const page = await settle(this.#backend().sessionsPage(read.start, read.length));
      if (epoch !== this.#epoch || page.kind !== "ok" || this.listing.kind !== "ok" || this.whole) return;
      const rows = this.listing.value;
      const came = page.value.sessions;
      // None there yet (a first launch still reading the folders behind the first screen): the
      // rows held stay, and the table asks again as the listing changes.
      if (came.length === 0) return;
      let offset = this.offset;
      let joined: SessionRow[];
      if (read.join === "after") {
        joined = [...rows, ...withoutHeld(came, rows)];
      } else if (read.join === "before") {
        const before = withoutHeld(came, rows);
        joined = [...before, ...rows];
        offset = Math.max(0, offset - before.length);
      } else {
        joined = [...came];
        offset = read.start;
      }
      // Past the bound, the rows farthest from those just read go.
      const excess = joined.length - MOST_HELD_ROWS;
      if (excess > 0 && read.join === "after") {
        joined = joined.slice(excess);
        offset += excess;
      } else if (excess > 0) {
        joined = joined.slice(0, MOST_HELD_ROWS);
      }
      this.listing = { kind: "ok", value: joined };
      this.offset = offset;
      this.total = page.value.total;
      const held = new Set(joined.map((row) => row.id));
      const checking = [...(read.join === "instead" ? [] : this.checking), ...page.value.checking];
      this.checking = new Set(checking.filter((id) => held.has(id)));
    } finally {
      this.#readingRows = false;
    }
  }

  /** Another workspace: nothing of the last one's table stays. */
  reset(): void {
    this.#epoch += 1;
    this.listing = { kind: "loading" };
    this.offset = 0;
    this.total = 0;
    this.checking = new Set();
    this.whole = false;
    this.#usageAsked = { at: -Infinity, total: -1 };
    this.pinError = null;
    this.deleteError = null;
    this.selected = null;
    this.filters = NO_FILTERS;
    this.searchText = "";
    this.search = { kind: "idle" };
  }

  togglePin(sessionId: string, pin: boolean): void {
    void (async () => {
      try {
        const backend = this.#backend();
        await (pin ? backend.pinAdd(sessionId) : backend.pinRemove(sessionId));
        this.pinError = null;
      } catch (error) {
        this.pinError = toCommandError(error);
      }
      await this.reload();
    })();
  }

  delete(sessionId: string): void {
    void (async () => {
      try {
        await this.#backend().sessionDelete(sessionId);
        this.deleteError = null;
        if (this.selected === sessionId) this.selected = null;
      } catch (error) {
        this.deleteError = toCommandError(error);
      }
      await this.reload();
    })();
  }

  /** Marks a session of the table to compare (or unmarks it); a third mark drops the first. */
  toggleMark(sessionId: string, marked: boolean): void {
    const others = this.marked.filter((id) => id !== sessionId);
    this.marked = marked ? [...others, sessionId].slice(-2) : others;
  }

  /** The Cost column's header was pressed: the next order. */
  toggleCostSort(): void {
    this.costSort = nextCostSort(this.costSort);
    this.#wholeOrPages();
  }

  setFilters(filters: SessionFilters): void {
    this.filters = filters;
    this.#wholeOrPages();
  }

  /** A filter or the order changed: the whole listing is read once one covers every session, and
   * the rows held go back to pages once none does. */
  #wholeOrPages(): void {
    if (this.listing.kind === "ok" && this.whole !== this.#wholeWanted) void this.reload();
  }

  /** The query changed (already debounced); "" clears the results. */
  runSearch(query: string): void {
    const asked = ++this.#searchAsked;
    if (query === "") {
      this.search = { kind: "idle" };
      return;
    }
    this.search = { kind: "searching", query };
    this.#backend()
      .search(query, SEARCH_LIMIT)
      .then(
        (hits) => {
          if (asked === this.#searchAsked) this.search = { kind: "ok", query, hits };
        },
        (error: unknown) => {
          if (asked === this.#searchAsked) this.search = { kind: "error", query, error: toCommandError(error) };
        },
      );
  }

  clearSearch(): void {
    this.searchText = "";
    this.runSearch("");
  }

  /** Whether the search box holds anything or shows results. */
  get searching(): boolean {
    return this.search.kind !== "idle" || this.searchText !== "";
  }
}
