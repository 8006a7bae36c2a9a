import {
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  mkdirSync,
  symlinkSync,
  existsSync,
} from 'node:fs';
import { join } from 'node:path';
import { runNode, runProcess, useTempDir } from '@soup/test-utils';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { STORE_CHILD, TSX_IMPORT } from './_fixtures/paths';
import { ActivationStore } from './activation-store';
import {
  HandleError,
  OffloadConfigError,
  ScratchFileCorruptError,
  ScratchFileMissingError,
  StoreClosedError,
  TensorFormatError,
} from './errors';
import type { OffloadTarget, OffloadTensor, TensorDtype } from './types';

const CTOR = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
} as const;
const DTYPES = Object.keys(CTOR) as TensorDtype[];

/** A tensor of `dtype` whose bytes are `raw` (any bit pattern, NaN payloads included), as a view at an offset. */
function tensorFromBytes(dtype: TensorDtype, raw: Uint8Array, dims?: number[]): OffloadTensor {
  const ctor = CTOR[dtype];
  const size = ctor.BYTES_PER_ELEMENT;
  const count = Math.floor(raw.byteLength / size);
  // place the data 2 elements into a bigger buffer so views with a byteOffset are exercised
  const backing = new ArrayBuffer((count + 3) * size);
  new Uint8Array(backing, 2 * size, count * size).set(raw.subarray(0, count * size));
  const data = new ctor(backing, 2 * size, count);
  if (dtype === 'bool') for (let i = 0; i < data.length; i += 1) (data as Uint8Array)[i] = raw[i]! & 1;
  return { dtype, dims: dims ?? [count], data } as OffloadTensor;
}

