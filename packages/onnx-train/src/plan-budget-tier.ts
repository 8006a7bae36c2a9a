import {
  calibrateBudgetBlocks,
  planForBudget,
  predictPeakBytes,
  validateTierConfig,
  type BudgetBlock,
} from '@soup/grad-ckpt';
import { measurePeak, pickPeakMethod, readRss, type PeakMethod } from './_peak-rss';
import { TrainInputError } from './errors';
import { estimateActivationBytes } from './estimate-activation-bytes';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { FusedTrainStep } from './_fused-step';
import type { BudgetMeasurement, BudgetTierReport, TrainStepOptions } from './step-types';

export type { BudgetMeasurement, BudgetTierReport } from './step-types';

/** Options of {@link planBudgetTier}: the step's own options (minus its plan), the batch and the budget. */
export interface PlanBudgetTierOptions
  extends Omit<
    TrainStepOptions,
    'recompute' | 'gradientCheckpointing' | 'parameters' | 'measure' | 'profileFilePrefix'
  > {
  /** Sequences per step, as the run will train. */
  batchSize: number;
  /**
   * The peak the step may reach, in bytes: resident memory above what the process held before
   * planning started — session, parameters, optimizer state, activations and ORT's workspace.
   */
  memoryBudgetBytes: number;
  /** Seed of the synthetic batch the measured steps run. @default 0 */
  batchSeed?: number;
  /**
   * Steps per measurement; the peak over all of them counts (the 2nd step holds the 1st step's optimizer state).
   * @default 2
   */
  measureSteps?: number;
  /**
   * `'clear_refs'`: reset VmHWM before each measurement and read it after (exact, Linux ≥ 4.0).
   * `'sampled'`: a worker thread samples VmRSS every millisecond (a lower bound, the fallback).
   * `'auto'`: `clear_refs` where the kernel allows it, else `sampled`.
   * @default 'auto'
   */
  peakMethod?: PeakMethod | 'auto';
  /** Called after every measured configuration (off, every block, each plan tried). */
  onMeasure?: (m: BudgetMeasurement) => void;
}

/**
 * The `budget` tier: the fewest blocks to recompute so that the step's measured peak fits
 * `memoryBudgetBytes`, measured in this process.
 *
 * 1. Measure a step with nothing recomputed (`offPeakBytes`) and one with every block recomputed
 *    (`fullPeakBytes`).
 * 2. Per-block activation bytes: the difference, attributed to the blocks in proportion to what
 *    recomputing each one removes by the static count (`estimateActivationBytes`: block `i`'s saved
 *    tensors minus its kept inputs; equal for a GPT's identical blocks), scaled so that
 *    `@soup/grad-ckpt`'s model `predictPeakBytes` reproduces both measurements
 *    (`calibrateBudgetBlocks`: `a_i = k·s_i`, `k = (off − full) / (Σs − max s)`, `baseline = off − Σa`).
 * 3. `planForBudget` picks the fewest blocks whose predicted peak fits.
 * 4. Confirm: measure a step with that plan. If it measures over budget, plan again for a budget
 *    lowered by the model's error, taking at least one block more, until it fits or every block
 *    is recomputed. (A plan of no block or of every block reuses step 1's measurement: same graph.)
 *
 * Peaks are resident memory (VmHWM, reset through `/proc/self/clear_refs` before each measured
 * step; or VmRSS sampled by a worker thread where the reset is refused) above the RSS this process
 * had when planning started. Memory freed by one measured session but kept by the allocator counts
 * against the next (errs high); memory the process freed before planning but still holds makes
 * them low: plan first in a fresh process. With `node --expose-gc`, each released session's arrays
 * are collected before the next measurement. Linux only: elsewhere `MemoryMeasurementError`.
 *
 * @throws {TrainInputError} on a bad batch size or budget, or a CUDA step (the budget is host memory).
 */
