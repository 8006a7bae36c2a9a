import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { InvalidBatchOptionError, InvalidProbeOutcomeError, NoBatchFitsError, OutOfMemoryError } from './errors';
import { probeBatchSize, type ProbeBatchSizeOptions } from './probe-batch-size';
import type { ProbeFn, TrialRecord } from './types';

/** A fake device: sizes up to `capacity` fit, larger ones throw OutOfMemoryError. Logs every call. */
function capacityProbe(capacity: number): ProbeFn & { calls: number[] } {
  const calls: number[] = [];
  const probe = async (batchSize: number) => {
    calls.push(batchSize);
    if (batchSize > capacity) throw new OutOfMemoryError(`CUDA out of memory at ${batchSize}`, { batchSize });
    return { fits: true };
  };
  return Object.assign(probe, { calls });
}

/**
 * The Python original's `probe_batch_size`, transcribed literally (synchronous, probe returns a
 * boolean or throws), used as the oracle for `refine: false`.
 */
function pythonOriginal(probe: (b: number) => boolean, start: number, ceiling: number, maxDoublings = 8): number {
  let current = start;
  let lastGood: number | null = null;
  while (current >= 1) {
    let ok: boolean;
    try {
      ok = probe(current);
    } catch (err) {
      if (!(err instanceof OutOfMemoryError)) throw err;
      current = Math.floor(current / 2);
      continue;
    }
    if (ok) {
      lastGood = current;
      break;
    }
    current = Math.floor(current / 2);
  }
  if (lastGood === null) throw new Error('OOM at batch_size=1');
  let doublings = 0;
  while (doublings < maxDoublings && lastGood < ceiling) {
    const candidate = Math.min(lastGood * 2, ceiling);
    if (candidate === lastGood) break;
    let ok: boolean;
    try {
      ok = probe(candidate);
    } catch (err) {
      if (!(err instanceof OutOfMemoryError)) throw err;
      break;
    }
    if (!ok) break;
    lastGood = candidate;
    doublings += 1;
  }
  return lastGood;
}

describe('edge cases of the original', () => {
  test('capacity 3 from start 4: 2 in classic mode, 3 with refine', async () => {
    const classic = capacityProbe(3);
    expect((await probeBatchSize(classic, { start: 4, ceiling: 64, refine: false })).batchSize).toBe(2);
    expect(classic.calls).toEqual([4, 2, 4]); // the original re-tries 4 on the way up
    const refined = capacityProbe(3);
    const r = await probeBatchSize(refined, { start: 4, ceiling: 64 });
    expect(r.batchSize).toBe(3);
    expect(r.exact).toBe(true);
    expect(refined.calls).toEqual([4, 2, 3]); // 4 is known to fail: not tried again
  });

  test('start 2, capacity 8 -> 8 in both modes', async () => {
    for (const refine of [false, true]) {
      const probe = capacityProbe(8);
      const r = await probeBatchSize(probe, { start: 2, ceiling: 64, refine });
      expect(r.batchSize).toBe(8);
      expect(probe.calls.slice(0, 4)).toEqual([2, 4, 8, 16]);
    }
  });

  test('the ceiling caps the doubling and is never exceeded', async () => {
    for (const refine of [false, true]) {
      const probe = capacityProbe(1000);
      const r = await probeBatchSize(probe, { start: 4, ceiling: 20, refine });
      expect(r.batchSize).toBe(20);
      expect(probe.calls).toEqual([4, 8, 16, 20]);
      expect(r.exact).toBe(true);
    }
  });

  test('OOM at batch size 1 throws NoBatchFitsError with the advice', async () => {
    const probe = capacityProbe(0);
    const err = await probeBatchSize(probe, { start: 1, ceiling: 8 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoBatchFitsError);
    const e = err as NoBatchFitsError;
    expect(e.code).toBe('SOUP_NO_BATCH_FITS');
    expect(e.name).toBe('NoBatchFitsError');
    expect(e.smallestBatchSize).toBe(1);
    expect(e.message).toMatch(/batch size 1/);
    expect(e.message).toMatch(/max_length/);
    expect(e.message).toMatch(/bigger memory budget/);
    expect(e.message).not.toMatch(/FSDP|DeepSpeed|4-bit/); // nothing the caller cannot do with this package
    const custom = new NoBatchFitsError(1, [], { advice: 'Try --budget 8GiB.' });
    expect(custom.message).toMatch(/smallest size\. Try --budget 8GiB\.$/);
    expect(e.trials.map((t) => [t.batchSize, t.result])).toEqual([[1, 'oom']]);
    expect(probe.calls).toEqual([1]);
  });

  test('always OOM from 64 halves down to 1, then throws', async () => {
    const probe = capacityProbe(0);
    await expect(probeBatchSize(probe, { start: 64, ceiling: 64 })).rejects.toBeInstanceOf(NoBatchFitsError);
    expect(probe.calls).toEqual([64, 32, 16, 8, 4, 2, 1]);
  });

  test('classic mode with maxDoublings 8 makes at most 12 calls (start 1, unbounded capacity)', async () => {
    const probe = capacityProbe(Number.MAX_SAFE_INTEGER);
    const r = await probeBatchSize(probe, { start: 1, ceiling: 1_000_000, refine: false, maxDoublings: 8 });
    expect(probe.calls.length).toBeLessThanOrEqual(12);
    expect(probe.calls).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256]);
    expect(r.batchSize).toBe(256);
    expect(r.exact).toBe(false);
  });

  test('maxDoublings 0 keeps the first fit in classic mode', async () => {
    const probe = capacityProbe(100);
    expect((await probeBatchSize(probe, { start: 8, ceiling: 64, refine: false, maxDoublings: 0 })).batchSize).toBe(8);
    expect(probe.calls).toEqual([8]);
  });

  test('with refine, running out of doublings still ends on the exact edge below the ceiling', async () => {
    const probe = capacityProbe(700);
    const r = await probeBatchSize(probe, { start: 1, ceiling: 1024, maxDoublings: 8 });
    expect(r.batchSize).toBe(700);
    expect(Math.max(...probe.calls)).toBeLessThanOrEqual(1024);
  });
});

