import { describe, expect, it } from 'vitest';
import { SupervisorUsageError } from './errors';
import { maxMemoryBytesOf, resolveMaxMemory, resolveMemoryBudget } from './memory-budget';

const GiB = 2 ** 30;
const parse = (t: string): number | undefined => (/^\d+GiB$/.test(t) ? Number.parseInt(t, 10) * GiB : undefined);
const never = (): never => {
  throw new Error('not asked');
};

describe('resolveMemoryBudget', () => {
  it('the budget given wins, named as given; else the CPU reachable now, else the GPU', async () => {
    const given = { budgetBytes: 5, reachableBytes: never, deviceBytes: never } as const;
    expect(await resolveMemoryBudget({ ...given, givenAs: 'flag', device: 'cuda' })).toEqual({
      budgetBytes: 5,
      source: 'flag',
    });
    expect(await resolveMemoryBudget({ ...given, givenAs: 'memory_budget', device: 'cpu' })).toEqual({
      budgetBytes: 5,
      source: 'memory_budget',
    });
    const cpu = { budgetBytes: null, givenAs: 'flag', device: 'cpu', deviceBytes: never } as const;
    expect(await resolveMemoryBudget({ ...cpu, reachableBytes: () => 7 })).toEqual({
      budgetBytes: 7,
      source: 'reachable',
    });
    expect(await resolveMemoryBudget({ ...cpu, reachableBytes: never })).toEqual({ budgetBytes: null, source: null });
    const gpu = { budgetBytes: null, givenAs: 'flag', device: 'cuda', reachableBytes: never } as const;
    expect(await resolveMemoryBudget({ ...gpu, deviceBytes: async () => 16 * GiB })).toEqual({
      budgetBytes: 16 * GiB,
      source: 'device',
    });
    expect(await resolveMemoryBudget({ ...gpu, deviceBytes: () => null })).toEqual({ budgetBytes: null, source: null });
  });
});

describe('max memory', () => {
  it('a size or a fraction of the budget; a fraction without a budget is unknown', () => {
    expect(resolveMaxMemory('6GiB', null, parse)).toBe(6 * GiB);
    expect(resolveMaxMemory('0.9', 1000, parse)).toBe(900);
    expect(resolveMaxMemory('1', 1000, parse)).toBe(1000);
    expect(resolveMaxMemory('90%', 1000, parse)).toBe(900);
    expect(resolveMaxMemory('90%', null, parse)).toBeNull();
    expect(resolveMaxMemory(undefined, 1000, parse)).toBeNull();
  });

  it('refuses what it cannot read, naming where a budget comes from', () => {
    expect(maxMemoryBytesOf(undefined, null, 'pass --budget', parse)).toBeNull();
    expect(maxMemoryBytesOf('50%', 2000, 'pass --budget', parse)).toBe(1000);
    expect(() => maxMemoryBytesOf('90%', null, 'pass --budget', parse)).toThrow(
      '--max-memory 90%: give a size like 6GiB, or a fraction like 0.9 or 90% of the budget (a fraction needs a ' +
        'known budget: pass --budget)',
    );
    expect(() => maxMemoryBytesOf('lots', 1, 'x', parse)).toThrow(SupervisorUsageError);
  });
});
