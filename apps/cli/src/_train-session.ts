// soup train's session: supervise() around soup's own trainer (train-child.ts), the same session engine
// `soup run` uses for any trainer. supervise() owns the resume (pull), the lease, the launch, the pushes,
// the session end (signals, --time-limit), the out-of-memory step-down and the run-long peak; @soup/plan's
// superviseTrain makes soup.yaml's run into the child's job and runs the session; this file says its lines.
import type { CheckpointStore } from '@soup/hub-ckpt';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandContext } from './_context';
import { prepareRun } from './_prepare-lines';
import { sessionMemory, sessionOptions } from './_session';
import { describeTrainSegment, superviseTrain, type SuperviseTrainOptions, trainPathsOf } from '@soup/plan';
import { emptySession, trainListeners, type TrainSession } from './_train-lines';
import { MAX_OOM_RETRIES, type TrainOptions } from './commands/train.options';

export type { TrainSession } from './_train-lines';

/** The trainer child's entry, built beside the CLI's own (tsup entry `src/train-child.ts`). */
export function trainChildPath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'train-child.js');
}

/** Options of {@link trainSession}: the run's settings superviseTrain takes as they are, and what the lines need. */
export interface TrainSessionOptions
  extends Pick<
    SuperviseTrainOptions,
    | 'config'
    | 'runId'
    | 'identity'
    | 'pushEvery'
    | 'stopAfterSteps'
    | 'timeLimitMs'
    | 'leaseTtlMs'
    | 'keepRemote'
    | 'squashHistory'
    | 'minCommitIntervalMs'
    | 'resume'
  > {
  ctx: CommandContext;
  opts: TrainOptions;
  store: CheckpointStore;
  storeName: string;
  /** The store as the "fresh run" line names it (a directory store by its path). */
  storeWhere: string;
  budgetFrom: 'flag' | 'config' | null;
  startedAtMs: number;
  showPath: (p: string) => string;
}

/** Runs one session of soup train through supervise() (see the file comment). */
export async function trainSession(p: TrainSessionOptions): Promise<TrainSession> {
  const { ctx, opts, store, storeName, storeWhere, budgetFrom, startedAtMs, showPath, ...settings } = p;
  const { config } = settings;
  const horizon = config.training.steps;
  const s: TrainSession = emptySession();
  const { onStdout, onStderr, onEvent, log } = trainListeners(s, {
    ctx,
    config,
    ckptRoot: trainPathsOf(config.output).ckptRoot,
    timeLimitMs: settings.timeLimitMs,
    startedAtMs,
    showPath,
  });
  try {
    await superviseTrain({
      ...settings,
      childPath: trainChildPath(),
      cwd: ctx.cwd,
      maxOomRetries: opts.maxOomRetries ?? MAX_OOM_RETRIES,
      maxMemory: opts.maxMemory,
      facts: s,
      session: {
        ...sessionOptions(ctx, {
          store,
          storeName,
          startedAtMs,
          identity: settings.identity,
          fallbackFlag: '--resume auto',
          fallbackUsed: true,
        }),
        leaseWait: opts.waitLease !== false,
        takeOverLease: opts.takeOverLease ?? null,
      },
      // The budget and --max-memory are known once prepareRun has run (after the resume, before the launch): the
      // watch reads them from this object when it samples and reports.
      memory: sessionMemory(ctx, config.device),
      async prepare(resumed) {
        if (!resumed.resumeFrom) {
          log(
            `fresh run: store is at ${storeWhere} and ` +
              ((await store.exists())
                ? 'empty (no checkpoint of this run)'
                : 'empty (it does not exist yet; the first push creates it)'),
          );
        }
        return prepareRun({
          ctx,
          config,
          noCache: opts.cache === false,
          predict: opts.predict !== false,
          budgetFrom,
        });
      },
      onSegment({ prepared, plan, sessions }) {
        ctx.say(describeTrainSegment({ config, prepared, plan, sessions, show: showPath }));
        // Counts and percentages are relative to the horizon (a resumed session shows 90/120, 75 %).
        s.bar = ctx.progress({
          label: 'train',
          total: horizon,
          start: plan.startStep,
          end: plan.stopStep,
          unit: 'step',
          delayMs: 0,
        });
      },
      listeners: { onEvent, onStdout, onStderr },
    });
  } catch (err) {
    s.bar?.fail();
    throw err;
  }
  return s;
}