describe('probe outcomes and errors', () => {
  test('fits:false from a peak gate is "does not fit"; peak and budget reach the trials', async () => {
    const budgetBytes = 10_000;
    const probe: ProbeFn = async (b) => {
      const peakBytes = 1_000 + b * 300; // fits while b <= 30
      return { fits: peakBytes <= budgetBytes, peakBytes, budgetBytes, detail: 'gate' };
    };
    const seen: TrialRecord[] = [];
    const r = await probeBatchSize(probe, { start: 8, ceiling: 256, onTrial: (t) => void seen.push(t) });
    expect(r.batchSize).toBe(30);
    expect(seen).toEqual(r.trials);
    expect(seen.map((t) => t.index)).toEqual(seen.map((_, i) => i + 1));
    const refused = seen.find((t) => t.result === 'not-fit')!;
    expect(refused.fits).toBe(false);
    expect(refused.peakBytes).toBe(1_000 + refused.batchSize * 300);
    expect(refused.budgetBytes).toBe(budgetBytes);
    expect(refused.detail).toBe('gate');
    for (const t of seen) expect(t.ms).toBeGreaterThanOrEqual(0);
    expect(seen.map((t) => t.phase)).toEqual(['halve', 'double', 'double', 'refine', 'refine', 'refine', 'refine']);
  });

  test('an OutOfMemoryError keeps its peak, budget and message in the trial', async () => {
    const probe: ProbeFn = async (b) => {
      if (b > 5) throw new OutOfMemoryError('peak over budget', { batchSize: b, peakBytes: b * 10, budgetBytes: 55 });
      return { fits: true, peakBytes: b * 10, budgetBytes: 55 };
    };
    const r = await probeBatchSize(probe, { start: 8, ceiling: 8 });
    expect(r.batchSize).toBe(5);
    expect(r.trials[0]).toMatchObject({
      batchSize: 8,
      result: 'oom',
      fits: false,
      peakBytes: 80,
      budgetBytes: 55,
      detail: 'peak over budget',
    });
  });

  test('a non-OOM error propagates unchanged and ends the search', async () => {
    const boom = new TypeError('illegal memory access');
    const calls: number[] = [];
    const probe: ProbeFn = async (b) => {
      calls.push(b);
      if (b === 16) throw boom;
      return { fits: true };
    };
    await expect(probeBatchSize(probe, { start: 8, ceiling: 64 })).rejects.toBe(boom);
    expect(calls).toEqual([8, 16]);
  });

  test('isOom decides which errors mean out-of-memory', async () => {
    const probe: ProbeFn = async (b) => {
      if (b > 6) throw new RangeError('CUDA error: out of memory');
      return { fits: true };
    };
    await expect(probeBatchSize(probe, { start: 8, ceiling: 8 })).rejects.toBeInstanceOf(RangeError);
    const r = await probeBatchSize(probe, {
      start: 8,
      ceiling: 8,
      isOom: (e) => e instanceof Error && /out of memory/i.test(e.message),
    });
    expect(r.batchSize).toBe(6);
  });

  test('by default an error with code SOUP_OOM counts as OOM (a second copy of the package)', async () => {
    const probe: ProbeFn = async (b) => {
      if (b > 2) throw Object.assign(new Error('oom from a child process'), { code: 'SOUP_OOM' });
      return { fits: true };
    };
    expect((await probeBatchSize(probe, { start: 4, ceiling: 4 })).batchSize).toBe(2);
  });

  test('a probe that resolves to something else than {fits: boolean} is an error', async () => {
    const bad = (async () => true) as unknown as ProbeFn;
    const err = await probeBatchSize(bad, { start: 4, ceiling: 4 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidProbeOutcomeError);
    expect((err as InvalidProbeOutcomeError).code).toBe('SOUP_BATCH_INVALID_PROBE_OUTCOME');
    expect((err as Error).message).toMatch(/probe\(4\) resolved to boolean true/);
  });

  test('an aborted signal stops the search between trials', async () => {
    const controller = new AbortController();
    const calls: number[] = [];
    const probe: ProbeFn = async (b) => {
      calls.push(b);
      if (b === 16) controller.abort(new Error('user pressed Ctrl-C'));
      return { fits: true };
    };
    await expect(probeBatchSize(probe, { start: 8, ceiling: 1024, signal: controller.signal })).rejects.toThrow(
      'user pressed Ctrl-C',
    );
    expect(calls).toEqual([8, 16]);
  });
});

describe('multipleOf', () => {
  test('every candidate is a multiple; the result is the largest multiple that fits', async () => {
    const probe = capacityProbe(100);
    const r = await probeBatchSize(probe, { start: 20, ceiling: 512, multipleOf: 8 });
    expect(r.batchSize).toBe(96);
    expect(probe.calls.every((b) => b % 8 === 0)).toBe(true);
    expect(probe.calls[0]).toBe(16); // start rounded down to a multiple
  });

  test('when even multipleOf does not fit, NoBatchFitsError names it', async () => {
    const err = await probeBatchSize(capacityProbe(7), { start: 32, ceiling: 64, multipleOf: 8 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NoBatchFitsError);
    expect((err as NoBatchFitsError).smallestBatchSize).toBe(8);
    expect((err as Error).message).toMatch(/batch size 8 \(the smallest multiple of 8 allowed\)/);
  });

  test('a start below multipleOf starts at multipleOf', async () => {
    const probe = capacityProbe(30);
    expect((await probeBatchSize(probe, { start: 3, ceiling: 64, multipleOf: 8 })).batchSize).toBe(24);
    expect(probe.calls[0]).toBe(8);
  });
});

describe('validation, as the original: errors name the field', () => {
  const ok = capacityProbe(10);
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['start 0', { start: 0, ceiling: 8 }, 'start'],
    ['start negative', { start: -4, ceiling: 8 }, 'start'],
    ['start float', { start: 1.5, ceiling: 8 }, 'start'],
    ['start boolean', { start: true, ceiling: 8 }, 'start'],
    ['start string', { start: '8', ceiling: 8 }, 'start'],
    ['start NaN', { start: Number.NaN, ceiling: 8 }, 'start'],
    ['ceiling < start', { start: 8, ceiling: 4 }, 'ceiling'],
    ['ceiling boolean', { start: 1, ceiling: true }, 'ceiling'],
    ['ceiling float', { start: 1, ceiling: 8.5 }, 'ceiling'],
    ['ceiling missing', { start: 1 }, 'ceiling'],
    ['maxDoublings negative', { start: 1, ceiling: 8, maxDoublings: -1 }, 'maxDoublings'],
    ['multipleOf 0', { start: 1, ceiling: 8, multipleOf: 0 }, 'multipleOf'],
    ['ceiling below multipleOf', { start: 1, ceiling: 4, multipleOf: 8 }, 'ceiling'],
    ['refine not boolean', { start: 1, ceiling: 8, refine: 'yes' }, 'refine'],
    ['isOom not a function', { start: 1, ceiling: 8, isOom: true }, 'isOom'],
  ];
  test.each(cases)('%s', async (_name, options, field) => {
    const err = await probeBatchSize(ok, options as unknown as ProbeBatchSizeOptions).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidBatchOptionError);
    expect((err as InvalidBatchOptionError).field).toBe(field);
    expect((err as InvalidBatchOptionError).code).toBe('SOUP_BATCH_INVALID_OPTION');
    expect((err as Error).message).toContain(field);
  });

  test('a missing probe is rejected before anything runs', async () => {
    const err = await probeBatchSize(undefined as unknown as ProbeFn, { start: 1, ceiling: 8 }).catch(
      (e: unknown) => e,
    );
    expect((err as InvalidBatchOptionError).field).toBe('probe');
  });
});

