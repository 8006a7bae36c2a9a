import { describe, expect, it } from 'vitest';
import { judgeHorizon } from './horizon';

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
});
