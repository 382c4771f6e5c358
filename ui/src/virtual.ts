// The maths of virtualised lists (sessions table, output lines): which rows of a long list are drawn
// for a scroll position. No DOM. (The pages of output lines fetched on demand are
// kept in lru-cache's LRUCache: outputsource.ts.)

/** Browsers cap how tall an element can be (WebKit and Chromium near 16-33 million px): a list
 * taller than this is drawn in a scroll space of this height, its position mapped proportionally. */
export const MAX_SCROLL_HEIGHT = 8_000_000;

export interface WindowInput {
  scrollTop: number;
  /** The visible height of the scroller (px). */
  viewport: number;
  count: number;
  rowHeight: number;
  /** Rows drawn beyond each edge, so a small scroll shows rows already there. */
  margin: number;
  maxHeight?: number;
}

export interface VirtualWindow {
  /** The first row drawn. */
  first: number;
  /** One past the last row drawn. */
  end: number;
  /** Where row `first` is drawn, from the top of the scroll space (px). */
  offset: number;
  /** The height of the scroll space (px). */
  height: number;
}

/** The rows to draw for a scroll position. */
export function virtualWindow(input: WindowInput): VirtualWindow {
  const { count, rowHeight, margin } = input;
  const viewport = Math.max(0, input.viewport);
  const maxHeight = input.maxHeight ?? MAX_SCROLL_HEIGHT;
  const fullHeight = count * rowHeight;
  if (fullHeight <= maxHeight) {
    const scrollTop = clamp(input.scrollTop, 0, Math.max(0, fullHeight - viewport));
    const first = Math.max(0, Math.floor(scrollTop / rowHeight) - margin);
    const end = Math.min(count, Math.ceil((scrollTop + viewport) / rowHeight) + margin);
    return { first, end: Math.max(first, end), offset: first * rowHeight, height: fullHeight };
  }
  // Scaled: the scroll position is a fraction of the list; the rows at that fraction are drawn at
  // the scroll position itself.
  const height = maxHeight;
  const maxScroll = Math.max(1, height - viewport);
  const scrollTop = clamp(input.scrollTop, 0, maxScroll);
  const visibleRows = viewport / rowHeight;
  const topRow = (scrollTop / maxScroll) * Math.max(0, count - visibleRows);
  const first = Math.max(0, Math.floor(topRow) - margin);
  const end = Math.min(count, Math.ceil(topRow + visibleRows) + margin);
  const offset = scrollTop - (topRow - first) * rowHeight;
  return { first, end, offset, height };
}

/** Whether the rows in view (a window without margin) are all among the rows drawn: then a scroll
 * needs no redraw. */
export function coversView(drawn: { first: number; end: number }, inView: { first: number; end: number }): boolean {
  return drawn.first <= inView.first && inView.end <= drawn.end;
}

/** The scroll position that shows row `index` at the top (or as low as the list allows). */
export function scrollTopOf(index: number, input: Omit<WindowInput, "scrollTop" | "margin">): number {
  const { count, rowHeight } = input;
  const viewport = Math.max(0, input.viewport);
  const maxHeight = input.maxHeight ?? MAX_SCROLL_HEIGHT;
  const fullHeight = count * rowHeight;
  if (fullHeight <= maxHeight) return clamp(index * rowHeight, 0, Math.max(0, fullHeight - viewport));
  const maxScroll = Math.max(1, maxHeight - viewport);
  const rows = Math.max(1, count - viewport / rowHeight);
  return clamp((index / rows) * maxScroll, 0, maxScroll);
}

/** The smallest scroll that brings row `index` fully into view (unscaled lists: the table). */
export function revealRow(index: number, scrollTop: number, viewport: number, rowHeight: number): number {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  if (top < scrollTop) return top;
  if (bottom > scrollTop + viewport) return Math.max(0, bottom - viewport);
  return scrollTop;
}

/** Whether the scroller is at (or within `slack` px of) its end: the output follows the tail. */
export function isAtEnd(scrollTop: number, viewport: number, height: number, slack: number): boolean {
  return scrollTop + viewport >= height - slack;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
