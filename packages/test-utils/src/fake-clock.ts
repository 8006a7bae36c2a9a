// A clock a test moves by hand: `now`, one-shot timers, and `advance` firing what falls due in order, so a
// simulated hour takes milliseconds. Its shape is what @soup/hub-ckpt's push queue and lease accept as `clock`.

export interface FakeClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Moves time forward by `ms`, firing each timer due on the way at its own time, letting its I/O start. */
  advance(ms: number): Promise<void>;
  /** Timers set and not yet fired. */
  readonly pending: number;
}

/** A fake clock starting at `startMs` (ms since the epoch). */
export function createFakeClock(startMs = Date.parse('2026-01-01T00:00:00Z')): FakeClock {
  let now = startMs;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = ++seq;
      timers.set(id, { at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        let next: [number, { at: number; fn: () => void }] | undefined;
        for (const t of timers) if (t[1].at <= end && (next === undefined || t[1].at < next[1].at)) next = t;
        if (next === undefined) break;
        timers.delete(next[0]);
        now = Math.max(now, next[1].at);
        next[1].fn();
        await new Promise((r) => setImmediate(r));
      }
      now = end;
    },
    get pending() {
      return timers.size;
    },
  };
}
