import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DataError } from './errors';
import { sequentialBatches, TokenSampler } from './token-sampler';

const tokens = Uint8Array.from({ length: 500 }, (_, i) => (i * 7 + 3) % 256);

describe('TokenSampler', () => {
  it('draws the same windows when resumed from a cursor as in one go (property over seeds and split points)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 5 }),
        (seed, batch, split) => {
          const straight = new TokenSampler({ tokens, seqLen: 16, seed });
          const all = Array.from({ length: 6 }, () => straight.nextBatch(batch));
          const first = new TokenSampler({ tokens, seqLen: 16, seed });
          for (let i = 0; i < split; i++) first.nextBatch(batch);
          const resumed = new TokenSampler({ tokens, seqLen: 16, seed, cursor: first.cursor });
          for (let i = split; i < 6; i++) expect(resumed.nextBatch(batch)).toEqual(all[i]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('yields labels = inputs shifted by one, inside the text, and differs across seeds', () => {
    const s = new TokenSampler({ tokens, seqLen: 16, seed: 1 });
    for (let k = 0; k < 200; k++) {
      const start = s.windowStart(k);
      expect(start).toBeGreaterThanOrEqual(0);
      expect(start + 16).toBeLessThanOrEqual(tokens.length - 1);
    }
    const b = s.nextBatch(3);
    for (let i = 0; i < 3 * 16; i++) if ((i + 1) % 16 !== 0) expect(b.labels[i]).toBe(b.inputIds[i + 1]);
    const other = new TokenSampler({ tokens, seqLen: 16, seed: 2 }).nextBatch(3);
    expect(other.inputIds).not.toEqual(b.inputIds);
  });

  it('refuses a text shorter than one window', () => {
    expect(() => new TokenSampler({ tokens: new Uint8Array(16), seqLen: 16 })).toThrow(DataError);
  });

  it('cuts evaluation text into consecutive, non-overlapping windows', () => {
    const batches = sequentialBatches({ tokens, seqLen: 16, batchSize: 4, maxBatches: 100 });
    expect(batches.reduce((n, b) => n + b.batchSize, 0)).toBe(Math.floor(499 / 16));
    expect(batches[0]!.inputIds[16]).toBe(BigInt(tokens[16]!));
    expect(sequentialBatches({ tokens, seqLen: 16, batchSize: 4, maxBatches: 2 })).toHaveLength(2);
  });
});
