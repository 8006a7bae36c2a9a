// A process's own peak (VmHWM) and its reset, so that what follows is measured apart.
import { useTempDir } from '@soup/test-utils';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { resetHighWaterMark } from './high-water-mark';

// The kernel keeps RSS counters per thread and folds them in lazily, so two reads of VmHWM can disagree by a few
// hundred KiB: comparisons of two reads allow SLACK, far below the MiBs each test allocates.
const SLACK = 4 * 2 ** 20;

describe("the tuner's peak, measured apart (resetHighWaterMark)", () => {
  const vmHwm = (): number => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;

  it.skipIf(process.platform !== 'linux')(
    "returns the peak so far and resets the kernel's mark to what is resident now",
    () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      let big: Buffer | null = Buffer.alloc(256 * 2 ** 20, 1); // resident: every page written
      const held = vmHwm();
      big = null;
      gc();
      const r = resetHighWaterMark();
      expect(big).toBeNull();
      expect(r.reset).toBe(true);
      expect(r.peakBytes!).toBeGreaterThanOrEqual(held - SLACK);
      expect(vmHwm()).toBeLessThan(r.peakBytes! - 200 * 2 ** 20); // the 256 MiB are no longer in the mark
    },
  );

  it('says when the mark could not be reset (no clear_refs to write), and keeps the peak', () => {
    const proc = join(useTempDir(), 'self');
    mkdirSync(join(proc, 'clear_refs'), { recursive: true }); // a directory: the write fails
    writeFileSync(join(proc, 'status'), 'VmHWM:\t 5000 kB\n');
    expect(resetHighWaterMark(proc)).toEqual({ peakBytes: 5000 * 1024, reset: false, residentAtResetBytes: null });
  });

  it.skipIf(process.platform !== 'linux')(
    'says what is resident when the mark is reset: what follows is never below it',
    () => {
      const held = Buffer.alloc(64 * 2 ** 20, 1); // resident: every page written, and still referenced
      const r = resetHighWaterMark();
      expect(r.reset).toBe(true);
      expect(r.residentAtResetBytes!).toBeGreaterThanOrEqual(64 * 2 ** 20);
      expect(r.residentAtResetBytes!).toBeLessThanOrEqual(r.peakBytes! + SLACK);
      expect(vmHwm()).toBeGreaterThanOrEqual(r.residentAtResetBytes! - SLACK);
      expect(held[held.length - 1]).toBe(1);
    },
  );
});
