import { describe, expect, it } from 'vitest';
import { parseTries } from './parse-tries';

const command = 'python train.py --bs {micro_batch_size} --ckpt {grad_ckpt} --opt {optim} --steps {probe_steps}';

describe('parseTries: --try NAME=v1,v2 checked against the command it fills', () => {
  it('keeps the levers and their values in order', () => {
    expect(parseTries(['grad_ckpt=true,false', 'optim=adamw,sgd'], command)).toEqual({
      tries: { grad_ckpt: ['true', 'false'], optim: ['adamw', 'sgd'] },
      errors: [],
    });
  });

  it(
    'refuses a malformed value, a placeholder soup fills, a lever twice, empty or repeated values, a lever the ' +
      'command lacks',
    () => {
      const r = parseTries(
        ['grad_ckpt', 'micro_batch_size=1,2', 'optim=a,b', 'optim=c', 'grad_ckpt=x,,y', 'grad_ckpt=x,x', 'lr=1,2'],
        command,
      );
      expect(r.tries).toEqual({ optim: ['a', 'b'] });
      expect(r.errors).toEqual([
        '--try "grad_ckpt": expected NAME=v1,v2,… (e.g. --try grad_ckpt=true,false)',
        '--try micro_batch_size: {micro_batch_size} is filled by soup itself; ' +
          "name the trainer's own lever (e.g. grad_ckpt)",
        '--try optim given twice: list every value once, e.g. --try optim=a,b',
        '--try grad_ckpt=x,,y: values must be non-empty and distinct',
        '--try grad_ckpt=x,x: values must be non-empty and distinct',
        '--try lr: the command has no {lr} to fill; put it where the trainer takes that setting',
      ]);
    },
  );
});
