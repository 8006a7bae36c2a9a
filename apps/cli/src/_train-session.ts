// soup train's session: supervise() around soup's own trainer (train-child.ts), the same session engine
// `soup run` uses for any trainer. supervise() owns the resume (pull), the lease, the launch, the pushes,
// the session end (signals, --time-limit), the out-of-memory step-down and the run-long peak; this file
// turns soup.yaml's run into the child's job, and the child's reports and the supervisor's events into
// soup train's lines and its RUN_JSON.
import { nextMicroBatchSize } from '@soup/batch-probe';
import { createTreeMemoryReader, judgeTrainerExit, reachableMemory } from '@soup/cuda-probe';
import { planSegment, type CheckpointStore, type SegmentPlan } from '@soup/hub-ckpt';
import type { TrainerOptions } from '@soup/onnx-train';
import {
  supervise,
  type MemoryWatchOptions,
  type OomStepDown,
  type SessionFacts,
  type SuperviseEvent,
  type SuperviseOutcome,
} from '@soup/supervisor';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandContext } from './_context';
import { describeMicroBatch, readMicroSessions, type MicroSession } from './_micro-sessions';
import { prepareRun, type PreparedRun } from './_prepare';
import { memoryResult } from './_run-memory';
import type { SessionPeakReport } from './_session-peak';
import { resolveMaxMemory } from './_session-peak';
import { REPORT_PREFIX, type TrainJob, type TrainReport } from './_train-job';
import { MAX_OOM_RETRIES } from './_train-micro';
import { UsageError } from './errors';
import { formatBytes } from './format-bytes';
import { parseBytes } from './parse-bytes';
import { formatDuration, type Progress } from './progress';
import type { SoupConfig } from './validate-config';

/** The trainer child's entry, built beside the CLI's own (tsup entry `src/train-child.ts`). */
export function trainChildPath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'train-child.js');
}

/** Options of {@link trainSession}. */
export interface TrainSessionOptions {
  ctx: CommandContext;
  opts: Record<string, unknown>;
  config: SoupConfig;
  store: CheckpointStore;
  storeName: string;
  /** The store as the "fresh run" line names it (a directory store by its path). */
  storeWhere: string;
  runId: string;
  identity: unknown;
  pushEvery: number;
  stopAfterSteps: number;
  timeLimitMs: number | null;
  leaseTtlMs: number;
  keepRemote: number | null;
  squashHistory: boolean;
  budgetFrom: 'flag' | 'config' | null;
  startedAtMs: number;
  showPath: (p: string) => string;
  refusal: (err: unknown, run: string) => Promise<never>;
}

/** What the session did, for soup train's closing lines and RUN_JSON. */
export interface TrainSession {
  r: SuperviseOutcome & SessionFacts;
  prepared: PreparedRun | null;
  plan: SegmentPlan | null;
  startStep: number;
  /** The newest step the child completed (startStep when none). */
  lastStep: number;
  /** The newest complete checkpoint when the trainer exited (null: none). */
  savedStep: number | null;
  tokensConsumed: number;
  initialLoss: number | null;
  lastLoss: number | null;
  valLoss: number | null;
  stepsRun: number;
  trainMs: number;
  /** How the session ended early (signal, time limit), and when; null when it did not. */
  ended: { reason: 'SIGTERM' | 'SIGINT' | 'time-limit' | 'abort'; afterMs: number } | null;
  /** Pushes that failed this session (the newest is retried by the supervisor). */
  unpushed: Array<{ step: number; reason: string }>;
  memory: SessionPeakReport | null;
  /** Time from launch to the child's first report (its start-up, ready to train), ms; null when it never got there. */
  startupMs: number | null;
  bar: Progress | null;
}

const OUTPUT_SUBDIR = 'checkpoints';

