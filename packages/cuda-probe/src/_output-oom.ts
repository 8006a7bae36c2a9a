// What a command probe's trial leaves as evidence of running out of memory.
import { release as osRelease } from 'node:os';
import { classifyLine } from './classify-out-of-memory';

/** WDDM (Windows, and WSL2 on top of it) spills a full GPU to host memory instead of failing. */
export function spillsToHost(): boolean {
  return process.platform === 'win32' || /microsoft/i.test(osRelease());
}

/**
 * The first line of the output that reports an out-of-memory error (a specific catalogue entry, not a generic hint).
 */
export function oomLineIn(run: { stdout: string; stderr: string }): string | null {
  for (const text of [run.stderr, run.stdout]) {
    for (const line of text.split('\n')) {
      if (line.length > 4000) continue;
      const c = classifyLine(line);
      if (c?.oom && c.kind !== 'generic') return c.line;
    }
  }
  return null;
}
