import { openCheckpointStore } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import type { SessionFacts, SuperviseOutcome } from './supervise-options';
import { supervisedResultOf } from './supervised-result-of';

const EXIT = { ok: 0, segmentSaved: 75, interrupted: 130 };

const facts: SessionFacts = {
  startStep: 20,
  pushedSteps: [30, 40],
  batchSize: 8,
  batchSource: 'flag',
  globalBatchSize: null,
  microBatchSize: null,
  gradAccum: null,
  worldSize: 1,
  previousSession: null,
  oomStepDowns: [],
  memory: null,
};

function resultOf(outcome: SuperviseOutcome, more: Partial<SessionFacts> = {}) {
  const store = openCheckpointStore({
    repo: `file://${useTempDir()}`,
    needsWrite: false,
    env: {},
    cwd: '/',
    warn: () => {},
  });
  const r = supervisedResultOf(
    { ...outcome, ...facts, ...more },
    { store, startedAtMs: Date.now(), memory: null, exitCodes: EXIT },
  );
  return { r, store: store.description };
}

describe("supervise()'s outcome as the result of a trainer the caller did not write", () => {
  it('a run that reached its horizon this session is finished, its trainer exited 0', () => {
    const { r, store } = resultOf({
      outcome: 'complete',
      run: 'run-a',
      step: 50,
      pathInRepo: 'final',
      launched: true,
      evidence: 'horizon-reached',
    });
    expect(r).toMatchObject({ ok: true, status: 'finished', exit_code: 0, run: 'run-a', store, final_step: 50 });
    expect(r).toMatchObject({ start_step: 20, final_pushed: true, batch_size: 8, batch_source: 'flag' });
    expect(r.trainer).toEqual({ exit_code: 0, signal: null, killed: false, error: null });
  });

  it('a store that already held final/ is complete: nothing ran, it starts and ends at that step', () => {
    const { r } = resultOf(
      { outcome: 'complete', run: 'run-a', step: 50, pathInRepo: 'final', launched: false, evidence: 'store' },
      { startStep: null, pushedSteps: [] },
    );
    expect(r).toMatchObject({ status: 'complete', exit_code: 0, start_step: 50, final_step: 50, final_pushed: false });
    expect(r.trainer).toBeNull();
  });

  it('a segment names its reason, the step it saved and the horizon; exit 75', () => {
    const { r } = resultOf({
      outcome: 'segment-saved',
      run: 'run-a',
      step: 40,
      stopReason: 'time limit 1m reached',
      trainerExit: 0,
      trainerKilled: false,
      horizon: { step: 40, horizon: 100 },
    });
    expect(r).toMatchObject({ ok: true, status: 'segment', exit_code: 75, final_step: 40, horizon: 100 });
    expect(r.session_end).toMatchObject({ reason: 'time-limit', saved_step: 40 });
    expect(r.trainer).toEqual({ exit_code: 0, signal: null, killed: false, error: null });
  });

  it("a failed trainer's code is the exit code, the store's newest step the final step", () => {
    const { r } = resultOf({
      outcome: 'trainer-failed',
      run: 'run-a',
      exitCode: 3,
      trainerError: 'boom',
      pushedStep: 30,
      message: 'the trainer exited 3',
    });
    expect(r).toMatchObject({ ok: false, status: 'failed', exit_code: 3, final_step: 30 });
    expect(r.trainer).toEqual({ exit_code: 3, signal: null, killed: false, error: 'boom' });
    // Nothing pushed this session: the step it resumed from is still the store's newest, else none.
    const failed: SuperviseOutcome = {
      outcome: 'trainer-failed',
      run: 'r',
      exitCode: 1,
      trainerError: null,
      pushedStep: null,
      message: 'm',
    };
    expect(resultOf(failed).r.final_step).toBe(20);
    expect(resultOf(failed, { startStep: null }).r.final_step).toBeNull();
  });

  it('interrupted before the launch: failed with the interrupted code, nothing pushed', () => {
    const { r } = resultOf({ outcome: 'not-launched', run: 'run-a' }, { startStep: null, pushedSteps: [] });
    expect(r).toMatchObject({ ok: false, status: 'failed', exit_code: 130, start_step: 0, final_step: null });
  });
});
