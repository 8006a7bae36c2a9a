// `gradient_checkpointing: auto` in soup train / soup plan: a measured choice. Each tier (off,
// selective, full) gets its largest micro-batch m (a divisor of G that fits, the batch cache
// first); its step is timed in this process (a warm-up, then timed steps) at m and at smaller
// divisors while they are faster (on a CPU the largest m is not always the fastest per sample).
// The most samples per second at G wins,
// a tie within the noise going to the lower peak. The choice is remembered in the tune cache.
import { chooseConfiguration, divisorsOf, formatMicroBatch, NoBatchFitsError, lookupTuneEntry, makeTuneKey, saveTuneEntry, type TuneEntry, type TuneRow } from '@soup/batch-probe';
import type { Granularity } from '@soup/grad-ckpt';
import { createTrainStep, makeSyntheticBatch, type GptSpec } from '@soup/onnx-train';
import type { BatchResolution } from './_batch';
import type { CommandContext } from './_context';
import { cacheBaseOf, recomputeOf, type OffloadPlan } from './_plan';
import { printTable } from './_tune-exec';
import type { SoupConfig } from './validate-config';

export const TRAIN_TIERS: readonly (Granularity | null)[] = [null, 'selective', 'full'];
const nameOf = (g: Granularity | null): string => g ?? 'false';

/** Median step time (ms) and its noise (the median's standard error, robust) of `steps` steps after a warm-up. */
export async function timeTrainStep(o: { spec: GptSpec; recompute: string[]; batchSize: number; threads: number; offload: OffloadPlan | null; steps: number; cwd: string }): Promise<{ stepMs: number; noiseMs: number; times: number[] }> {
  const step = await createTrainStep({
    spec: o.spec,
    seed: 0,
    recompute: o.recompute,
    ...(o.threads > 0 ? { intraOpNumThreads: o.threads } : {}),
    ...(o.offload ? { offload: { target: o.offload.target, ...(o.offload.saveDir ? { saveDir: o.offload.saveDir } : {}), cwd: o.cwd } } : {}),
  });
  try {
    const batch = makeSyntheticBatch({ spec: o.spec, batchSize: o.batchSize, seed: 1 });
    await step.run(batch); // warm-up: the runtime's first-run allocations
    const times: number[] = [];
    for (let i = 0; i < o.steps; i++) times.push((await step.run(batch)).totalMs);
    const sorted = [...times].sort((a, b) => a - b);
    const mid = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    // Noise: the median's standard error from the median absolute deviation (1.4826 × MAD
    // estimates σ, and is not inflated by one step that a neighbour's burst of work slowed).
    const dev = times.map((t) => Math.abs(t - mid)).sort((a, b) => a - b);
    const mad = dev.length % 2 ? dev[(dev.length - 1) / 2]! : (dev[dev.length / 2 - 1]! + dev[dev.length / 2]!) / 2;
    return { stepMs: mid, noiseMs: (1.4826 * mad * 1.2533) / Math.sqrt(times.length), times };
  } finally {
    await step.release();
  }
}

export interface TrainTuneResult {
  entry: TuneEntry;
  source: 'measured' | 'cache';
  granularity: Granularity | null;
  recompute: string[];
  microBatchSize: number;
  /** The chosen tier's batch resolution (null from the tune cache). */
  resolution: BatchResolution | null;
}

