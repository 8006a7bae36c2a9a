import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { judgeHorizon, readTrainerState } from './horizon';

describe('complete-run rule', () => {
  it("a known horizon must be reached; without one the trainer's own exit 0 is the end", () => {
    expect(judgeHorizon({ states: [{ globalStep: 173, maxSteps: 1000 }], checkpointStep: 173, horizon: null })).toEqual(
      { complete: false, step: 173, horizon: 1000, evidence: 'horizon-not-reached' },
    );
    expect(
      judgeHorizon({ states: [{ globalStep: 1000, maxSteps: 1000 }], checkpointStep: 1000, horizon: null }),
    ).toMatchObject({ complete: true, evidence: 'horizon-reached' });
    // --horizon wins over trainer_state.json; a file checkpoint's step (no trainer_state) counts.
    expect(
      judgeHorizon({ states: [{ globalStep: null, maxSteps: null }], checkpointStep: 40, horizon: 60 }),
    ).toMatchObject({ complete: false, step: 40, horizon: 60 });
    expect(
      judgeHorizon({ states: [{ globalStep: null, maxSteps: null }], checkpointStep: null, horizon: 60 }),
    ).toMatchObject({ complete: false, evidence: 'step-unknown' });
    expect(
      judgeHorizon({ states: [{ globalStep: null, maxSteps: null }], checkpointStep: null, horizon: null }),
    ).toMatchObject({ complete: true, evidence: 'trainer-done' });
  });

  it('a trainer that stops early by design is done: should_training_stop in the newest state, or its marker', () => {
    const dir = useTempDir('soup-horizon-');
    // HF's EarlyStoppingCallback: the TrainerControl saved in trainer_state.json's stateful_callbacks.
    const control = {
      TrainerControl: { args: { should_training_stop: true }, attributes: {} },
      EarlyStoppingCallback: {
        args: { early_stopping_patience: 3, early_stopping_threshold: 0 },
        attributes: { early_stopping_patience_counter: 3 },
      },
    };
    writeFileSync(
      join(dir, 'trainer_state.json'),
      JSON.stringify({ global_step: 6, max_steps: 20, stateful_callbacks: control }),
    );
    const stopped = readTrainerState(dir);
    expect(stopped).toMatchObject({ globalStep: 6, maxSteps: 20, stopped: true });
    expect(judgeHorizon({ states: [stopped], checkpointStep: 6, horizon: null })).toEqual({
      complete: true,
      step: 6,
      horizon: 20,
      evidence: 'trainer-stopped',
    });
    // Only the newest state counts: a stop an older checkpoint recorded does not end a run that went on.
    expect(
      judgeHorizon({ states: [stopped, { globalStep: 8, maxSteps: 20 }], checkpointStep: 8, horizon: null }),
    ).toMatchObject({ complete: false, evidence: 'horizon-not-reached' });
    // A trainer's own SIGTERM handler sets should_training_stop to save and leave (as soup's README callback does):
    // without EarlyStoppingCallback having fired, that is a session end, not the end of the run.
    for (const callbacks of [
      { TrainerControl: control.TrainerControl },
      {
        ...control,
        EarlyStoppingCallback: { ...control.EarlyStoppingCallback, attributes: { early_stopping_patience_counter: 1 } },
      },
    ]) {
      writeFileSync(
        join(dir, 'trainer_state.json'),
        JSON.stringify({ global_step: 6, max_steps: 20, should_training_stop: true, stateful_callbacks: callbacks }),
      );
      const signalled = readTrainerState(dir);
      expect(signalled.stopped).toBe(false);
      expect(judgeHorizon({ states: [signalled], checkpointStep: 6, horizon: null })).toMatchObject({
        complete: false,
        evidence: 'horizon-not-reached',
      });
    }
    expect(
      judgeHorizon({ states: [{ globalStep: 8, maxSteps: 20 }], checkpointStep: 8, horizon: null, doneMarker: true }),
    ).toMatchObject({ complete: true, step: 8, evidence: 'done-marker' });
  });
});
