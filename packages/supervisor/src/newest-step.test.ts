import { describe, expect, it } from 'vitest';
import { trackNewestStep } from './newest-step';

describe('trackNewestStep', () => {
  it(
    'reads the step from output lines split across chunks, launcher prefixes and checkpoints; "60 steps" is ' +
      'no step',
    () => {
      const t = trackNewestStep();
      expect(t.step).toBeNull();
      t.output('trainer: fresh start, batch 8, 60 steps\nstep 1 loss 5.5\nste');
      expect(t.step).toBe(1);
      t.output('p 2 loss 5.4\n[rank0]: {"global_step": 3, "loss": 5.2}\n');
      expect(t.step).toBe(3);
      t.checkpoint(2);
      expect(t.step).toBe(3);
      t.checkpoint(5);
      expect(t.step).toBe(5);
      // A relaunched trainer reports from its resume step again: the last report wins.
      t.output('trainer: resumed from out/checkpoint-4 at step 4\nStep 5/12\n');
      expect(t.step).toBe(5);
      t.output('epoch=0-step=6.ckpt saved\n');
      expect(t.step).toBe(6);
    },
  );
});
