// The Output tab's line viewer for one run: a virtual window over the run's lines (only the visible
// lines and a margin are in the DOM, a spacer stands for the rest), filled from a `LineSource` page
// by page. It opens at the tail and follows it while scrolled to the bottom; scrolling up pauses
// that, and "Jump to latest" resumes it. Find scans the lines forward or backward from the current
// position, page by page through the same source, and marks the matches in the drawn lines.

import { ansiNodes, markMatches, parseAnsi, PLAIN, stripAnsi, type AnsiStyle, type Segment } from "./ansi";
import type { Backend } from "./backend";
import { button, el } from "./elements";
import { IndexedSource, PAGE_LINES, ScannedSource, type LineSource, type OutputFilter } from "./outputsource";
import type { OutputLine, Stream } from "./types";
import { coversView, isAtEnd, scrollTopOf, virtualWindow } from "./virtual";

export const LINE_HEIGHT = 18;
const MARGIN_LINES = 40;
/** While following, the newest lines are fetched at most this often. */
const FOLLOW_INTERVAL_MS = 100;
/** The viewport assumed when the page has no layout (tests). */
const FALLBACK_VIEWPORT = 480;

/** The whole pages that hold lines [first, end). */
function pageBounds(first: number, end: number): [number, number] {
  return [first - (first % PAGE_LINES), Math.ceil(end / PAGE_LINES) * PAGE_LINES];
}

export interface OutputView {
  element: HTMLElement;
  /** The run has `total` lines now (the `run-output` event). */
  grew(total: number): void;
  /** Reads on from the lines it holds, as no notice says how many there are (a remote
   * workspace's link is back, the run ended): the run's line count is asked again and what is
   * new is fetched by line number, so no line is missed and none is shown twice. */
  catchUp(): void;
  /** Scrolls to the line with this seq and marks it (a search hit). */
  showLine(seq: number): Promise<void>;
  /** Whether the view follows the tail. */
  following(): boolean;
  /** Draws again where it was (after its element was moved, which resets its scroll position). */
  redraw(): void;
}

export interface OutputViewOptions {
  backend: Backend;
  runId: string;
  /** The nodes offered by the node filter. */
  nodes: readonly string[];
  /** Called when a fetch fails. */
  onError?: (error: unknown) => void;
  /** Put first in the toolbar (the session view's run picker). */
  toolbarStart?: Node;
}

