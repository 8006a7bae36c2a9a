// soup train's session: supervise() around soup's own trainer (train-child.ts), the same session engine
// `soup run` uses for any trainer. supervise() owns the resume (pull), the lease, the launch, the pushes,
// the session end (signals, --time-limit), the out-of-memory step-down and the run-long peak; this file
// turns soup.yaml's run into the child's job, and the child's reports and the supervisor's events into
// soup train's lines and its RUN_JSON.
import { planSegment, StoreError, type CheckpointStore } from '@soup/hub-ckpt';
import {
  previousMicroBatch,
  readMicroSessions,
  supervise,
  type MicroSession,
  type OomStepDown,
  type SessionFacts,
  type SuperviseOutcome,
} from '@soup/supervisor';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandContext } from './_context';
import { prepareRun, type PreparedRun } from './_prepare-lines';
import {
  describeMicroBatch,
  sessionMemory,
  sessionOptions,
  stepDownOptions,
  type SessionMemoryWatch,
} from './_session';
import { readResumedState, trainerOptionsOf } from '@soup/plan';
import type { TrainJob } from './_train-job';
import { emptySession, trainListeners, type TrainSession } from './_train-lines';
import { MAX_OOM_RETRIES } from './_train-micro';
import type { SoupConfig } from '@soup/config';
import type { TrainOptions } from './commands/train.options';

/** The trainer child's entry, built beside the CLI's own (tsup entry `src/train-child.ts`). */
export type { TrainSession } from './_train-lines';

export function trainChildPath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'train-child.js');
}

/** Options of {@link trainSession}. */
export interface TrainSessionOptions {
  ctx: CommandContext;
  opts: TrainOptions;
  config: SoupConfig;
  store: CheckpointStore;
  storeName: string;
  /** The store as the "fresh run" line names it (a directory store by its path). */
  storeWhere: string;
  runId: string;
  identity: Record<string, unknown>;
  pushEvery: number;
  stopAfterSteps: number;
  timeLimitMs: number | null;
  leaseTtlMs: number;
  keepRemote: number | null;
  squashHistory: boolean;
  budgetFrom: 'flag' | 'config' | null;
  startedAtMs: number;
  showPath: (p: string) => string;
}

const OUTPUT_SUBDIR = 'checkpoints';

/** Runs one session of soup train through supervise() (see the file comment). */
export async function trainSession(p: TrainSessionOptions): Promise<TrainSession> {
  const { ctx, opts, config } = p;
  const ckptRoot = join(config.output, OUTPUT_SUBDIR);
  const finalDir = join(config.output, 'final');
  const jobPath = join(config.output, '.soup-train-job.json');
  const horizon = config.training.steps;
  const s: TrainSession = emptySession();
  // The budget and --max-memory are known once prepareRun has run (after the resume, before the launch): the
  // watch reads them from this object when it samples and reports.
  const mem = sessionMemory(ctx, config.device);
  let job: TrainJob | null = null;
  const { onStdout, onStderr, onEvent, log } = trainListeners(s, {
    ctx,
    config,
    ckptRoot,
    timeLimitMs: p.timeLimitMs,
    stopAfterSteps: p.stopAfterSteps,
    startedAtMs: p.startedAtMs,
    showPath: p.showPath,
  });
  const G = config.training.batchSize;
  let r: SuperviseOutcome & SessionFacts;
  try {
    r = await supervise({
      argv: [
        process.execPath,
        trainChildPath(),
        jobPath,
        '--output-dir',
        '{output_dir}',
        '--micro-batch-size',
        '{micro_batch_size}',
        '--resume-from',
        '{resume_from}',
      ],
      ...sessionOptions(ctx, {
        store: p.store,
        storeName: p.storeName,
        startedAtMs: p.startedAtMs,
        identity: p.identity,
        fallbackFlag: '--resume auto',
        fallbackUsed: true,
      }),
      outputDir: ckptRoot,
      outputDirGiven: true,
      runId: p.runId,
      leaseTtlMs: p.leaseTtlMs,
      squashHistory: p.squashHistory,
      resume: opts.resume === 'never' ? 'never' : 'auto',
      async resolveMicroBatchSize(resumed) {
        const started = await startSession(p, s, resumed, log);
        job = started.job;
        writeJob();
        await holdBudget(mem, started.prepared, opts);
        return {
          microBatchSize: started.prepared.microBatchSize,
          source: started.prepared.batchSource,
          previous: started.previous,
        };
      },
      ...stepDownOptions({
        globalBatchSize: G,
        worldSize: 1,
        maxOomRetries: opts.maxOomRetries ?? MAX_OOM_RETRIES,
        onOomStepDown: (d: OomStepDown) => {
          // The relaunched child records this session's step-downs in every checkpoint it writes.
          if (job !== null) {
            job.session.oom_step_downs.push(d);
            writeJob();
          }
        },
      }),
      memory: mem.watch,
      horizon,
      completeFile: 'trainer_state.json',
      // A checkpoint appears whole (written beside, then renamed): complete once it is there.
      settleMs: 0,
      graceMs: 120_000,
      pollMs: 200,
      timeLimitMs: p.timeLimitMs,
      stopSignal: 'SIGTERM',
      finalDir,
      // The child saves only the push boundaries (and the session end's step): each one goes to the store.
      pushEach: true,
      // At least the newest: a step-down relaunches the trainer from it.
      keepLocal: Math.max(1, config.hub.keepLocal),
      ...(p.keepRemote !== null ? { keepRemote: p.keepRemote } : { keepRemote: Number.MAX_SAFE_INTEGER }),
      onEvent,
      onStdout,
      onStderr,
    });
  } catch (err) {
    s.bar?.fail();
    // A store outage at final/: the run is trained; soup train says what is kept where (exit 75 or 5).
    if (s.atHorizon && err instanceof StoreError) {
      s.finalError = err;
      return s;
    }
    throw err;
  }
  s.r = r;
  s.memory = mem.report(r.memory);
  const tuned = s.prepared?.tuneMemory ?? null;
  if (s.memory !== null && tuned !== null)
    s.memory.tuning = { peak_bytes: tuned.peakBytes, in_session_peak: false, resident_at_reset_bytes: null };
  return s;

  function writeJob(): void {
    writeFileSync(jobPath, `${JSON.stringify(job, null, 2)}\n`);
  }
}

