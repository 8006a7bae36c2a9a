// A push to a directory store copies each file into the store's staging in the pass that hashes it for the manifest.
// A source written to after that read and before the commit point (a trainer still writing) fails the push there,
// before any file lands: the store never holds a folder whose manifest disagrees with its bytes, nor one at all.
import { closeSync, openSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { DirStore } from './dir-store';
import { InvalidCheckpointOptionError } from './errors';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore } from './_test-helpers';
import type { StoreCommitParams } from './types';

const RUN = 'run-written';

describe('directory store: a source written to while it is pushed', () => {
  it('fails the push before the commit point, naming the file; no folder, no pointer, no staging left', async () => {
    const t = await makeTestStore('dir');
    const ck = writeCheckpoint({ root: t.work, step: 7, run: RUN });
    const inner = new DirStore({ root: t.location });
    const landed: string[] = [];
    const store = Object.assign(Object.create(inner) as DirStore, {
      description: inner.description,
      commit: async (params: StoreCommitParams): Promise<void> => {
        if (params.operations.some((op) => 'localPath' in op)) {
          // The trainer rewrites three bytes of the model in place (same size) after the manifest hashed it.
          const fd = openSync(join(ck.dir, 'model.safetensors'), 'r+');
          writeSync(fd, Buffer.from([1, 2, 3]), 0, 3, 100);
          closeSync(fd);
        }
        await inner.commit({
          ...params,
          onProgress: async (ev) => {
            if (ev.stage === 'file') landed.push(ev.path);
            await params.onProgress?.(ev);
          },
        });
      },
    });
    const err = await pushCheckpoint({ store, step: 7, dir: ck.dir, run: RUN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidCheckpointOptionError);
    expect((err as Error).message).toMatch(/model\.safetensors was written to while being pushed/);
    expect(landed).toEqual([]);
    expect(await inner.readFile({ path: 'latest.json' })).toBeNull();
    expect(await inner.list({ prefix: 'ckpt' })).toEqual([]);
    expect(readdirSync(join(t.location, '.soup-staging'))).toEqual([]);
  });
});
