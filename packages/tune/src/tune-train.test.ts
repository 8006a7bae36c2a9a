// soup train's tuner: the step time it keeps from a timing run, the rule that skips a heavier
// candidate when a lighter one is already past its best micro-batch, and the side-by-side timing
// that settles a tie (real ONNX Runtime sessions).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TuneRow } from './tune-cache';
import { defineGptSpec } from '@soup/onnx-train';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import {
  fastestHalf,
  openWarmStep,
  timeAlternately,
  timeSideBySide,
  timeTrainStep,
  type OpenStep,
  type SideTiming,
} from './step-timing';
import { pastItsBest } from './tune-train';

const ON_CPU = { executionProvider: 'cpu', deviceId: 0 } as const;

const row = (m: number | null, sps: number | null): TuneRow => ({
  label: 'gradient_checkpointing=false',
  values: { gradient_checkpointing: 'false' },
  microBatchSize: m,
  accumulation: m === null ? null : 32 / m,
  peakBytes: null,
  stepMs: sps === null ? null : (m! * 1000) / sps,
  noiseMs: null,
  samplesPerSecond: sps,
  note: null,
});

describe('pastItsBest', () => {
  it('names the largest m and the next smaller one when the largest is slower', () => {
    const rows = [row(16, 44.1), row(8, 50.4), row(4, 48.0)];
    expect(pastItsBest(rows, 16)).toEqual({ top: rows[0], below: rows[1] });
  });

  it('is null while larger is still faster (a heavier candidate above it might win)', () => {
    expect(pastItsBest([row(8, 51), row(4, 48)], 8)).toBeNull();
    expect(pastItsBest([row(8, 48), row(4, 48)], 8)).toBeNull(); // a tie is not past the best
  });

  it('is null without two timed rows: one alone, or nothing below it', () => {
    expect(pastItsBest([row(16, 44)], 16)).toBeNull();
    expect(pastItsBest([row(16, 44), row(8, null)], 16)).toBeNull();
    expect(pastItsBest([row(null, null)], 16)).toBeNull();
  });

  it('uses the largest m it timed when its largest that fits was not timed (the search stopped below it)', () => {
    expect(pastItsBest([row(8, 50), row(4, 48)], 16)).toBeNull(); // 8 still faster than 4: 16 might be faster still
    const rows = [row(8, 40), row(6, 48)]; // G = 24: 12 fits, but 8 was already slower than 6
    expect(pastItsBest(rows, 12)).toEqual({ top: rows[0], below: rows[1] });
    // a row above top (another search) is not its own
    expect(pastItsBest([row(32, 30), row(8, 40), row(6, 48)], 12)).toEqual({ top: rows[0], below: rows[1] });
  });

  it('compares with the next smaller timed m, whatever order the rows are in', () => {
    const rows = [row(4, 60), row(16, 44), row(8, 43)];
    expect(pastItsBest(rows, 16)).toBeNull(); // 16 beats 8: the descent would have gone on, and 4 is not "next"
  });
});

describe('fastestHalf', () => {
  it('is the mean of the fastest half and its standard error', () => {
    const r = fastestHalf([366, 349, 357, 354, 323, 327]);
    expect(r.stepMs).toBeCloseTo((323 + 327 + 349) / 3, 6);
    const sd = Math.sqrt([323, 327, 349].reduce((a, t) => a + (t - r.stepMs) ** 2, 0) / 2);
    expect(r.noiseMs).toBeCloseTo(sd / Math.sqrt(3), 6);
  });

  it('has no noise estimate from one value', () => {
    expect(fastestHalf([120])).toEqual({ stepMs: 120, noiseMs: 0 });
  });
});

