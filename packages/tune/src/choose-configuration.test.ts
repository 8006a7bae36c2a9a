import { describe, expect, it } from 'vitest';
import { chooseConfiguration, peakIsLower, samplesPerSecond, type MeasuredCandidate } from './choose-configuration';

const MiB = 2 ** 20;
const cand = (
  label: string,
  m: number,
  a: number,
  stepMs: number,
  noiseMs: number | null,
  peakMiB: number | null,
): MeasuredCandidate => ({
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

  it("a peak lower only within the probe's resolution (2 %) does not take a tie: the faster stands", () => {
    // The known-cost trainer's two configurations, equal by construction: 296.9 against 297.0 MiB.
    const c = chooseConfiguration(
      [cand('ckpt=false', 4, 8, 100, 4, 297.0), cand('ckpt=true', 8, 4, 204, 8, 296.9)],
      32,
    );
    expect(c.chosen).toBe(0);
    expect(c.closeTo).toBe(1);
    expect(c.reason).toMatch(
      /ckpt=true is within the measured noise .*; ckpt=true's peak is the same as ckpt=false's within the probe's resolution \(296\.9 and 297\.0 MiB, within 2 %\): the faster stands$/,
    );
    // Just past the resolution it does.
    expect(
      chooseConfiguration([cand('ckpt=false', 4, 8, 100, 4, 297.0), cand('ckpt=true', 8, 4, 204, 8, 297.0 * 0.979)], 32)
        .chosen,
    ).toBe(1);
    expect(
      chooseConfiguration([cand('ckpt=false', 4, 8, 100, 4, 297.0), cand('ckpt=true', 8, 4, 204, 8, 297.0 * 0.981)], 32)
        .chosen,
    ).toBe(0);
  });

  it(
    'peakIsLower: beyond 2 % of the larger; an unknown peak is never lower, any known one is lower than an ' +
      'unknown',
    () => {
      expect(peakIsLower(97, 100)).toBe(true);
      expect(peakIsLower(98.5, 100)).toBe(false);
      expect(peakIsLower(100, 97)).toBe(false);
      expect(peakIsLower(null, 100)).toBe(false);
      expect(peakIsLower(100, null)).toBe(true);
    },
  );

  it('an unknown peak never wins a tie; untimed candidates do not compete', () => {
    const c = chooseConfiguration(
      [cand('a', 4, 8, 100, 4, 300), cand('b', 8, 4, 204, 8, null), { ...cand('c', 16, 2, 1, null, 1), stepMs: null }],
      32,
    );
    expect(c.chosen).toBe(0);
    expect(c.speeds[2]!.samplesPerSecond).toBeNull();
    expect(chooseConfiguration([{ ...cand('c', 16, 2, 1, null, 1), stepMs: null }], 32)).toMatchObject({
      chosen: null,
      reason: 'no candidate could be timed',
    });
  });
});
