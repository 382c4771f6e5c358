// The workspace's sessions as the table shows them: the listing, its filters, order and search,
// which one is selected and which are marked to compare, and pins and deletes.

import type { Backend } from "../backend";
import { toCommandError } from "../errors";
import { filterSessions, NO_FILTERS, type SessionFilters } from "../filters";
import { settle, type Loaded } from "../loaded";
import { SEARCH_LIMIT, type SearchResults } from "../search";
import { type CostSort, nextCostSort, sortByCost } from "../usage";
import type { CommandError, SessionListing, SessionRow, UsageTotal } from "../types";

export class SessionsState {
  /** Pinned first, as the backend orders them. */
  listing = $state.raw<Loaded<SessionRow[]>>({ kind: "loading" });
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

  set(listing: Loaded<SessionListing>): void {
    if (listing.kind === "ok") {
      this.listing = { kind: "ok", value: listing.value.sessions };
      this.usage = listing.value.usage;
    } else {
      this.listing = listing;
    }
    this.#changed();
  }

  /** Whether a workspace switch is under way (its own refresh reads the listing). */
  paused: () => boolean = () => false;
  /** Counts the workspaces shown: a listing read for one is not laid under the next. */
  #epoch = 0;

  /** The listing again: after a pin, and as runs start, go from node to node, and end. Not while the
   * workspace is being switched, and a listing read when a switch began is dropped: it could be
   * either workspace's, and the switch reads the new one's with its state. */
  async reload(): Promise<void> {
    if (this.paused()) return;
    const epoch = this.#epoch;
    const listing = await settle(this.#backend().sessionsList());
    if (epoch !== this.#epoch || this.paused()) return;
    // A failed reload keeps the rows on screen rather than replacing them with an error.
    if (listing.kind === "ok" || this.listing.kind !== "ok") {
      this.set(listing);
      this.now = this.#clock();
    }
  }

  /** Another workspace: nothing of the last one's table stays. */
  reset(): void {
    this.#epoch += 1;
    this.listing = { kind: "loading" };
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
  }

  setFilters(filters: SessionFilters): void {
    this.filters = filters;
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
