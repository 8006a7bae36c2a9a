import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyTrainReport, emptyTrainFacts, resumeTrainFacts } from './train-facts';

describe('the facts of a soup train session', () => {
  it("takes each step report's step, loss and tokens, the first loss as the initial one, the validation loss", () => {
    const s = emptyTrainFacts();
    applyTrainReport(s, { event: 'ready', resumedAt: 0, startupMs: 5 }, Date.now() - 40);
    expect(s.startupMs).toBeGreaterThanOrEqual(40);
    applyTrainReport(s, { event: 'begin', step: 1 }, null);
    const step = { event: 'step', lr: 1e-3, microBatchSize: 2, accumulation: 4 } as const;
    applyTrainReport(s, { ...step, step: 1, loss: 3.5, tokensConsumed: 512, ms: 20 }, null);
    applyTrainReport(s, { ...step, step: 2, loss: 3.25, tokensConsumed: 1024, ms: 30 }, null);
    applyTrainReport(s, { event: 'validation', loss: 3.4, windows: 8 }, null);
    applyTrainReport(s, { event: 'validation-empty', bytes: 3 }, null);
    expect(s).toMatchObject({
      stepsRun: 2,
      trainMs: 50,
      lastStep: 2,
      tokensConsumed: 1024,
      initialLoss: 3.5,
      lastLoss: 3.25,
      valLoss: 3.4,
    });
  });

  it('a resumed session starts at the checkpoint with its tokens, loss and sessions; a fresh one at 0', () => {
    const dir = join(useTempDir('soup-train-facts-'), 'checkpoint-4');
    mkdirSync(dir);
    writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ tokens_consumed: 2048, last_loss: 2.5 }));
    const session = { start_step: 1, micro_batch_size: 4, grad_accum: 2, source: 'probe', oom_step_downs: [] };
    writeFileSync(join(dir, 'soup_run.json'), JSON.stringify({ sessions: [session] }));
    const resumed = emptyTrainFacts();
    expect(resumeTrainFacts(resumed, { resumeFrom: dir, step: 4 })).toEqual([session]);
    expect(resumed).toMatchObject({ startStep: 4, lastStep: 4, tokensConsumed: 2048, lastLoss: 2.5 });
    const fresh = emptyTrainFacts();
    expect(resumeTrainFacts(fresh, { resumeFrom: null, step: null })).toEqual([]);
    expect(fresh).toMatchObject({ startStep: 0, lastStep: 0, tokensConsumed: 0, lastLoss: null });
  });
});
