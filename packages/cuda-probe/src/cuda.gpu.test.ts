// GPU tests: run by `npm run test:gpu` on the self-hosted GPU runner (.github/workflows/gpu.yml).
// Where CUDA is absent they skip, unless SOUP_REQUIRE_GPU=1 (the GPU job sets it), which turns
// "no usable GPU" into a failure so the GPU job can never pass by skipping everything.
import { join } from 'node:path';
import { probeBatchSize } from '@soup/batch-probe';
import { makeTempDir } from '@soup/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import { createOrtProbe } from './create-ort-probe';
import { createTrainStepProbe } from './create-train-step-probe';
import { deviceIdentity } from './device-identity';
import { ProbeChildError } from './errors';
import { queryGpus } from './_nvidia-smi';
import { writeTinyModel } from './_test-model';

const MiB = 2 ** 20;
const tmp = makeTempDir('soup-gpu-probe-');
afterAll(() => tmp.cleanup());
const model = writeTinyModel({ path: join(tmp.dir, 'tiny.onnx') });
const tiny = { model, maxLength: 64, vocabSize: 256, device: 'cuda', timeoutMs: 180_000 } as const;

/** A GPU is usable when nvidia-smi lists one and onnxruntime-node can create a CUDA session. */
async function detectCuda(): Promise<{ ok: true } | { ok: false; why: string }> {
  const gpus = await queryGpus();
  if (!gpus.ok) return { ok: false, why: gpus.why };
  try {
    await createOrtProbe(tiny)(1);
    return { ok: true };
  } catch (err) {
    return { ok: false, why: `onnxruntime-node cannot run on CUDA here: ${(err as Error).message.split('\n')[0]}` };
  }
}

const cuda = await detectCuda();
const requireGpu = process.env.SOUP_REQUIRE_GPU === '1';

describe('[gpu] GPU availability', () => {
  it.runIf(requireGpu)('a usable CUDA device is present (SOUP_REQUIRE_GPU=1)', () => {
    expect(cuda).toEqual({ ok: true });
  });

  it.skipIf(cuda.ok)('without CUDA, a cuda probe fails with a clear error instead of running on the CPU', async () => {
    const err = await createOrtProbe(tiny)(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeChildError);
    expect((err as Error).message).toMatch(/CUDA|shared library|providers/i);
  });
});

describe.skipIf(!cuda.ok)('[gpu] CUDA probes on a real device', { timeout: 600_000 }, () => {
  it('deviceIdentity names the GPU and its whole GiB', async () => {
    const id = await deviceIdentity({ device: 'cuda' });
    expect(id.device).toBe('cuda');
    expect(id.gpuName).not.toBe('cpu');
    expect(id.gpuName.length).toBeGreaterThan(0);
    expect(id.gpuMemoryGb).toBeGreaterThan(0);
  });

  it(
    'measures per-process device memory against free + held, and gpuMemLimitBytes below the peak ' + 'refuses',
    async () => {
      const got = await createOrtProbe(tiny)(64);
      expect(got).toMatchObject({ fits: true, measurement: 'cuda-per-process' });
      expect(got.peakBytes).toBeGreaterThan(64 * MiB);
      expect(got.budgetBytes).toBeGreaterThan(got.peakBytes!);
      const capped = await createOrtProbe({ ...tiny, gpuMemLimitBytes: got.peakBytes! - 32 * MiB })(64);
      expect(capped).toMatchObject({ fits: false, reason: 'over-budget', budgetBytes: got.peakBytes! - 32 * MiB });
    },
  );

  it('a batch far beyond the device memory fails to allocate and is reported as OOM', async () => {
    const id = await deviceIdentity({ device: 'cuda' });
    // 1 MiB of hidden activation per sequence: twice the device's memory in one tensor.
    const batch = id.gpuMemoryGb * 1024 * 2;
    const got = await createOrtProbe(tiny)(batch);
    expect(got).toMatchObject({ fits: false, reason: 'oom' });
    expect(got.oom?.oom).toBe(true);
  });

  it('train-step probe + probeBatchSize find the same batch as a linear scan under gpuMemLimitBytes', async () => {
    const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 };
    const free = createTrainStepProbe({ spec, device: 'cuda', timeoutMs: 180_000 });
    const p1 = (await free(1)).peakBytes!;
    const p16 = (await free(16)).peakBytes!;
    expect(p16).toBeGreaterThan(p1);
    const limit = Math.floor((p1 + p16) / 2);
    const probe = createTrainStepProbe({ spec, device: 'cuda', gpuMemLimitBytes: limit, timeoutMs: 180_000 });
    const found = await probeBatchSize(probe, { start: 4, ceiling: 16 });
    let linear = 0;
    for (let b = 1; b <= 16; b++) {
      if ((await probe(b)).fits) linear = b;
      else break;
    }
    expect(linear).toBeGreaterThanOrEqual(1);
    expect(linear).toBeLessThan(16);
    expect(found.batchSize).toBe(linear);
  });
});
