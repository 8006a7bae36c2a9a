import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLossHistory } from './read-loss-history';

/** A checkpoint folder whose trainer_state.json holds `text`. */
function checkpoint(text: string): string {
  const dir = join(useTempDir('soup-loss-history-'), 'checkpoint-3');
  mkdirSync(dir);
  writeFileSync(join(dir, 'trainer_state.json'), text);
  return dir;
}

describe('readLossHistory', () => {
  it("reads a checkpoint's log_history (soup train's closing curve) and its max_steps", () => {
    const log = [
      { step: 1, loss: 3.1, lr: 0.001 },
      { step: 2, loss: 2.9, lr: 0.001 },
      { step: 3, loss: 2.7, lr: 0.001 },
      { step: 3, eval_loss: 2.8 },
    ];
    const dir = checkpoint(JSON.stringify({ global_step: 3, max_steps: 8, log_history: log }));
    expect(readLossHistory(dir)).toEqual({ history: log, horizon: 8 });
  });

  it('a folder without a readable trainer_state.json, or one without a log_history array, has no history', () => {
    const none = { history: [], horizon: null };
    expect(readLossHistory(join(useTempDir('soup-loss-history-'), 'checkpoint-9'))).toEqual(none);
    expect(readLossHistory(checkpoint('{"global_step": 3, "log_hist'))).toEqual(none);
    expect(readLossHistory(checkpoint('null'))).toEqual(none);
    expect(readLossHistory(checkpoint(JSON.stringify({ global_step: 3 })))).toEqual(none);
    expect(readLossHistory(checkpoint(JSON.stringify({ log_history: { step: 1, loss: 2 } })))).toEqual(none);
  });

  it('leaves out the entries a curve cannot place (no integer step)', () => {
    const dir = checkpoint(JSON.stringify({ log_history: [{ step: 1, loss: 2 }, { loss: 1 }, null] }));
    expect(readLossHistory(dir).history).toEqual([{ step: 1, loss: 2 }]);
  });
});
