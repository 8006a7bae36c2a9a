import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { probeBatchSize } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createTrainStepProbe } from './create-train-step-probe';
import { ProbeChildError, ProbeOptionsError } from './errors';

const MiB = 2 ** 20;
// The onnx-train bench geometry.
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 };
const base = { spec, intraOpNumThreads: 1, timeoutMs: 120_000 } as const;

describe('[slow] createTrainStepProbe (real onnx-train steps in child processes)', { timeout: 180_000 }, () => {
  it('probe + probeBatchSize find the same batch as an exhaustive linear scan under the same budget', async () => {
    // The budget sits mid-gap between two measured peaks. A fixed figure (96 MiB, mid-gap between
    // batch 4 and 5 where one step's growth measured 82 / 84 / 87 / 90 / 103 / 116 MiB at batch
    // 1..6) refused batch 1 on another machine of the same kind, where the same steps measured
    // 121.5 / 123.9 / 125.2 / 125.8 / 135.6 / 149.5 MiB: so the peaks are measured first, here.
    const loose = createTrainStepProbe({ ...base, budgetBytes: 2 ** 40 });
    const peaks: number[] = [];
    for (let b = 1; b <= 6; b++) peaks.push((await loose(b)).peakBytes!);
    // The widest gap between consecutive batches 2..6, so the budget is far from both sides.
    let at = 2;
    for (let b = 2; b < 6; b++) if (peaks[b]! - peaks[b - 1]! > peaks[at]! - peaks[at - 1]!) at = b;
    const budgetBytes = Math.round((peaks[at - 1]! + peaks[at]!) / 2);
    const probe = createTrainStepProbe({ ...base, budgetBytes });
    const found = await probeBatchSize(probe, { start: 2, ceiling: 16 });
    const scan: boolean[] = [];
    for (let b = 1; b <= 16; b++) {
      const fits = (await probe(b)).fits;
      scan.push(fits);
      if (!fits) break;
    }
    const linear = scan.lastIndexOf(true) + 1;
    expect(linear).toBeGreaterThanOrEqual(2);
    expect(linear).toBeLessThanOrEqual(8);
    expect(found.batchSize).toBe(linear);
    const refused = found.trials.filter((t) => !t.fits);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((t) => t.peakBytes! > budgetBytes && t.budgetBytes === budgetBytes)).toBe(true);
    expect(linear).toBe(at);
  });

  it('the grad-ckpt plan reaches the step: recomputing every block lowers the measured peak', async () => {
    const plain = await createTrainStepProbe({ ...base, budgetBytes: 2 ** 40 })(8);
    const ckpt = await createTrainStepProbe({ ...base, budgetBytes: 2 ** 40, plan: ['h.0', 'h.1', 'h.2', 'h.3'] })(8);
    expect(plain.fits && ckpt.fits).toBe(true);
    expect(ckpt.peakBytes!).toBeLessThan(plain.peakBytes! - 20 * MiB);
  });

  it(
    'offload to disk probes the segmented step: a lower peak than the fused step at the same batch, ' +
      'no scratch file left',
    async () => {
      const cwd = useTempDir('soup-probe-offload-');
      const fused = await createTrainStepProbe({ ...base, cwd, budgetBytes: 2 ** 40 })(8);
      const disk = await createTrainStepProbe({
        ...base,
        cwd,
        budgetBytes: 2 ** 40,
        offload: { target: 'disk', saveDir: 'acts' },
      })(8);
      expect(fused.fits && disk.fits).toBe(true);
      expect(disk.notes).toContain("segmented step, offload target 'disk'");
      // Measured here: 134 MiB fused, 70 MiB segmented with disk offload (one step at batch 8).
      expect(disk.peakBytes!).toBeLessThan(0.75 * fused.peakBytes!);
      expect(existsSync(join(cwd, 'acts'))).toBe(true); // the store really opened its save dir …
      expect(readdirSync(join(cwd, 'acts'))).toEqual([]); // … and left nothing in it
    },
  );

  it("offload 'cpu' on a CPU device is refused in the child with @soup/offload's message", async () => {
    const err = await createTrainStepProbe({ ...base, offload: { target: 'cpu' } })(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeChildError);
    expect((err as Error).message).toMatch(/Activation offloading requires CUDA training\. Current device: cpu\./);
  });

  it('an invalid spec is refused by onnx-train in the first child, with its message', async () => {
    const err = await createTrainStepProbe({ ...base, spec: { ...spec, nHeads: 3 } })(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeChildError);
    expect((err as Error).message).toMatch(/could not load the model to measure its baseline.*nHeads/);
  });
});

describe('createTrainStepProbe options', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['a missing spec', { spec: undefined }, 'spec'],
    ['seqLen below 8', { spec: { ...spec, seqLen: 4 } }, 'spec.seqLen'],
    ['a boolean nLayers', { spec: { ...spec, nLayers: true } }, 'spec.nLayers'],
    ['a plan that is not a list of names', { plan: 'h.0' }, 'plan'],
    ['offload to disk without a save dir', { offload: { target: 'disk' } }, 'offload.saveDir'],
    ['an unknown offload target', { offload: { target: 'gpu' } }, 'offload.target'],
    ['a float16 dtype', { dtype: 'float16' }, 'dtype'],
  ])('refuses %s, naming the field', (_what, patch, field) => {
    const opts = { ...base, ...patch };
    expect(() => createTrainStepProbe(opts as never)).toThrow(ProbeOptionsError);
    try {
      createTrainStepProbe(opts as never);
    } catch (err) {
      expect((err as ProbeOptionsError).field).toBe(field);
    }
  });
});
