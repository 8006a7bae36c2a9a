/**
 * Time as the push queue and the lease see it: `now` and one-shot timers. Injected by a test that simulates
 * hours in milliseconds (see @soup/test-utils' createFakeClock); the default is the system clock.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once after `ms`; the handle goes to clearTimeout. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The system clock; its timers do not keep the process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
