// chooseSettled: a tie that the lower peak would take from a faster row is timed again, the two
// against each other, before it is decided. The retimings here are given (what a side-by-side
// timing would report); the timing itself is timeAlternately's, run for real by train-tune.test.
import type { TuneRow } from '@soup/batch-probe';
import { describe, expect, it } from 'vitest';
import { chooseSettled, type Retiming } from './_tune-tie';

const G = 32;
const MiB = 1024 * 1024;
const row = (tier: string, m: number, peakMiB: number, stepMs: number, noiseMs: number): TuneRow => ({
  label: `gradient_checkpointing=${tier}`,
  values: { gradient_checkpointing: tier },
  microBatchSize: m,
  accumulation: G / m,
  peakBytes: peakMiB * MiB,
  stepMs,
  noiseMs,
  samplesPerSecond: G / (((G / m) * stepMs) / 1000),
  note: null,
});

/** A retime that answers from a table keyed by row label and m, and records what it was asked. */
function retimer(answers: Record<string, Retiming>) {
  const calls: string[][] = [];
  const key = (r: TuneRow): string => `${r.values.gradient_checkpointing}@${r.microBatchSize}`;
  return {
    calls,
    retime: async (a: TuneRow, b: TuneRow): Promise<[Retiming, Retiming]> => {
      calls.push([key(a), key(b)]);
      return [answers[key(a)]!, answers[key(b)]!];
    },
  };
}

describe('chooseSettled', () => {
  // The first timings: off at 8 is 1 % faster than selective at 8, inside the noise, and selective's
  // peak is lower, so the lower peak would take it.
  const first = (): TuneRow[] => [row('false', 8, 171, 196, 2), row('selective', 8, 159, 198, 2)];

  it('times the tie again and gives it to the faster row when the second timing separates them', async () => {
    const r = retimer({ 'false@8': { stepMs: 180, noiseMs: 1.5 }, 'selective@8': { stepMs: 199, noiseMs: 1.5 } });
    const s = await chooseSettled({ rows: first(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toEqual([['selective@8', 'false@8']]);
    expect(s.choice.chosen).toBe(0);
    // The faster keeps its level (196 ms); the other is that level times their side-by-side ratio.
    expect(s.rows[0]!.stepMs).toBe(196);
    expect(s.rows[0]!.noiseMs).toBeCloseTo((196 * 1.5) / 180, 9);
    expect(s.rows[1]!.samplesPerSecond).toBeCloseTo(((32 / ((4 * 196) / 1000)) * 180) / 199, 9);
    expect(s.rows[1]!.stepMs).toBeCloseTo((196 * 199) / 180, 9);
    // Each keeps its first timing (what the search decided on before the tie was timed again).
    expect(s.rows[0]!.firstTiming).toEqual({ stepMs: 196, noiseMs: 2, samplesPerSecond: 32 / ((4 * 196) / 1000) });
    expect(s.rows[1]!.firstTiming).toEqual({ stepMs: 198, noiseMs: 2, samplesPerSecond: 32 / ((4 * 198) / 1000) });
    expect(s.rows[0]!.note).toBe('timed again, alternately with gradient_checkpointing=selective at micro-batch 8; its first timing kept as the level');
    expect(s.rows[1]!.note).toBe('timed again, alternately with gradient_checkpointing=false at micro-batch 8: -9.5 % against it, shown at its level (first timing: 40.4 samples/s)');
    expect(s.choice.reason).toMatch(/^gradient_checkpointing=false at micro-batch 8 is the fastest: 40\.8 samples\/s, 1\.11× /);
    expect(s.choice.reason).toMatch(/timed again against each other, alternately \(the same load on both\), and their ratio decided$/);
    expect(s.retimed).toEqual([[1, 0]]);
  });

  it('gives a tie that stands after the second timing to the lower peak, and says it was timed twice', async () => {
    const r = retimer({ 'false@8': { stepMs: 190, noiseMs: 2 }, 'selective@8': { stepMs: 191, noiseMs: 2 } });
    const s = await chooseSettled({ rows: first(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toHaveLength(1);
    expect(s.choice.chosen).toBe(1);
    expect(s.choice.reason).toMatch(/its peak is lower: the lower peak wins a tie\. gradient_checkpointing=selective at micro-batch 8 and gradient_checkpointing=false at micro-batch 8 were within the noise/);
  });

  it('times nothing again when the fastest is clear, or when the fastest also has the lower peak', async () => {
    for (const rows of [
      [row('false', 8, 171, 170, 2), row('selective', 8, 159, 198, 2)], // off is 16 % faster
      [row('false', 8, 150, 196, 2), row('selective', 8, 159, 198, 2)], // tied, and off's peak is lower too
    ]) {
      const r = retimer({});
      const s = await chooseSettled({ rows, globalBatchSize: G, excluded: new Set(), retime: r.retime });
      expect(r.calls).toEqual([]);
      expect(s.choice.chosen).toBe(0);
      expect(s.rows).toEqual(rows);
      expect(s.choice.reason).not.toMatch(/timed again/);
    }
  });

  it('leaves a row stopped early out of the choice and out of any second timing', async () => {
    // selective at 4 looks tied on its three steps with the lowest peak, but it was stopped early.
    const rows = [row('false', 8, 171, 170, 2), row('selective', 4, 90, 86, 0)];
    const r = retimer({});
    const s = await chooseSettled({ rows, globalBatchSize: G, excluded: new Set([1]), retime: r.retime });
    expect(r.calls).toEqual([]);
    expect(s.choice.chosen).toBe(0);
  });

  // off@16 looks fastest; off@8 and selective@8 are within its noise, selective's peak the lowest.
  // Side by side, selective@8 is 9 % slower than off@16; then off@8 (lower peak than off@16) is the
  // tie the lower peak would take.
  const three = (): TuneRow[] => [row('false', 16, 255, 390, 3), ...first()];
  const answers = { 'false@16': { stepMs: 391, noiseMs: 3 }, 'false@8': { stepMs: 200, noiseMs: 2 }, 'selective@8': { stepMs: 215, noiseMs: 2 } };

  it('settles a second tie that the first second timing uncovers, and never times a pair twice', async () => {
    const r = retimer(answers);
    const s = await chooseSettled({ rows: three(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toEqual([
      ['selective@8', 'false@16'],
      ['false@8', 'false@16'],
    ]);
    expect(s.choice.chosen).toBe(1); // off@8: still within the noise of off@16 side by side, and its peak is lower
    expect(s.rows[1]!.samplesPerSecond).toBeCloseTo(((32 / ((2 * 390) / 1000)) * 391 * 2) / (200 * 4), 9);
    expect(s.choice.reason).toMatch(/; then gradient_checkpointing=false at micro-batch 8 and gradient_checkpointing=false at micro-batch 16 were within the noise/);
  });

  it('beyond maxRetimes, the faster row keeps a tie that was not timed again', async () => {
    const r = retimer(answers);
    const s = await chooseSettled({ rows: three(), globalBatchSize: G, excluded: new Set(), retime: r.retime, maxRetimes: 1 });
    expect(r.calls).toEqual([['selective@8', 'false@16']]);
    expect(s.choice.chosen).toBe(0);
    expect(s.choice.reason).toMatch(
      /^gradient_checkpointing=false at micro-batch 16 is the fastest \(41\.0 samples\/s\); gradient_checkpointing=false at micro-batch 8 is within the noise with a lower peak, but that tie was not timed again \(a choice times at most 1 pairs again\), so the faster stands\. gradient_checkpointing=selective at micro-batch 8 and/,
    );
  });
});
