import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidCheckpointOptionError } from './errors';
import { localCheckpoint } from './local-checkpoint';

describe('localCheckpoint', () => {
  it("the absolute folder, and the step given, else its trainer_state.json's", () => {
    const cwd = useTempDir('soup-local-ckpt-');
    mkdirSync(join(cwd, 'out', 'checkpoint-9'), { recursive: true });
    writeFileSync(join(cwd, 'out', 'checkpoint-9', 'trainer_state.json'), '{"global_step": 120}');
    expect(localCheckpoint({ dir: 'out/checkpoint-9', cwd })).toEqual({
      dir: join(cwd, 'out', 'checkpoint-9'),
      step: 120,
    });
    expect(localCheckpoint({ dir: 'out/checkpoint-9', cwd, step: 7 })).toEqual({
      dir: join(cwd, 'out', 'checkpoint-9'),
      step: 7,
    });
    // A step given is taken as is, even for a folder with no trainer_state.json.
    expect(localCheckpoint({ dir: 'out', cwd, step: 0 }).step).toBe(0);
  });

  it('refuses a path that is no folder, and a folder with no step, naming the path as given', () => {
    const cwd = useTempDir('soup-local-ckpt-');
    writeFileSync(join(cwd, 'file'), 'x');
    mkdirSync(join(cwd, 'bare'));
    for (const dir of ['nope', 'file']) {
      const err = (() => {
        try {
          localCheckpoint({ dir, cwd, step: 1 });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(InvalidCheckpointOptionError);
      expect(err).toMatchObject({ field: 'dir', message: `${dir} is not a checkpoint folder (no such directory)` });
    }
    expect(() => localCheckpoint({ dir: 'bare', cwd })).toThrow(
      'bare has no trainer_state.json with a global_step: pass its step',
    );
    expect(() => localCheckpoint({ dir: 'bare', cwd, stepFlag: '--step N' })).toThrow(
      expect.objectContaining({
        field: 'step',
        message: 'bare has no trainer_state.json with a global_step: pass --step N',
      }),
    );
  });
});
