import { describe, expect, it } from 'vitest';
import { cosineLr } from './cosine-lr';

describe('cosineLr', () => {
  it('warms up linearly, peaks, decays by a cosine to minLr and stays there', () => {
    const o = { lr: 1e-3, warmupSteps: 10, totalSteps: 110, minLr: 1e-4 };
    expect(cosineLr({ ...o, step: 1 })).toBeCloseTo(1e-4, 12);
    expect(cosineLr({ ...o, step: 10 })).toBeCloseTo(1e-3, 12);
    expect(cosineLr({ ...o, step: 60 })).toBeCloseTo(1e-4 + 0.9e-3 * 0.5, 12);
    expect(cosineLr({ ...o, step: 110 })).toBeCloseTo(1e-4, 12);
    expect(cosineLr({ ...o, step: 500 })).toBeCloseTo(1e-4, 12);
    let prev = Infinity;
    for (let s = 10; s <= 110; s++) {
      const v = cosineLr({ ...o, step: s });
      expect(v).toBeLessThanOrEqual(prev);
      prev = v;
    }
    expect(cosineLr({ lr: 2, totalSteps: 4, step: 1 })).toBeCloseTo(2 * 0.5 * (1 + Math.cos(Math.PI / 4)), 12);
  });
});