/** Runs one session of soup train through supervise() (see the file comment). */
export async function trainSession(p: TrainSessionOptions): Promise<TrainSession> {
  const { ctx, opts, config } = p;
  const ckptRoot = join(config.output, OUTPUT_SUBDIR);
  const finalDir = join(config.output, 'final');
  const jobPath = join(config.output, '.soup-train-job.json');
  const horizon = config.training.steps;
  const s: TrainSession = {
    r: null as never,
    prepared: null,
    plan: null,
    startStep: 0,
    lastStep: 0,
    savedStep: null,
    tokensConsumed: 0,
    initialLoss: null,
    lastLoss: null,
    valLoss: null,
    stepsRun: 0,
    trainMs: 0,
    ended: null,
    unpushed: [],
    memory: null,
    startupMs: null,
    bar: null,
  };
  // The budget and --max-memory are known once prepareRun has run (after the resume, before the launch): the
  // watch reads them from this object when it samples and reports.
  const [kind, id] = [config.device.kind, config.device.id];
  const reader = createTreeMemoryReader({ device: kind, deviceId: id, env: ctx.env });
  const memory: MemoryWatchOptions = {
    read: (pid) => reader.read(pid),
    method: reader.method,
    budgetBytes: null,
    maxMemoryBytes: null,
    formatBytes,
  };
  let budgetSource: SessionPeakReport['budget_source'] = null;
  let job: TrainJob | null = null;
  let launchedAt: number | null = null;
  let stopAt: number | null = null;
  const log = (line: string): void => (s.bar ? s.bar.log(line) : ctx.say(line));
  const warn = (line: string): void => (s.bar ? s.bar.log(`warning: ${line}`) : ctx.warn(line));

  const onReport = (r: TrainReport): void => {
    if (r.event === 'ready') {
      if (launchedAt !== null && s.startupMs === null) s.startupMs = Date.now() - launchedAt;
    } else if (r.event === 'begin') {
      // the supervisor reads the step from the line itself
    } else if (r.event === 'step') {
      s.stepsRun += 1;
      s.trainMs += r.ms;
      s.lastStep = r.step;
      s.tokensConsumed = r.tokensConsumed;
      s.initialLoss ??= r.loss;
      s.lastLoss = r.loss;
      const G = r.microBatchSize * r.accumulation;
      s.bar?.update(
        r.step,
        `loss ${r.loss.toFixed(3)}  lr ${r.lr.toExponential(1)}  micro ${r.microBatchSize} × ${r.accumulation} = ${G}`,
      );
    } else if (r.event === 'validation') {
      s.valLoss = r.loss;
      ctx.say(`validation loss ${r.loss.toFixed(4)} over ${r.windows} sequences`);
    } else if (r.event === 'validation-oom') {
      warn(
        `validation loss unknown: out of memory at a validation batch of ${r.batchSize} (${r.error}); the trained weights are kept and pushed as final/`,
      );
    } else {
      warn(`${config.data.valPath}: data.val has ${r.bytes} bytes, fewer than max_length + 1: no validation`);
    }
  };
  const lines = (sink: (line: string) => void) => {
    let partial = '';
    return (chunk: string): void => {
      const all = (partial + chunk).split('\n');
      partial = all.pop() ?? '';
      for (const line of all) sink(line);
    };
  };
  const onStdout = lines((line) => {
    if (line.startsWith(REPORT_PREFIX)) onReport(JSON.parse(line.slice(REPORT_PREFIX.length)) as TrainReport);
    else if (line !== '') log(line);
  });
  const onStderr = lines((line) => {
    if (line !== '') s.bar ? s.bar.log(line) : ctx.stderr.write(`${line}\n`);
  });

  const onEvent = (e: SuperviseEvent): void => {
    switch (e.type) {
      case 'resumed':
        log(`resuming from ckpt/checkpoint-${e.step} at step ${e.step}`);
        return;
      case 'launched':
        launchedAt = Date.now();
        log(e.line);
        return;
      case 'pushed':
        log(e.line);
        return;
      case 'push-failed':
        s.unpushed.push({ step: e.step ?? -1, reason: e.line });
        warn(
          `could not push checkpoint-${e.step} (${e.line}); training goes on, the next boundary pushes again (kept locally in ${p.showPath(join(ckptRoot, `checkpoint-${e.step}`))})`,
        );
        return;
      case 'stopping':
        stopAt = Date.now();
        s.ended = { reason: endReason(e.reason ?? '', ctx.signal), afterMs: stopAt - p.startedAtMs };
        return;
      case 'trainer-exited':
        s.savedStep = e.step ?? null;
        if (e.exit?.stopping && s.ended !== null) sayEnd(s.ended);
        return;
      case 'oom-step-down':
        warn(e.line.replace(/^soup: /, ''));
        return;
      case 'pushing':
        return;
      case 'warning':
      case 'leftovers':
        // An exit 0 before the horizon is --stop-after-steps' segment: said below, in soup train's words.
        if (p.stopAfterSteps > 0 && /before its horizon/.test(e.line)) return;
        warn(e.line);
        return;
      default:
        // soup train words the run, the micro-batch and the session's end itself.
        if (e.line.startsWith('soup: ') && !/^soup: (segment saved|run complete)/.test(e.line)) log(e.line);
    }
  };
  const sayEnd = (ended: NonNullable<TrainSession['ended']>): void => {
    const why =
      ended.reason === 'time-limit'
        ? `--time-limit ${formatDuration(p.timeLimitMs ?? 0)} reached`
        : ended.reason === 'abort'
          ? 'abort'
          : ended.reason;
    const step = s.lastStep;
    const boundary = s.plan?.pushSteps.includes(step) ?? false;
    if (step > s.startStep && !boundary)
      ctx.say(`session end (${why}) at step ${step}: saving checkpoint-${step} and pushing it`);
    else
      ctx.say(
        `session end (${why}) at step ${step}: ${step === s.startStep ? 'no step was run this session' : `checkpoint-${step} is already pushed`}; nothing new to push`,
      );
  };

  const G = config.training.batchSize;
  const r = await supervise({
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
    store: p.store,
    storeName: p.storeName,
    outputDir: ckptRoot,
    outputDirGiven: true,
    cwd: ctx.cwd,
    env: ctx.env,
    signal: ctx.signal,
    runId: p.runId,
    leaseTtlMs: p.leaseTtlMs,
    squashHistory: p.squashHistory,
    resume: opts.resume === 'never' ? 'never' : 'auto',
    globalBatchSize: G,
    worldSize: 1,
    async resolveMicroBatchSize(resumed) {
      const sessions: MicroSession[] = resumed.resumeFrom ? readMicroSessions(resumed.resumeFrom) : [];
      s.startStep = resumed.step ?? 0;
      s.lastStep = s.startStep;
      if (resumed.resumeFrom) {
        const st = readResumedState(resumed.resumeFrom);
        s.tokensConsumed = st.tokensConsumed;
        s.lastLoss = st.lastLoss;
      } else {
        log(
          `fresh run: store is at ${p.storeWhere} and ${(await p.store.exists()) ? 'empty (no checkpoint of this run)' : 'empty (it does not exist yet; the first push creates it)'}`,
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
      setBudget(prepared);
      job = {
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
      writeJob();
      const micro = describeMicroBatch(
        { microBatchSize: prepared.microBatchSize, accumulation: prepared.accumulation },
        sessions.at(-1),
      );
      ctx.say(
        `training steps ${plan.startStep + 1}..${plan.stopStep} of ${horizon}: batch ${G} × ${config.data.maxLength} tokens, ${micro} (${prepared.batchSource}), ` +
          `checkpointing ${prepared.tier.description}, ` +
          (prepared.offload
            ? `offload ${prepared.offload.target}${prepared.offload.saveDir ? ` to ${p.showPath(prepared.offload.saveDir)}` : ''} (segmented), `
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
      const last = sessions.at(-1);
      return {
        microBatchSize: prepared.microBatchSize,
        source: prepared.batchSource,
        previous: last ? { microBatchSize: last.micro_batch_size, gradAccum: last.grad_accum } : null,
      };
    },
    judgeOutOfMemory: (exit) => {
      const v = judgeTrainerExit({
        stdout: exit.stdoutTail.join('\n'),
        stderr: exit.stderrTail.join('\n'),
        code: exit.code,
        signal: exit.signal,
      });
      return v.oom ? (v.line ?? 'out of memory') : null;
    },
    nextMicroBatchSize: (m) => nextMicroBatchSize({ globalBatchSize: G, microBatchSize: m }),
    maxOomRetries: opts.maxOomRetries === undefined ? MAX_OOM_RETRIES : Number(opts.maxOomRetries),
    onOomStepDown: (d: OomStepDown) => {
      // The relaunched child records this session's step-downs in every checkpoint it writes.
      if (job !== null) {
        job.session.oom_step_downs.push(d);
        writeJob();
      }
    },
    memory,
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
    ...(p.keepRemote !== null ? { keepRemote: p.keepRemote } : { keepRemote: Number.MAX_SAFE_INTEGER }),
    startedAtMs: p.startedAtMs,
    refusal: p.refusal,
    onEvent,
    onStdout,
    onStderr,
  });
  s.r = r;
  s.memory = memoryResult(r.memory, budgetSource);
  const tuned = s.prepared?.tuneMemory ?? null;
  if (s.memory !== null && tuned !== null)
    s.memory.tuning = { peak_bytes: tuned.peakBytes, in_session_peak: false, resident_at_reset_bytes: null };
  return s;

  function writeJob(): void {
    writeFileSync(jobPath, `${JSON.stringify(job, null, 2)}\n`);
  }

  function setBudget(prepared: PreparedRun): void {
    let budgetBytes = prepared.budgetBytes;
    budgetSource = budgetBytes !== null ? 'memory_budget' : null;
    if (budgetBytes === null && prepared.identity.device !== 'cuda') {
      try {
        budgetBytes = reachableMemory().bytes;
        budgetSource = 'reachable';
      } catch {
        budgetBytes = null;
      }
    } else if (budgetBytes === null) {
      budgetBytes = prepared.identity.gpuMemoryGb * 2 ** 30;
      budgetSource = 'device';
    }
    const maxMemoryBytes = resolveMaxMemory(opts.maxMemory, budgetBytes, parseBytes);
    if (opts.maxMemory !== undefined && maxMemoryBytes === null) {
      throw new UsageError(
        `--max-memory ${String(opts.maxMemory)}: give a size like 6GiB, or a fraction like 0.9 or 90% of the budget (a fraction needs a known budget: set training.memory_budget)`,
      );
    }
    memory.budgetBytes = budgetBytes;
    memory.maxMemoryBytes = maxMemoryBytes;
  }
}

/** The trainer's options for this run on this device (m comes from the supervisor, per launch). */
function trainerOptionsOf(
  config: SoupConfig,
  prepared: PreparedRun,
  cwd: string,
  run: string,
): Omit<TrainerOptions, 'microBatchSize'> {
  return {
    spec: prepared.spec,
    files: [config.data.trainPath],
    batchSize: prepared.globalBatchSize,
    totalSteps: config.training.steps,
    lr: config.training.lr,
    warmupSteps: config.training.warmupSteps,
    seed: config.training.seed,
    evalFraction: 0,
    adamw: { weightDecay: config.training.weightDecay, maxGradNorm: config.training.gradClip },
    recompute: prepared.tier.recompute,
    // Offload runs onnx-train's segmented step: each block's saved activations go through the store.
    ...(prepared.offload
      ? {
          execution: 'segmented' as const,
          offload: { target: prepared.offload.target, saveDir: prepared.offload.saveDir, cwd },
        }
      : {}),
    executionProvider: config.device.kind,
    deviceId: config.device.id,
    ...(config.training.threads > 0 ? { intraOpNumThreads: config.training.threads } : {}),
    // One run id everywhere: trainer_state.json, soup_run.json and latest.json.
    run,
  };
}

function readResumedState(dir: string): { tokensConsumed: number; lastLoss: number | null } {
  try {
    const json = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
    return {
      tokensConsumed: Number(json.tokens_consumed ?? 0),
      lastLoss: typeof json.last_loss === 'number' ? json.last_loss : null,
    };
  } catch {
    return { tokensConsumed: 0, lastLoss: null };
  }
}

/** The supervisor's stop reason in soup train's words: the signal's name, or the time limit. */
function endReason(reason: string, signal: AbortSignal): 'SIGTERM' | 'SIGINT' | 'time-limit' | 'abort' {
  if (reason.startsWith('time limit')) return 'time-limit';
  const sig =
    typeof signal.reason === 'object' && signal.reason !== null
      ? (signal.reason as { signal?: unknown }).signal
      : undefined;
  return sig === 'SIGTERM' || sig === 'SIGINT'
    ? sig
    : /SIGTERM/.test(reason)
      ? 'SIGTERM'
      : /SIGINT/.test(reason)
        ? 'SIGINT'
        : 'abort';
}

/** The peak line's tail when the tuner timed steps in soup's own process: its peak, apart from the trainer's. */
export function describeTuning(r: SessionPeakReport | null): string {
  const t = r?.tuning;
  if (t === undefined || t.peak_bytes === null) return '';
  return `; before it, the tuner's timing sessions took soup's own process to ${formatBytes(t.peak_bytes)} (measured apart: the trainer is a process of its own)`;
}
