// The usage checks supervise() makes before it touches the store: each names the flag to change.
import { assertCanStart } from './_can-start';
import { SupervisorUsageError } from './errors';
import { nodeRoleOf, type NodeRole } from './node-role';
import { STOP_SIGNALS, type SessionOptions } from './supervise-options';
import { placeholdersIn } from './trainer-child';

/** What the checks settled: the stop signal, the placeholders argv uses, the horizon, G and the world size. */
export interface CheckedOptions {
  stopSignal: NodeJS.Signals;
  used: Set<string>;
  horizon: number | null;
  G: number | null;
  worldSize: number;
  /** This soup's node (several nodes: see nodeRoleOf). */
  role: NodeRole;
  stepRegex: RegExp | null;
}

/** Refuses options that cannot make a session (SupervisorUsageError naming the field). */
export function checkOptions(o: SessionOptions): CheckedOptions {
  if (o.argv.length === 0)
    throw new SupervisorUsageError(
      'the trainer command is empty: pass it after --, e.g. python train.py --output_dir {output_dir}',
      { field: 'argv' },
    );
  const stopSignal = o.stopSignal ?? 'SIGTERM';
  if (!STOP_SIGNALS.includes(stopSignal))
    throw new SupervisorUsageError(`--stop-signal ${stopSignal}: expected one of ${STOP_SIGNALS.join(', ')}`, {
      field: 'stopSignal',
    });
  const horizon = o.horizon ?? null;
  const used = placeholdersIn(o.argv);
  if (used.has('{max_steps}') && horizon === null)
    throw new SupervisorUsageError("the trainer command uses {max_steps}: pass --horizon N (the run's total steps)", {
      field: 'horizon',
    });
  const G = o.globalBatchSize ?? null;
  const worldSize = o.worldSize ?? 1;
  if (G !== null && (o.batchSize ?? null) !== null)
    throw new SupervisorUsageError(
      '--batch-size and --global-batch-size together: with a global batch, {batch_size} is the micro-batch soup ' +
        'resolves; drop --batch-size',
      { field: 'batchSize' },
    );
  if (
    G !== null &&
    (!Number.isSafeInteger(G) || G < 1 || !Number.isSafeInteger(worldSize) || worldSize < 1 || G % worldSize !== 0)
  ) {
    throw new SupervisorUsageError(
      `--global-batch-size ${G} with --world-size ${worldSize}: G must be a positive multiple of the world size, ` +
        `so every rank gets G / N samples per step`,
      { field: 'globalBatchSize' },
    );
  }
  if (G !== null && !o.resolveMicroBatchSize)
    throw new SupervisorUsageError('a global batch needs resolveMicroBatchSize (the cache, then a probe)', {
      field: 'resolveMicroBatchSize',
    });
  if (used.has('{batch_size}') && (o.batchSize ?? null) === null && G === null)
    throw new SupervisorUsageError('the trainer command uses {batch_size}: pass --batch-size N or --batch-size auto', {
      field: 'batchSize',
    });
  for (const name of ['{micro_batch_size}', '{grad_accum}'] as const) {
    if (used.has(name) && G === null)
      throw new SupervisorUsageError(
        `the trainer command uses ${name}: pass --global-batch-size G (samples per optimizer step)`,
        { field: 'globalBatchSize' },
      );
  }
  let stepRegex: RegExp | null = null;
  try {
    stepRegex = o.stepRegex === undefined ? null : new RegExp(o.stepRegex);
  } catch (err) {
    throw new SupervisorUsageError(
      `--step-regex ${String(o.stepRegex)}: not a regular expression (${(err as Error).message})`,
      { field: 'stepRegex', cause: err },
    );
  }
  const role = nodeRoleOf({ flags: o.nodeFlags ?? {}, env: o.env, argv: o.argv });
  if (o.requeue === true && role.slurmJobId === null)
    throw new SupervisorUsageError('--requeue asks SLURM to run the job again, but SLURM_JOB_ID is not set', {
      field: 'requeue',
    });
  assertCanStart(o.argv[0]!, o.cwd, o.env);
  return { stopSignal, used, horizon, G, worldSize, role, stepRegex };
}
