// The budget tier measures resident memory in its own process, so each plan here runs in a
// fresh child (allocator state from an earlier plan in the same process would skew the next).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode, useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { TrainInputError } from './errors';
import { defineGptSpec } from './gpt-spec';
import type { BudgetTierReport } from './plan-budget-tier';
import { planBudgetTier } from './plan-budget-tier';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const indexTs = fileURLToPath(new URL('./index.ts', import.meta.url));
// Small, but with ~40 MiB of activations per block at batch 32: the full-recompute peak of one fresh
// process differs from another's by up to ~12 MiB (allocator state after the first measured session),
// so the budgets below keep ≥ 30% of the off−full span (~35 MiB) away from either measured peak.
const geometry = { vocabSize: 64, seqLen: 128, dModel: 128, nHeads: 4, nLayers: 4 };
const batchSize = 32;

interface ChildReport extends BudgetTierReport {
  stepRecompute: string[];
  loss: number;
}

describe('planBudgetTier', () => {
  it('[slow] fits a budget between the off and full peaks (confirmed by a measured step) and takes fewer blocks ' +
    'for a looser budget', {
    timeout: 180_000,
  }, async () => {
    const dir = useTempDir();
    const script = join(dir, 'budget-child.mts');
    writeFileSync(
      script,
      `import { TrainStep, defineGptSpec, makeSyntheticBatch } from ${JSON.stringify(indexTs)};
const spec = defineGptSpec(${JSON.stringify(geometry)});
const step = await TrainStep.create({ spec, seed: 1, intraOpNumThreads: 1,
  gradientCheckpointing: { tier: 'budget', memoryBudgetBytes: Number(process.argv[2]), batchSize: ${batchSize} } });
const r = await step.run(makeSyntheticBatch({ spec, batchSize: ${batchSize}, seed: 3 }));
console.log(JSON.stringify({ ...step.budgetReport, stepRecompute: step.model.recompute, loss: r.loss }));
await step.release();
`,
    );
    const plan = async (memoryBudgetBytes: number): Promise<ChildReport> => {
      const r = await runNode(['--expose-gc', '--import', 'tsx', script, String(Math.round(memoryBudgetBytes))], {
        cwd: packageDir,
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as ChildReport;
    };

    // 1. An unbounded budget: nothing to recompute; tells us the off and full peaks.
    const free = await plan(2 ** 40);
    expect(free.recompute).toEqual([]);
    expect(free.fits).toBe(true);
    expect(free.peakMethod).toBe('clear_refs');
    expect(free.offPeakBytes).toBeGreaterThan(free.fullPeakBytes + 20 * 2 ** 20); // recompute really frees memory
    expect(free.blocks.map((b) => b.name)).toEqual(['h.0', 'h.1', 'h.2', 'h.3']);
    // the calibrated model reproduces both measurements
    expect(free.baselineBytes + free.blocks.reduce((s, b) => s + b.activationBytes, 0)).toBeCloseTo(
      free.offPeakBytes,
      -2,
    );
    const span = free.offPeakBytes - free.fullPeakBytes;

    // 2. A tight budget (30% of the way from the full to the off peak) and a loose one (80%).
    const tight = await plan(free.fullPeakBytes + 0.3 * span);
    const loose = await plan(free.fullPeakBytes + 0.8 * span);
    for (const r of [tight, loose]) {
      expect(r.fits, JSON.stringify(r.attempts)).toBe(true);
      expect(r.measuredPeakBytes).toBeLessThanOrEqual(r.memoryBudgetBytes);
      expect(r.attempts.at(-1)!.measuredPeakBytes).toBe(r.measuredPeakBytes);
      expect(r.stepRecompute).toEqual(r.recompute); // the step was built with the plan
      expect(r.loss).toBeGreaterThan(3);
    }
    expect(tight.recompute.length).toBeGreaterThan(0);
    expect(loose.recompute.length).toBeLessThan(tight.recompute.length);
  });

  it('falls back to a sampled peak (a worker thread reading VmRSS) when asked, and reports it', async () => {
    const spec = defineGptSpec({ ...geometry, nLayers: 2 });
    const seen: string[] = [];
    const r = await planBudgetTier({
      spec,
      batchSize: 8,
      memoryBudgetBytes: 2 ** 40,
      intraOpNumThreads: 1,
      peakMethod: 'sampled',
      onMeasure: (m) => seen.push(m.label),
    });
    expect(r.peakMethod).toBe('sampled');
    expect(seen).toEqual(['off', 'full', 'plan']);
    expect(r).toMatchObject({ recompute: [], fits: true, batchSize: 8, attempts: [{ recompute: [] }] });
    expect(r.offPeakBytes).toBeGreaterThan(0);
    expect(r.measuredPeakBytes).toBe(r.offPeakBytes); // a plan of no block reuses the un-checkpointed measurement
  });

  it('refuses what it cannot measure: CUDA steps, bad budgets and batch sizes', async () => {
    const spec = defineGptSpec(geometry);
    await expect(
      planBudgetTier({ spec, batchSize: 2, memoryBudgetBytes: 2 ** 30, executionProvider: 'cuda' }),
    ).rejects.toThrow(/host memory/);
    await expect(planBudgetTier({ spec, batchSize: 2, memoryBudgetBytes: -1 })).rejects.toThrow(TrainInputError);
    await expect(planBudgetTier({ spec, batchSize: 0, memoryBudgetBytes: 2 ** 30 })).rejects.toThrow(
      /batchSize must be a positive integer/,
    );
  });
});
