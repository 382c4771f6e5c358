import { beforeEach, describe, expect, it, vi } from "vitest";

import { fakeBackend, type FakeBackend } from "./fake-backend";
import { createOutputView, type OutputView } from "./output";
import type { OutputLine } from "./types";

const ESC = "\x1b";

function lines(count: number, make: (seq: number) => Partial<OutputLine> = () => ({})): OutputLine[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: i + 1,
    stream: "stdout" as const,
    at_ms: i,
    node: "work",
    text: `line ${i + 1}`,
    ...make(i + 1),
  }));
}

let backend: FakeBackend;
let view: OutputView;

function shownSeqs(): number[] {
  return [...view.element.querySelectorAll("#output .output-line")].map((line) =>
    Number(line.getAttribute("data-seq")),
  );
}

function scroller(): HTMLElement {
  return view.element.querySelector(".output-scroller") as HTMLElement;
}

function scrollTo(top: number): void {
  scroller().scrollTop = top;
  scroller().dispatchEvent(new Event("scroll"));
}

async function open(all: OutputLine[], nodes: string[] = ["work"]): Promise<void> {
  backend.output.set("r1", all);
  view = createOutputView({ backend, runId: "r1", nodes });
  document.body.append(view.element);
  await vi.waitFor(() => expect(shownSeqs().length).toBeGreaterThan(0));
}

beforeEach(() => {
  document.body.replaceChildren();
  backend = fakeBackend();
});

