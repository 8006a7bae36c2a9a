import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localCheckpointStep } from './local-checkpoint-step';

function folder(state: string | null): string {
  const dir = join(useTempDir('soup-step-'), 'checkpoint-999');
  mkdirSync(dir, { recursive: true });
  if (state !== null) writeFileSync(join(dir, 'trainer_state.json'), state);
  return dir;
}

describe('localCheckpointStep', () => {
  it("global_step (Hugging Face Trainer), else step (soup), never the folder's name", () => {
    expect(localCheckpointStep({ dir: folder('{"global_step": 120, "step": 7}') })).toBe(120);
    expect(localCheckpointStep({ dir: folder('{"step": 7}') })).toBe(7);
    expect(localCheckpointStep({ dir: folder('{"global_step": 0}') })).toBe(0);
  });

  it('null when the step is missing, not an integer ≥ 0, or the file is missing or not JSON', () => {
    for (const state of [null, '', 'not json', 'null', '[]', '{}', '{"global_step": -1}', '{"global_step": 1.5}'])
      expect(localCheckpointStep({ dir: folder(state) }), String(state)).toBeNull();
    expect(localCheckpointStep({ dir: folder('{"global_step": "12"}') })).toBeNull();
    expect(localCheckpointStep({ dir: join(useTempDir('soup-step-'), 'nowhere') })).toBeNull();
  });
});