export function createOutputView(options: OutputViewOptions): OutputView {
  const { backend, runId } = options;

  const nodeSelect = el(
    "select",
    { class: "field small", attrs: { id: "output-node", "aria-label": "Node" } },
    el("option", { attrs: { value: "" } }, "All nodes"),
    ...options.nodes.map((node) => el("option", { attrs: { value: node } }, node)),
  );
  const streamSelect = el(
    "select",
    { class: "field small", attrs: { id: "output-stream", "aria-label": "Stream" } },
    el("option", { attrs: { value: "all" } }, "All streams"),
    el("option", { attrs: { value: "stdout" } }, "stdout"),
    el("option", { attrs: { value: "stderr" } }, "stderr"),
  );
  const findInput = el("input", {
    class: "field small find",
    attrs: {
      id: "output-find",
      type: "search",
      placeholder: "Find in output",
      "aria-label": "Find in output",
      spellcheck: "false",
    },
  });
  const findStatus = el("span", { class: "find-status muted", attrs: { "aria-live": "polite" } });
  const previous = button(
    { class: "button small icon", title: "Previous match (Shift+Enter)" },
    "↑",
    () => void find(-1),
  );
  const next = button({ class: "button small icon", title: "Next match (Enter)" }, "↓", () => void find(1));
  const lineCount = el("span", { class: "line-count muted" });
  const follow = button({ class: "button small follow", attrs: { id: "output-follow" } }, "Jump to latest ↓", () =>
    jumpToLatest(),
  );
  const note = el("p", { class: "output-note muted" });

  const lines = el("div", { class: "output-lines", attrs: { id: "output", role: "log", "aria-label": "Output" } });
  const space = el("div", { class: "output-space" }, lines);
  const scroller = el("div", { class: "output-scroller", attrs: { tabindex: "0" } }, space);

  const element = el(
    "div",
    { class: "output-view", attrs: { "data-run-id": runId } },
    el(
      "div",
      { class: "toolbar" },
      options.toolbarStart ?? null,
      nodeSelect,
      streamSelect,
      el("span", { class: "toolbar-gap" }),
      el("span", { class: "find-group" }, findInput, previous, next, findStatus),
      lineCount,
    ),
    note,
    el("div", { class: "output-frame" }, scroller, follow),
  );

  let filter: OutputFilter = { node: null, stream: null };
  let source: LineSource = new IndexedSource(backend, runId, 0);
  let isFollowing = true;
  let findQuery = "";
  let findToken = 0;
  /** The line find or a search hit pointed at. */
  let markedIndex: number | null = null;
  let started = false;
  /** The run's line count is being asked. */
  let probing = false;
  /** It is to be asked again once that answer came (something may have been written since). */
  let probeAgain = false;

  const viewport = () => scroller.clientHeight || FALLBACK_VIEWPORT;

  /** The lines laid out: all of them, except while following the tail, when the newest lines
   * are shown once they are loaded (the lines before them stay on screen meanwhile, rather than
   * placeholders that a flood would replace before they are ever filled). */
  function laidOutCount(): number {
    if (!isFollowing || !(source instanceof IndexedSource)) return source.count();
    return source.loadedTail() || source.count();
  }

  function currentWindow(margin = MARGIN_LINES) {
    return virtualWindow({
      scrollTop: scroller.scrollTop,
      viewport: viewport(),
      count: laidOutCount(),
      rowHeight: LINE_HEIGHT,
      margin,
    });
  }

  /** The height the lines were laid out with, last drawn. */
  let drawnHeight = 0;
  /** The lines drawn (with every one loaded), as indexes. */
  let drawnRange = { first: 0, end: 0 };
  /** What the drawn lines show (window, count, find, mark): the same again is not redrawn. */
  let drawnKey = "";
  /** The drawn lines' elements by seq, and the find and mark they were drawn with. */
  let drawnBySeq = new Map<number, HTMLElement>();
  let drawnMarks = "";

  /** The next draw makes every line again (another source, a moved view). */
  function forgetDrawn(): void {
    drawnKey = "";
    drawnBySeq = new Map();
  }

  /** Draws the lines of the current window, then fetches the ones missing and draws again. */
  function render(): void {
    const window = currentWindow();
    drawnHeight = window.height;
    space.style.height = `${window.height}px`;
    if (isFollowing) {
      scroller.scrollTop = window.height;
      Object.assign(window, currentWindow());
    }
    const count = source.count();
    follow.hidden = isFollowing;
    lineCount.textContent = count === 1 ? "1 line" : `${count.toLocaleString("en-US")} lines`;
    note.textContent = source.note() ?? "";
    note.hidden = note.textContent === "";
    if (isFollowing && laidOutCount() < count) fetchTail(window.end - window.first);
    const marks = `${findQuery}:${markedIndex}`;
    const key = `${window.first}:${window.end}:${count}:${marks}`;
    if (key === drawnKey) return;
    lines.style.transform = `translateY(${window.offset}px)`;
    const drawn: Node[] = [];
    let missing = false;
    // Lines still in view keep their elements; only new ones are made.
    const reusable = drawnMarks === marks ? drawnBySeq : new Map<number, HTMLElement>();
    drawnBySeq = new Map();
    drawnMarks = marks;
    for (let index = window.first; index < window.end; index++) {
      const line = source.line(index);
      if (line) {
        const element = reusable.get(line.seq) ?? lineElement(line, index);
        drawnBySeq.set(line.seq, element);
        drawn.push(element);
      } else {
        missing = true;
        drawn.push(el("div", { class: "output-pending", attrs: { "aria-hidden": "true" } }, "…"));
      }
    }
    lines.replaceChildren(...drawn);
    // The gutter fits the largest line number.
    lines.style.setProperty("--line-no-width", `${String(count).length + 1}ch`);
    drawnRange = missing ? { first: 0, end: 0 } : { first: window.first, end: window.end };
    drawnKey = missing ? "" : key;
    if (missing || (source instanceof ScannedSource && window.end >= count - MARGIN_LINES)) {
      // A reader scrolling gets whole pages (fewer requests, and colours carried from the page's
      // first line); following gets only its window (`fetchTail`).
      const [first, end] = isFollowing ? [window.first, window.end] : pageBounds(window.first, window.end);
      void source.load(first, end).then(
        (changed) => changed && render(),
        (error: unknown) => options.onError?.(error),
      );
    }
  }

  /** A fetch of the newest lines is under way or waiting for its turn. */
  let fetchingTail = false;
  let lastTailFetch = -Infinity;

  /** Fetches the newest `wanted` lines and draws them. One fetch at a time, at most one per
   * FOLLOW_INTERVAL_MS: a flood prints faster than anyone reads, and each fetch and draw leaves
   * garbage (a 1 GB flood followed with a page fetched per notice left the web process at RSS
   * 361-549 MiB, 304-311 MiB this way: docs/benchmarks.md). */
  function fetchTail(wanted: number): void {
    if (fetchingTail) return;
    fetchingTail = true;
    const fetchNewest = () => {
      lastTailFetch = performance.now();
      const count = source.count();
      source.load(Math.max(0, count - wanted), count).then(
        (changed) => {
          fetchingTail = false;
          if (changed) render();
        },
        (error: unknown) => {
          fetchingTail = false;
          options.onError?.(error);
        },
      );
    };
    const wait = lastTailFetch + FOLLOW_INTERVAL_MS - performance.now();
    if (wait > 0) setTimeout(fetchNewest, wait);
    else fetchNewest();
  }

  /** Lines parsed, with the style in force after each. */
  const parsed = new WeakMap<OutputLine, { segments: Segment[]; end: AnsiStyle }>();

  /** A line's segments. Unfiltered, styles carry over from the lines above it in its page, as a
   * terminal shows them; each page starts plain (a page can be read without the ones above). */
  function segmentsAt(index: number, line: OutputLine): Segment[] {
    const known = parsed.get(line);
    if (known) return known.segments;
    let start: AnsiStyle = PLAIN;
    if (source instanceof IndexedSource) {
      const pageStart = index - (index % PAGE_LINES);
      // From the nearest line above already parsed (or the page's first line), parse down to this one.
      let from = index;
      while (from > pageStart) {
        const above = source.line(from - 1);
        if (!above) break;
        const aboveParsed = parsed.get(above);
        if (aboveParsed) {
          start = aboveParsed.end;
          break;
        }
        from -= 1;
      }
      for (let i = from; i < index; i++) {
        const above = source.line(i)!;
        const result = parseAnsi(above.text, start);
        parsed.set(above, result);
        start = result.end;
      }
    }
    const result = parseAnsi(line.text, start);
    parsed.set(line, result);
    return result.segments;
  }

  /** The line each drawn element shows (for its tooltip). */
  const lineOf = new WeakMap<Element, OutputLine>();

  /** A line as little DOM as it takes (following a flood draws thousands): the number is drawn by
   * CSS from `data-seq`, the tooltip is made when the line is pointed at. */
  function lineElement(line: OutputLine, index: number): HTMLElement {
    const segments = segmentsAt(index, line);
    const classes = ["output-line"];
    if (line.stream === "stderr") classes.push("stderr");
    if (index === markedIndex) classes.push("marked");
    const element = el(
      "div",
      { class: classes.join(" "), attrs: { "data-seq": String(line.seq) } },
      el("span", { class: "line-text" }, ...ansiNodes(markMatches(segments, findQuery))),
    );
    lineOf.set(element, line);
    return element;
  }

  lines.addEventListener("mouseover", (event) => {
    const element = event.target instanceof Element ? event.target.closest(".output-line") : null;
    const line = element && lineOf.get(element);
    if (!element || !line || element.hasAttribute("title")) return;
    element.setAttribute(
      "title",
      line.node ? `${line.node} · ${line.stream} · +${(line.at_ms / 1000).toFixed(1)} s` : line.stream,
    );
  });

  /** Where the reader was: a moved element forgets its scroll position. */
  let lastScrollTop = 0;

  scroller.addEventListener("scroll", () => {
    lastScrollTop = scroller.scrollTop;
    const wasFollowing = isFollowing;
    // At the end of what is drawn: lines loaded since (a fetch half done) are not a scroll up.
    isFollowing = isAtEnd(scroller.scrollTop, viewport(), drawnHeight, LINE_HEIGHT);
    // A scroll within the margin shows lines already drawn: nothing to do. (Not so past the height
    // cap, where the lines are drawn where the scroll position maps to.)
    const inView = currentWindow(0);
    const scaled = inView.height < source.count() * LINE_HEIGHT;
    if (!scaled && isFollowing === wasFollowing && coversView(drawnRange, inView)) return;
    render();
  });

  /** The window's first row without its margin above. */
  function firstVisibleIndex(): number {
    const window = currentWindow();
    return window.first === 0 ? 0 : window.first + MARGIN_LINES;
  }

  function jumpToLatest(): void {
    isFollowing = true;
    render();
    scroller.focus({ preventScroll: true });
  }

  function scrollToIndex(index: number): void {
    isFollowing = false;
    const top = scrollTopOf(Math.max(0, index - 3), {
      viewport: viewport(),
      count: source.count(),
      rowHeight: LINE_HEIGHT,
    });
    scroller.scrollTop = top;
    lastScrollTop = top;
    render();
  }

  /** Reads the run's size, then draws its tail. */
  async function start(): Promise<void> {
    started = true;
    if (filter.node === null && filter.stream === null) {
      const probe = await backend.runOutput(runId, { fromSeq: 1, limit: 1 });
      source = new IndexedSource(backend, runId, probe.total);
    } else {
      source = new ScannedSource(backend, runId, filter);
    }
    forgetDrawn();
    render();
  }

  function setFilter(): void {
    filter = {
      node: nodeSelect.value || null,
      stream: streamSelect.value === "all" ? null : (streamSelect.value as Stream),
    };
    isFollowing = filter.node === null && filter.stream === null;
    scroller.scrollTop = 0;
    markedIndex = null;
    void start().catch((error: unknown) => options.onError?.(error));
  }
  nodeSelect.addEventListener("change", setFilter);
  streamSelect.addEventListener("change", setFilter);

  findInput.addEventListener("input", () => {
    findQuery = findInput.value;
    findToken += 1;
    findStatus.textContent = "";
    render();
  });
  findInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      void find(event.shiftKey ? -1 : 1);
    }
  });

  /** The next line (downward, or upward for -1) that contains the query, ignoring case and
   * colours. Unfiltered, the store reads the output for it (a 1 GB output in seconds, not page by
   * page through the window); filtered, the matching lines are read here. */
  async function find(direction: 1 | -1): Promise<void> {
    const query = findInput.value;
    if (query === "") return;
    const token = ++findToken;
    const index = (markedIndex ?? firstVisibleIndex() - direction) + direction;
    findStatus.textContent = "searching…";
    try {
      const found =
        source instanceof IndexedSource
          ? await findInStore(index, direction, query, token)
          : await findInLines(index, direction, query.toLowerCase(), token);
      if (token !== findToken) return;
      if (found === null) {
        findStatus.textContent = direction > 0 ? "no match below" : "no match above";
        return;
      }
      markedIndex = found;
      findStatus.textContent = `line ${(source.line(found)?.seq ?? found + 1).toLocaleString("en-US")}`;
      scrollToIndex(found);
    } catch (error) {
      if (token === findToken) findStatus.textContent = "";
      options.onError?.(error);
    }
  }

  /** The index of the next matching line, asked of the store call by call (each reads a bounded
   * number of lines); null when there is none, or a newer find took over. */
  async function findInStore(index: number, direction: 1 | -1, query: string, token: number): Promise<number | null> {
    let fromSeq: number | null = index + 1;
    let read = 0;
    while (fromSeq !== null && fromSeq >= 1 && token === findToken) {
      const step = await backend.runOutputFind(runId, { fromSeq, backward: direction < 0, query });
      if (step.seq !== null) return step.seq - 1;
      read += step.scanned;
      fromSeq = step.next_seq;
      if (token === findToken) findStatus.textContent = `searching… ${read.toLocaleString("en-US")} lines read`;
    }
    return null;
  }

  /** The index of the next matching line of a filtered view, reading matching lines as needed. */
  async function findInLines(index: number, direction: 1 | -1, query: string, token: number): Promise<number | null> {
    let read = 0;
    while (token === findToken) {
      if (index < 0) return null;
      if (index >= source.count() && !(await source.more())) return null;
      const chunkFirst = direction > 0 ? index : Math.max(0, index - PAGE_LINES + 1);
      await source.load(chunkFirst, chunkFirst + PAGE_LINES);
      if (token !== findToken) return null;
      const chunkEnd = Math.min(chunkFirst + PAGE_LINES, source.count());
      for (; index >= chunkFirst && index < chunkEnd; index += direction) {
        const line = source.line(index);
        if (line && stripAnsi(line.text).toLowerCase().includes(query)) return index;
        read += 1;
      }
      findStatus.textContent = `searching… ${read.toLocaleString("en-US")} lines read`;
    }
    return null;
  }

  /** The run has `total` lines now. */
  function grow(total: number): void {
    if (source instanceof ScannedSource || total > source.count()) {
      source.grew(total);
      render();
      return;
    }
    // The notice counts the lines this app saw printed; the store may hold more (a run followed
    // since midway, lines skipped in a flood): ask it.
    probe();
  }

  /** Asks the store how many lines the run has, and draws the ones beyond those known. */
  function probe(): void {
    if (probing) {
      probeAgain = true;
      return;
    }
    probing = true;
    const asked = source;
    backend
      .runOutput(runId, { fromSeq: 1, limit: 1 })
      .then((page) => {
        if (asked !== source) return;
        if (page.total > source.count()) source.grew(page.total);
        // Drawn again either way: lines whose fetch failed (a link down) are fetched again.
        render();
      })
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        probing = false;
        if (probeAgain) {
          probeAgain = false;
          probe();
        }
      });
  }

  /** Reads on from what the view holds: unfiltered, the run's count again (the lines are fetched
   * by number); filtered, the matching lines from the line after the last one read. */
  function catchUp(): void {
    if (source instanceof ScannedSource) {
      const asked = source;
      asked.grew(0);
      asked.more().then(
        (grew) => grew && asked === source && render(),
        (error: unknown) => options.onError?.(error),
      );
      return;
    }
    probe();
  }

  void start().catch((error: unknown) => options.onError?.(error));

  return {
    element,
    grew(total) {
      if (started) grow(total);
    },
    catchUp() {
      if (started) catchUp();
    },
    async showLine(seq) {
      if (filter.node !== null || filter.stream !== null) {
        nodeSelect.value = "";
        streamSelect.value = "all";
        filter = { node: null, stream: null };
      }
      const probe = await backend.runOutput(runId, { fromSeq: 1, limit: 1 });
      source = new IndexedSource(backend, runId, probe.total);
      forgetDrawn();
      const index = source.indexOfSeq(seq);
      if (index === null) return;
      markedIndex = index;
      scrollToIndex(index);
    },
    following: () => isFollowing,
    redraw() {
      if (!isFollowing) scroller.scrollTop = lastScrollTop;
      forgetDrawn();
      render();
    },
  };
}
