import { describe, expect, it } from "vitest";

import { fakeBackend } from "./fake-backend";
import { CACHED_PAGES, IndexedSource, PAGE_LINES, ScannedSource } from "./outputsource";
import type { OutputLine } from "./types";

function lines(count: number, stream: (seq: number) => "stdout" | "stderr" = () => "stdout"): OutputLine[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: i + 1,
    stream: stream(i + 1),
    at_ms: i,
    node: null,
    text: `line ${i + 1}`,
  }));
}

const fetches = (calls: string[]) => calls.filter((call) => call.startsWith("runOutput("));

describe("IndexedSource", () => {
  it("fetches only the missing lines asked for, once, and maps index i to seq i + 1", async () => {
    const backend = fakeBackend();
    backend.output.set("r", lines(10_000));
    const source = new IndexedSource(backend, "r", 10_000);
    expect(await source.load(9_990, 10_000)).toBe(true);
    expect(await source.load(9_995, 10_000)).toBe(false);
    await source.load(9_900, 10_000);
    // Across a page boundary: one request per page.
    await source.load(PAGE_LINES - 5, PAGE_LINES + 5);
    expect(fetches(backend.calls)).toEqual([
      "runOutput(r, 9991, 10)",
      "runOutput(r, 9901, 90)",
      `runOutput(r, ${PAGE_LINES - 4}, 5)`,
      `runOutput(r, ${PAGE_LINES + 1}, 5)`,
    ]);
    expect(source.line(9_899)).toBeUndefined();
    expect(source.line(9_900)?.seq).toBe(9_901);
    expect(source.line(9_999)?.seq).toBe(10_000);
    expect(source.line(0)).toBeUndefined();
    expect(source.indexOfSeq(42)).toBe(41);
  });

  it("keeps a bounded number of pages, fetching an evicted one again", async () => {
    const backend = fakeBackend();
    const total = (CACHED_PAGES + 5) * PAGE_LINES;
    backend.output.set("r", lines(total));
    const source = new IndexedSource(backend, "r", total);
    for (let page = 0; page < CACHED_PAGES + 5; page++) await source.load(page * PAGE_LINES, page * PAGE_LINES + 1);
    expect(source.line(0)).toBeUndefined(); // the first page was evicted
    await source.load(0, 1);
    expect(source.line(0)?.seq).toBe(1);
    expect(fetches(backend.calls)).toHaveLength(CACHED_PAGES + 6);
  });

  it("drops the page used longest ago, not one read again since", async () => {
    const backend = fakeBackend();
    const total = (CACHED_PAGES + 1) * PAGE_LINES;
    backend.output.set("r", lines(total));
    const source = new IndexedSource(backend, "r", total);
    for (let page = 0; page < CACHED_PAGES; page++) await source.load(page * PAGE_LINES, page * PAGE_LINES + 1);
    expect(source.line(0)?.seq).toBe(1); // page 0 is now the most recent
    await source.load(CACHED_PAGES * PAGE_LINES, CACHED_PAGES * PAGE_LINES + 1);
    expect(source.line(0)?.seq).toBe(1);
    expect(source.line(PAGE_LINES)).toBeUndefined(); // page 1 was the one used longest ago
  });

  it("fetches the last page again when the run grew", async () => {
    const backend = fakeBackend();
    backend.output.set("r", lines(700));
    const source = new IndexedSource(backend, "r", 700);
    await source.load(600, 700);
    backend.output.set("r", lines(900));
    source.grew(900);
    expect(source.count()).toBe(900);
    expect(source.line(899)).toBeUndefined();
    await source.load(800, 900);
    expect(source.line(899)?.seq).toBe(900);
  });

  it("keeps showing a short last page while it is fetched again, and says where the loaded tail ends", async () => {
    const backend = fakeBackend();
    backend.output.set("r", lines(700));
    const source = new IndexedSource(backend, "r", 700);
    await source.load(600, 700);
    expect(source.loadedTail()).toBe(700);
    backend.output.set("r", lines(1_200));
    source.grew(1_200);
    expect(source.line(699)?.seq).toBe(700);
    expect(source.loadedTail()).toBe(700);
    await source.load(1_100, 1_200);
    expect(source.loadedTail()).toBe(1_200);
    expect(source.line(899)).toBeUndefined();
    await source.load(850, 900);
    expect(source.line(899)?.seq).toBe(900); // the short page was fetched again
    expect(new IndexedSource(backend, "r", 1_200).loadedTail()).toBe(0);
  });
});

describe("ScannedSource", () => {
  it("reads matching lines forward page by page, and again after the run grew", async () => {
    const backend = fakeBackend();
    backend.output.set(
      "r",
      lines(3_000, (seq) => (seq % 10 === 0 ? "stderr" : "stdout")),
    );
    const source = new ScannedSource(backend, "r", { node: null, stream: "stderr" });
    await source.load(0, 50);
    expect(source.count()).toBe(300);
    expect(source.line(0)?.seq).toBe(10);
    expect(await source.more()).toBe(false);

    backend.output.set(
      "r",
      lines(3_100, (seq) => (seq % 10 === 0 ? "stderr" : "stdout")),
    );
    source.grew(3_100);
    expect(await source.more()).toBe(true);
    expect(source.count()).toBe(310);
    expect(source.line(309)?.seq).toBe(3_100);
    expect(source.indexOfSeq(25)).toBe(2);
  });
});
