// `gradient_checkpointing: auto` (and `activation_offloading: auto`) in soup train / soup plan:
// soup.yaml turned into @soup/tune's tuneTrain, its events and its table handed to the caller. The
// search, the timing of soup's own step and the choice are @soup/tune's.
import { formatMicroBatch } from '@soup/batch-probe';
import type { Granularity } from '@soup/grad-ckpt';
import type { GptSpec } from '@soup/onnx-train';
import { tuneTrain as tune, type TrainTuneResult as TuneResult, type TuneEntry, type TuneEvent } from '@soup/tune';
import type { SoupConfig } from '@soup/config';
import { cacheBaseOf, recomputeOf, type OffloadPlan } from './config-plan';
import type { BatchResolution, PlanIo } from './resolve-batch';

export type TrainTuneResult = TuneResult<Granularity, BatchResolution>;

/** What {@link tuneTrain} reports: the tuner's own events, then its table (the entry's rows). */
export type TrainTuneEvent = { type: 'tune'; event: TuneEvent } | { type: 'tuned'; entry: TuneEntry };

/**
 * Chooses the tier (and, with `activation_offloading: auto`, the offload) by measured speed
 * (@soup/tune's tuneTrain). `tiers` and `offloads` list the choices, lightest first.
 */
export async function tuneTrain(o: {
  io: PlanIo;
  onEvent: (e: TrainTuneEvent) => void;
  config: SoupConfig;
  spec: GptSpec;
  tiers: readonly (Granularity | null)[];
  offloads: readonly (OffloadPlan | null)[];
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  noCache: boolean;
  /**
   * The largest fitting divisor of G for a recompute set and offload, searching only above `floor`
   * when given (a divisor the fits' peaks put well over the budget is not tried: see
   * probeMicroBatchSize's `predictStop`).
   */
  resolveMicro(recompute: string[], floor: number, offload: OffloadPlan | null): Promise<BatchResolution>;
  /** Timed steps per candidate after the warm-up. @default 6 */
  steps?: number;
}): Promise<TrainTuneResult> {
  const { io, config } = o;
  const withOffload = config.training.activationOffloading === 'auto';
  const r = await tune<Granularity, BatchResolution>({
    spec: o.spec,
    globalBatchSize: config.training.batchSize,
    threads: config.training.threads,
    device: config.device,
    tiers: o.tiers,
    offloads: o.offloads,
    offloadIsLever: withOffload,
    recomputeOf: (g) => recomputeOf(config, g),
    cacheCommand:
      `soup train ${cacheBaseOf(config, [], withOffload ? null : undefined)} threads ` + `${config.training.threads}`,
    command: `soup train (${config.base})`,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
    noCache: o.noCache,
    resolveMicro: o.resolveMicro,
    ...(o.steps !== undefined ? { steps: o.steps } : {}),
    cwd: io.cwd,
    cache: { env: io.env, cwd: io.cwd },
    onEvent: (event) => o.onEvent({ type: 'tune', event }),
  });
  o.onEvent({ type: 'tuned', entry: r.entry });
  return r;
}

/** The shape line of a chosen tier (`lever`: gradient_checkpointing's or activation_offloading's). */
export function describeChoice(r: TrainTuneResult, G: number, lever: 'tier' | 'offload' = 'tier'): string {
  const value = lever === 'tier' ? (r.granularity ?? 'off') : (r.offload?.target ?? 'off');
  return (
    `auto → ${value} (measured: ` +
    `${formatMicroBatch({ microBatchSize: r.microBatchSize, accumulation: G / r.microBatchSize })}, ` +
    `${r.entry.rows[r.entry.chosen]!.samplesPerSecond!.toFixed(1)} samples/s` +
    `${r.source === 'cache' ? ', from the tune cache' : ''})`
  );
}
