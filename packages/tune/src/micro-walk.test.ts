// MicroWalk: which micro-batch the tuner times next, given the samples/s each timing gave.
import { describe, expect, it } from 'vitest';
import { MicroWalk } from './micro-walk';

/** Walks `allowed` against a table of samples/s by m; the micro-batches in the order timed. */
function walkOver(allowed: number[], sps: Record<number, number>): number[] {
  const w = MicroWalk.over(allowed);
  const order: number[] = [];
  for (let m = w.next(); m !== null; m = w.next()) {
    order.push(m);
    w.took(sps[m]!);
  }
  return order;
}

describe('MicroWalk', () => {
  it('starts at half the largest and climbs while faster', () => {
    expect(walkOver([1, 2, 4, 8, 16], { 8: 25, 16: 27 })).toEqual([8, 16]);
    expect(walkOver([1, 2, 4, 8, 16, 32], { 16: 20, 32: 22 })).toEqual([16, 32]);
  });

  it('goes down from the start, not from the slower step up, when the first step up was slower', () => {
    expect(walkOver([1, 2, 4, 8, 16], { 8: 25, 16: 23, 4: 26, 2: 24 })).toEqual([8, 16, 4, 2]);
    // 4 is slower than the start (25) though faster than 16 (23): the walk ends there.
    expect(walkOver([1, 2, 4, 8, 16], { 8: 25, 16: 23, 4: 24 })).toEqual([8, 16, 4]);
  });

  it('does not go down once a step up was faster', () => {
    expect(walkOver([1, 2, 4, 8, 16, 32], { 16: 20, 32: 22 })).toEqual([16, 32]);
    // Started at 8 (as a tier with a floor could): 16 faster, then 32 slower: the walk ends there.
    const w = new MicroWalk([2, 4, 8, 16, 32], 2);
    const order: number[] = [];
    for (let m = w.next(); m !== null; m = w.next()) order.push(m), w.took({ 8: 20, 16: 22, 32: 21 }[m]!);
    expect(order).toEqual([8, 16, 32]);
  });

  it('with one micro-batch (above a floor) times it alone; at the top it goes down at once', () => {
    expect(walkOver([32], { 32: 14 })).toEqual([32]);
    expect(walkOver([4, 8], { 4: 10, 8: 9 })).toEqual([4, 8]);
    expect(walkOver([8, 16], { 8: 10, 16: 9 })).toEqual([8, 16]);
    const w = new MicroWalk([2, 4, 8], 2);
    expect(w.next()).toBe(8);
    w.took(10);
    expect(w.next()).toBe(4);
    w.took(11);
    expect(w.next()).toBe(2);
  });

  it(
    'names its opening two micro-batches (the start and the first step up) before anything is taken, and ' +
      'the walk takes them',
    () => {
      const w = MicroWalk.over([1, 2, 4, 8, 16]);
      expect(w.opening()).toEqual([8, 16]);
      expect(walkOver([1, 2, 4, 8, 16], { 8: 25, 16: 23, 4: 24 }).slice(0, 2)).toEqual(w.opening());
      w.took(25);
      expect(w.opening()).toEqual([]); // already under way
      expect(MicroWalk.over([32]).opening()).toEqual([]); // one micro-batch: no step up
      expect(new MicroWalk([2, 4, 8], 2).opening()).toEqual([]); // starts at the top
    },
  );

  it('refuses a walk with nothing to time and a timing after it is over', () => {
    expect(() => new MicroWalk([], 0)).toThrow(/no micro-batch/);
    const w = MicroWalk.over([32]);
    w.took(14);
    expect(w.next()).toBeNull();
    expect(() => w.took(15)).toThrow(/after the walk is over/);
  });
});
