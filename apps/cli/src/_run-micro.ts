// soup run's global batch (G, m, a) and its step-down, said as lines: the rules (m per session, the out-of-memory
// judge and step-down, the batch cache lowered, the micro-batch-1 warning) are @soup/plan's.
import {
  microBatchOneWarning,
  microSuperviseOptions,
  type ProbedBatch,
  runGlobalBatch,
  type TrainerMicro,
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
  return {
    supervise: microSuperviseOptions({
      micro: batch,
      probe,
      maxOomRetries: opts.maxOomRetries,
      cache: opts.cache !== false,
      env: ctx.env,
      cwd: ctx.cwd,
      onMicroBatch: (p) => {
        const one = microBatchOneWarning({ ...batch, batchSize: p.batchSize });
        if (one) ctx.warn(one);
      },
      onCacheLowered: (r) => ctx.say(r.line),
    }),
  };
}
