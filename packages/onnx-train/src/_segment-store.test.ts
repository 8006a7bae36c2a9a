import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { resolveStore } from './_segment-store';
import { defineGptSpec } from './gpt-spec';

const spec = defineGptSpec({ vocabSize: 32, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 1 });

describe('the segmented step’s store options', () => {
  it.each(['data', true, false] as const)(
    'offload.fsync %s opens a disk store that round-trips and leaves nothing',
    (fsync) => {
      const cwd = useTempDir('soup-i15-segstore-');
      const r = resolveStore({ spec, offload: { target: 'disk', saveDir: 'acts', cwd, fsync, anonymousFiles: false } });
      expect(r.target).toBe('disk');
      const store = r.open();
      const h = store.pack({ dtype: 'float32', dims: [4], data: Float32Array.of(1, 2, 3, 4) });
      expect(readdirSync(join(cwd, 'acts'))).toHaveLength(1);
      expect(Array.from(store.unpack(h).data as Float32Array)).toEqual([1, 2, 3, 4]);
      store.close();
      expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    },
  );

  it('anonymous scratch files by default (Linux): nothing named in the save dir, even while packed', () => {
    const cwd = useTempDir('soup-i15-segstore-');
    const store = resolveStore({ spec, offload: { target: 'disk', saveDir: 'acts', cwd } }).open();
    const h = store.pack({ dtype: 'float32', dims: [2], data: Float32Array.of(5, 6) });
    expect(store.usesAnonymousFiles).toBe(process.platform === 'linux');
    if (process.platform === 'linux') expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    expect(Array.from(store.unpack(h).data as Float32Array)).toEqual([5, 6]);
    store.close();
    expect(() =>
      resolveStore({ spec, offload: { target: 'disk', saveDir: 'acts', cwd, anonymousFiles: 'yes' as never } }),
    ).toThrow(/offload\.anonymousFiles must be true or false/);
  });

  it('refuses an unknown fsync value, naming the field', () => {
    const cwd = useTempDir('soup-i15-segstore-');
    expect(() =>
      resolveStore({ spec, offload: { target: 'disk', saveDir: 'acts', cwd, fsync: 'always' as never } }),
    ).toThrow(/offload\.fsync must be 'data', true or false/);
  });
});
