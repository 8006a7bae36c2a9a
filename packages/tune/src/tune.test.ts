// tune() itself, with fit and time as fakes that answer from a table of known costs: no process,
// no timing, every answer the same on every run.
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { NothingTimedError } from './errors';
import { type TuneCandidate, type TuneEvent, type TuneFit, type TuneOptions, type TuneTiming, tune } from './tune';
import type { TuneRow } from './tune-cache';

const MiB = 2 ** 20;
/** A candidate's known costs: m it fits (null: none), its peak, its step at m and the step's noise. */
type Cost = { m: number | null; peakMiB: number; stepMs: number; noiseMs: number };
const cand = (label: string): TuneCandidate => ({ label, values: { lever: label } });

/** tune() over `costs` (G = 32), fit and time answering from them; what it was asked, in order. */
function fake(costs: Record<string, Cost>, extra: Partial<TuneOptions<TuneCandidate, TuneFit>> = {}) {
  const asked: string[] = [];
  const events: TuneEvent[] = [];
  const options: TuneOptions<TuneCandidate, TuneFit> = {
    candidates: Object.keys(costs).map(cand),
    globalBatchSize: 32,
    about: { command: 'fake', timeSteps: 4, budgetBytes: null, gpuName: 'cpu', gpuMemoryGb: 0 },
    fit: async (c) => {
      asked.push(`fit ${c.label}`);
      const k = costs[c.label]!;
      return k.m === null
        ? { batchSize: null, why: 'no micro-batch fits' }
        : { batchSize: k.m, peakBytes: k.peakMiB * MiB };
    },
    time: async (c, row): Promise<TuneTiming> => {
      asked.push(`time ${c.label} at ${row.microBatchSize}`);
      const k = costs[c.label]!;
      return { stepMs: k.stepMs, noiseMs: k.noiseMs };
    },
    onEvent: (e) => events.push(e),
    ...extra,
  };
  return { options, asked, events, run: () => tune(options) };
}

const chosenLabel = (r: { rows: TuneRow[]; choice: number }): string => r.rows[r.choice]!.label;

describe('tune(): the choice', () => {
  it('takes the most samples/s at G, not the shortest step: a larger m does more per step', async () => {
    // a: 32 / (8 × 100 ms) = 40 samples/s; b: 32 / (2 × 150 ms) = 106.7; c: 32 / (1 × 400 ms) = 80.
    const { run } = fake({
      a: { m: 4, peakMiB: 100, stepMs: 100, noiseMs: 1 },
      b: { m: 16, peakMiB: 200, stepMs: 150, noiseMs: 1 },
      c: { m: 32, peakMiB: 300, stepMs: 400, noiseMs: 1 },
    });
    const r = await run();
    expect(chosenLabel(r)).toBe('b');
    expect(r.rows.map((x) => x.samplesPerSecond)).toEqual([40, (32 / 300) * 1000, 80]);
    expect(r.rows.map((x) => x.accumulation)).toEqual([8, 2, 1]);
    expect(r.source).toBe('measured');
    expect(r.cost).toMatchObject({ fits: 3, timings: 3 });
    expect(r.entry).toMatchObject({ chosen: 1, globalBatchSize: 32, worldSize: 1, command: 'fake', timeSteps: 4 });
  });

  it('says why: the fastest beyond the noise, with the ratio to the next', async () => {
    const { run } = fake({
      a: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 },
      b: { m: 8, peakMiB: 100, stepMs: 200, noiseMs: 1 },
    });
    const r = await run();
    expect(r.reason).toMatch(
      /^a at micro-batch 8 is the fastest: 80\.0 samples\/s, 2\.00× b at micro-batch 8 \(40\.0\)/,
    );
    expect(r.entry.reason).toBe(r.reason);
  });

  it('within the noise, gives the tie to the lower peak, and the reason says so', async () => {
    const { run } = fake({
      a: { m: 8, peakMiB: 300, stepMs: 100, noiseMs: 5 },
      b: { m: 8, peakMiB: 200, stepMs: 104, noiseMs: 5 },
    });
    const r = await run();
    expect(chosenLabel(r)).toBe('b');
    expect(r.reason).toMatch(/its peak is lower: the lower peak wins a tie/);
  });

  it('times a tie again side by side before the lower peak takes it (retime), and the ratio decides', async () => {
    const pairs: string[] = [];
    const { run } = fake(
      {
        a: { m: 8, peakMiB: 300, stepMs: 100, noiseMs: 5 },
        b: { m: 8, peakMiB: 200, stepMs: 104, noiseMs: 5 },
      },
      {
        again: {
          retime: async (x, y) => {
            pairs.push(`${x.label},${y.label}`);
            // Side by side b is 20 % slower than a: no tie.
            return [
              { stepMs: 120, noiseMs: 1 },
              { stepMs: 100, noiseMs: 1 },
            ];
          },
        },
      },
    );
    const r = await run();
    expect(pairs).toEqual(['b,a']);
    expect(chosenLabel(r)).toBe('a');
    expect(r.reason).toMatch(/timed again against each other/);
  });

  it('gives a tie longer timings (longer) at most `rounds` times, then decides as measured', async () => {
    const rounds: number[] = [];
    const { run } = fake(
      {
        a: { m: 8, peakMiB: 300, stepMs: 100, noiseMs: 5 },
        b: { m: 8, peakMiB: 200, stepMs: 104, noiseMs: 5 },
      },
      {
        again: {
          rounds: 2,
          longer: async (lower, faster, round) => {
            rounds.push(round);
            expect([lower.label, faster.label]).toEqual(['b', 'a']);
          },
        },
      },
    );
    const r = await run();
    expect(rounds).toEqual([0, 1]);
    expect(chosenLabel(r)).toBe('b'); // still within the noise: the lower peak
  });
});

