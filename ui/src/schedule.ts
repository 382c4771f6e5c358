// Rate limits for work that events trigger in bursts.

/** Calls `fn` at most once per `ms`: the first call runs at once, later ones in the window are
 * folded into one call at its end (so the last state is always drawn). */
export function throttle(fn: () => void, ms: number): { (): void; cancel(): void } {
  let last = -Infinity;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const run = () => {
    timer = null;
    last = Date.now();
    fn();
  };
  const throttled = () => {
    if (timer !== null) return;
    const wait = last + ms - Date.now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
  throttled.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return throttled;
}

/** Calls `fn` once calls stopped for `ms` (typing in a search box), with the last arguments. */
export function debounce<A extends unknown[]>(
  fn: (...args: A) => void,
  ms: number,
): { (...args: A): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const debounced = (...args: A) => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn(...args);
    }, ms);
  };
  debounced.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return debounced;
}

/** Runs `fn` one call at a time: a call while one is under way runs it once more after that one,
 * however many calls came meanwhile (each call's promise ends once a run begun after it is done).
 * A run that throws does not drop the run asked for after it; the first error is the promise's. */
export function oneAtATime(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  let again = false;
  return () => {
    if (running !== null) {
      again = true;
      return running;
    }
    running = (async () => {
      let failed: { error: unknown } | null = null;
      do {
        again = false;
        try {
          await fn();
        } catch (error) {
          failed ??= { error };
        }
      } while (again);
      running = null;
      if (failed !== null) throw failed.error;
    })();
    return running;
  };
}