/** The budget the trainer's peak is held to: training.memory_budget, else what can be reached, else the GPU's. */
function holdBudget(mem: SessionMemoryWatch, prepared: PreparedRun, opts: TrainOptions): Promise<void> {
  return mem.hold({
    budgetBytes: prepared.budgetBytes,
    givenAs: 'memory_budget',
    device: prepared.identity.device === 'cuda' ? 'cuda' : 'cpu',
    deviceBytes: () => prepared.identity.gpuMemoryGb * 2 ** 30,
    maxMemory: opts.maxMemory,
    hint: 'set training.memory_budget',
  });
}

/**
 * After the resume, before the launch: where this session starts, this device's micro-batch and tier
 * (prepareRun), the segment, the child's job, and the session's first lines and progress bar.
 */
async function startSession(
  p: TrainSessionOptions,
  s: TrainSession,
  resumed: { resumeFrom: string | null; step: number | null },
  log: (line: string) => void,
): Promise<{
  job: TrainJob;
  prepared: PreparedRun;
  previous: { microBatchSize: number; gradAccum: number } | null;
}> {
  const { ctx, opts, config } = p;
  const horizon = config.training.steps;
  const G = config.training.batchSize;
  const finalDir = join(config.output, 'final');
  const sessions: MicroSession[] = resumed.resumeFrom ? readMicroSessions(resumed.resumeFrom) : [];
  s.startStep = resumed.step ?? 0;
  s.lastStep = s.startStep;
  if (resumed.resumeFrom) {
    const st = readResumedState(resumed.resumeFrom);
    s.tokensConsumed = st.tokensConsumed;
    s.lastLoss = st.lastLoss;
  } else {
    log(
      `fresh run: store is at ${p.storeWhere} and ` +
        ((await p.store.exists())
          ? 'empty (no checkpoint of this run)'
          : 'empty (it does not exist yet; the first push creates it)'),
    );
  }
  const prepared = await prepareRun({
    ctx,
    config,
    noCache: opts.cache === false,
    predict: opts.predict !== false,
    budgetFrom: p.budgetFrom,
  });
  s.prepared = prepared;
  const plan = planSegment({
    horizon,
    pushEvery: p.pushEvery,
    stopAfterSteps: p.stopAfterSteps,
    startStep: s.startStep,
  });
  s.plan = plan;
  const job: TrainJob = {
    trainer: trainerOptionsOf(config, prepared, ctx.cwd, p.runId),
    saveSteps: plan.pushSteps,
    stopStep: plan.stopStep,
    finalDir,
    val: config.data.valPath
      ? { path: config.data.valPath, maxLength: config.data.maxLength, batches: config.training.valBatches }
      : null,
    record: {
      run: p.runId,
      identity: p.identity,
      batch_size: G,
      batch_source: prepared.batchSource,
      grad_ckpt: prepared.tier.granularity ?? false,
    },
    sessionsBefore: sessions,
    session: { start_step: s.startStep + 1, source: prepared.batchSource, oom_step_downs: [] },
  };
  mkdirSync(config.output, { recursive: true });
  const micro = describeMicroBatch(
    { microBatchSize: prepared.microBatchSize, accumulation: prepared.accumulation },
    sessions.at(-1),
  );
  ctx.say(
    `training steps ${plan.startStep + 1}..${plan.stopStep} of ${horizon}: batch ${G} × ${config.data.maxLength}` +
      ` tokens, ${micro} (${prepared.batchSource}), ` +
      `checkpointing ${prepared.tier.description}, ` +
      (prepared.offload
        ? `offload ${prepared.offload.target}` +
          `${prepared.offload.saveDir ? ` to ${p.showPath(prepared.offload.saveDir)}` : ''} (segmented), `
        : '') +
      `${prepared.identity.gpuName}; ` +
      (plan.segmentStop ? `stops at step ${plan.stopStep} (segment boundary)` : 'runs to the horizon'),
  );
  // Counts and percentages are relative to the horizon (a resumed session shows 90/120, 75 %).
  s.bar = ctx.progress({
    label: 'train',
    total: horizon,
    start: plan.startStep,
    end: plan.stopStep,
    unit: 'step',
    delayMs: 0,
  });
  return { job, prepared, previous: previousMicroBatch(sessions) };
}
