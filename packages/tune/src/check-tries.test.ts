import { describe, expect, it } from 'vitest';
import { checkTries } from './check-tries';

const command = 'python train.py --bs {micro_batch_size} --ckpt {grad_ckpt} --steps {probe_steps}';
const ok = { tries: ['grad_ckpt=true,false'], timeSteps: 4, globalBatchSize: 32, command };

describe('checkTries: --try with the flags it needs', () => {
  it('no --try and no --time-steps: nothing to check; --time-steps alone is refused', () => {
    const none = { tries: undefined, timeSteps: undefined, globalBatchSize: undefined, command: undefined };
    expect(checkTries(none)).toEqual({ tries: {}, errors: [] });
    expect(checkTries({ ...none, timeSteps: 4 }).errors).toEqual([
      '--time-steps applies to --try (the timing runs of the tuner)',
    ]);
  });

  it('refuses --try without a global batch, without a command, or with a command that takes no step count', () => {
    expect(checkTries({ ...ok, globalBatchSize: undefined }).errors).toEqual([
      '--try needs --global-batch-size G: the tuner compares samples per second at a fixed global batch',
    ]);
    expect(checkTries({ ...ok, command: undefined }).errors).toEqual([
      '--try needs --probe "<the trainer\'s command with {micro_batch_size}, {probe_steps} and each {NAME}>": ' +
        'soup times it per configuration',
    ]);
    const untimed = 'python train.py --bs {micro_batch_size} --ckpt {grad_ckpt}';
    expect(checkTries({ ...ok, command: untimed, commandName: 'the --probe command' }).errors).toEqual([
      '--try times the trainer: put {probe_steps} in the --probe command where it takes the number of training ' +
        'steps (soup runs 1, 1 + K and 1 + 2K)',
    ]);
  });

  it("returns parseTries' levers, or its refusals", () => {
    expect(checkTries(ok)).toEqual({ tries: { grad_ckpt: ['true', 'false'] }, errors: [] });
    expect(checkTries({ ...ok, tries: ['lr=1,2'] }).errors).toEqual([
      '--try lr: the command has no {lr} to fill; put it where the trainer takes that setting',
    ]);
  });

  it("with the trainer's argv, a lever it does not take is refused: the choice would not reach the run", () => {
    expect(checkTries({ ...ok, argv: ['python', 'train.py', '--ckpt', '{grad_ckpt}'] }).errors).toEqual([]);
    expect(checkTries({ ...ok, argv: ['python', 'train.py'] }).errors).toEqual([
      '--try grad_ckpt: the trainer command has no {grad_ckpt}, so the choice would not reach the run; put ' +
        '{grad_ckpt} where the trainer takes that setting',
    ]);
  });

  it('--steps-pattern and --steps-file apply to --try, and are refused in words when they cannot count steps', () => {
    const none = { tries: undefined, timeSteps: undefined, globalBatchSize: undefined, command: undefined };
    expect(checkTries({ ...none, steps: { pattern: 'step (\\d+)' } }).errors).toEqual([
      '--steps-pattern applies to --try (the timing runs of the tuner)',
    ]);
    expect(checkTries({ ...none, steps: { file: 'out' } }).errors).toEqual([
      '--steps-file applies to --try (the timing runs of the tuner)',
    ]);
    expect(checkTries({ ...ok, steps: { pattern: 'step (\\d+)', file: 'out' } }).errors).toEqual([]);
    expect(checkTries({ ...ok, steps: { pattern: 'step \\d+' } }).errors).toEqual([
      "--steps-pattern 'step \\d+': it has no capture group: put the step number in one, e.g. 'step (\\d+)'",
    ]);
    expect(checkTries({ ...ok, steps: { file: '../out' } }).errors).toEqual([
      "--steps-file '../out': give a path inside the working directory (the trainer's output folder or its " +
        'trainer_state.json, e.g. out/), never one out of it',
    ]);
  });
});