/** Chooses the tier by measured speed; see the file comment. */
export async function tuneTrain(o: {
  ctx: CommandContext;
  config: SoupConfig;
  spec: GptSpec;
  offload: OffloadPlan | null;
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  noCache: boolean;
  resolveMicro(recompute: string[]): Promise<BatchResolution>;
  /** Timed steps per candidate after the warm-up. @default 6 */
  steps?: number;
}): Promise<TrainTuneResult> {
  const { ctx, config } = o;
  const G = config.training.batchSize;
  const key = makeTuneKey({
    command: `soup train ${cacheBaseOf(config, [])} threads ${config.training.threads}`,
    tries: { gradient_checkpointing: TRAIN_TIERS.map(nameOf) },
    globalBatchSize: G,
    worldSize: 1,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
  });
  const location = { env: ctx.env, cwd: ctx.cwd };
  const fromRow = (entry: TuneEntry): { granularity: Granularity | null; m: number } => {
    const r = entry.rows[entry.chosen]!;
    const v = r.values.gradient_checkpointing!;
    return { granularity: v === 'false' ? null : (v as Granularity), m: r.microBatchSize! };
  };
  if (!o.noCache) {
    const hit = lookupTuneEntry(key, location);
    if (hit) {
      const c = fromRow(hit);
      ctx.say(`gradient_checkpointing: auto, from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}; --no-cache to measure again):`);
      printTable(ctx, hit);
      return { entry: hit, source: 'cache', granularity: c.granularity, recompute: recomputeOf(config, c.granularity), microBatchSize: c.m, resolution: null };
    }
  }
  const steps = o.steps ?? 6;
  ctx.say(`gradient_checkpointing: auto, measured: each tier's largest micro-batch (a divisor of ${G}) that fits, then its steps timed (a warm-up, then ${steps} steps) from there down while that is faster`);
  const rows: TuneRow[] = [];
  const resolutions = new Map<TuneRow, BatchResolution>();
  const divisors = divisorsOf(G);
  for (const g of TRAIN_TIERS) {
    const label = `gradient_checkpointing=${nameOf(g)}`;
    const values = { gradient_checkpointing: nameOf(g) };
    const recompute = recomputeOf(config, g);
    let r: BatchResolution | null = null;
    try {
      r = await o.resolveMicro(recompute);
    } catch (err) {
      if (!(err instanceof NoBatchFitsError)) throw err;
    }
    const blank = (m: number | null, note: string | null): TuneRow => ({ label, values, microBatchSize: m, accumulation: m === null ? null : G / m, peakBytes: null, stepMs: null, noiseMs: null, samplesPerSecond: null, note });
    if (r === null) {
      rows.push(blank(null, 'no micro-batch fits'));
      continue;
    }
    // Not pruned by "recompute only adds time": measured on the small template (threads 1),
    // selective (attention probabilities recomputed, not saved) ran 1.2× faster than no
    // checkpointing at the same micro-batch (41.7 against 34.1 samples/s at 16).
    const allowed = divisors.filter((d) => d <= r!.batchSize).sort((a, b) => b - a);
    let prev: TuneRow | null = null;
    for (const m of allowed) {
      const t = await timeTrainStep({ spec: o.spec, recompute, batchSize: m, threads: config.training.threads, offload: o.offload, steps, cwd: ctx.cwd });
      const row = blank(m, null);
      row.stepMs = t.stepMs;
      row.noiseMs = t.noiseMs;
      row.samplesPerSecond = G / ((row.accumulation! * t.stepMs) / 1000);
      row.peakBytes = r.trials.find((x) => x.batch_size === m && x.result === 'fit')?.peak_bytes ?? null;
      if (m === r.batchSize) resolutions.set(row, r);
      rows.push(row);
      if (prev !== null && row.samplesPerSecond <= prev.samplesPerSecond!) break; // slower than the larger m: smaller ones are not tried
      prev = row;
    }
  }
  const choice = chooseConfiguration(rows.map((r) => ({ ...r, label: r.microBatchSize === null ? r.label : `${r.label} at micro-batch ${r.microBatchSize}` })), G);
  if (choice.chosen === null) throw new Error('gradient_checkpointing: auto: no tier could be timed');
  const entry: TuneEntry = {
    chosen: choice.chosen,
    reason: choice.reason,
    rows,
    globalBatchSize: G,
    worldSize: 1,
    timeSteps: steps,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
    command: `soup train (${config.base})`,
    savedAt: new Date().toISOString(),
  };
  printTable(ctx, entry);
  if (!o.noCache) await saveTuneEntry(key, entry, location);
  const c = fromRow(entry);
  return { entry, source: 'measured', granularity: c.granularity, recompute: recomputeOf(config, c.granularity), microBatchSize: c.m, resolution: resolutions.get(rows[choice.chosen]!) ?? null };
}

/** The shape line of a chosen tier. */
export function describeChoice(r: TrainTuneResult, G: number): string {
  return `auto → ${r.granularity ?? 'off'} (measured: ${formatMicroBatch({ microBatchSize: r.microBatchSize, accumulation: G / r.microBatchSize })}, ${r.entry.rows[r.entry.chosen]!.samplesPerSecond!.toFixed(1)} samples/s${r.source === 'cache' ? ', from the tune cache' : ''})`;
}
