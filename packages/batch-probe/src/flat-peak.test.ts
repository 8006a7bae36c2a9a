import { describe, expect, it } from 'vitest';
import { flatPeak } from './flat-peak';

const MiB = 2 ** 20;
const fits = (peaks: Record<number, number>) =>
  Object.entries(peaks).map(([b, p]) => ({ batchSize: Number(b), fits: true, peakBytes: p * MiB }));

describe('flatPeak: a trainer that ignores its batch size', () => {
  it('warns when the peak stays within 2 % over a batch 8× larger, naming both', () => {
    const f = flatPeak(fits({ 1: 300, 4: 301, 32: 303 }), 'micro-batch');
    expect(f).toMatchObject({ fromBatch: 1, toBatch: 32, fromPeakBytes: 300 * MiB, toPeakBytes: 303 * MiB });
    expect(f!.warning).toBe(
      'the peak stayed flat from micro-batch 1 (300 MiB) to 32 (303 MiB): does the trainer read the micro-batch ' +
        'soup gives it? An answer that does not change its memory says nothing about what fits',
    );
  });

  it('says nothing when the peak grows, over less than 8×, or without two measured fits', () => {
    expect(flatPeak(fits({ 1: 300, 32: 307 }))).toBeNull(); // 2.3 % more
    expect(flatPeak(fits({ 4: 300, 16: 300 }))).toBeNull(); // 4×: a framework's flat start
    expect(flatPeak(fits({ 32: 300 }))).toBeNull();
    expect(flatPeak([...fits({ 1: 300 }), { batchSize: 32, fits: false, peakBytes: 300 * MiB }])).toBeNull();
    expect(flatPeak([{ batchSize: 1, fits: true }, ...fits({ 32: 300 })])).toBeNull();
  });
});
