// supervise(): run the user's own trainer for one session: resume from the store, launch, push this run's
// complete checkpoints while it trains, and at its end claim only what the evidence shows.
import {
  acquireLease,
  createPushQueue,
  pushFinal,
  redactArgv,
  StaleRunError,
  type CheckpointStore,
  type PushJob,
  type PushPhaseEvent,
  type StoreLease,
} from '@soup/hub-ckpt';
import { linkSync, copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { basename, join, relative } from 'node:path';
import { StaleRecordError, SupervisorUsageError } from './errors';
import { judgeHorizon, readTrainerState, type TrainerStateSteps } from './horizon';
import { acquireOutputLock } from './lock';
import { FILE_CHECKPOINT_RECORD, resumeSupervised, type SupervisedResume } from './resume-supervised';
import { startMemoryWatch, type MemoryWatchOptions } from './memory-watch';
import { trackNewestStep } from './newest-step';
import {
  describeIdentityChange,
  identityOf,
  readRunRecord,
  supervisedFingerprint,
  writeRunRecord,
  type OomStepDown,
  type RunRecord,
  type SessionMemory,
  type SupervisedSession,
} from './run-identity';
import { stageFinal } from './stage-final';
import {
  expandArgv,
  placeholdersIn,
  startTrainer,
  trainerEnv,
  trainerErrorLine,
  type TrainerExit,
} from './trainer-child';
import { createCheckpointWatcher, globToRegExp, signatureOf, type WatchedCheckpoint } from './watch-checkpoints';

/** Signals the trainer may be stopped with. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGUSR1', 'SIGUSR2', 'SIGHUP', 'SIGQUIT'];

/** One thing the supervisor did or saw: `line` is the human sentence; `level` says whether it is a warning. */
export interface SuperviseEvent {
  type:
    | 'info'
    | 'resumed'
    | 'launched'
    | 'pushed'
    | 'push-failed'
    | 'stopping'
    | 'leftovers'
    | 'warning'
    | 'oom-step-down'
    | 'pushing'
    | 'trainer-exited';
  level: 'info' | 'warn';
  line: string;
  step?: number;
  pid?: number;
  /** `stopping`: why the session ends (`signal SIGTERM`, `time limit 4.0s`). */
  reason?: string;
  /** `trainer-exited`: how the trainer ended; with `step`, the newest complete checkpoint then (null: none). */
  exit?: { code: number | null; signal: NodeJS.Signals | null; stopping: boolean };
}

/** Options of {@link supervise}. */
export interface SuperviseOptions {
  /** The trainer command with placeholders ({batch_size} {output_dir} {resume_from} {max_steps}); no shell. */
  argv: string[];
  store: CheckpointStore;
  /** How to name the store in messages. @default store.description */
  storeName?: string;
  /** The trainer's output folder (absolute), watched for checkpoints. */
  outputDir: string;
  /** Whether the caller chose `outputDir` (else an argv without {output_dir} is warned about). @default false */
  outputDirGiven?: boolean;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Ends the session (stop the trainer, push, return `segment-saved`). */
  signal: AbortSignal;
  /** Files whose sha256 join the run fingerprint. @default [] */
  fingerprintFiles?: string[];
  /**
   * The caller's run id, for a trainer whose identity the caller knows better than its argv (soup train:
   * config and data hashes). The run is then this id: no fingerprint of argv, and the store's run record
   * (soup_run.json at its root) is neither read nor written, since the checkpoints carry their identity
   * and a resume refusal comes from the pointer's run (`refusal`). @default null (the fingerprint of argv)
   */
  runId?: string | null;
  /**
   * Values never shown nor stored as themselves (e.g. the resolved Hub token): in the "launched trainer" line they
   * read `hf_***`, in soup_run.json `sha256:<hex>`; token-shaped argv values (`hf_` + 30 or more alphanumerics) too.
   * @default []
   */
  secrets?: ReadonlyArray<string | null>;
  /** The one-writer lease on the store (see acquireLease): its TTL, or null to take none. @default 600000 (10 min) */
  leaseTtlMs?: number | null;
  /** Squash the Hub repo's history after each prune, so pruned bytes are freed. @default false */
  squashHistory?: boolean;
  /**
   * `auto` resumes this run (walking back past a corrupt checkpoint); `never` refuses a store that holds checkpoints;
   * `force` continues another command's run. @default 'auto'
   */
  resume?: 'auto' | 'never' | 'force';
  /** A number, `auto` (the run's recorded size, else `probeBatchSize`), or null for none. @default null */
  batchSize?: number | 'auto' | null;
  /** Finds a batch size for `auto` when the run has none recorded. */
  probeBatchSize?: () => Promise<number>;
  /**
   * The global batch G: fills `{micro_batch_size}` (m, which `{batch_size}` then aliases) and `{grad_accum}`
   * (a = G / (m × worldSize)), and the env vars SOUP_MICRO_BATCH_SIZE / SOUP_GRAD_ACCUM. Part of the run's
   * fingerprint: a changed G is a changed run. Each session resolves its own m (`resolveMicroBatchSize`).
   * Not together with `batchSize`. @default null
   */
  globalBatchSize?: number | null;
  /** Ranks sharing G (a launcher's world size). @default 1 */
  worldSize?: number;
  /**
   * This session's micro-batch on this device (e.g. the batch cache, then a probe over the divisors of G / worldSize);
   * required with `globalBatchSize`. Called after the resume, with where the trainer resumes from. `previous`: the
   * session before this one, when the caller keeps it (with `runId`, which has no run record).
   */
  resolveMicroBatchSize?: (resumed: { resumeFrom: string | null; step: number | null }) => Promise<{
    microBatchSize: number;
    source: string;
    levers?: Record<string, string>;
    previous?: { microBatchSize: number; gradAccum: number } | null;
  }>;
  /**
   * Judges a trainer that failed: the out-of-memory line it raised, or null when its failure is not
   * out of memory (e.g. @soup/cuda-probe's judgeTrainerExit). Without it no failure steps m down.
   */
  judgeOutOfMemory?: (exit: TrainerExit) => string | null;
  /**
   * Told of each launch's pid before it can fail, so a judge can read the counters a kernel OOM kill is compared
   * with (e.g. @soup/cuda-probe's createTrainerOomJudge).
   */
  onTrainerLaunched?: (pid: number) => void;
  /**
   * The micro-batch after an out-of-memory failure at m: the next smaller divisor of G / worldSize (e.g.
   * @soup/batch-probe's nextMicroBatchSize), null at the smallest.
   */
  nextMicroBatchSize?: (m: number) => number | null;
  /**
   * Out-of-memory step-downs one session may make: each resumes the trainer from the newest complete checkpoint with
   * the next smaller m. @default 3
   */
  maxOomRetries?: number;
  /** Told of each step-down, before the relaunch (e.g. to lower the batch cache entry). */
  onOomStepDown?: (s: OomStepDown) => void | Promise<void>;
  /**
   * Samples the trainer's whole process tree for the whole session (peak, step, budget, --max-memory). @default none
   */
  memory?: MemoryWatchOptions;
  /**
   * The run's horizon in steps (fills {max_steps}; a run is complete only at or past it). @default null
   * (trainer_state.json's max_steps)
   */
  horizon?: number | null;
  /** @default 'checkpoint-*' */
  checkpointGlob?: string;
  stepRegex?: RegExp;
  /** @default 'trainer_state.json' */
  completeFile?: string;
  /** @default 10000 */
  settleMs?: number;
  /** @default 120000 */
  graceMs?: number;
  /** @default 1000 */
  pollMs?: number;
  /** @default null */
  timeLimitMs?: number | null;
  /** @default 'SIGTERM' */
  stopSignal?: NodeJS.Signals;
  /** Folder pushed as final/ (absolute). @default null (top of outputDir, else the newest checkpoint) */
  finalDir?: string | null;
  /** @default 3 */
  keepRemote?: number;
  /**
   * The trainer's checkpoint folders kept on disk once pushed and verified, newest first (older ones are
   * deleted after a push). @default Infinity (the trainer's folder is its own)
   */
  keepLocal?: number;
  /**
   * Push every complete checkpoint, oldest first, none superseded by a newer one (for a trainer that saves only
   * the checkpoints the caller wants in the store, e.g. soup train's push boundaries). Pushes still run beside
   * the training. @default false (a newer complete checkpoint supersedes one still waiting to be pushed)
   */
  pushEach?: boolean;
  /** Niceness of this process once the trainer runs. @default 10 */
  pushNice?: number;
  /** Turns a resume refusal into the caller's error (e.g. one that explains what changed). */
  refusal?: (err: unknown, run: string) => Promise<never>;
  /** Every line worth telling a person (warnings with `level: 'warn'`). @default none */
  onEvent?: (e: SuperviseEvent) => void;
  /** The trainer's stdout. @default dropped */
  onStdout?: (chunk: string) => void;
  /** The trainer's stderr (its last lines also name a failure). @default dropped */
  onStderr?: (chunk: string) => void;
  /** When the session started (`timeLimitMs` counts from it). @default Date.now() at the call */
  startedAtMs?: number;
}

/** How the session ended. */
export type SuperviseOutcome =
  | {
      outcome: 'complete';
      run: string;
      step: number;
      pathInRepo: string;
      launched: boolean;
      evidence: 'horizon-reached' | 'trainer-done' | 'store';
    }
  | {
      outcome: 'segment-saved';
      run: string;
      /** Step the store points at after this session (null: nothing yet). */
      step: number | null;
      stopReason: string;
      trainerExit: number | null;
      trainerKilled: boolean;
      /** Set when the trainer exited 0 before its horizon. */
      horizon: { step: number | null; horizon: number } | null;
    }
  | {
      outcome: 'trainer-failed';
      run: string;
      exitCode: number;
      trainerError: string | null;
      pushedStep: number | null;
      message: string;
    }
  | { outcome: 'not-launched'; run: string };

/** What every outcome also says about the session (for one result shape across commands). */
export interface SessionFacts {
  /** Step this session resumed from; null for a fresh start (or when it never got that far). */
  startStep: number | null;
  /** Steps this session pushed and pointed to, in order. */
  pushedSteps: number[];
  /** The `{batch_size}` the trainer got; null when the command has none. */
  batchSize: number | null;
  /**
   * Where that size came from: the flag, this run's first session (soup_run.json), or a probe (with a global batch:
   * where m came from, e.g. cache).
   */
  batchSource: string | null;
  /** G, m and a (a = G / (m × worldSize)) at the end of the session; null without a global batch. */
  globalBatchSize: number | null;
  microBatchSize: number | null;
  gradAccum: number | null;
  worldSize: number;
  /** The session before this one, as soup_run.json recorded it (null: none, or no global batch then). */
  previousSession: SupervisedSession | null;
  /** This session's out-of-memory step-downs. */
  oomStepDowns: OomStepDown[];
  /** The trainer tree's peak memory over the session; null when not sampled. */
  memory: SessionMemory | null;
}

const q = (a: string): string => (/\s/.test(a) || a === '' ? JSON.stringify(a) : a);

function fmt(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : `${m}m${String(s % 60).padStart(2, '0')}s`;
}

/**
 * Error thrown from a push's `verified` phase: the folder changed while it was pushed, so the pointer must not move.
 */
class ChangedDuringPush extends Error {}

/**
 * Supervises one session of the user's trainer. Rules (each acted on only with its evidence):
 * - complete checkpoint: see {@link createCheckpointWatcher}; and what was pushed equals what is on disk
 *   when the push ends (names, sizes, mtimes), else the pointer does not move and it is pushed again once settled;
 * - this run's checkpoint: appeared or changed after launch, or the one pulled for this session;
 * - complete run: exit 0, no signal seen, and the horizon reached when one is known (see {@link judgeHorizon});
 * - on any trainer exit the newest complete checkpoint newer than the pointer is pushed first.
 */
export async function supervise(o: SuperviseOptions): Promise<SuperviseOutcome & SessionFacts> {
  const t0 = o.startedAtMs ?? Date.now();
  const emit = (type: SuperviseEvent['type'], line: string, extra: Partial<SuperviseEvent> = {}): void =>
    o.onEvent?.({
      type,
      level: type === 'warning' || type === 'push-failed' || type === 'leftovers' ? 'warn' : 'info',
      line,
      ...extra,
    });
  const say = (line: string): void => emit('info', line);
  const warn = (line: string): void => emit('warning', line);
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
  const settleMs = o.settleMs ?? 10_000;
  const graceMs = o.graceMs ?? 120_000;
  const pollMs = o.pollMs ?? 1000;
  const keepRemote = o.keepRemote ?? 3;
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
  const storeName = o.storeName ?? o.store.description;
  const show = (p: string): string => relative(o.cwd, p) || '.';
  const { store } = o;

  // 1. Identity and stale guard.
  const secrets = o.secrets ?? [];
  const identity = identityOf(o.argv, o.fingerprintFiles ?? [], o.cwd, secrets, G);
  const fingerprint = o.runId ?? supervisedFingerprint(identity);
  const ownRecord = (o.runId ?? null) === null;
  // One writer per store: refused here (LeaseHeldError names the holder), before anything is written or launched.
  const lease: StoreLease | null =
    o.leaseTtlMs === null
      ? null
      : await acquireLease({ store, run: fingerprint, ttlMs: o.leaseTtlMs ?? 600_000, logger: { warn } });
  const squash = o.squashHistory === true ? { squashHistory: true } : {};
  const leased = lease ? { lease } : {};
  try {
    return await underLease();
  } finally {
    await lease?.release();
  }

  async function underLease(): Promise<SuperviseOutcome & SessionFacts> {
    const force = o.resume === 'force';
    let record = ownRecord ? await readRunRecord(store) : null;
    let runId = fingerprint;
    if (
      o.resume === 'never' &&
      ((await store.readFile({ path: 'latest.json' })) !== null || (await store.list({ prefix: 'ckpt' })).length > 0)
    ) {
      throw new SupervisorUsageError(
        `${storeName} already holds checkpoints; --resume never would overwrite them: pass another --repo, or ` +
          `--resume auto`,
        { field: 'resume' },
      );
    }
    if (record !== null) {
      if (record.run === fingerprint || record.accepted.includes(fingerprint)) runId = record.run;
      else if (
        (await store.readFile({ path: 'latest.json' })) === null &&
        (await store.list({ prefix: 'ckpt' })).length === 0
      ) {
        say(
          `soup: ${storeName} holds no checkpoint of run ${record.run} (` +
            `${describeIdentityChange(record.identity, identity).join('; ') || 'another command'}): starting run ` +
            `${fingerprint} there`,
        );
        record = null;
      } else {
        const changes = describeIdentityChange(record.identity, identity);
        const what = changes.length > 0 ? changes.join('; ') : 'the fingerprint differs';
        if (!force) {
          throw new StaleRecordError(
            `resume refused as stale: ${storeName} holds run ${record.run}, not this command's ${fingerprint}: ` +
              `${what}. ` +
              'A changed run needs its own checkpoints: pass a new --repo, restore the old command, or pass ' +
              '--resume force to continue that run anyway.',
          );
        }
        warn(
          `--resume force: continuing run ${record.run} although ${what}; this command is now accepted as the same run`,
        );
        record = { ...record, accepted: [...record.accepted, fingerprint], identity };
        await writeRunRecord(store, record);
        runId = record.run;
      }
    }

    // 2. One supervisor per output folder.
    const lock = acquireOutputLock({
      dir: o.outputDir,
      onStale: (old) =>
        warn(
          `${show(join(o.outputDir, '.soup-run.lock'))}: an earlier soup run (pid ${old.pid}, started ` +
            `${old.started_at}) ended without releasing it; taking it over`,
        ),
    });
    const facts: SessionFacts = {
      startStep: null,
      pushedSteps: [],
      batchSize: null,
      batchSource: null,
      globalBatchSize: G,
      microBatchSize: null,
      gradAccum: null,
      worldSize,
      previousSession: null,
      oomStepDowns: [],
      memory: null,
    };
    try {
      return { ...(await supervised()), ...facts };
    } finally {
      lock.release();
    }

    async function supervised(): Promise<SuperviseOutcome> {
      // 3. Resume.
      let resumed: SupervisedResume;
      const pull = async (): Promise<SupervisedResume> => {
        const t = Date.now();
        const r = await resumeSupervised({
          store,
          run: runId,
          outputDir: o.outputDir,
          signal: o.signal,
          log: (l) => say(`soup: ${l}`),
        });
        if (r.outcome !== 'resume') return r;
        for (const s of r.skipped)
          warn(
            `${s.pathInRepo} (step ${s.step}) does not verify or pull cleanly: ${s.problems.slice(0, 2).join('; ')}`,
          );
        if (r.via === 'fallback') {
          warn(
            `falling back to ${r.pathInRepo} (step ${r.step}), the newest checkpoint that verifies and pulls ` +
              `cleanly${r.previousStep !== null ? ` (latest.json names step ${r.previousStep})` : ''}`,
          );
        } else if (r.via === 'newer-verified') {
          say(
            `soup: ${r.pathInRepo} (step ${r.step}) was verified after latest.json last moved (step ` +
              `${r.previousStep}): resuming from it`,
          );
        }
        facts.startStep = r.step;
        emit(
          'resumed',
          `soup: pulled ${r.pathInRepo} (step ${r.step}, ${r.fileCount} files, every sha256 checked) into ` +
            `${show(r.dir)} in ${Date.now() - t} ms`,
          { step: r.step },
        );
        return r;
      };
      try {
        resumed = await pull();
      } catch (err) {
        if (err instanceof StaleRunError && force) {
          warn(
            `--resume force: ${storeName} holds run ${err.pointerRun} (step ${err.pointerStep}) with no ` +
              `soup_run.json; continuing it as this run`,
          );
          runId = err.pointerRun;
          resumed = await pull();
        } else if (o.refusal) {
          return o.refusal(err, runId);
        } else {
          throw err;
        }
      }
      if (resumed.outcome === 'complete') {
        say(
          `run ${runId} is complete: ${storeName} ${resumed.pathInRepo}/ holds step ${resumed.step}; nothing to launch`,
        );
        return {
          outcome: 'complete',
          run: runId,
          step: resumed.step,
          pathInRepo: resumed.pathInRepo,
          launched: false,
          evidence: 'store',
        };
      }

      // 4. Batch size.
      let batchSize: number | null = null;
      const batchOpt = o.batchSize ?? null;
      if (batchOpt !== null) {
        if (batchOpt !== 'auto') batchSize = batchOpt;
        if (record?.batch_size != null && batchOpt === 'auto') {
          batchSize = record.batch_size;
          say(
            `batch size ${batchSize} (chosen by this run's first session, kept so the run computes the same numbers)`,
          );
        } else if (record?.batch_size != null && batchSize !== record.batch_size) {
          warn(
            `--batch-size ${batchSize} differs from the ${record.batch_size} this run started with: the resumed ` +
              `run will not match an uninterrupted one`,
          );
        }
        if (batchSize === null) {
          if (!o.probeBatchSize)
            throw new SupervisorUsageError(
              '--batch-size auto needs a probe (probeBatchSize) when the run has no recorded size',
              { field: 'batchSize' },
            );
          batchSize = await o.probeBatchSize();
        }
      }
      facts.batchSize = batchSize;
      facts.batchSource =
        batchOpt === null
          ? null
          : batchOpt !== 'auto'
            ? 'flag'
            : record?.batch_size != null && batchSize === record.batch_size
              ? 'checkpoint'
              : 'probe';
      // 4b. Global batch: this device's m (cache, then probe), G kept; recorded per session.
      let session: SupervisedSession | null = null;
      let micro: number | null = null;
      let levers: Record<string, string> = {};
      if (G !== null) {
        const r = await o.resolveMicroBatchSize!({
          resumeFrom: resumed.outcome === 'resume' ? resumed.resumeFrom : null,
          step: facts.startStep,
        });
        micro = r.microBatchSize;
        levers = r.levers ?? {};
        for (const name of Object.keys(levers)) {
          if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || placeholdersIn([`{${name}}`]).size > 0)
            throw new SupervisorUsageError(
              `lever ${JSON.stringify(name)}: a lever is a plain name that is not one of soup's own placeholders`,
              { field: 'resolveMicroBatchSize' },
            );
        }
        const perRank = G / worldSize;
        if (!Number.isSafeInteger(micro) || micro < 1 || perRank % micro !== 0) {
          throw new SupervisorUsageError(
            `micro-batch ${micro} does not divide G / world size = ${perRank}: m × a × N must equal G`,
            { field: 'resolveMicroBatchSize' },
          );
        }
        batchSize = micro;
        facts.batchSize = G;
        facts.batchSource = r.source;
        facts.previousSession = record?.sessions?.at(-1) ?? null;
        session = {
          started_at: new Date(t0).toISOString(),
          start_step: facts.startStep,
          micro_batch_size: micro,
          grad_accum: perRank / micro,
          world_size: worldSize,
          source: r.source,
          ...(Object.keys(levers).length > 0 ? { levers } : {}),
          oom_step_downs: facts.oomStepDowns,
          memory: null,
        };
        const prev =
          facts.previousSession ??
          (r.previous ? { micro_batch_size: r.previous.microBatchSize, grad_accum: r.previous.gradAccum } : null);
        const was =
          prev !== null && (prev.micro_batch_size !== micro || prev.grad_accum !== perRank / micro)
            ? ` (was ${prev.micro_batch_size} × ${prev.grad_accum} last session)`
            : '';
        const chosen = Object.entries(levers).map(([k, v]) => `${k}=${v}`);
        say(
          `micro ${microShape(micro, G, worldSize)}${was} (${r.source})` +
            `${chosen.length > 0 ? `, ${chosen.join(', ')}` : ''}`,
        );
      }
      const sessions = (): Record<string, unknown> =>
        session === null ? {} : { global_batch_size: G, sessions: [...(record?.sessions ?? []), session] };
      const saveRecord = async (): Promise<void> => {
        if (!ownRecord) return;
        const next: RunRecord = {
          format: 'soup-run/1',
          run: runId,
          identity,
          accepted: record?.accepted ?? [],
          batch_size: record?.batch_size ?? (G === null ? batchSize : null),
          ...sessions(),
        };
        await writeRunRecord(store, next);
        record = { ...next, sessions: record?.sessions ?? [] };
      };
      if (record === null || (batchSize !== null && record.batch_size === null && G === null) || session !== null) {
        await saveRecord();
      }

      // 5. Launch, watch, push.
      let resumeFrom = resumed.outcome === 'resume' ? resumed.resumeFrom : null;
      const resumedStep = resumed.outcome === 'resume' ? resumed.step : -1;
      const placeholdersNow = () =>
        micro === null
          ? { batchSize, outputDir: o.outputDir, resumeFrom, maxSteps: horizon }
          : {
              batchSize: micro,
              microBatchSize: micro,
              gradAccum: G! / (micro * worldSize),
              outputDir: o.outputDir,
              resumeFrom,
              maxSteps: horizon,
              levers,
            };
      if (!used.has('{output_dir}') && !o.outputDirGiven) {
        warn(
          `the trainer command has no {output_dir}: soup watches ${show(o.outputDir)} (the default), and only ` +
            `checkpoints that appear there are pushed; ` +
            'put {output_dir} where the trainer takes its output folder, or pass --output-dir with the folder it ' +
            'writes',
        );
      }
      const watcher = createCheckpointWatcher({
        dir: o.outputDir,
        glob: o.checkpointGlob ?? 'checkpoint-*',
        ...(o.stepRegex ? { stepRegex: o.stepRegex } : {}),
        completeFile: o.completeFile ?? 'trainer_state.json',
        settleMs,
      });
      const leftovers = watcher.markLaunch({ pulled: resumed.outcome === 'resume' ? basename(resumed.dir) : null });
      if (leftovers.length > 0) {
        const names = leftovers.map((c) => c.name);
        emit(
          'leftovers',
          `${show(o.outputDir)} already holds ` +
            `${names.length === 1 ? 'a checkpoint' : `${names.length} checkpoints`} from before this launch (` +
            `${names.slice(0, 6).join(', ')}${names.length > 6 ? ', …' : ''}): ` +
            "not this run's, never pushed (unless the trainer rewrites them); use a fresh --output-dir, or delete them",
        );
      }

      // Staging: a file checkpoint is pushed as a folder holding the file and a record naming it.
      const stageDirs = new Set<string>();
      const stage = (c: WatchedCheckpoint): string => {
        if (c.kind === 'dir') return c.path;
        const dir = join(o.outputDir, `.soup-stage-${process.pid}-${c.step}`);
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        try {
          linkSync(c.path, join(dir, c.name));
        } catch {
          copyFileSync(c.path, join(dir, c.name));
        }
        writeFileSync(join(dir, FILE_CHECKPOINT_RECORD), `${JSON.stringify({ file: c.name })}\n`);
        stageDirs.add(dir);
        return dir;
      };
      // What each push started from, by step: the source path and its signature then.
      const pushing = new Map<number, { source: string; sig: string }>();
      const jobs = new Map<string, { source: string; sig: string }>();
      const onPhase = (e: PushPhaseEvent): void => {
        const src = pushing.get(e.step);
        if (!src) return;
        if (e.phase === 'hash') emit('pushing', `soup: pushing ${e.pathInRepo} (step ${e.step})…`, { step: e.step });
        if (e.phase === 'verified') {
          const now = signatureOf(src.source).sig;
          if (now !== src.sig) {
            throw new ChangedDuringPush(
              `${show(src.source)} changed while it was pushed (names, sizes or mtimes differ from when the push ` +
                `began): the pointer stays, and it is pushed again once it settles`,
            );
          }
        }
      };
      let passedOver = -1;
      const queue = createPushQueue({
        store,
        run: runId,
        afterStep: resumedStep,
        keepRemote,
        ...(o.keepLocal !== undefined ? { keepLocal: o.keepLocal } : {}),
        ...leased,
        ...squash,
        onPushed: (r) => (
          facts.pushedSteps.push(r.step),
          emit(
            'pushed',
            `soup: pushed ${r.pathInRepo} (step ${r.step}, ${r.fileCount} files, verified; latest.json moved) in ` +
              `${fmt(r.timings.totalMs)}`,
            { step: r.step },
          )
        ),
        onError: (err, job) => {
          const e = err as Error;
          if (o.pushEach) passedOver = Math.max(passedOver, job.step);
          if (lastOffer?.step === job.step && !(e instanceof ChangedDuringPush)) lastOffer = null;
          if (/^superseded by step/.test(e.message)) return;
          emit(
            'push-failed',
            e instanceof ChangedDuringPush
              ? `push of step ${job.step} not pointed to: ${e.message}`
              : `push of step ${job.step} failed: ${e.message}`,
            { step: job.step },
          );
        },
        onPhase,
      });
      // The last offer (a step is offered again only when its files changed after a failed push).
      let lastOffer: { step: number; sig: string } | null = null;
      const offer = (c: WatchedCheckpoint): void => {
        if (c.step <= queue.pushedStep) return;
        if (
          lastOffer !== null &&
          (c.step < lastOffer.step || (c.step === lastOffer.step && c.signature === lastOffer.sig))
        )
          return;
        if (queue.current?.step === c.step) return; // its push is still running: judged when it ends
        lastOffer = { step: c.step, sig: c.signature };
        const dir = stage(c);
        const job: PushJob = { step: c.step, dir };
        const src = { source: c.path, sig: c.signature };
        jobs.set(dir, src);
        pushing.set(c.step, src);
        queue.offer(job);
      };
      let ending = false;
      // pushEach: the oldest complete checkpoint not pushed yet, once the queue is free (a failed one is passed
      // over: the next newer one goes, and the newest is retried at the end, as without pushEach).
      const offerNext = (asOfMs: number, trainerExited: boolean): void => {
        if (queue.current !== null) return;
        const after = Math.max(queue.pushedStep, passedOver, resumedStep);
        const c = watcher.oldestCompleteAfter(after, { asOfMs, trainerExited });
        if (c) offer(c.checkpoint);
      };
      const offerNewest = (asOfMs: number, trainerExited: boolean): WatchedCheckpoint | null => {
        watcher.scan(Date.now());
        if (o.pushEach) {
          offerNext(asOfMs, trainerExited);
          return watcher.newestComplete({ asOfMs, trainerExited })?.checkpoint ?? null;
        }
        const c = watcher.newestComplete({ asOfMs, trainerExited });
        if (c) {
          offer(c.checkpoint);
          if (ending && queue.abortSuperseded())
            say(`soup: a newer checkpoint (step ${c.checkpoint.step}) superseded the push in flight: aborted it`);
        }
        return c?.checkpoint ?? null;
      };

      if (o.signal.aborted) return { outcome: 'not-launched', run: runId };
      const resumedLine = resumed.outcome === 'resume' ? `resuming from step ${resumed.step}` : 'fresh start';
      say(`run ${runId}: ${resumedLine}; checkpoints in ${show(o.outputDir)} pushed to ${storeName}`);

      const nice = o.pushNice ?? 10;
      let stopReason: string | null = null;
      let limitTimer: NodeJS.Timeout | undefined;
      const stopped = new Promise<void>((resolveStop) => {
        if (o.signal.aborted) resolveStop();
        o.signal.addEventListener('abort', () => resolveStop(), { once: true });
        const limit = o.timeLimitMs ?? null;
        if (limit !== null) limitTimer = setTimeout(() => resolveStop(), Math.max(0, limit - (Date.now() - t0)));
      }).then(() => {
        stopReason ??= o.signal.aborted
          ? `signal${signalName(o.signal.reason)}`
          : `time limit ${fmt(o.timeLimitMs ?? 0)}`;
      });
      const stepSeen = trackNewestStep();
      if (resumedStep >= 0) stepSeen.checkpoint(resumedStep);
      const memory = o.memory ? startMemoryWatch(o.memory, { stepNow: () => stepSeen.step, warn }) : null;
      const maxRetries = o.maxOomRetries ?? 3;
      let end!: TrainerExit & { killed: boolean };
      let exitAt = Date.now();
      // 5b. Launch; an out-of-memory failure steps m down and launches again from the newest complete checkpoint.
      for (;;) {
        const placeholders = placeholdersNow();
        const childArgv = expandArgv(o.argv, placeholders);
        const child = await startTrainer({
          argv: childArgv,
          env: trainerEnv(o.env, placeholders),
          cwd: o.cwd,
          onStdout: (d) => (stepSeen.output(d), o.onStdout?.(d)),
          onStderr: (d) => (stepSeen.output(d), o.onStderr?.(d)),
        }).catch((err: NodeJS.ErrnoException) => {
          throw new SupervisorUsageError(
            `cannot start the trainer ${JSON.stringify(childArgv[0])}: ${err.code ?? err.message}`,
            { field: 'argv', cause: err },
          );
        });
        lock.setTrainer(child.pid);
        o.onTrainerLaunched?.(child.pid);
        memory?.attach(child.pid);
        emit(
          'launched',
          `soup: launched trainer (pid ${child.pid}): ${redactArgv(childArgv, { secrets }).map(q).join(' ')}`,
          { pid: child.pid },
        );
        if (nice > 0) lowerOwnPriority(nice);

        const poll = setInterval(() => {
          const c = offerNewest(Date.now(), false);
          if (c) stepSeen.checkpoint(c.step);
        }, pollMs);
        let launchPeak: number | null = null;
        try {
          const first = await Promise.race([
            child.exited.then(() => 'exited' as const),
            stopped.then(() => 'stop' as const),
          ]);
          if (first === 'stop' && !child.done) {
            ending = true;
            emit(
              'stopping',
              `soup: ` +
                `${stopReason!.startsWith('signal') ? `session ending (${stopReason})` : `${stopReason} reached`}` +
                `: sending ${stopSignal} to the trainer, waiting up to ${fmt(graceMs)} for it to save`,
              { reason: stopReason! },
            );
            end = await child.stop({ signal: stopSignal, graceMs });
            if (end.killed) warn(`the trainer did not exit within --grace ${fmt(graceMs)}: killed it (SIGKILL)`);
          } else {
            end = { ...(await child.exited), killed: false };
          }
        } finally {
          clearInterval(poll);
          launchPeak = (await memory?.detach()) ?? null;
        }
        if (
          stopReason === null &&
          end.code === null &&
          (end.signal === 'SIGTERM' || end.signal === 'SIGINT' || end.signal === 'SIGHUP')
        ) {
          stopReason = `the trainer got ${end.signal} from outside`;
        }
        exitAt = Date.now();
        {
          watcher.scan(exitAt);
          const newest = watcher.newestComplete({ asOfMs: exitAt, trainerExited: !end.killed })?.checkpoint ?? null;
          emit(
            'trainer-exited',
            `soup: the trainer exited (${end.code !== null ? `code ${end.code}` : `signal ${end.signal}`})` +
              `${newest ? `; newest complete checkpoint: step ${newest.step}` : ''}`,
            {
              ...(newest ? { step: newest.step } : {}),
              exit: { code: end.code, signal: end.signal, stopping: stopReason !== null },
            },
          );
        }
        // An out-of-memory failure with a smaller divisor left and retries left: step down, resume, launch again.
        if (stopReason !== null || end.code === 0 || micro === null || !o.judgeOutOfMemory) break;
        const oomLine = o.judgeOutOfMemory(end);
        if (oomLine === null) break;
        const to = o.nextMicroBatchSize?.(micro) ?? null;
        if (facts.oomStepDowns.length >= maxRetries || to === null) {
          warn(
            `the trainer ran out of memory with micro ${microShape(micro, G!, worldSize)} (${oomLine}): ` +
              (to === null
                ? 'no smaller divisor of G / world size is left'
                : `--max-oom-retries ${maxRetries} step-down${maxRetries === 1 ? '' : 's'} already made this session`),
          );
          break;
        }
        // The newest complete checkpoint (this session's, else the one pulled) is where the trainer resumes;
        // it is offered for a push, which goes on in the background while the trainer runs again.
        const c = offerNewest(exitAt, true);
        if (c) stepSeen.checkpoint(c.step);
        const from = micro;
        const step = stepSeen.step;
        const s: OomStepDown = { step, from, to, peak_bytes: launchPeak, error: oomLine };
        facts.oomStepDowns.push(s);
        micro = to;
        session!.micro_batch_size = to;
        session!.grad_accum = G! / (to * worldSize);
        if (c) resumeFrom = c.path;
        emit(
          'oom-step-down',
          `soup: out of memory ${step === null ? 'before the first reported step' : `at step ${step}`} with micro ` +
            `${microShape(from, G!, worldSize)} (${oomLine}): ` +
            `resuming from ` +
            (c
              ? `${show(c.path)} (step ${c.step})`
              : resumeFrom !== null
                ? `${show(resumeFrom)} (the checkpoint this session pulled)`
                : 'the beginning (no complete checkpoint yet)') +
            ` ` +
            `with micro ${microShape(to, G!, worldSize)} (step-down ${facts.oomStepDowns.length} of at most ` +
            `${maxRetries})`,
          step !== null ? { step } : {},
        );
        await o.onOomStepDown?.(s);
        await saveRecord().catch((err: Error) => warn(`soup_run.json not updated with the step-down: ${err.message}`));
        if (o.signal.aborted || stopReason !== null) break;
      }
      clearTimeout(limitTimer);
      ending = true;
      facts.microBatchSize = micro;
      facts.gradAccum = micro === null ? null : G! / (micro * worldSize);
      if (memory) {
        facts.memory = memory.report();
        if (session !== null) {
          session.memory = facts.memory;
        }
      }
      if (session !== null)
        await saveRecord().catch((err: Error) =>
          warn(`soup_run.json not updated with the session's end: ${err.message}`),
        );
      const stoppedEarly = stopReason !== null;

      // 6. Whatever the exit: the newest complete checkpoint newer than the pointer is pushed first. A folder
      // with its marker counts once the trainer is gone (unless soup had to SIGKILL it); one without a
      // marker only if it had settled before the exit.
      const pushNewest = async (): Promise<void> => {
        offerNewest(exitAt, !end.killed);
        await queue.drain();
        // pushEach: the rest, oldest first.
        while (o.pushEach) {
          offerNewest(exitAt, !end.killed);
          if (queue.current === null) break;
          await queue.drain();
        }
        const last = queue.failures.at(-1);
        if (last && last.job.step > queue.pushedStep && !(last.error instanceof ChangedDuringPush)) {
          const src = jobs.get(last.job.dir);
          if (src && signatureOf(src.source).sig === src.sig) {
            warn(`retrying the push of step ${last.job.step}`);
            pushing.set(last.job.step, src);
            queue.offer(last.job);
            await queue.drain();
          }
        }
      };
      try {
        await pushNewest();
      } finally {
        for (const d of stageDirs) rmSync(d, { recursive: true, force: true });
      }
      const pushedStep = queue.results.length > 0 ? Math.max(...queue.results.map((r) => r.step)) : null;
      const pointerStep = pushedStep ?? (resumedStep >= 0 ? resumedStep : null);

      if (!stoppedEarly && end.code !== 0) {
        const code = end.code ?? 128 + (end.signal ? (constants.signals[end.signal] ?? 0) : 0);
        const why = trainerErrorLine(end.stderrTail);
        const saved =
          pushedStep !== null
            ? `pushed step ${pushedStep}; the store points at it`
            : pointerStep !== null
              ? `nothing new was pushed; the store still points at step ${pointerStep}`
              : 'no checkpoint was pushed';
        const message =
          `soup: the trainer failed with ` +
          `${end.code !== null ? `exit code ${end.code}` : `signal ${end.signal}`}${why ? `: ${why}` : ''}; ` +
          `${saved}; no final pushed`;
        return { outcome: 'trainer-failed', run: runId, exitCode: code, trainerError: why, pushedStep, message };
      }

      if (stoppedEarly) {
        const where =
          pointerStep !== null
            ? `step ${pointerStep} is saved in ${storeName}`
            : 'no complete checkpoint yet: the next session starts from the beginning';
        say(`soup: segment saved (${stopReason}): ${where}; run the same command again to continue`);
        return {
          outcome: 'segment-saved',
          run: runId,
          step: pointerStep,
          stopReason: stopReason!,
          trainerExit: end.code,
          trainerKilled: end.killed,
          horizon: null,
        };
      }

      // 7. Exit 0 with no signal seen: complete only with the horizon reached (when one is known).
      watcher.scan(Date.now());
      const newest = watcher.newestComplete({ asOfMs: exitAt, trainerExited: true })?.checkpoint ?? null;
      const states: TrainerStateSteps[] = [readTrainerState(o.outputDir)];
      if (newest?.kind === 'dir') states.push(readTrainerState(newest.path));
      if (o.finalDir) states.push(readTrainerState(o.finalDir));
      const verdict = judgeHorizon({ states, checkpointStep: newest?.step ?? null, horizon });
      if (!verdict.complete) {
        const reached = verdict.step === null ? 'at an unknown step' : `at step ${verdict.step}`;
        const reason = `the trainer exited 0 ${reached}, before its horizon of ${verdict.horizon} steps`;
        const where =
          pointerStep !== null
            ? `step ${pointerStep} is saved in ${storeName}`
            : 'no complete checkpoint yet: the next session starts from the beginning';
        warn(
          `${reason}: not complete, no final/ and no terminal pointer (the horizon comes from ` +
            `${horizon !== null ? '--horizon' : "trainer_state.json's max_steps"})`,
        );
        say(`soup: segment saved (${reason}): ${where}; run the same command again to continue`);
        return {
          outcome: 'segment-saved',
          run: runId,
          step: pointerStep,
          stopReason: reason,
          trainerExit: 0,
          trainerKilled: false,
          horizon: { step: verdict.step, horizon: verdict.horizon },
        };
      }
      const glob = globToRegExp(o.checkpointGlob ?? 'checkpoint-*');
      const fin = stageFinal({
        outputDir: o.outputDir,
        finalDir: o.finalDir ?? null,
        newest,
        isCheckpoint: (n) => glob.test(n),
      });
      try {
        const step = Math.max(pushedStep ?? -1, resumedStep, fin.step ?? -1, verdict.step ?? -1, 0);
        const res = await pushFinal({ store, step, dir: fin.dir, run: runId, keepRemote, ...leased, ...squash });
        say(
          `soup: run complete: pushed final/ (${res.fileCount} file${res.fileCount === 1 ? '' : 's'} from ` +
            `${show(fin.source)}, step ${step}, verified) with a terminal pointer`,
        );
        return {
          outcome: 'complete',
          run: runId,
          step,
          pathInRepo: res.pathInRepo,
          launched: true,
          evidence: verdict.evidence,
        };
      } finally {
        fin.cleanup();
      }
    }
  }
}

/** `4 × 4 = 16`, or `4 × 4 × 2 ranks = 32`. */
function microShape(m: number, G: number, worldSize: number): string {
  const a = G / (m * worldSize);
  return worldSize === 1 ? `${m} × ${a} = ${G}` : `${m} × ${a} × ${worldSize} ranks = ${G}`;
}

function signalName(reason: unknown): string {
  const sig = typeof reason === 'object' && reason !== null ? (reason as { signal?: unknown }).signal : undefined;
  return typeof sig === 'string' ? ` ${sig}` : '';
}

/** Renices every thread of this process (on Linux a niceness is per thread: main, libuv pool, V8 helpers). */
function lowerOwnPriority(nice: number): void {
  let tids: number[] = [0];
  try {
    tids = readdirSync('/proc/self/task')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    // not Linux: the main thread only
  }
  for (const tid of tids) {
    try {
      setPriority(tid, nice);
    } catch {
      // not permitted, or the thread is gone
    }
  }
}
