import { join } from 'node:path';
import { probeBatchSize } from '@soup/batch-probe';
import { makeTempDir, useTempDir } from '@soup/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import { createOrtProbe } from './create-ort-probe';
import { ProbeChildError, ProbeOptionsError, ProbeTimeoutError } from './errors';
import { writeTinyModel } from './_test-model';

const MiB = 2 ** 20;
const tmp = makeTempDir('soup-ort-probe-');
afterAll(() => tmp.cleanup());
// hidden activation: batch × 64 × 4096 float32 = 1 MiB per sequence; a step's resident growth is
// ~1.06 MiB per sequence (the measured figures are in the README).
const model = writeTinyModel({ path: join(tmp.dir, 'tiny.onnx') });
const base = { model, maxLength: 64, vocabSize: 256, session: { intraOpNumThreads: 1 }, timeoutMs: 60_000 } as const;

describe('[slow] createOrtProbe on the CPU (real onnxruntime children)', { timeout: 120_000 }, () => {
  it(
    'fits at small batches; the peak gate refuses above the budget; far above, the allocation fails ' +
      'under RLIMIT_AS',
    async () => {
      const probe = createOrtProbe({ ...base, budgetBytes: 100 * MiB });
      const small = await probe(8);
      expect(small).toMatchObject({
        fits: true,
        reason: 'fit',
        measurement: 'peak-rss',
        budgetBytes: 100 * MiB,
        limitMethod: 'prlimit',
      });
      expect(small.peakBytes).toBeGreaterThan(8 * MiB);
      expect(small.peakBytes).toBeLessThan(20 * MiB);
      expect(small.calibrationMs).toBeGreaterThan(0);
      expect(small.stepMs).toBeGreaterThan(0);
      expect(small.overheadMs).toBeCloseTo(small.ms - small.stepMs!, 6);

      // The step completes (the address-space limit leaves room up to ~2x the budget), but its peak is over.
      const gated = await probe(150);
      expect(gated).toMatchObject({ fits: false, reason: 'over-budget', budgetBytes: 100 * MiB });
      expect(gated.peakBytes).toBeGreaterThan(150 * MiB);
      expect(gated.detail).toMatch(/step peak .* > budget 100\.0 MiB/);
      expect(gated.calibrationMs).toBeUndefined();

      // 3000 sequences need ~3 GiB: ORT's arena cannot get it under the limit and the child reports OOM.
      const hard = await probe(3000);
      expect(hard).toMatchObject({ fits: false, reason: 'oom', oom: { oom: true, kind: 'ort-arena' } });
      expect(hard.addressSpaceBytes).toBeLessThan(3000 * MiB);
      expect(hard.detail).toMatch(/Failed to allocate memory for requested buffer of size 3145728000/);
    },
  );

  it('the shell fallback (ulimit -v) enforces the same limit', async () => {
    const probe = createOrtProbe({ ...base, budgetBytes: 100 * MiB, addressSpaceLimit: 'ulimit' });
    expect(await probe(4)).toMatchObject({ fits: true, limitMethod: 'ulimit' });
    const hard = await probe(3000);
    expect(hard).toMatchObject({ fits: false, reason: 'oom', limitMethod: 'ulimit' });
    expect(hard.oom?.kind).toMatch(/^(ort-arena|bad-alloc)$/);
  });

  it(
    'the gate compares the measured step peak with the budget (the exact comparison itself is ' + 'unit-tested)',
    async () => {
      const measured = await createOrtProbe({ ...base, budgetBytes: 2 ** 40 })(16);
      const peak = measured.peakBytes!;
      // Fresh children reproduce one step's resident growth to within a few pages (measured: <= 120 KiB at 16 seqs).
      const above = await createOrtProbe({ ...base, budgetBytes: peak + 512 * 1024 })(16);
      const below = await createOrtProbe({ ...base, budgetBytes: peak - 512 * 1024 })(16);
      expect(above).toMatchObject({ fits: true, reason: 'fit' });
      expect(below).toMatchObject({ fits: false, reason: 'over-budget' });
    },
  );

  it('probe + probeBatchSize find the same batch as a linear scan under the same budget', async () => {
    const probe = createOrtProbe({ ...base, budgetBytes: 24 * MiB });
    const found = await probeBatchSize(probe, { start: 8, ceiling: 32 });
    let linear = 0;
    for (let b = 1; b <= 32; b++) {
      if ((await probe(b)).fits) linear = b;
      else break;
    }
    expect(linear).toBeGreaterThan(12);
    expect(linear).toBeLessThan(28);
    expect(found.batchSize).toBe(linear);
    expect(found.exact).toBe(true);
  });

  it('feeds every input kind from the metadata: position/token-type ids, fixed-shape floats, bools', async () => {
    const dir = useTempDir();
    const rich = writeTinyModel({
      path: join(dir, 'rich.onnx'),
      hiddenSize: 256,
      extraInputs: [
        { name: 'position_ids', type: 'int64', shape: ['batch', 'sequence'] },
        { name: 'token_type_ids', type: 'int64', shape: ['batch', 'sequence'] },
        { name: 'scale', type: 'float', shape: [3] },
        { name: 'past', type: 'float', shape: ['batch', 2, 'past_len', 'extra'] },
      ],
    });
    const got = await createOrtProbe({ ...base, model: rich, budgetBytes: 64 * MiB })(2);
    expect(got.fits).toBe(true);
    expect(got.notes).toEqual(['input "past": symbolic dimension "extra" set to 1']);
  });

  it('without budgetBytes the budget is what the child can reach (MemAvailable here)', async () => {
    const got = await createOrtProbe({ ...base })(2);
    expect(got.fits).toBe(true);
    expect(got.budgetBytes).toBeGreaterThan(256 * MiB);
    expect(got.detail).toMatch(/budget from (meminfo|cgroup-v[12])/);
  });

  it('a non-OOM failure of the step propagates with the stderr tail (pad id outside the embedding)', async () => {
    // The model's embedding has 256 rows; a probe told vocabSize 1000 feeds token 300.
    const probe = createOrtProbe({ ...base, vocabSize: 1000, padId: 300, budgetBytes: 64 * MiB });
    const err = await probe(2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeChildError);
    expect(err).toMatchObject({ code: 'SOUP_PROBE_CHILD_FAILED', batchSize: 2, exitCode: 1 });
    expect((err as Error).message).toMatch(/indices element out of data bounds/);
    expect((err as ProbeChildError).stderrTail).toMatch(/Gather/);
  });

  it('a model that cannot load fails at calibration with a clear error', async () => {
    const dir = useTempDir();
    const bad = join(dir, 'bad.onnx');
    (await import('node:fs')).writeFileSync(bad, 'not an onnx model');
    const err = await createOrtProbe({ ...base, model: bad })(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeChildError);
    expect((err as Error).message).toMatch(/could not load the model to measure its baseline/);
  });

  it('a step that runs past timeoutMs is killed and throws ProbeTimeoutError', async () => {
    // 1500 sequences take seconds on this CPU; the limit is off so the step really runs.
    const probe = createOrtProbe({ ...base, addressSpaceLimit: 'off', budgetBytes: 4 * 2 ** 30, timeoutMs: 700 });
    const err = await probe(1500).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeTimeoutError);
    expect(err).toMatchObject({ code: 'SOUP_PROBE_TIMEOUT', timeoutMs: 700, batchSize: 1500 });
  });
});