describe('tune(): early stops', () => {
  /** time stops a row early when the best so far beats its samples/s by 10 %. */
  const stoppingTime =
    (costs: Record<string, Cost>): NonNullable<TuneOptions<TuneCandidate, TuneFit>['time']> =>
    async (c, row, _fit, ctx) => {
      const k = costs[c.label]!;
      const sps = 32 / ((32 / row.microBatchSize! / 1000) * k.stepMs);
      if (ctx.best !== null && sps * 1.1 < ctx.best.samplesPerSecond!)
        return { stepMs: k.stepMs, noiseMs: null, stoppedEarly: true, note: 'stopped early: cannot win' };
      return { stepMs: k.stepMs, noiseMs: k.noiseMs };
    };

  it('times smallest m first (all fitted first), hands each timing the best so far, names the stopped', async () => {
    const costs: Record<string, Cost> = {
      big: { m: 16, peakMiB: 300, stepMs: 400, noiseMs: 1 }, // 40 samples/s
      small: { m: 4, peakMiB: 100, stepMs: 50, noiseMs: 1 }, // 80 samples/s
    };
    const bests: (string | null)[] = [];
    const { options, asked } = fake(costs, { order: 'smallest-m-first' });
    const time = stoppingTime(costs);
    const r = await tune({
      ...options,
      time: async (c, row, fit, ctx) => {
        bests.push(ctx.best?.label ?? null);
        asked.push(`time ${c.label}`);
        return time(c, row, fit, ctx);
      },
    });
    expect(asked).toEqual(['fit big', 'fit small', 'time small', 'time big']);
    expect(bests).toEqual([null, 'small']);
    expect(chosenLabel(r)).toBe('small');
    expect(r.rows[0]!.note).toBe('stopped early: cannot win');
    expect(r.reason).toMatch(/; stopped early, since they could not win: big at 16$/);
  });

  it('never chooses a row stopped early, nor hands it on as the best so far, even when it looks faster', async () => {
    const bests: (string | null)[] = [];
    const { run } = fake(
      // b first: it stops early with figures faster than a's, which must not become the best so far.
      { b: { m: 8, peakMiB: 100, stepMs: 50, noiseMs: 1 }, a: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 } },
      {
        time: async (c, _row, _fit, ctx) => {
          bests.push(ctx.best?.label ?? null);
          return c.label === 'a'
            ? { stepMs: 100, noiseMs: 1 }
            : { stepMs: 50, noiseMs: null, stoppedEarly: true, note: 'stopped early: cannot win' };
        },
      },
    );
    const r = await run();
    expect(bests).toEqual([null, null]);
    expect(chosenLabel(r)).toBe('a');
    expect(r.reason).toMatch(/^a at micro-batch 8 is the only candidate timed to the end/);
  });
});