describe('timeAlternately', () => {
  it('times two real step sessions side by side, each answer its own, and leaves no scratch file', async () => {
    const cwd = useTempDir();
    const spec = defineGptSpec({ vocabSize: 64, seqLen: 32, dModel: 64, nHeads: 4, nLayers: 2 });
    const saveDir = join(cwd, 'scratch');
    const at = (batchSize: number, offload: { target: 'disk'; saveDir: string } | null) => ({
      spec,
      recompute: [],
      batchSize,
      threads: 1,
      offload,
      cwd,
      ...ON_CPU,
    });
    // 16 times the samples on the second: its step must come back as the slower one, whatever the order of the rounds.
    const [small, large] = await timeAlternately(at(2, null), at(32, { target: 'disk', saveDir }), 4);
    expect(small.stepMs).toBeGreaterThan(0);
    expect(large.stepMs, `m=2 ${small.stepMs.toFixed(1)} ms, m=32 ${large.stepMs.toFixed(1)} ms`).toBeGreaterThan(
      3 * small.stepMs,
    );
    for (const t of [small, large]) expect(t.noiseMs).toBeGreaterThanOrEqual(0);
    expect(readdirSync(saveDir)).toEqual([]);
  });

  it('uses a session kept from its first timing as it is: no warm-up, no new session, and leaves it open', async () => {
    const cwd = useTempDir();
    const spec = defineGptSpec({ vocabSize: 64, seqLen: 32, dModel: 64, nHeads: 4, nLayers: 2 });
    const at = (batchSize: number) => ({ spec, recompute: [], batchSize, threads: 1, offload: null, cwd, ...ON_CPU });
    const kept = await openWarmStep(at(2));
    try {
      // Count the steps run on the kept session: exactly the rounds, none for a warm-up.
      let runs = 0;
      const run = kept.step.run.bind(kept.step);
      const counted: OpenStep = {
        batch: kept.batch,
        step: Object.assign(Object.create(kept.step) as typeof kept.step, {
          run: async (b: typeof kept.batch) => (runs++, run(b)),
        }),
      };
      const [small, large] = await timeAlternately(counted, at(128), 4);
      expect(runs).toBe(4);
      expect(large.stepMs, `m=2 ${small.stepMs.toFixed(1)} ms, m=128 ${large.stepMs.toFixed(1)} ms`).toBeGreaterThan(
        3 * small.stepMs,
      );
      // Still open: it runs again (a released session throws).
      expect((await kept.step.run(kept.batch)).totalMs).toBeGreaterThan(0);
    } finally {
      await kept.step.release();
    }
  });
});

describe('timeSideBySide', () => {
  const spec = defineGptSpec({ vocabSize: 64, seqLen: 32, dModel: 64, nHeads: 4, nLayers: 2 });
  const at = (cwd: string, batchSize: number) => ({
    spec,
    recompute: [],
    batchSize,
    threads: 1,
    offload: null,
    cwd,
    ...ON_CPU,
  });

  it('takes two first timings side by side, each answer its own, and hands both warm sessions back open', async () => {
    const cwd = useTempDir();
    const sides = await timeSideBySide([at(cwd, 2), at(cwd, 128)], 4);
    try {
      const [small, large] = sides as [SideTiming, SideTiming];
      expect(large.stepMs, `m=2 ${small.stepMs.toFixed(1)} ms, m=128 ${large.stepMs.toFixed(1)} ms`).toBeGreaterThan(
        3 * small.stepMs,
      );
      for (const t of sides) {
        expect(t.times).toHaveLength(4);
        expect(t.stoppedEarly).toBe(false);
        expect(t.noiseMs).toBeGreaterThanOrEqual(0);
      }
      // In the order given, and still open: each runs its own micro-batch again (a released session throws).
      expect(sides.map((t) => t.open!.batch.batchSize)).toEqual([2, 128]);
      for (const t of sides) expect((await t.open!.step.run(t.open!.batch)).totalMs).toBeGreaterThan(0);
    } finally {
      for (const t of sides) await t.open?.step.release();
    }
  });

  it('stops a side that cannot win after three steps, releases it, and times the other to the end', async () => {
    const cwd = useTempDir();
    const [a, b] = (await timeSideBySide([at(cwd, 2), at(cwd, 4)], 6, (j) =>
      j === 1 ? { cannotWinAboveMs: 1e-6, margin: 0.1 } : undefined,
    )) as [SideTiming, SideTiming];
    try {
      expect(b.stoppedEarly).toBe(true);
      expect(b.stoppedBy).toEqual({ cannotWinAboveMs: 1e-6, margin: 0.1 });
      expect(a.stoppedBy).toBeNull();
      expect(b.times).toHaveLength(3);
      expect(b.open).toBeNull();
      expect(a.stoppedEarly).toBe(false);
      expect(a.times).toHaveLength(6);
      expect((await a.open!.step.run(a.open!.batch)).totalMs).toBeGreaterThan(0);
    } finally {
      await a.open?.step.release();
    }
  });
});