describe("the output view", () => {
  it("opens at the tail of a long output, with only a window of lines in the DOM", async () => {
    await open(lines(100_000));
    const seqs = shownSeqs();
    expect(seqs.at(-1)).toBe(100_000);
    expect(seqs.length).toBeLessThan(150);
    const pageFetches = backend.calls.filter((call) => call.startsWith("runOutput(r1") && !call.endsWith(", 1, 1)"));
    expect(pageFetches.length).toBeLessThanOrEqual(2);
    expect(view.element.querySelector(".line-count")?.textContent).toBe("100,000 lines");
    expect((view.element.querySelector("#output-follow") as HTMLElement).hidden).toBe(true);
  });

  it("follows new lines while at the bottom, pauses when scrolled up, and jumps back to the latest", async () => {
    await open(lines(1_000));
    backend.output.set("r1", lines(1_200));
    view.grew(1_200);
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(1_200));
    expect(view.following()).toBe(true);

    scrollTo(0);
    await vi.waitFor(() => expect(shownSeqs()[0]).toBe(1));
    expect(view.following()).toBe(false);
    const follow = view.element.querySelector("#output-follow") as HTMLButtonElement;
    expect(follow.hidden).toBe(false);

    backend.output.set("r1", lines(1_300));
    view.grew(1_300);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(shownSeqs()[0]).toBe(1); // the reader stays where they are

    follow.click();
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(1_300));
    expect(view.following()).toBe(true);
  });

  it("following lines that come faster than they are fetched, shows the loaded ones rather than placeholders", async () => {
    await open(lines(1_000));
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const fetch = backend.runOutput.bind(backend);
    backend.runOutput = async (runId, query) => {
      await held;
      return fetch(runId, query);
    };
    backend.output.set("r1", lines(1_700));
    view.grew(1_200);
    view.grew(1_700);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(view.element.querySelectorAll(".output-pending")).toHaveLength(0);
    expect(shownSeqs().at(-1)).toBe(1_000);
    expect(view.element.querySelector(".line-count")?.textContent).toBe("1,700 lines");
    release();
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(1_700));
    expect(view.element.querySelectorAll(".output-pending")).toHaveLength(0);
  });

  it("following a flood, fetches only the lines it shows, one request at a time", async () => {
    await open(lines(1_000));
    const before = backend.calls.length;
    for (let total = 11_000; total <= 200_000; total += 10_000) {
      backend.output.set("r1", lines(total));
      view.grew(total);
    }
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(191_000));
    const fetched = backend.calls
      .slice(before)
      .filter((call) => call.startsWith("runOutput(r1") && !call.endsWith(", 1, 1)"));
    // The first notice's tail, then (the fetch done) the latest: not one fetch per notice.
    expect(fetched).toHaveLength(2);
    for (const call of fetched) expect(Number(call.match(/, (\d+)\)$/)?.[1])).toBeLessThanOrEqual(shownSeqs().length);
  });

  it("keeps following when a scroll event comes while the newest lines are half fetched", async () => {
    await open(lines(1_000));
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const fetch = backend.runOutput.bind(backend);
    // The newest lines span two pages: the second page's request is held.
    backend.runOutput = async (runId, query) => {
      if (query.fromSeq === 1_501) await held;
      return fetch(runId, query);
    };
    backend.output.set("r1", lines(1_520));
    view.grew(1_520);
    await vi.waitFor(() => expect(backend.calls).toContain("runOutput(r1, 1454, 47)"));
    await new Promise((resolve) => setTimeout(resolve, 10));
    scroller().dispatchEvent(new Event("scroll"));
    release();
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(1_520));
    expect(view.following()).toBe(true);
  });

  it("keeps the elements of lines still in view as the run grows, making only the new ones", async () => {
    await open(lines(1_000));
    const before = view.element.querySelector("#output .output-line[data-seq='990']");
    backend.output.set("r1", lines(1_005));
    view.grew(1_005);
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(1_005));
    expect(view.element.querySelector("#output .output-line[data-seq='990']")).toBe(before);
  });

  it("numbers lines from their seq and says a line's node, stream and time when it is pointed at", async () => {
    await open(lines(10, (seq) => ({ stream: seq === 10 ? "stderr" : "stdout", at_ms: seq * 1000 })));
    const last = view.element.querySelector("#output .output-line[data-seq='10']") as HTMLElement;
    expect(last.classList.contains("stderr")).toBe(true);
    expect(last.hasAttribute("title")).toBe(false);
    last.querySelector(".line-text")!.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
    expect(last.getAttribute("title")).toBe("work · stderr · +10.0 s");
  });

  it("draws colours as styled spans, marks stderr, and shows markup as text", async () => {
    const evil = '<img src=x onerror="window.pwned=1">';
    await open([
      { seq: 1, stream: "stdout", at_ms: 0, node: null, text: `${ESC}[31mred${ESC}[0m ${ESC}[2Kplain` },
      { seq: 2, stream: "stderr", at_ms: 1, node: null, text: evil },
    ]);
    const [first, second] = [...view.element.querySelectorAll(".output-line")];
    expect(first?.querySelector(".line-text")?.textContent).toBe("red plain");
    expect(first?.querySelector(".ansi-fg-1")?.textContent).toBe("red");
    expect(second?.classList.contains("stderr")).toBe(true);
    expect(second?.querySelector(".line-text")?.textContent).toBe(evil);
    expect(view.element.querySelector("img")).toBeNull();
  });

  it("filters by stream and by node, reading matching lines from the start", async () => {
    await open(
      lines(2_000, (seq) => ({ stream: seq % 100 === 0 ? "stderr" : "stdout", node: seq <= 1_000 ? "plan" : "write" })),
      ["plan", "write"],
    );
    const stream = view.element.querySelector("#output-stream") as HTMLSelectElement;
    stream.value = "stderr";
    stream.dispatchEvent(new Event("change"));
    await vi.waitFor(() => expect(shownSeqs()).toEqual(Array.from({ length: 20 }, (_, i) => (i + 1) * 100)));

    const node = view.element.querySelector("#output-node") as HTMLSelectElement;
    node.value = "write";
    node.dispatchEvent(new Event("change"));
    await vi.waitFor(() => expect(shownSeqs()).toEqual(Array.from({ length: 10 }, (_, i) => 1_100 + i * 100)));
  });

  it("finds a match in lines not loaded yet, asking the store, scrolls to it and marks it", async () => {
    await open(
      lines(5_000, (seq) =>
        seq === 1_234 ? { text: `the ${ESC}[1mNeedle${ESC}[0m is here` } : seq === 100 ? { text: "a needle" } : {},
      ),
    );
    scrollTo(0);
    const find = view.element.querySelector("#output-find") as HTMLInputElement;
    const status = () => view.element.querySelector(".find-status")?.textContent;
    find.value = "needle";
    find.dispatchEvent(new Event("input"));
    find.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    await vi.waitFor(() => expect(status()).toBe("line 100"));
    const before = backend.calls.length;
    find.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    await vi.waitFor(() => expect(status()).toBe("line 1,234"));
    // The store reads the lines (a bounded number per call, then on), not the view page by page.
    expect(backend.calls.slice(before).filter((call) => call.startsWith("runOutputFind("))).toEqual([
      "runOutputFind(r1, 101, forward, needle)",
      "runOutputFind(r1, 1101, forward, needle)",
    ]);
    const marked = view.element.querySelector(".output-line.marked");
    expect(marked?.getAttribute("data-seq")).toBe("1234");
    expect(marked?.querySelector("mark.find-match")?.textContent).toBe("Needle");
    expect(view.following()).toBe(false);

    find.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    await vi.waitFor(() => expect(status()).toBe("no match below"));
    find.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", shiftKey: true }));
    await vi.waitFor(() => expect(status()).toBe("line 100"));
  });

  it("shows a given line (a search hit)", async () => {
    await open(lines(50_000));
    await view.showLine(20_000);
    await vi.waitFor(() => expect(shownSeqs()).toContain(20_000));
    expect(view.element.querySelector(".output-line.marked")?.getAttribute("data-seq")).toBe("20000");
  });
});

