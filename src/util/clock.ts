/**
 * Time source and timers of the runtime. Every deadline the runtime keeps (the busy wait,
 * max_inference_ms, the shutdown deadline and teardown grace, the idle sweep, the live-ingest
 * timeouts) is scheduled here, so that a test can pass a manual clock and move time itself
 * instead of waiting for it or asserting how long something took.
 */
export interface Clock {
  now(): number;
  /**
   * Calls `fn` once, `ms` from now. Like setTimeout, the timer keeps the process alive unless
   * `unref` is set (a deadline a shutdown waits for must; a watchdog need not).
   */
  after(ms: number, fn: () => void, options?: { unref?: boolean }): Timer;
  /** Calls `fn` every `ms` until cancelled; a periodic sweep never keeps the process alive. */
  every(ms: number, fn: () => void): Timer;
}

export interface Timer {
  cancel(): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  after(ms, fn, options) {
    const handle = setTimeout(fn, ms);
    if (options?.unref) handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return { cancel: () => clearInterval(handle) };
  },
};
