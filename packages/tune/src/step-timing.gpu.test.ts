// [gpu] soup train's tuner times its steps on the device the run trains on (soup.yaml's `device`),
// never silently on the CPU. Run by `npm run test:gpu` on the self-hosted GPU runner
// (.github/workflows/gpu.yml); elsewhere the real-device tests skip and the no-CUDA one runs.
import { deviceIdentity } from '@soup/cuda-probe';
import { createTrainStep, defineGptSpec, ExecutionProviderError } from '@soup/onnx-train';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { timeAlternately, timeTrainStep, type StepToTime } from './step-timing';

const spec = defineGptSpec({ vocabSize: 64, seqLen: 32, dModel: 64, nHeads: 4, nLayers: 2 });
const at = (cwd: string, batchSize = 2): StepToTime => ({
  spec,
  recompute: [],
  batchSize,
  threads: 1,
  offload: null,
  cwd,
  executionProvider: 'cuda',
  deviceId: 0,
});

/** CUDA is usable when nvidia-smi names a GPU and onnxruntime-node opens a CUDA training session. */
async function detectCuda(): Promise<{ ok: true } | { ok: false; why: string }> {
  try {
    await deviceIdentity({ device: 'cuda' });
    const step = await createTrainStep({ spec, executionProvider: 'cuda' });
    await step.release();
    return { ok: true };
  } catch (err) {
    return { ok: false, why: (err as Error).message.split('\n')[0]! };
  }
}

const cuda = await detectCuda();

describe('[gpu] the tuner times on the device the run trains on', () => {
  it.skipIf(cuda.ok)(
    'without CUDA, a timing on device cuda fails with the CUDA hint instead of timing the CPU',
    async () => {
      const err = await timeTrainStep({ ...at(useTempDir()), steps: 2 }).catch((e: unknown) => e);
      expect(err, 'timed on the CPU instead').toBeInstanceOf(ExecutionProviderError);
      expect((err as Error).message).toMatch(/ONNXRUNTIME_NODE_INSTALL=cuda12/);
      const side = await timeAlternately(at(useTempDir()), { ...at(useTempDir()), executionProvider: 'cpu' }, 2).catch(
        (e: unknown) => e,
      );
      expect(side, 'a side-by-side timing ran the cuda side on the CPU').toBeInstanceOf(ExecutionProviderError);
    },
  );

  it.skipIf(!cuda.ok)(
    'times real CUDA steps: the session it keeps runs on CUDA, and a larger micro-batch is timed as slower',
    { timeout: 300_000 },
    async () => {
      const t = await timeTrainStep({ ...at(useTempDir()), steps: 4, keepOpen: true });
      try {
        expect(t.open!.step.executionProvider).toBe('cuda');
        expect(t.stepMs).toBeGreaterThan(0);
      } finally {
        await t.open!.step.release();
      }
      const [small, large] = await timeAlternately(at(useTempDir(), 2), at(useTempDir(), 256), 4);
      expect(large.stepMs, `m=2 ${small.stepMs.toFixed(2)} ms, m=256 ${large.stepMs.toFixed(2)} ms`).toBeGreaterThan(
        small.stepMs,
      );
    },
  );
});
