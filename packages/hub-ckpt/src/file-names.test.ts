// File names that mean something in a URL (`#`, `?`, `%20`, `&`, `=`, `+`) or hold a tab: a push verifies them,
// a pull brings them back byte for byte, on both stores. The Hub accepts such names (a `?` in a folder of
// bigscience/bloomz-3b, `c#` in a dataset), so a store that cannot round-trip them loses a checkpoint.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pullCheckpoint } from './pull-checkpoint';
import { pushCheckpoint } from './push-checkpoint';
import { verifyCheckpoint } from './verify-checkpoint';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

const RUN = 'run-names';
const NAMES = ['a#b?c%20d&e=f+g.txt', 'tab\there.txt', 'sub#1/x?y.safetensors', 'w%2Fz+1.json'];

describe.each(STORE_KINDS)('file names with URL characters and tabs on the %s store', (kind) => {
  it('push → verify → pull round-trips every byte under the same names', async () => {
    const t = await makeTestStore(kind);
    const dir = join(t.work, 'checkpoint-5');
    const want = new Map<string, Buffer>();
    for (const [i, name] of NAMES.entries()) {
      const file = join(dir, ...name.split('/'));
      mkdirSync(join(file, '..'), { recursive: true });
      const bytes = Buffer.from(`${name}\n${'x'.repeat(i * 100)}\n`);
      writeFileSync(file, bytes);
      want.set(name, bytes);
    }
    writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: 5 }));
    const pushed = await pushCheckpoint({ store: t.store, step: 5, dir, run: RUN });
    expect(pushed.fileCount).toBe(NAMES.length + 1);

    const again = await verifyCheckpoint({
      store: t.reopen(),
      pathInRepo: pushed.pathInRepo,
      expectedManifestSha256: pushed.manifestSha256,
    });
    expect(again.problems).toEqual([]);
    expect(again.ok).toBe(true);

    const into = join(t.work, 'pulled');
    await pullCheckpoint({ store: t.reopen(), pathInRepo: pushed.pathInRepo, dir: into });
    for (const [name, bytes] of want) expect(readFileSync(join(into, ...name.split('/')))).toEqual(bytes);
  });
});