describe('tune(): a candidate that does not fit', () => {
  it('has a row that says why, is never timed, and does not compete', async () => {
    const { run, asked } = fake({
      a: { m: null, peakMiB: 0, stepMs: 1, noiseMs: 0 },
      b: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 },
    });
    const r = await run();
    expect(asked).toEqual(['fit a', 'fit b', 'time b at 8']);
    expect(r.rows[0]).toMatchObject({
      label: 'a',
      microBatchSize: null,
      samplesPerSecond: null,
      note: 'no micro-batch fits',
    });
    expect(chosenLabel(r)).toBe('b');
  });

  it('throws NothingTimedError naming each row when nothing fits or every timing failed', async () => {
    const { run } = fake(
      { a: { m: null, peakMiB: 0, stepMs: 1, noiseMs: 0 }, b: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 } },
      { time: async () => ({ error: 'out of memory over 5 steps' }) },
    );
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NothingTimedError);
    expect((err as Error).message).toBe(
      'no configuration could be timed: a: no micro-batch fits; b: out of memory over 5 steps',
    );
  });
});

describe('tune(): the cache', () => {
  it('answers a second call from the cache: no fit, no timing, the same choice, and says where from', async () => {
    const cwd = useTempDir();
    const costs: Record<string, Cost> = {
      a: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 },
      b: { m: 8, peakMiB: 100, stepMs: 80, noiseMs: 1 },
    };
    const cache = {
      key: { command: 'fake', tries: { lever: ['a', 'b'] }, budgetBytes: null, gpuName: 'cpu', gpuMemoryGb: 0 },
      location: { env: {}, homeDir: cwd, cwd },
    };
    const first = await fake(costs, { cache }).run();
    expect(first.source).toBe('measured');
    expect(first.cachePath).toMatch(/tune_cache\.json$/);
    const second = fake(costs, { cache });
    const r = await second.run();
    expect(second.asked).toEqual([]);
    expect(r).toMatchObject({
      source: 'cache',
      choice: first.choice,
      reason: first.reason,
      cachePath: null,
      key: first.key,
    });
    expect(r.cost).toEqual({ ms: 0, fits: 0, timings: 0 });
    expect(second.events.map((e) => e.type)).toEqual(['cache-hit']);
    // read: false measures again (and writes the new entry); another G is another key.
    const refreshed = fake(costs, { cache: { ...cache, read: false } });
    expect((await refreshed.run()).source).toBe('measured');
    expect(refreshed.asked).toHaveLength(4);
    const otherG = fake(costs, { cache, globalBatchSize: 64 });
    expect((await otherG.run()).source).toBe('measured');
  });
});

describe('tune(): abort', () => {
  it('stops between fits and timings when the signal aborts, with its reason, and times nothing after', async () => {
    const ac = new AbortController();
    const costs: Record<string, Cost> = {
      a: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 },
      b: { m: 8, peakMiB: 100, stepMs: 80, noiseMs: 1 },
    };
    const { options, asked } = fake(costs, { signal: ac.signal });
    const fit = options.fit!;
    const err = await tune({
      ...options,
      fit: async (c, ctx) => {
        if (c.label === 'a') ac.abort(new Error('stopped by the user'));
        return fit(c, ctx);
      },
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('stopped by the user');
    expect(asked).toEqual(['fit a']);
  });

  it('does not start when the signal is already aborted', async () => {
    const { run, asked } = fake(
      { a: { m: 8, peakMiB: 100, stepMs: 100, noiseMs: 1 } },
      { signal: AbortSignal.abort(new Error('gone')) },
    );
    await expect(run()).rejects.toThrow('gone');
    expect(asked).toEqual([]);
  });
});

describe('tune(): a search of its own', () => {
  it('chooses over the rows it gives, leaves out the excluded, and releases it once chosen', async () => {
    let released = 0;
    const row = (label: string, stepMs: number): TuneRow => ({
      label,
      values: { lever: label },
      microBatchSize: 8,
      accumulation: 4,
      peakBytes: 100 * MiB,
      stepMs,
      noiseMs: 1,
      samplesPerSecond: 32 / ((4 * stepMs) / 1000),
      note: null,
    });
    const { options } = fake({});
    const r = await tune({
      ...options,
      search: async () => ({
        rows: [row('a', 100), row('b', 50)],
        excluded: new Set([1]),
        release: async () => void released++,
      }),
    });
    expect(chosenLabel(r)).toBe('a');
    expect(released).toBe(1);
  });
});
