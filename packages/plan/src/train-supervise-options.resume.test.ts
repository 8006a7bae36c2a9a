import { describe, expect, it } from 'vitest';
import { trainResumeOf } from './train-supervise-options';

describe("soup train's --resume", () => {
  it('auto and never as they are (auto when absent); force refused with why and what to do', () => {
    expect(trainResumeOf(undefined)).toEqual({ resume: 'auto', refusal: null });
    expect(trainResumeOf('never')).toEqual({ resume: 'never', refusal: null });
    const force = trainResumeOf('force');
    expect(force.resume).toBeNull();
    expect(force.refusal).toMatch(/^--resume force: soup train cannot continue another run's checkpoints .*--repo/);
  });
});