describe('createOrtProbe options', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['maxLength below 8', { maxLength: 7 }, 'maxLength'],
    ['maxLength as a boolean', { maxLength: true }, 'maxLength'],
    ['a fractional maxLength', { maxLength: 64.5 }, 'maxLength'],
    ['a string maxLength', { maxLength: '64' }, 'maxLength'],
    ['vocabSize missing', { vocabSize: undefined }, 'vocabSize'],
    ['a negative padId', { padId: -1 }, 'padId'],
    ['an unknown device', { device: 'rocm' }, 'device'],
    ['a boolean deviceId', { deviceId: false }, 'deviceId'],
    ['a zero budget', { budgetBytes: 0 }, 'budgetBytes'],
    ['a boolean arena flag given as a string', { session: { enableCpuMemArena: 'yes' } }, 'session.enableCpuMemArena'],
    ['a missing model file', { model: '/nonexistent/model.onnx' }, 'model'],
    ['an unknown limit method', { addressSpaceLimit: 'cgroup' }, 'addressSpaceLimit'],
  ])('refuses %s, naming the field', (_what, patch, field) => {
    const opts = { ...base, ...patch };
    expect(() => createOrtProbe(opts as never)).toThrow(ProbeOptionsError);
    try {
      createOrtProbe(opts as never);
    } catch (err) {
      expect((err as ProbeOptionsError).field).toBe(field);
      expect((err as Error).message.startsWith(field)).toBe(true);
    }
  });

  it.each([0, -3, 1.5, true, '8', null])('refuses batch size %j before starting a child', async (bad) => {
    const probe = createOrtProbe(base);
    await expect(probe(bad as never)).rejects.toMatchObject({ name: 'ProbeOptionsError', field: 'batchSize' });
  });
});
