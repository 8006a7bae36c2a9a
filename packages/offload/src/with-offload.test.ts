import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import type { ActivationStore } from './activation-store';
import { currentActivationStore } from './current-activation-store';
import { OffloadConfigError, StoreClosedError } from './errors';
import type { OffloadTensor } from './types';
import { withOffload } from './with-offload';

const tensor = (n: number, fill: number): OffloadTensor => ({
  dtype: 'float32',
  dims: [n],
  data: new Float32Array(n).fill(fill),
});

describe('withOffload', () => {
  test('installs a store for the duration, returns fn’s value, leaves no file', async () => {
    const cwd = useTempDir();
    expect(currentActivationStore()).toBeUndefined();
    let seen: ActivationStore | undefined;
    const result = await withOffload(
      'disk',
      'acts',
      async (store) => {
        seen = store;
        await new Promise((r) => setTimeout(r, 1));
        expect(currentActivationStore()).toBe(store); // across awaits
        const kept = store.pack(tensor(64, 1));
        await store.packAsync(tensor(64, 2)); // never unpacked: close() must remove it
        expect(readdirSync(join(cwd, 'acts'))).toHaveLength(2);
        return (store.unpack(kept).data as Float32Array)[0];
      },
      { cwd },
    );
    expect(result).toBe(1);
    expect(seen?.closed).toBe(true);
    expect(currentActivationStore()).toBeUndefined();
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    expect(seen?.stats).toMatchObject({ filesWritten: 2, filesDeleted: 2, diskBytes: 0 });
  });

  test('a throw inside fn is rethrown as is and every file is deleted', async () => {
    const cwd = useTempDir();
    const boom = new Error('backward failed');
    let store: ActivationStore | undefined;
    await expect(
      withOffload(
        'disk',
        'acts',
        (s) => {
          store = s;
          for (let i = 0; i < 4; i += 1) s.pack(tensor(128, i));
          throw boom;
        },
        { cwd },
      ),
    ).rejects.toBe(boom);
    expect(store?.closed).toBe(true);
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
  });

  test(
    'an abort mid-way rejects with the reason at once and leaves nothing, even after fn’s pending ' + 'work settles',
    async () => {
      const cwd = useTempDir();
      const controller = new AbortController();
      let finishFn!: () => void;
      const fnDone = new Promise<void>((r) => (finishFn = r));
      let lateError: unknown;
      const run = withOffload(
        'disk',
        'acts',
        async (store) => {
          for (let i = 0; i < 3; i += 1) await store.packAsync(tensor(256, i));
          controller.abort(new Error('session ending'));
          // fn keeps going after the abort, like a step that does not watch the signal
          try {
            await new Promise((r) => setTimeout(r, 5));
            await store.packAsync(tensor(256, 9));
          } catch (err) {
            lateError = err;
          }
          finishFn();
        },
        { cwd, signal: controller.signal },
      );
      await expect(run).rejects.toThrow('session ending');
      expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
      await fnDone;
      expect(lateError).toBeInstanceOf(StoreClosedError);
      expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    },
  );

  test('an already aborted signal rejects before any store or dir is made', async () => {
    const cwd = useTempDir();
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    let called = false;
    await expect(
      withOffload('disk', 'acts', () => (called = true), { cwd, signal: controller.signal }),
    ).rejects.toThrow('too late');
    expect(called).toBe(false);
    expect(existsSync(join(cwd, 'acts'))).toBe(false);
  });

  test('target null means no offloading: a keep store that hands back the same tensor', async () => {
    const t = tensor(4, 3);
    const back = await withOffload(null, null, (store) => {
      expect(store.target).toBe('keep');
      return store.unpack(store.pack(t));
    });
    expect(back).toBe(t);
  });

  test("'cpu' copies into host memory; nested withOffload installs the inner store", async () => {
    await withOffload('cpu', undefined, async (outer) => {
      await withOffload('keep', undefined, async (inner) => {
        expect(currentActivationStore()).toBe(inner);
      });
      expect(currentActivationStore()).toBe(outer);
      const h = outer.pack(tensor(10, 5));
      expect(outer.stats.residentBytes).toBe(40);
      expect(outer.unpack(h).data[0]).toBe(5);
    });
  });

  test('bad target, disk without save dir, and escaping save dirs are refused before fn runs', async () => {
    const cwd = useTempDir();
    let called = false;
    const fn = (): void => {
      called = true;
    };
    await expect(withOffload('gpu' as 'cpu', null, fn)).rejects.toBeInstanceOf(OffloadConfigError);
    await expect(withOffload('disk', null, fn, { cwd })).rejects.toThrow(/requires save_dir/);
    await expect(withOffload('disk', '../out', fn, { cwd })).rejects.toThrow(/outside the working directory/);
    expect(called).toBe(false);
  });
});
