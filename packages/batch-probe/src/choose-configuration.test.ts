import { describe, expect, it } from 'vitest';
import { chooseConfiguration, samplesPerSecond, type MeasuredCandidate } from './choose-configuration';

const MiB = 2 ** 20;
const cand = (label: string, m: number, a: number, stepMs: number, noiseMs: number | null, peakMiB: number | null): MeasuredCandidate => ({
  label,
  microBatchSize: m,
  accumulation: a,
  stepMs,
  noiseMs,
  peakBytes: peakMiB === null ? null : peakMiB * MiB,
});

describe('chooseConfiguration', () => {
  it('samples per second at G: G / (a × step time)', () => {
    expect(samplesPerSecond(cand('x', 4, 8, 100, 1, 1), 32)).toBeCloseTo(40);
    expect(samplesPerSecond({ ...cand('x', 4, 8, 100, 1, 1), stepMs: null }, 32)).toBeNull();
  });

  it('picks the fastest at G when the difference is beyond two standard errors', () => {
    // 4 × 8 at 100 ms (40 samples/s) against 8 × 4 at 228 ms (35.1): no checkpointing wins.
    const c = chooseConfiguration([cand('ckpt=false', 4, 8, 100, 1, 300), cand('ckpt=true', 8, 4, 228, 2, 250)], 32);
    expect(c.chosen).toBe(0);
    expect(c.closeTo).toBeNull();
    expect(c.reason).toMatch(/ckpt=false is the fastest: 40\.0 samples\/s, 1\.14× ckpt=true/);
  });

  it('within the noise, prefers the lower peak and says so', () => {
    const c = chooseConfiguration([cand('a', 4, 8, 100, 4, 300), cand('b', 8, 4, 204, 8, 250)], 32);
    expect(c.chosen).toBe(1);
    expect(c.closeTo).toBe(0);
    expect(c.reason).toMatch(/b \(39\.2 samples\/s\) is within the measured noise of a .* the lower peak wins a tie/);
    // The same speeds with the faster one also the lower peak: it stays, and the closeness is said.
    const d = chooseConfiguration([cand('a', 4, 8, 100, 4, 200), cand('b', 8, 4, 204, 8, 250)], 32);
    expect(d.chosen).toBe(0);
    expect(d.reason).toMatch(/b is within the measured noise/);
  });

  it('an unknown peak never wins a tie; untimed candidates do not compete', () => {
    const c = chooseConfiguration([cand('a', 4, 8, 100, 4, 300), cand('b', 8, 4, 204, 8, null), { ...cand('c', 16, 2, 1, null, 1), stepMs: null }], 32);
    expect(c.chosen).toBe(0);
    expect(c.speeds[2]!.samplesPerSecond).toBeNull();
    expect(chooseConfiguration([{ ...cand('c', 16, 2, 1, null, 1), stepMs: null }], 32)).toMatchObject({ chosen: null, reason: 'no candidate could be timed' });
  });
});
