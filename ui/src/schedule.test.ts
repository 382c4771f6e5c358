import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { debounce, throttle } from "./schedule";

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