describe("moving the output view", () => {
  it("draws it again where the reader was", async () => {
    await open(lines(10_000));
    scrollTo(2_000 * 18);
    await vi.waitFor(() => expect(shownSeqs()).toContain(2_001));
    const holder = document.createElement("div");
    document.body.append(holder);
    holder.append(view.element); // moving an element resets its scroll position
    scroller().scrollTop = 0;
    view.redraw();
    expect(scroller().scrollTop).toBe(2_000 * 18);
    await vi.waitFor(() => expect(shownSeqs()).toContain(2_001));
  });
});

describe("output notices", () => {
  it("asks the store when a notice counts fewer lines than it holds", async () => {
    await open(lines(100));
    backend.output.set("r1", lines(150));
    view.grew(40); // this app saw 40 lines printed; the store has 150
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(150));
  });
});

describe("catching up with no notice", () => {
  it("reads on from the lines it holds: each line once, in order", async () => {
    await open(lines(30));
    // Lines written while no notice could come (a remote link down): the store has them.
    backend.output.set("r1", lines(60));
    backend.calls.length = 0;
    view.catchUp();
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(60));
    expect(shownSeqs()).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const fetched = backend.calls.filter((call) => call.startsWith("runOutput(r1") && !call.endsWith(", 1, 1)"));
    expect(fetched.length).toBeGreaterThan(0);
    for (const call of fetched) expect(call).toMatch(/^runOutput\(r1, (3[1-9]|[45]\d),/);
  });

  it("asks again when more was written while it asked", async () => {
    await open(lines(10));
    backend.output.set("r1", lines(20));
    view.catchUp();
    backend.output.set("r1", lines(25));
    view.catchUp(); // while the first answer is on its way
    await vi.waitFor(() => expect(shownSeqs().at(-1)).toBe(25));
  });

  it("filtered, reads the matching lines after the last one read", async () => {
    await open(lines(40, (seq) => ({ stream: seq % 10 === 0 ? "stderr" : "stdout" })));
    const stream = view.element.querySelector("#output-stream") as HTMLSelectElement;
    stream.value = "stderr";
    stream.dispatchEvent(new Event("change"));
    await vi.waitFor(() => expect(shownSeqs()).toEqual([10, 20, 30, 40]));
    backend.output.set(
      "r1",
      lines(80, (seq) => ({ stream: seq % 10 === 0 ? "stderr" : "stdout" })),
    );
    view.catchUp();
    await vi.waitFor(() => expect(shownSeqs()).toEqual([10, 20, 30, 40, 50, 60, 70, 80]));
  });
});

describe("colours over several lines", () => {
  it("scrolled by a reader, fetches whole pages, carrying colours from the page's first line", async () => {
    await open(lines(2_000, (seq) => (seq === 510 ? { text: `${ESC}[32mgreen from here` } : {})));
    const before = backend.calls.length;
    scrollTo(900 * 18);
    await vi.waitFor(() => expect(shownSeqs()).toContain(905));
    expect(backend.calls.slice(before)).toEqual(["runOutput(r1, 501, 500)"]);
    const line = view.element.querySelector(".output-line[data-seq='905']")!;
    expect(line.querySelector(".ansi-fg-2")?.textContent).toBe("line 905");
  });

  it("carry over the lines of a page, as in a terminal, and each page starts plain", async () => {
    const all = lines(1_000, (seq) =>
      seq === 499 || seq === 999
        ? { text: `${ESC}[32mgreen from here` }
        : seq === 502
          ? { text: `back ${ESC}[0mto plain` }
          : {},
    );
    await open(all);
    scrollTo(495 * 18);
    await vi.waitFor(() => expect(shownSeqs()).toEqual(expect.arrayContaining([498, 503])));
    const line = (seq: number) => view.element.querySelector(`.output-line[data-seq='${seq}']`)!;
    expect(line(498).querySelector(".ansi-fg-2")).toBeNull();
    expect(line(500).querySelector(".ansi-fg-2")?.textContent).toBe("line 500");
    // Line 501 is the first of the next page: plain.
    expect(line(501).querySelector(".ansi-fg-2")).toBeNull();
    expect(line(503).querySelector(".ansi-fg-2")).toBeNull();
    // The view opened at the tail, drawing line 1000 before the lines above it: still green.
    scrollTo(1_000 * 18);
    await vi.waitFor(() => expect(shownSeqs()).toContain(1_000));
    expect(line(1_000).querySelector(".ansi-fg-2")?.textContent).toBe("line 1000");
  });
});
