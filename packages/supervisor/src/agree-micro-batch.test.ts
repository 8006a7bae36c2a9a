// One micro-batch for all ranks: the smallest answer wins, G is kept, and a G that no longer splits is refused with
// the nearest workable choices.
import { describe, expect, it } from 'vitest';
import { agreeMicroBatch, type NodeMicroAnswer } from './agree-micro-batch';
import { MicroAgreementError } from './errors';

const node = (rank: number, m: number, budgetMiB: number | null = null): NodeMicroAnswer => ({
  rank,
  host: `host${rank}`,
  m,
  budget: budgetMiB === null ? null : budgetMiB * 2 ** 20,
});

describe('agreeMicroBatch', () => {
  it('trains the smallest m any node fits, a = G / (m × world size), and says which node decided', () => {
    const r = agreeMicroBatch({ answers: [node(0, 8, 900), node(1, 4, 300)], globalBatchSize: 32, worldSize: 2 });
    expect(r.microBatchSize).toBe(4);
    expect(r.accumulation).toBe(4);
    expect(r.decidedBy.rank).toBe(1);
    expect(r.line).toBe('micro-batch 4: node 1 (host1) fits least (budget 300 MiB)');
  });

  it('a tie goes to the lowest rank; an unknown budget is the free memory', () => {
    const r = agreeMicroBatch({ answers: [node(1, 2), node(0, 2), node(2, 4)], globalBatchSize: 12, worldSize: 3 });
    expect(r.decidedBy.rank).toBe(0);
    expect(r.line).toBe("micro-batch 2: node 0 (host0) fits least (the device's free memory)");
  });

  it('every pair of answers over the divisors of G / N: the minimum, and m × a × N = G', () => {
    const G = 24;
    const N = 2;
    for (const a of [1, 2, 3, 4, 6, 12])
      for (const b of [1, 2, 3, 4, 6, 12]) {
        const r = agreeMicroBatch({ answers: [node(0, a), node(1, b)], globalBatchSize: G, worldSize: N });
        expect(r.microBatchSize).toBe(Math.min(a, b));
        expect(r.microBatchSize * r.accumulation * N).toBe(G);
      }
  });

  it('refuses a G that m × world size does not divide, naming the nearest workable G and m', () => {
    const err = (() => {
      try {
        return agreeMicroBatch({ answers: [node(0, 8), node(1, 5, 300)], globalBatchSize: 12, worldSize: 2 });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(MicroAgreementError);
    expect((err as MicroAgreementError).code).toBe('SOUP_SUPERVISOR_MICRO_AGREEMENT');
    expect((err as Error).message).toBe(
      'micro-batch agreement: node 1 (host1) fits m 5, and global batch 12 is not a multiple of m × world size = ' +
        '5 × 2: nearest workable global batch 10 or 20 with m 5, or keep G 12 with m 3 (a divisor of G / world ' +
        'size = 6: 1, 2, 3, 6)',
    );
  });

  it('refuses no answers at all', () => {
    expect(() => agreeMicroBatch({ answers: [], globalBatchSize: 8, worldSize: 2 })).toThrow(/no node answered/);
  });
});
