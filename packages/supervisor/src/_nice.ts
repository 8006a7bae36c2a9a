// The supervisor yields the CPU to the trainer it runs: its pushes hash and upload beside the training.
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Renices every thread of this process (on Linux a niceness is per thread: main, libuv pool, V8 helpers). */
export function lowerOwnPriority(nice: number): void {
  let tids: number[] = [0];
  try {
    tids = readdirSync('/proc/self/task')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    // not Linux: the main thread only
  }
  for (const tid of tids) {
    try {
      setPriority(tid, nice);
    } catch {
      // not permitted, or the thread is gone
    }
  }
}
