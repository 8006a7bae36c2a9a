import { probeBatchSize } from '@soup/batch-probe';
import { describe, expect, it } from 'vitest';
import { createTrainStepProbe } from './create-train-step-probe';
import { ProbeChildError, ProbeOptionsError } from './errors';

const MiB = 2 ** 20;
// The onnx-train bench geometry.
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 };
const base = { spec, intraOpNumThreads: 1, timeoutMs: 120_000 } as const;

describe('[slow] createTrainStepProbe (real onnx-train steps in child processes)', { timeout: 180_000 }, () => {
  it('probe + probeBatchSize find the same batch as an exhaustive linear scan under the same budget', async () => {
    // Measured here: one step's resident growth is 82 / 84 / 87 / 90 / 103 / 116 MiB at batch 1..6,
    // so 96 MiB sits mid-gap between batch 4 and 5.
    const probe = createTrainStepProbe({ ...base, budgetBytes: 96 * MiB });
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
    expect(refused.every((t) => t.peakBytes! > 96 * MiB && t.budgetBytes === 96 * MiB)).toBe(true);
  });

  it('the grad-ckpt plan reaches the step: recomputing every block lowers the measured peak', async () => {
    const plain = await createTrainStepProbe({ ...base, budgetBytes: 2 ** 40 })(8);
    const ckpt = await createTrainStepProbe({ ...base, budgetBytes: 2 ** 40, plan: ['h.0', 'h.1', 'h.2', 'h.3'] })(8);
    expect(plain.fits && ckpt.fits).toBe(true);
    expect(ckpt.peakBytes!).toBeLessThan(plain.peakBytes! - 20 * MiB);
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
    ['offload to disk (no segmented step in onnx-train yet)', { offload: { target: 'disk', saveDir: 'scratch' } }, 'offload'],
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
