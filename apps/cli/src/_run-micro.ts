// soup run's three numbers (G, m, a) and its step-down: the glue between @soup/supervisor (which
// launches, relaunches and records) and the packages that judge and remember: @soup/cuda-probe (a
// failed trainer's out-of-memory verdict), @soup/batch-probe (divisors, the batch cache).
import { divisorsOf } from '@soup/batch-probe';
import {
  type GlobalBatch,
  lowerProbedBatch,
  probeGlobalBatch,
  type ProbedBatch,
  runGlobalBatch,
  stepDownOptions,
  trialCommand,
} from '@soup/plan';
import type { OomStepDown, SuperviseOptions } from '@soup/supervisor';
import type { CommandContext } from './_context';
import type { GlobalBatchOptions } from './_options';
import { UsageError } from './errors';

/** The supervisor options for `--global-batch-size`, and what RUN_JSON says about them. */
export interface RunMicro {
  supervise: Partial<SuperviseOptions>;
}

type Probe = (micro: { globalBatchSize: number; worldSize: number; headroom: number }) => Promise<ProbedBatch>;

/**
 * Checks the flags; with `--global-batch-size` the supervisor gets m (cache, then probe), the judge and the step-down.
 */
export function runMicro(
  opts: GlobalBatchOptions & { batchSize?: string; probe?: string; maxOomRetries: number; cache: boolean },
  ctx: CommandContext,
  argv: string[],
  probe: Probe,
): RunMicro {
  const { batch, errors } = runGlobalBatch({ ...opts, argv });
  if (errors[0] !== undefined) throw new UsageError(errors[0]);
  if (batch === null) return { supervise: {} };
  const { globalBatchSize: G, worldSize: N, headroom } = batch;
  let probed: ProbedBatch | null = null;
  return {
    supervise: {
      async resolveMicroBatchSize() {
        probed = await probe({ globalBatchSize: G, worldSize: N, headroom });
        const m = probed.batchSize;
        warnIfOne(m, G, N, ctx);
        return { microBatchSize: m, source: probed.source, ...(probed.levers ? { levers: probed.levers } : {}) };
      },
      ...stepDownOptions({
        globalBatchSize: G,
        worldSize: N,
        maxOomRetries: opts.maxOomRetries,
        async onOomStepDown(s: OomStepDown) {
          if (opts.cache === false || probed === null) return;
          const { env, cwd } = ctx;
          const { step, from, to } = s;
          const r = await lowerProbedBatch({ env, cwd, probed, globalBatchSize: G, worldSize: N, step, from, to });
          if (r.lowered)
            ctx.say(`batch cache entry ${probed.cacheKey} lowered ${r.previous ?? '(none)'} → ${s.to}: ${r.note}`);
          else ctx.say(`batch cache entry ${probed.cacheKey} not lowered: ${r.why ?? 'unknown'}`);
        },
      }),
    },
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
