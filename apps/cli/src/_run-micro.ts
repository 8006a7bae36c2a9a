// soup run's three numbers (G, m, a) and its step-down, said as lines: the rules (m per session, the
// out-of-memory judge and step-down, the batch cache lowered) are @soup/plan's microSuperviseOptions.
import { divisorsOf } from '@soup/batch-probe';
import {
  type GlobalBatch,
  microSuperviseOptions,
  probeGlobalBatch,
  type ProbedBatch,
  runGlobalBatch,
  type TrainerMicro,
  trialCommand,
} from '@soup/plan';
import type { SuperviseOptions } from '@soup/supervisor';
import type { CommandContext } from './_context';
import type { GlobalBatchOptions } from './_options';
import { UsageError } from './errors';

/** The supervisor options for `--global-batch-size`, and what RUN_JSON says about them. */
export interface RunMicro {
  supervise: Partial<SuperviseOptions>;
}

/**
 * Checks the flags; with `--global-batch-size` the supervisor gets m (cache, then probe), the judge and the step-down
 * (@soup/plan's microSuperviseOptions); this says its lines.
 */
export function runMicro(
  opts: GlobalBatchOptions & { batchSize?: number | string; probe?: string; maxOomRetries: number; cache: boolean },
  ctx: CommandContext,
  argv: string[],
  probe: (micro: TrainerMicro) => Promise<ProbedBatch>,
): RunMicro {
  const { batch, errors } = runGlobalBatch({ ...opts, argv });
  if (errors[0] !== undefined) throw new UsageError(errors[0]);
  if (batch === null) return { supervise: {} };
  const { globalBatchSize: G, worldSize: N } = batch;
  return {
    supervise: microSuperviseOptions({
      micro: batch,
      probe,
      maxOomRetries: opts.maxOomRetries,
      cache: opts.cache !== false,
      env: ctx.env,
      cwd: ctx.cwd,
      onMicroBatch: (p) => warnIfOne(p.batchSize, G, N, ctx),
      onCacheLowered: (r) =>
        r.lowered
          ? ctx.say(
              `batch cache entry ${r.probed.cacheKey} lowered ${r.previous ?? '(none)'} → ${r.stepDown.to}: ` +
                `${r.note}`,
            )
          : ctx.say(`batch cache entry ${r.probed.cacheKey} not lowered: ${r.why ?? 'unknown'}`),
    }),
  };
}

/**
 * m = 1 with G / N > 1: each step accumulates G / N micro-batches of one; say so, naming the divisor that did not fit.
 */
function warnIfOne(m: number, G: number, N: number, ctx: CommandContext): void {
  const perRank = G / N;
  if (m !== 1 || perRank === 1) return;
  ctx.warn(
    `micro-batch 1: no larger divisor of ${N === 1 ? `--global-batch-size ${G}` : `G / world size = ${perRank}`}` +
      ` fits this device (the next, ${divisorsOf(perRank)[1]}, did not), ` +
      `so each step accumulates ${perRank} micro-batches of 1; a global batch with more divisors (e.g. ` +
      `${perRank + (perRank % 2)} per rank) may use the device better`,
  );
}

/** `soup probe --exec` with `--global-batch-size`: it answers m (a divisor of G / N), never G. */
export interface ExecMicro extends GlobalBatch {
  /** The trial's command: {micro_batch_size} is the candidate, {grad_accum} 1 (a trial is one micro-batch). */
  command(typed: string): string;
  warnIfOne(m: number, ctx: CommandContext): void;
}

export function execMicro(opts: GlobalBatchOptions, mode: string): ExecMicro | null {
  const { batch, errors } = probeGlobalBatch({ ...opts, mode });
  if (errors[0] !== undefined) throw new UsageError(errors[0]);
  if (batch === null) return null;
  const warn = (m: number, ctx: CommandContext) => warnIfOne(m, batch.globalBatchSize, batch.worldSize, ctx);
  return { ...batch, command: trialCommand, warnIfOne: warn };
}
