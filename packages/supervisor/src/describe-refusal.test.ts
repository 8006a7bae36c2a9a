import { DirStore, CorruptCheckpointError, StaleRunError } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeRefusal, diffIdentity } from './describe-refusal';

describe('describeRefusal', () => {
  it('says what changed between the stored run and this one, and what to do', async () => {
    const root = useTempDir();
    mkdirSync(join(root, 'ckpt/checkpoint-4'), { recursive: true });
    writeFileSync(join(root, 'latest.json'), JSON.stringify({ path_in_repo: 'ckpt/checkpoint-4' }));
    writeFileSync(join(root, 'ckpt/checkpoint-4/soup_run.json'), JSON.stringify({ identity: { lr: 0.1, seed: 1 } }));
    const store = new DirStore({ root });
    const stale = new StaleRunError({ pointerRun: 'old', pointerStep: 4, run: 'new', where: root });
    const message = await describeRefusal(stale, {
      store,
      run: 'new',
      identity: { lr: 0.2, seed: 1 },
      fallbackFlag: '--resume auto',
      repoFlag: '--repo',
    });
    expect(message).toBe(
      `resume refused as stale: ${store.description} holds run old (step 4), not this run new; changed: lr 0.1 → ` +
        '0.2. A changed run needs its own checkpoints: pass a new --repo, or restore the old run to resume it.',
    );
    expect(
      await describeRefusal(new Error('x'), { store, run: 'new', identity: null, fallbackFlag: 'f', repoFlag: 'r' }),
    ).toBeNull();
  });

  it('offers the fallback for a corrupt checkpoint only when it was not already tried', async () => {
    const store = new DirStore({ root: useTempDir() });
    const corrupt = new CorruptCheckpointError('checkpoint-4 fails its manifest. Refusing to resume from it.', {
      pathInRepo: 'ckpt/checkpoint-4',
      problems: ['x'],
    });
    const o = { store, run: 'r', identity: null, fallbackFlag: '--resume force', repoFlag: '--repo' };
    expect(await describeRefusal(corrupt, o)).toBe(
      'resume refused, corrupt checkpoint: checkpoint-4 fails its manifest. Use --resume force to resume from the ' +
        'newest checkpoint that verifies and pulls cleanly instead.',
    );
    expect(await describeRefusal(corrupt, { ...o, fallbackUsed: true })).toMatch(
      /Every checkpoint of this run was tried/,
    );
  });
});

describe('diffIdentity', () => {
  it('names each changed field, a sha256 shortened', () => {
    const h = (c: string) => c.repeat(64);
    expect(diffIdentity({ a: 1, f: h('a'), same: 'x' }, { a: 2, f: h('b'), same: 'x', n: true })).toEqual([
      'a 1 → 2',
      `f ${h('a').slice(0, 12)}… → ${h('b').slice(0, 12)}…`,
      'n undefined → true',
    ]);
  });
});
