// The sources a trainer may import join its batch-cache key: an edit in an imported module is a new
// key, the sources are listed in the provenance, and past the bound the key is "unknown" and nothing
// is cached (a real search over a real child, whose answer is not saved).
import { listCacheEntries } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveTrainerBatch } from './trainer-batch';
import { trainerCacheBase } from './trainer-files';
import { cpuTrainerOptions } from './_test-trainer';

function tree(files: Record<string, string>): string {
  const cwd = useTempDir('soup-plan-sources-');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(cwd, name, '..'), { recursive: true });
    writeFileSync(join(cwd, name), text);
  }
  return cwd;
}

describe('trainerCacheBase: the sources a trainer may import', () => {
  it('Python: the .py files under the script folder and a PYTHONPATH folder in the tree, not caches or runs', () => {
    const cwd = tree({
      'src/train.py': 'import model\n',
      'src/model.py': 'W = 1\n',
      'src/layers/attn.py': 'A = 1\n',
      'src/__pycache__/model.cpython-311.py': 'stale\n',
      'src/.venv/lib.py': 'env\n',
      'src/out/checkpoint-5/modeling_x.py': 'remote code a checkpoint saved\n',
      'src/wandb/run-1/files/code/train.py': 'a copy wandb saved\n',
      'src/notes.txt': 'not a source\n',
      'lib/util.py': 'U = 1\n',
      'other/skip.py': 'not on the path\n',
    });
    const command = 'python3 src/train.py --bs {batch_size}';
    const env = { PYTHONPATH: `lib:/usr/lib/python3/dist-packages` };
    const before = trainerCacheBase(command, { cwd, env });
    expect(Object.keys(before.files).sort()).toEqual([
      'lib/util.py',
      'src/layers/attn.py',
      'src/model.py',
      'src/train.py',
    ]);
    expect(before.unknown).toBeNull();
    expect(before.base).toMatch(
      /^exec:python3 src\/train\.py --bs \{batch_size\} files:src\/train\.py@[0-9a-f]{12} src:3@/,
    );

    // An edit in an imported module (or in a PYTHONPATH folder) is a new base; one elsewhere is not.
    writeFileSync(join(cwd, 'other/skip.py'), 'edited\n');
    expect(trainerCacheBase(command, { cwd, env }).base).toBe(before.base);
    writeFileSync(join(cwd, 'src/model.py'), 'W = 2\n');
    const edited = trainerCacheBase(command, { cwd, env });
    expect(edited.base).not.toBe(before.base);
    expect(edited.files['src/model.py']).not.toBe(before.files['src/model.py']);
    writeFileSync(join(cwd, 'lib/util.py'), 'U = 2\n');
    expect(trainerCacheBase(command, { cwd, env }).base).not.toBe(edited.base);
  });

  it('Node: .js/.mjs/.cjs/.ts beside the script; a single-file trainer keeps the base it had', () => {
    const cwd = tree({ 'train.mjs': "import './model.mjs';\n", 'model.mjs': 'export const W = 1;\n', 'x.py': '' });
    const command = 'node train.mjs --bs {batch_size}';
    const r = trainerCacheBase(command, { cwd, env: {} });
    expect(Object.keys(r.files).sort()).toEqual(['model.mjs', 'train.mjs']);
    expect(r.base).toMatch(/ src:1@[0-9a-f]{12}$/);
    const alone = tree({ 'train.mjs': 'process.exit(0);\n' });
    expect(trainerCacheBase(command, { cwd: alone, env: {} }).base).toMatch(
      /^exec:node train\.mjs --bs \{batch_size\} files:train\.mjs@[0-9a-f]{12}$/,
    );
  });

  it('over 2,000 source files: unknown, and a real search answers without caching, saying why', async () => {
    const cwd = useTempDir('soup-plan-sources-');
    writeFileSync(join(cwd, 'train.mjs'), 'setTimeout(() => {}, 50);\n');
    mkdirSync(join(cwd, 'gen'));
    for (let i = 0; i <= 2000; i++) writeFileSync(join(cwd, 'gen', `m${i}.mjs`), '');
    const command = `${process.execPath} train.mjs --bs {batch_size}`;
    const b = trainerCacheBase(command, { cwd, env: {} });
    expect(b.unknown).toMatch(/^over 2000 source files under /);

    const trainer = cpuTrainerOptions(cwd);
    const search = { refresh: false, noCache: false, cacheExceptionsOnly: true, predict: false };
    const r = await resolveTrainerBatch({ ...trainer, ...search, command, start: 2, ceiling: 2 });
    expect(r.resolution).toMatchObject({ batchSize: 2, source: 'probe', saved: false });
    expect(r.resolution.notSavedReason).toMatch(/^over 2000 source files under /);
    expect(await listCacheEntries({ env: trainer.env, cwd })).toEqual([]);
    expect(existsSync(join(cwd, 'cache.json'))).toBe(false);
  });
});
