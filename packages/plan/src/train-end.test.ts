import { validateConfig } from '@soup/config';
import type { CheckpointStore } from '@soup/hub-ckpt';
import { StoreError } from '@soup/hub-ckpt';
import type { SessionFacts, SuperviseOutcome } from '@soup/supervisor';
import { describe, expect, it } from 'vitest';
import { tinyConfigText } from './_test-config';
import { trainEndOf, type TrainEndOptions } from './train-end';
import { emptyTrainFacts, type TrainFacts } from './train-facts';

const { config } = validateConfig({ text: tinyConfigText(), file: '/proj/soup.yaml' });
if (!config) throw new Error('expected a valid config');

const files: Record<string, unknown> = {
  'final/trainer_state.json': { tokens_consumed: 1536, last_loss: 2.5 },
  'final/soup_run.json': { batch_size: 8, micro_batch_size: 4, grad_accum: 2, micro_batch: '4 × 2 = 8' },
};
const store = {
  description: 'dir /ckpt',
  readFile: async ({ path }: { path: string }) =>
    path in files ? new TextEncoder().encode(JSON.stringify(files[path])) : null,
} as unknown as CheckpointStore;

const facts0: SessionFacts = {
  startStep: 4,
  pushedSteps: [],
  batchSize: null,
  batchSource: null,
  globalBatchSize: 8,
  microBatchSize: 4,
  gradAccum: 2,
  worldSize: 1,
  previousSession: null,
  oomStepDowns: [],
  memory: null,
};

/** The facts of a session resumed at step 4 that ran to `lastStep`, with outcome `r`. */
function session(r: SuperviseOutcome | null, over: Partial<TrainFacts> & { pushedSteps?: number[] } = {}): TrainFacts {
  const { pushedSteps = [], ...rest } = over;
  return {
    ...emptyTrainFacts(),
    startStep: 4,
    lastStep: 4,
    r: r === null ? null : { ...facts0, ...r, pushedSteps },
    pushed: pushedSteps,
    ...rest,
  };
}

/** A segment saved with the store pointing at `step`. */
const segmentSaved = (step: number): SuperviseOutcome => ({
  outcome: 'segment-saved',
  run: 'soup-0123',
  step,
  stopReason: 'x',
  trainerExit: 0,
  trainerKilled: false,
  horizon: null,
});

const options = (facts: TrainFacts): TrainEndOptions => ({
  facts,
  config,
  store,
  storeName: 'dir ckpt',
  runId: 'soup-0123',
  startedAtMs: Date.now(),
  exitCodes: { ok: 0, segmentSaved: 75, notPushed: 5 },
  timeLimit: '5.0s',
  show: (p) => p.replace(`${config.output}/`, 'out/'),
});

describe('how a soup train session ends', () => {
  it("final/ pushed: exit ok, the supervisor's closing sentence and the model, the loss of final/", async () => {
    const r = { outcome: 'complete', run: 'soup-0123', step: 12, pathInRepo: 'final', launched: true } as const;
    const closing = 'run complete: pushed final/ (4 files from out/final, step 12, verified) with a terminal pointer';
    const end = await trainEndOf(
      options(session({ ...r, evidence: 'horizon-reached' }, { lastStep: 12, pushedSteps: [8, 12], closing })),
    );
    expect(end).toMatchObject({ outcome: 'final', exitCode: 0, error: null, notPushed: null });
    expect(end.lines).toEqual([
      closing,
      "final model: out/final/ (model.safetensors + config.json: loads as transformers' GPT-2)",
    ]);
    expect(end.lossDir).toBe(`${config.output}/final`);
    expect(end.result).toMatchObject({ status: 'finished', exit_code: 0, final_pushed: true, final_step: 12 });
  });

  it("a segment: exit segmentSaved, the supervisor's closing sentence; none launched: the end said here", async () => {
    const r = segmentSaved(8);
    const closing =
      'segment saved (--stop-after-steps; validation skipped): step 8 is saved in dir ckpt; run the same …';
    const planned = await trainEndOf(options(session(r, { lastStep: 8, pushedSteps: [8], closing })));
    expect(planned).toMatchObject({
      outcome: 'segment',
      exitCode: 75,
      lines: [closing],
      lossDir: `${config.output}/checkpoints/checkpoint-8`,
    });
    expect(planned.result).toMatchObject({ status: 'segment', exit_code: 75, segment_stop: true });
    const never = await trainEndOf(options(session({ outcome: 'not-launched', run: 'soup-0123' })));
    expect(never.exitCode).toBe(75);
    expect(never.lines).toEqual([
      'session end (abort) at step 4: no step was run this session; nothing new to push',
      'segment saved (abort): step 4 is saved in dir ckpt; run the same command again to continue',
    ]);
  });

  it('the newest checkpoint not pushed: segmentSaved when this session pushed one, else notPushed', async () => {
    const r = segmentSaved(6);
    const unpushed = [{ step: 8, reason: 'ECONNREFUSED' }];
    const some = await trainEndOf(options(session(r, { lastStep: 8, savedStep: 8, pushedSteps: [6], unpushed })));
    expect(some).toMatchObject({ outcome: 'not-pushed', exitCode: 75, result: null, lossDir: null });
    expect(some.error).toBe(
      'could not push checkpoint-8 to dir ckpt: ECONNREFUSED. Not pushed this session: step 8 (the newest is kept ' +
        'locally in out/checkpoints/checkpoint-8). The store holds step 6 from this session: run the same command ' +
        'again to continue from it (exit 75).',
    );
    expect(some.notPushed).toEqual({
      ok: false,
      outcome: 'not-pushed',
      not_pushed_steps: [8],
      stored_step: 6,
      local_dir: 'out/checkpoints/checkpoint-8',
      exit_code: 75,
    });
    const finalError = new StoreError('the Hub is down');
    const none = await trainEndOf(options(session(null, { lastStep: 12, finalError })));
    expect(none).toMatchObject({ outcome: 'not-pushed', exitCode: 5 });
    expect(none.error).toMatch(
      /^could not push final\/ to dir ckpt: .*Nothing from this session is in the store \(exit 5\)\.$/,
    );
    expect(none.notPushed).toMatchObject({ not_pushed_steps: [12], stored_step: null, local_dir: 'out/final' });
  });

  it('already complete in the store, or the trainer failed (its own exit code, no result)', async () => {
    const r = { outcome: 'complete', run: 'soup-0123', step: 12, pathInRepo: 'final', launched: false } as const;
    const closing = 'run soup-0123 is complete: dir ckpt final/ holds step 12; nothing to launch';
    const done = await trainEndOf(options(session({ ...r, evidence: 'store' }, { closing })));
    expect(done).toMatchObject({ outcome: 'complete', exitCode: 0, lossDir: null, error: null });
    expect(done.lines).toEqual([closing]);
    expect(done.result).toMatchObject({ status: 'complete', final_step: 12, final_loss: 2.5, micro_batch_size: 4 });
    const failed = {
      outcome: 'trainer-failed',
      run: 'soup-0123',
      exitCode: 3,
      trainerError: 'boom',
      pushedStep: null,
      message: 'the trainer failed with exit code 3: boom',
    } as const;
    expect(await trainEndOf(options(session(failed)))).toEqual({
      outcome: 'failed',
      exitCode: 3,
      lines: [],
      error: 'the trainer failed with exit code 3: boom',
      result: null,
      notPushed: null,
      lossDir: null,
    });
  });
});
