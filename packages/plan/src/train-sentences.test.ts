import { validateConfig } from '@soup/config';
import { planSegment } from '@soup/hub-ckpt';
import { describe, expect, it } from 'vitest';
import { tinyConfigText } from './_test-config';
import type { PreparedRun } from './prepare-run';
import { emptyTrainFacts } from './train-facts';
import { describeSessionEnd, describeTrainReport, describeTrainSegment, describeTrainStart } from './train-sentences';

const configOf = (training = '') => {
  const { config } = validateConfig({ text: tinyConfigText({ training }), file: '/proj/soup.yaml' });
  if (!config) throw new Error('expected a valid config');
  return config;
};

describe("soup train's sentences", () => {
  it("the run's start; the learning-rate rule only past the schedule", () => {
    const p = { runId: 'soup-0123', pushEvery: 4, storeName: 'dir ckpt' };
    expect(describeTrainStart({ ...p, config: configOf() })).toEqual([
      'run soup-0123: soup/tiny-gpt, 12 steps, checkpoints every 4 to dir ckpt',
    ]);
    expect(describeTrainStart({ ...p, config: configOf('  schedule_steps: 10\n') })).toEqual([
      'run soup-0123: soup/tiny-gpt, 12 steps, checkpoints every 4 to dir ckpt',
      'the learning rate follows the schedule of 10 steps, then stays at its minimum to step 12',
    ]);
  });

  it('the segment: steps, batch, micro-batch against the last session, tier, offload, device, where it stops', () => {
    const config = configOf();
    const prepared = {
      microBatchSize: 2,
      accumulation: 4,
      batchSource: 'probed',
      tier: { description: 'none' },
      offload: { target: 'disk', saveDir: '/proj/out/scratch' },
      identity: { gpuName: 'cpu' },
    } as unknown as PreparedRun;
    const plan = planSegment({ horizon: 12, pushEvery: 4, stopAfterSteps: 4, startStep: 4 });
    const last = { start_step: 0, micro_batch_size: 4, grad_accum: 2, source: 'cache', oom_step_downs: [] };
    expect(describeTrainSegment({ config, prepared, plan, sessions: [last], show: (p) => p.slice(6) })).toBe(
      'training steps 5..8 of 12: batch 8 × 16 tokens, micro 2 × 4 = 8 (was 4 × 2 last session) (probed), ' +
        'checkpointing none, offload disk to out/scratch (segmented), cpu; stops at step 8 (segment boundary)',
    );
    const whole = planSegment({ horizon: 12, pushEvery: 4, stopAfterSteps: 0, startStep: 0 });
    const fused = { ...prepared, offload: null } as PreparedRun;
    expect(describeTrainSegment({ config, prepared: fused, plan: whole, sessions: [], show: (p) => p })).toBe(
      'training steps 1..12 of 12: batch 8 × 16 tokens, micro 2 × 4 = 8 (probed), checkpointing none, cpu; ' +
        'runs to the horizon',
    );
  });

  it("the child's reports: a step's status, validation, its out-of-memory and a data.val too short", () => {
    const step = { event: 'step', step: 3, loss: 2.34567, lr: 0.00012, microBatchSize: 2, accumulation: 4 } as const;
    expect(describeTrainReport({ ...step, tokensConsumed: 0, ms: 1 }, null)).toEqual({
      level: 'status',
      line: 'loss 2.346  lr 1.2e-4  micro 2 × 4 = 8',
    });
    expect(describeTrainReport({ event: 'validation', loss: 2.5, windows: 6 }, null)).toEqual({
      level: 'info',
      line: 'validation loss 2.5000 over 6 sequences',
    });
    expect(describeTrainReport({ event: 'validation-oom', batchSize: 4, error: 'bad_alloc' }, null)).toEqual({
      level: 'warn',
      line:
        'validation loss unknown: out of memory at a validation batch of 4 (bad_alloc); the trained weights are ' +
        'kept and pushed as final/',
    });
    expect(describeTrainReport({ event: 'validation-empty', bytes: 3 }, 'data/val.txt')).toEqual({
      level: 'warn',
      line: 'data/val.txt: data.val has 3 bytes, fewer than max_length + 1: no validation',
    });
    expect(describeTrainReport({ event: 'begin', step: 1 }, null)).toBeNull();
  });

  it('the session end: saving the step now, a boundary already pushed, or no step run', () => {
    const plan = planSegment({ horizon: 12, pushEvery: 4, stopAfterSteps: 0, startStep: 4 });
    const s = { ...emptyTrainFacts(), plan, startStep: 4, ended: { reason: 'time-limit', afterMs: 1 } as const };
    expect(describeSessionEnd({ ...s, lastStep: 6 }, '5.0s')).toBe(
      'session end (--time-limit 5.0s reached) at step 6: saving checkpoint-6 and pushing it',
    );
    const term = { reason: 'SIGTERM', afterMs: 1 } as const;
    expect(describeSessionEnd({ ...s, lastStep: 8, ended: term }, '5.0s')).toBe(
      'session end (SIGTERM) at step 8: checkpoint-8 is already pushed; nothing new to push',
    );
    expect(describeSessionEnd({ ...s, lastStep: 4, ended: null }, '5.0s')).toBe(
      'session end (abort) at step 4: no step was run this session; nothing new to push',
    );
  });
});