describe('property: every capacity 1..1024', () => {
  const configs = [
    { start: 8, ceiling: 1024 },
    { start: 1, ceiling: 1024 },
    { start: 1024, ceiling: 1024 },
    { start: 1000, ceiling: 1024 },
    { start: 3, ceiling: 100 },
    { start: 64, ceiling: 64 },
    { start: 5, ceiling: 777, maxDoublings: 2 },
    { start: 16, ceiling: 512, multipleOf: 8 },
    { start: 100, ceiling: 1000, multipleOf: 3 },
  ];
  const maxTrials = (ceiling: number) => 2 * Math.ceil(Math.log2(ceiling)) + 2;

  test.each(configs)('%o', async (config) => {
    const m = config.multipleOf ?? 1;
    for (let capacity = 1; capacity <= 1024; capacity++) {
      const expected = Math.floor(Math.min(capacity, config.ceiling) / m) * m;

      const refined = capacityProbe(capacity);
      const run = probeBatchSize(refined, config);
      if (expected === 0) {
        await expect(run).rejects.toBeInstanceOf(NoBatchFitsError);
      } else {
        const r = await run;
        expect(r.batchSize, `refine, capacity ${capacity}`).toBe(expected);
        expect(r.batchSize).toBeLessThanOrEqual(capacity);
        expect(r.exact).toBe(true);
        expect(r.trials.map((t) => t.batchSize)).toEqual(refined.calls);
      }
      expect(Math.max(...refined.calls)).toBeLessThanOrEqual(config.ceiling);
      expect(new Set(refined.calls).size, `refine never repeats a size (capacity ${capacity})`).toBe(
        refined.calls.length,
      );
      expect(refined.calls.length).toBeLessThanOrEqual(maxTrials(config.ceiling));
      expect(refined.calls.every((b) => b % m === 0)).toBe(true);

      if (m === 1) {
        // Classic mode is the original, call for call.
        const classic = capacityProbe(capacity);
        const oracleCalls: number[] = [];
        const oracle = (b: number) => {
          oracleCalls.push(b);
          if (b > capacity) throw new OutOfMemoryError('oom');
          return true;
        };
        const want = (() => {
          try {
            return pythonOriginal(oracle, config.start, config.ceiling, config.maxDoublings);
          } catch {
            return undefined;
          }
        })();
        const got = await probeBatchSize(classic, { ...config, refine: false }).then(
          (r) => r.batchSize,
          () => undefined,
        );
        expect(got, `classic, capacity ${capacity}`).toBe(want);
        expect(classic.calls).toEqual(oracleCalls);
        if (got !== undefined) expect(got).toBeLessThanOrEqual(capacity);
        expect(Math.max(...classic.calls)).toBeLessThanOrEqual(config.ceiling);
      }
    }
  });

  test('fast-check: random start, ceiling, multipleOf, capacity', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4096 }),
        fc.integer({ min: 0, max: 4096 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.constantFrom(1, 2, 4, 8, 16),
        fc.integer({ min: 0, max: 10 }),
        async (start, extra, capacity, multipleOf, maxDoublings) => {
          const ceiling = Math.max(start + extra, multipleOf);
          const probe = capacityProbe(capacity);
          const expected = Math.floor(Math.min(capacity, ceiling) / multipleOf) * multipleOf;
          const r = await probeBatchSize(probe, { start, ceiling, multipleOf, maxDoublings }).catch((e: unknown) => e);
          if (expected === 0) expect(r).toBeInstanceOf(NoBatchFitsError);
          else expect((r as { batchSize: number }).batchSize).toBe(expected);
          expect(Math.max(...probe.calls)).toBeLessThanOrEqual(ceiling);
        },
      ),
      { numRuns: 500 },
    );
  });
});
