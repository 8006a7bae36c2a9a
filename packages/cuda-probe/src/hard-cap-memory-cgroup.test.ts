import { describe, expect, it } from 'vitest';
import { createTrainStepProbe } from './create-train-step-probe';
import { ProbeOptionsError } from './errors';
import { memoryCgroupSupport } from './run-in-memory-cgroup';

const MiB = 2 ** 20;
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 };
const base = { spec, intraOpNumThreads: 1, timeoutMs: 120_000, hardCap: 'memory-cgroup' } as const;
const support = memoryCgroupSupport();
if (!support.available)
  console.log(`[skip] hardCap 'memory-cgroup' probes: no memory cgroup can be made here (${support.reason})`);

describe.skipIf(!support.available)(
  "[slow] a CPU probe whose hard cap is a memory cgroup (hardCap: 'memory-cgroup')",
  { timeout: 180_000 },
  () => {
    it('a batch within the budget fits; the trial reports its cgroup limit and peak', async () => {
      const out = await createTrainStepProbe({ ...base, budgetBytes: 1024 * MiB })(2);
      expect(out.fits).toBe(true);
      expect(out.limitMethod).toBe('memory-cgroup');
      expect(out.addressSpaceBytes).toBeUndefined();
      expect(out.memoryCgroup!.oomKilled).toBe(false);
      expect(out.memoryCgroup!.peakBytes!).toBeGreaterThan(32 * MiB);
      expect(out.memoryCgroup!.peakBytes!).toBeLessThanOrEqual(out.memoryCgroup!.limitBytes);
      // limit = the child's resident baseline (calibrated) + feeds + budget
      expect(out.memoryCgroup!.limitBytes).toBeGreaterThan(1024 * MiB);
      expect(out.memoryCgroup!.limitBytes).toBeLessThan(1024 * MiB + 1024 * MiB);
    });

    it(
      'a batch far above the budget is killed by the OOM killer at the cgroup limit, and the trial ' + 'says so',
      async () => {
        const out = await createTrainStepProbe({ ...base, budgetBytes: 16 * MiB })(24);
        expect(out.fits).toBe(false);
        expect(out.reason).toBe('killed');
        expect(out.memoryCgroup!.oomKilled).toBe(true);
        expect(out.detail).toMatch(/killed by the kernel's OOM killer at its memory cgroup's limit/);
      },
    );
  },
);

describe('hardCap option', () => {
  it('refuses an unknown value, naming the field', () => {
    try {
      createTrainStepProbe({ spec, hardCap: 'rss' as never });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ProbeOptionsError);
      expect((err as ProbeOptionsError).field).toBe('hardCap');
    }
  });
});
