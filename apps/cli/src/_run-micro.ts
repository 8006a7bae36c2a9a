// soup run's three numbers (G, m, a) and its step-down: the glue between @soup/supervisor (which
// launches, relaunches and records) and the packages that judge and remember: @soup/cuda-probe (a
// failed trainer's out-of-memory verdict), @soup/batch-probe (divisors, the batch cache).
import { divisorsOf, formatMicroBatch } from '@soup/batch-probe';
import { lowerProbedBatch, type ProbedBatch, trialCommand } from '@soup/plan';
import type { OomStepDown, SuperviseOptions } from '@soup/supervisor';
import type { CommandContext } from './_context';
import type { GlobalBatchOptions } from './_options';
import { stepDownOptions } from './_session';
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
  const G = opts.globalBatchSize;
  const N = opts.worldSize ?? 1;
  const uses = (name: string): boolean => argv.some((a) => a.includes(name));
  if (G === undefined) {
    for (const name of ['{micro_batch_size}', '{grad_accum}']) {
      if (uses(name))
        throw new UsageError(
          `the trainer command uses ${name}: pass --global-batch-size G (samples per optimizer step) and --probe ` +
            `"<one-step command with {micro_batch_size}>"`,
        );
    }
    if (opts.worldSize !== undefined)
      throw new UsageError('--world-size needs --global-batch-size G: a = G / (m × world size)');
    if (opts.headroom !== undefined)
      throw new UsageError('--headroom applies to the micro-batch probe: pass --global-batch-size G (and --probe)');
    return { supervise: {} };
  }
  if (opts.batchSize !== undefined)
    throw new UsageError(
      `--batch-size and --global-batch-size together: with a global batch, {batch_size} is the micro-batch soup ` +
        `picks for this device; drop --batch-size`,
    );
  if (G % N !== 0)
    throw new UsageError(
      `--global-batch-size ${G} is not a multiple of --world-size ${N}: every rank must get G / N samples per ` +
        `step; pick G = ${Math.ceil(G / N) * N}`,
    );
  if (opts.probe === undefined) {
    throw new UsageError(
      '--global-batch-size needs --probe "<the trainer\'s one-step command with {micro_batch_size}>": each ' +
        'session finds the micro-batch that fits its device (the batch cache first)',
    );
  }
  const headroom = opts.headroom ?? 0;
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
            ctx.say(
              `soup: batch cache entry ${probed.cacheKey} lowered ${r.previous ?? '(none)'} → ${s.to}: ${r.note}`,
            );
          else ctx.say(`soup: batch cache entry ${probed.cacheKey} not lowered: ${r.why ?? 'unknown'}`);
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
export interface ExecMicro {
  globalBatchSize: number;
  worldSize: number;
  perRank: number;
  headroom: number;
  /** The trial's command: {micro_batch_size} is the candidate, {grad_accum} 1 (a trial is one micro-batch). */
  command(typed: string): string;
  shape(m: number): string;
  fields(m: number): {
    micro_batch_size: number;
    grad_accum: number;
    global_batch_size: number;
    world_size: number;
    micro_batch: string;
  };
  warnIfOne(m: number, ctx: CommandContext): void;
}

export function execMicro(opts: GlobalBatchOptions, mode: string): ExecMicro | null {
  const G = opts.globalBatchSize;
  const N = opts.worldSize ?? 1;
  if (G === undefined) {
    if (opts.worldSize !== undefined || opts.headroom !== undefined)
      throw new UsageError(
        `${opts.worldSize !== undefined ? '--world-size' : '--headroom'} needs --global-batch-size G: the probe ` +
          `then answers the micro-batch m, a divisor of G / world size`,
      );
    return null;
  }
  if (mode !== 'exec')
    throw new UsageError(
      '--global-batch-size applies to soup probe --exec (soup train reads training.batch_size as G from soup.yaml)',
    );
  if (G % N !== 0)
    throw new UsageError(
      `--global-batch-size ${G} is not a multiple of --world-size ${N}: every rank must get G / N samples per ` +
        `step; pick G = ${Math.ceil(G / N) * N}`,
    );
  const perRank = G / N;
  const shape = (m: number): string => formatMicroBatch({ microBatchSize: m, accumulation: perRank / m, worldSize: N });
  return {
    globalBatchSize: G,
    worldSize: N,
    perRank,
    headroom: opts.headroom ?? 0,
    command: trialCommand,
    shape,
    fields: (m) => ({
      micro_batch_size: m,
      grad_accum: perRank / m,
      global_batch_size: G,
      world_size: N,
      micro_batch: shape(m),
    }),
    warnIfOne: (m, ctx) => warnIfOne(m, G, N, ctx),
  };
}
