import { describe, expect, it } from 'vitest';
import { commandBudgetHold } from './command-budget-hold';

describe('commandBudgetHold', () => {
  it('a given budget is the flag; on the CPU the device has no memory of its own to offer', async () => {
    const hold = commandBudgetHold({
      device: { kind: 'cpu', id: 0 },
      budgetBytes: 2 ** 30,
      maxMemory: '90%',
      hint: 'pass --budget',
      env: {},
    });
    expect(hold).toMatchObject({
      budgetBytes: 2 ** 30,
      givenAs: 'flag',
      device: 'cpu',
      maxMemory: '90%',
      hint: 'pass --budget',
    });
    expect(await hold.deviceBytes()).toBeNull();
  });
});
