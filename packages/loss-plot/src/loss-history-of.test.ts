import { describe, expect, it } from 'vitest';
import { lossHistoryOf } from './loss-history-of';

describe('lossHistoryOf', () => {
  it('keeps the log_history entries with an integer step, and max_steps as the horizon', () => {
    const state = {
      global_step: 3,
      max_steps: 10,
      log_history: [{ step: 1, loss: 3 }, { step: 1.5, loss: 2 }, null, 'x', { loss: 1 }, { step: 3, eval_loss: 2 }],
    };
    expect(lossHistoryOf(state)).toEqual({
      history: [
        { step: 1, loss: 3 },
        { step: 3, eval_loss: 2 },
      ],
      horizon: 10,
    });
  });

  it('anything else has no history', () => {
    for (const state of [null, undefined, 5, 's', [], [{ step: 1, loss: 1 }], {}, { log_history: {} }])
      expect(lossHistoryOf(state), JSON.stringify(state)).toEqual({ history: [], horizon: null });
    expect(lossHistoryOf({ log_history: [], max_steps: '10' }).horizon).toBeNull();
  });
});