export async function planBudgetTier(options: PlanBudgetTierOptions): Promise<BudgetTierReport> {
  const { batchSize, memoryBudgetBytes, batchSeed, measureSteps, peakMethod, onMeasure, ...stepOptions } = options;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new TrainInputError(`batchSize must be a positive integer (got ${batchSize})`);
  const check = validateTierConfig({ tier: 'budget', memoryBudgetBytes });
  if (check.errors.length > 0) throw new TrainInputError(check.errors.join(' '));
  const steps = measureSteps ?? 2;
  if (!Number.isInteger(steps) || steps < 1)
    throw new TrainInputError(`measureSteps must be a positive integer (got ${steps})`);
  if ((stepOptions.executionProvider ?? 'cpu') !== 'cpu') {
    throw new TrainInputError(
      "tier 'budget' measures host memory (RSS) and runs on executionProvider 'cpu'; for CUDA use a fixed tier or " +
        '@soup/cuda-probe',
    );
  }
  const method = pickPeakMethod(peakMethod ?? 'auto');
  const floorBytes = readRss()!.rssBytes;
  const { spec } = stepOptions;
  const n = spec.nLayers;
  const names = Array.from({ length: n }, (_, i) => `h.${i}`);

  const measure = async (recompute: string[]): Promise<number> => {
    const step = await FusedTrainStep.createExplicit({ ...stepOptions, recompute });
    try {
      const batch = makeSyntheticBatch({ spec: step.spec, batchSize, seed: batchSeed ?? 0 });
      const { peakRssBytes } = await measurePeak(async () => {
        for (let i = 0; i < steps; i++) await step.run(batch);
      }, method);
      return Math.max(0, peakRssBytes - floorBytes);
    } finally {
      await step.release();
      collectGarbage();
    }
  };

  const offPeakBytes = await measure([]);
  onMeasure?.({ label: 'off', recompute: [], peakBytes: offPeakBytes });
  const fullPeakBytes = await measure(names);
  onMeasure?.({ label: 'full', recompute: names, peakBytes: fullPeakBytes });

  // Static shares: what recomputing each block removes from the saved tensors.
  const dtype = stepOptions.dtype ?? 'float32';
  const plain = estimateActivationBytes({ spec, batchSize, dtype }).byModule;
  const kept = estimateActivationBytes({ spec, batchSize, dtype, recompute: names }).byModule;
  const { blocks, baselineBytes } = calibrateBudgetBlocks({
    offPeakBytes,
    fullPeakBytes,
    blocks: names.map((name) => ({ name, staticBytes: Math.max(0, (plain[name] ?? 0) - (kept[name] ?? 0)) })),
  });

  const attempts: BudgetTierReport['attempts'] = [];
  let plan = planForBudget({ blocks, baselineBytes, memoryBudgetBytes });
  for (;;) {
    const measuredPeakBytes =
      plan.recompute.length === 0
        ? offPeakBytes
        : plan.recompute.length === n
          ? fullPeakBytes
          : await measure(plan.recompute);
    attempts.push({ recompute: plan.recompute, predictedPeakBytes: plan.predictedPeakBytes, measuredPeakBytes });
    onMeasure?.({
      label: 'plan',
      recompute: plan.recompute,
      peakBytes: measuredPeakBytes,
      predictedPeakBytes: plan.predictedPeakBytes,
    });
    if (measuredPeakBytes <= memoryBudgetBytes || plan.recompute.length === n) {
      return {
        recompute: plan.recompute,
        predictedPeakBytes: plan.predictedPeakBytes,
        measuredPeakBytes,
        fits: measuredPeakBytes <= memoryBudgetBytes,
        memoryBudgetBytes,
        batchSize,
        offPeakBytes,
        fullPeakBytes,
        baselineBytes,
        blocks,
        attempts,
        peakMethod: method,
      };
    }
    // Over budget: the model under-predicted by `error`; plan for a budget lowered by it, with at least one block more.
    const error = Math.max(0, measuredPeakBytes - plan.predictedPeakBytes);
    const lowered = memoryBudgetBytes - error;
    let next = lowered > 0 ? planForBudget({ blocks, baselineBytes, memoryBudgetBytes: lowered }) : null;
    if (next === null || next.recompute.length <= plan.recompute.length) {
      const recompute = largestBlocks(blocks, plan.recompute.length + 1);
      next = { recompute, predictedPeakBytes: predictPeakBytes({ blocks, baselineBytes, recompute }), fits: false };
    }
    plan = next;
  }
}

/** The `count` blocks with the most activation bytes (ties: forward order), listed in forward order. */
function largestBlocks(blocks: readonly BudgetBlock[], count: number): string[] {
  const chosen = new Set(
    blocks
      .map((b, index) => ({ b, index }))
      .sort((x, y) => y.b.activationBytes - x.b.activationBytes || x.index - y.index)
      .slice(0, count)
      .map((o) => o.index),
  );
  return blocks.filter((_, i) => chosen.has(i)).map((b) => b.name);
}

/**
 * A full V8 collection when the process exposes one (`node --expose-gc`): the released
 * session's parameter and state arrays are then freed before the next measurement.
 */
function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc === 'function') gc();
}
