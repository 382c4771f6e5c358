import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { debounce, oneAtATime, throttle } from "./schedule";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("throttle", () => {
  it("runs the first call at once and folds a burst into one call at the end of the window", () => {
    const fn = vi.fn();
    const throttled = throttle(fn, 500);
    throttled();
    expect(fn).toHaveBeenCalledTimes(1);
    throttled();
    throttled();
    throttled();
    expect(fn).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(500);
    expect(fn).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(5_000);
    expect(fn).toHaveBeenCalledTimes(2);
  });
});

describe("debounce", () => {
  it("calls once, with the last arguments, after the calls stop", () => {
    const fn = vi.fn();
    const debounced = debounce(fn, 200);
    debounced("a");
    vi.advanceTimersByTime(150);
    debounced("ab");
    vi.advanceTimersByTime(150);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(50);
    expect(fn).toHaveBeenCalledExactlyOnceWith("ab");
  });
});

describe("oneAtATime", () => {
  it("runs once more after the run under way however often it is called, and a failure drops no run", async () => {
    const answers: Array<() => void> = [];
    let runs = 0;
    const fn = vi.fn(async () => {
      runs += 1;
      const failing = runs === 1;
      await new Promise<void>((resolve) => answers.push(resolve));
      if (failing) throw new Error("the first run failed");
    });
    const once = oneAtATime(fn);
    const first = once();
    const later = Array.from({ length: 100 }, () => once());
    expect(fn).toHaveBeenCalledTimes(1);
    answers[0]!();
    await vi.waitFor(() => expect(fn).toHaveBeenCalledTimes(2));
    answers[1]!();
    await expect(first).rejects.toThrow("the first run failed");
    await expect(later[99]).rejects.toThrow("the first run failed");
    expect(fn).toHaveBeenCalledTimes(2);
    // Idle again: the next call runs at once.
    const next = once();
    expect(fn).toHaveBeenCalledTimes(3);
    answers[2]!();
    await expect(next).resolves.toBeUndefined();
  });
});
