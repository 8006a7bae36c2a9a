import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { measurePeak, pickPeakMethod, readRss, resetPeakRss } from './_peak-rss';

const MiB = 2 ** 20;

const kept: Uint8Array[] = [];

/**
 * Touches `bytes` of fresh memory synchronously (blocking the main thread, as a session.run does); kept alive until the
 * test ends.
 */
async function touch(bytes: number): Promise<number> {
  const a = new Uint8Array(bytes);
  kept.push(a);
  let pages = 0;
  for (let i = 0; i < a.length; i += 4096) pages += a[i] = 1;
  return pages;
}

describe('peak RSS', () => {
  it('reads VmRSS / VmHWM and resets the peak through clear_refs on Linux', () => {
    const r = readRss();
    expect(r).not.toBeNull();
    expect(r!.hwmBytes).toBeGreaterThanOrEqual(r!.rssBytes);
    expect(resetPeakRss()).toBe(true);
    expect(pickPeakMethod()).toBe('clear_refs');
    expect(pickPeakMethod('sampled')).toBe('sampled');
  });

  it('sees a 96 MiB allocation with either method (clear_refs exact, sampled by a worker thread)', async () => {
    for (const method of ['clear_refs', 'sampled'] as const) {
      const before = readRss()!.rssBytes;
      const r = await measurePeak(() => touch(96 * MiB), method);
      expect(r.result).toBe(96 * 256);
      expect(r.method).toBe(method);
      expect(r.peakRssBytes - before, method).toBeGreaterThan(80 * MiB);
    }
    kept.length = 0;
  });

  it('reports a refused reset and an unreadable status instead of throwing', () => {
    const dir = useTempDir();
    const fake = join(dir, 'self');
    mkdirSync(join(fake, 'clear_refs'), { recursive: true }); // a directory: writing to it fails
    expect(resetPeakRss(fake)).toBe(false);
    expect(readRss(join(dir, 'missing'))).toBeNull();
    writeFileSync(join(fake, 'status'), 'Name:\tnode\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n');
    expect(readRss(fake)).toEqual({ rssBytes: 1024 * 1024, hwmBytes: 2048 * 1024 });
  });
});