function bytesOf(t: OffloadTensor): Buffer {
  return Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

function openStore(
  target: OffloadTarget,
  cwd: string,
  extra: Partial<ConstructorParameters<typeof ActivationStore>[0]> = {},
): ActivationStore {
  const store = new ActivationStore({ target, saveDir: 'acts', cwd, ...extra });
  return store;
}

describe('ActivationStore round trips', () => {
  for (const target of ['keep', 'cpu', 'disk'] as const) {
    for (const mode of ['sync', 'async'] as const) {
      test(`${target} (${mode}): every dtype comes back byte-identical`, async () => {
        const cwd = useTempDir();
        const store = openStore(target, cwd);
        try {
          await fc.assert(
            fc.asyncProperty(
              fc.constantFrom(...DTYPES),
              fc.uint8Array({ minLength: 0, maxLength: 96 }),
              async (dtype, raw) => {
                const tensor = tensorFromBytes(dtype, raw);
                const expected = Buffer.from(bytesOf(tensor)); // snapshot
                const handle = mode === 'sync' ? store.pack(tensor) : await store.packAsync(tensor);
                expect(handle.byteLength).toBe(expected.byteLength);
                expect(handle.location).toBe(target === 'disk' ? 'disk' : 'memory');
                const back = mode === 'sync' ? store.unpack(handle) : await store.unpackAsync(handle);
                expect(back.dtype).toBe(dtype);
                expect(back.dims).toEqual(tensor.dims);
                expect(back.data).toBeInstanceOf(CTOR[dtype]);
                expect(bytesOf(back).equals(expected)).toBe(true);
                if (target === 'keep') expect(back).toBe(tensor);
                else expect(back.data.buffer).not.toBe(tensor.data.buffer);
              },
            ),
            { numRuns: 60 },
          );
          expect(store.size).toBe(0);
          if (target === 'disk') expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
        } finally {
          store.close();
        }
      });
    }
  }

  test('multi-dimensional, scalar and empty tensors keep their dims', () => {
    const cwd = useTempDir();
    const store = openStore('disk', cwd);
    const cases: OffloadTensor[] = [
      { dtype: 'float32', dims: [2, 3, 4], data: Float32Array.from({ length: 24 }, (_, i) => i / 7) },
      { dtype: 'int64', dims: [], data: BigInt64Array.of(-(2n ** 63n)) },
      { dtype: 'float16', dims: [0, 5], data: new Uint16Array(0) },
      { dtype: 'bool', dims: [1, 3], data: Uint8Array.of(1, 0, 1) },
    ];
    const handles = cases.map((t) => store.pack(t));
    handles.reverse().forEach((h, i) => {
      const original = cases[cases.length - 1 - i]!;
      const back = store.unpack(h);
      expect(back.dims).toEqual(original.dims);
      expect(bytesOf(back).equals(bytesOf(original))).toBe(true);
    });
    store.close();
  });

  test('cpu and disk snapshot the data at pack time; keep holds the reference', () => {
    const cwd = useTempDir();
    for (const target of ['cpu', 'disk', 'keep'] as const) {
      const store = openStore(target, cwd);
      const tensor: OffloadTensor = { dtype: 'float64', dims: [3], data: Float64Array.of(1, 2, 3) };
      const handle = store.pack(tensor);
      tensor.data[0] = 99;
      expect(store.unpack(handle).data[0]).toBe(target === 'keep' ? 99 : 1);
      store.close();
    }
  });
});

describe('ActivationStore disk lifecycle', () => {
  test('one exclusive 0600 file per tensor, deleted on unpack; stats count it', () => {
    const cwd = useTempDir();
    const store = openStore('disk', cwd);
    const dir = join(cwd, 'acts');
    expect(store.saveDir).toBe(dir);
    const a = store.pack({ dtype: 'float32', dims: [256], data: new Float32Array(256).fill(1.5) });
    const b = store.pack({ dtype: 'int8', dims: [10], data: new Int8Array(10).fill(-3) });
    const files = readdirSync(dir).sort();
    expect(files).toHaveLength(2);
    for (const f of files) {
      expect(f.startsWith(store.filePrefix)).toBe(true);
      expect(f).toMatch(new RegExp(`^soup-act-${process.pid}-[0-9a-f]{8}-\\d+\\.bin$`));
      expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    }
    expect(files.map((f) => statSync(join(dir, f)).size).sort((x, y) => x - y)).toEqual([10, 1024]);
    expect(store.stats).toMatchObject({
      filesWritten: 2,
      diskBytes: 1034,
      peakDiskBytes: 1034,
      residentBytes: 0,
      bytesPacked: 1034,
    });
    store.unpack(a);
    expect(readdirSync(dir)).toHaveLength(1);
    store.unpack(b);
    expect(readdirSync(dir)).toEqual([]);
    expect(store.stats).toMatchObject({
      tensorsPacked: 2,
      tensorsUnpacked: 2,
      filesDeleted: 2,
      diskBytes: 0,
      peakDiskBytes: 1034,
      peakResidentBytes: 0,
      writeFallbacks: 0,
    });
    store.close();
  });

  test('close() deletes every leftover file and further use throws StoreClosedError', async () => {
    const cwd = useTempDir();
    const store = openStore('disk', cwd);
    const handles = Array.from({ length: 5 }, (_, i) =>
      store.pack({ dtype: 'uint8', dims: [4], data: Uint8Array.of(i, i, i, i) }),
    );
    await store.packAsync({ dtype: 'uint8', dims: [1], data: Uint8Array.of(7) });
    expect(readdirSync(join(cwd, 'acts'))).toHaveLength(6);
    store.close();
    store.close(); // idempotent
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    expect(store.stats).toMatchObject({ filesDeleted: 6, diskBytes: 0 });
    expect(() => store.unpack(handles[0]!)).toThrow(StoreClosedError);
    expect(() => store.pack({ dtype: 'uint8', dims: [1], data: Uint8Array.of(1) })).toThrow(StoreClosedError);
    await expect(store.packAsync({ dtype: 'uint8', dims: [1], data: Uint8Array.of(1) })).rejects.toMatchObject({
      code: 'SOUP_OFFLOAD_STORE_CLOSED',
    });
  });

  test('close() while async packs are in flight leaves no file once they settle', async () => {
    const cwd = useTempDir();
    const store = openStore('disk', cwd);
    const big = { dtype: 'float32', dims: [64 * 1024], data: new Float32Array(64 * 1024).fill(2) } as const;
    const inFlight = Array.from({ length: 16 }, () => store.packAsync(big));
    await new Promise((r) => setImmediate(r));
    store.close();
    const settled = await Promise.allSettled(inFlight);
    expect(settled.some((s) => s.status === 'rejected')).toBe(true);
    for (const s of settled) if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(StoreClosedError);
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
  });

  test(
    "files are created exclusively ('wx'): an existing file with the next name is skipped, never " +
      'overwritten or deleted',
    () => {
      const cwd = useTempDir();
      const store = openStore('disk', cwd);
      const squatter = join(cwd, 'acts', `${store.filePrefix}0.bin`);
      writeFileSync(squatter, 'not ours');
      const h = store.pack({ dtype: 'int32', dims: [2], data: Int32Array.of(5, 6) });
      expect(Array.from(store.unpack(h).data as Int32Array)).toEqual([5, 6]);
      store.close();
      expect(readdirSync(join(cwd, 'acts'))).toEqual([`${store.filePrefix}0.bin`]);
      expect(store.stats.writeFallbacks).toBe(0);
    },
  );

  test('a missing file on unpack is a clear ScratchFileMissingError; the handle is spent', () => {
    const cwd = useTempDir();
    const store = openStore('disk', cwd);
    const h = store.pack({ dtype: 'float64', dims: [2, 2], data: new Float64Array(4) });
    const [name] = readdirSync(join(cwd, 'acts'));
    unlinkSync(join(cwd, 'acts', name!));
    let caught: unknown;
    try {
      store.unpack(h);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ScratchFileMissingError);
    const err = caught as ScratchFileMissingError;
    expect(err.code).toBe('SOUP_OFFLOAD_SCRATCH_MISSING');
    expect(err.path).toBe(join(cwd, 'acts', name!));
    expect(err.message).toContain(
      `the scratch file of activation #0 (float64 [2, 2], 32 bytes) is missing: ${err.path}`,
    );
    expect(() => store.unpack(h)).toThrow(HandleError);
    expect(store.stats.diskBytes).toBe(0);
    store.close();
  });

  test('a truncated file on unpack is a ScratchFileCorruptError and is deleted', async () => {
    const cwd = useTempDir();
    const store = openStore('disk', cwd);
    const h = await store.packAsync({ dtype: 'uint16', dims: [8], data: new Uint16Array(8) });
    const [name] = readdirSync(join(cwd, 'acts'));
    truncateSync(join(cwd, 'acts', name!), 5);
    await expect(store.unpackAsync(h)).rejects.toBeInstanceOf(ScratchFileCorruptError);
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    store.close();
  });

  test('a write failure keeps the tensor in memory, counts it, and leaves no file', () => {
    const cwd = useTempDir();
    const seen: string[] = [];
    const store = openStore('disk', cwd, {
      onWriteError: (err, n) => seen.push(`${(err as NodeJS.ErrnoException).code}:${n}`),
    });
    rmSync(join(cwd, 'acts'), { recursive: true }); // the save dir disappears under the store
    const tensor: OffloadTensor = { dtype: 'float32', dims: [3], data: Float32Array.of(1, Number.NaN, -0) };
    const h = store.pack(tensor);
    expect(h.location).toBe('memory');
    expect(seen).toEqual(['ENOENT:12']);
    expect(store.stats).toMatchObject({ writeFallbacks: 1, residentBytes: 12, peakResidentBytes: 12, filesWritten: 0 });
    expect(bytesOf(store.unpack(h)).equals(bytesOf(tensor))).toBe(true);
    expect(store.stats.residentBytes).toBe(0);
    store.close();
  });

  test('[slow] a partial write (EFBIG under ulimit -f, a real failure) falls back and removes the partial file', {
    timeout: 60_000,
  }, async () => {
    const cwd = useTempDir();
    const fixture = STORE_CHILD;
    // control: without the limit the same pack goes to disk
    const control = await runNode(['--import', TSX_IMPORT, fixture, 'efbig', join(cwd, 'acts')], {
      cwd,
      timeoutMs: 50_000,
    });
    expect(control.code).toBe(0);
    expect(JSON.parse(control.stdout.trim())).toMatchObject({
      location: 'disk',
      writeFallbacks: 0,
      filesWritten: 1,
      roundTrip: true,
    });
    const limited = await runLimited(fixture, cwd);
    expect(limited.stderr).toBe('');
    const report = JSON.parse(limited.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
    expect(report).toMatchObject({
      location: 'memory',
      writeFallbacks: 1,
      errorCode: 'EFBIG',
      roundTrip: true,
      filesWritten: 0,
      filesAfterPack: [],
    });
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
  });
});

async function runLimited(fixture: string, cwd: string): Promise<{ stdout: string; stderr: string }> {
  const r = await runProcess(
    '/bin/sh',
    [
      '-c',
      'ulimit -f 16 && exec "$0" --import "$1" "$2" efbig "$3"',
      process.execPath,
      TSX_IMPORT,
      fixture,
      join(cwd, 'acts'),
    ],
    { cwd, timeoutMs: 50_000 },
  );
  return { stdout: r.stdout, stderr: r.stderr };
}

describe('ActivationStore handles and input checks', () => {
  test('double unpack and foreign handles are HandleErrors', () => {
    const cwd = useTempDir();
    const a = openStore('cpu', cwd);
    const b = openStore('cpu', cwd);
    const h = a.pack({ dtype: 'uint8', dims: [1], data: Uint8Array.of(1) });
    expect(() => b.unpack(h)).toThrow(/does not belong to this store/);
    a.unpack(h);
    expect(() => a.unpack(h)).toThrow(/already unpacked/);
    a.close();
    b.close();
  });

  test('tensors whose dtype, array class or dims disagree are refused', () => {
    const store = new ActivationStore({ target: 'cpu' });
    const bad: unknown[] = [
      { dtype: 'float32', dims: [2], data: new Float64Array(2) },
      { dtype: 'int64', dims: [2], data: new Int32Array(2) },
      { dtype: 'float32', dims: [3], data: new Float32Array(2) },
      { dtype: 'float32', dims: [-1], data: new Float32Array(0) },
      { dtype: 'complex64', dims: [1], data: new Float32Array(1) },
      null,
    ];
    for (const t of bad) expect(() => store.pack(t as OffloadTensor)).toThrow(TensorFormatError);
    expect(() => store.pack(bad[2] as OffloadTensor)).toThrow('tensor.dims [3] hold 3 elements but tensor.data has 2');
    expect(store.stats.tensorsPacked).toBe(0);
    store.close();
  });

  test('memory stats: cpu tracks resident and peak bytes', () => {
    const store = new ActivationStore({ target: 'cpu' });
    const hs = [100, 200, 300].map((n) => store.pack({ dtype: 'uint8', dims: [n], data: new Uint8Array(n) }));
    expect(store.stats).toMatchObject({ residentBytes: 600, peakResidentBytes: 600 });
    store.unpack(hs[2]!);
    store.pack({ dtype: 'uint8', dims: [50], data: new Uint8Array(50) });
    expect(store.stats).toMatchObject({
      residentBytes: 350,
      peakResidentBytes: 600,
      bytesPacked: 650,
      filesWritten: 0,
    });
    store.close();
    expect(store.stats.residentBytes).toBe(0);
  });
});

describe('ActivationStore opening', () => {
  test('unknown target and disk without save dir are OffloadConfigErrors', () => {
    expect(() => new ActivationStore({ target: 'gpu' as OffloadTarget })).toThrow(
      "Unknown activation_offloading target: 'gpu'. Expected 'keep', 'cpu', or 'disk'.",
    );
    expect(() => new ActivationStore({ target: 'disk' })).toThrow(OffloadConfigError);
    expect(() => new ActivationStore({ target: 'disk', saveDir: '' })).toThrow(/requires save_dir/);
  });

  test('save dirs escaping cwd (.., absolute, symlink) are refused and nothing is created outside', () => {
    const root = useTempDir();
    const cwd = join(root, 'project');
    mkdirSync(cwd);
    mkdirSync(join(root, 'outside'));
    symlinkSync(join(root, 'outside'), join(cwd, 'link'));
    for (const saveDir of ['../escape', join(root, 'abs'), 'link', 'link/sub', '.']) {
      expect(() => new ActivationStore({ target: 'disk', saveDir, cwd })).toThrow(OffloadConfigError);
    }
    expect(existsSync(join(root, 'escape'))).toBe(false);
    expect(existsSync(join(root, 'abs'))).toBe(false);
    expect(readdirSync(join(root, 'outside'))).toEqual([]);
  });

  test('the save dir is created (nested) with mode 0700', () => {
    const cwd = useTempDir();
    const store = new ActivationStore({ target: 'disk', saveDir: 'a/b/c', cwd });
    expect(store.saveDir).toBe(join(cwd, 'a', 'b', 'c'));
    expect(statSync(store.saveDir!).mode & 0o777).toBe(0o700);
    store.close();
  });
});