describe('timeSideBySide, four at once', () => {
  const spec = defineGptSpec({ vocabSize: 64, seqLen: 32, dModel: 64, nHeads: 4, nLayers: 2 });
  const at = (cwd: string, batchSize: number) => ({
    spec,
    recompute: [],
    batchSize,
    threads: 1,
    offload: null,
    cwd,
    ...ON_CPU,
  });

  it('times four sessions in turn (0123, 3210, …), each answer its own, all handed back open', async () => {
    const cwd = useTempDir();
    // Which side runs when: the limit is asked after each of a side's steps from its third on,
    // while more rounds follow, so the calls show the order of rounds 3 to 5.
    const asked: number[] = [];
    const sides = await timeSideBySide(
      [at(cwd, 2), at(cwd, 4), at(cwd, 8), at(cwd, 128)],
      6,
      (j) => void asked.push(j),
    );
    try {
      expect(asked).toEqual([0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3]);
      expect(sides.map((t) => t.open!.batch.batchSize)).toEqual([2, 4, 8, 128]);
      for (const t of sides) {
        expect(t.times).toHaveLength(6);
        expect(t.stoppedEarly).toBe(false);
      }
      const ms = sides.map((t) => t.stepMs);
      expect(ms[3], `m=2..128: ${ms.map((x) => x.toFixed(1)).join(', ')} ms`).toBeGreaterThan(3 * ms[0]!);
    } finally {
      for (const t of sides) await t.open?.step.release();
    }
  });

  it(
    "asks when a side may stop from its third step on, with the others' steps under the same load, " +
      'and stops it there',
    async () => {
      const cwd = useTempDir();
      const asked: { j: number; own: number; others: number[] }[] = [];
      // m = 32 against m = 2: it cannot reach the small one's pace; the limit comes from side 0's own steps so far.
      const sides = await timeSideBySide([at(cwd, 2), at(cwd, 32)], 6, (j, times, stopped) => {
        asked.push({ j, own: times[j]!.length, others: times.filter((_, k) => k !== j).map((t) => t.length) });
        return j === 1 && !stopped[0] && times[0]!.length >= 3
          ? { cannotWinAboveMs: fastestHalf(times[0]!).stepMs, margin: 0.1 }
          : undefined;
      });
      try {
        expect(asked.every((a) => a.own >= 3)).toBe(true);
        expect(asked.find((a) => a.j === 1)).toEqual({ j: 1, own: 3, others: [3] });
        expect(sides[1]!.stoppedEarly).toBe(true);
        expect(sides[1]!.times).toHaveLength(3);
        expect(sides[1]!.open).toBeNull();
        expect(sides[0]!.times).toHaveLength(6);
        expect(sides[0]!.stoppedEarly).toBe(false);
      } finally {
        for (const t of sides) await t.open?.step.release();
      }
    },
  );
});

describe('timeTrainStep keepOpen', () => {
  const spec = defineGptSpec({ vocabSize: 64, seqLen: 32, dModel: 64, nHeads: 4, nLayers: 2 });
  const at = (cwd: string) => ({ spec, recompute: [], batchSize: 2, threads: 1, offload: null, cwd, ...ON_CPU });

  it('hands back the warm session of a timing that ran to the end', async () => {
    const t = await timeTrainStep({ ...at(useTempDir()), steps: 2, keepOpen: true });
    expect(t.stoppedEarly).toBe(false);
    expect(t.open).not.toBeNull();
    try {
      expect((await t.open!.step.run(t.open!.batch)).totalMs).toBeGreaterThan(0);
    } finally {
      await t.open!.step.release();
    }
  });

  it('releases the session of a timing that stopped early, and of one not asked to keep it', async () => {
    const stopped = await timeTrainStep({ ...at(useTempDir()), steps: 6, keepOpen: true, cannotWinAboveMs: 1e-6 });
    expect(stopped.stoppedEarly).toBe(true);
    expect(stopped.open).toBeNull();
    expect((await timeTrainStep({ ...at(useTempDir()), steps: 2 })).open).toBeNull();
  });
});
