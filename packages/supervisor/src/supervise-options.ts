// The public shapes of supervise(): its options, its events, its outcomes and the facts every outcome carries.
import type { CheckpointStore } from '@soup/hub-ckpt';
import type { MemoryWatchOptions } from './memory-watch';
import type { OomStepDown, SessionMemory, SupervisedSession } from './run-identity';
import type { TrainerExit } from './trainer-child';

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
  /**
   * What the line says, for a caller that words it itself (soup train) and drops the supervisor's sentence:
   * `run` the run and where its checkpoints go, `batch` the batch size or micro-batch this session trains,
   * `outcome` the session's closing sentence (segment saved, run complete), `early-exit` the warning that the
   * trainer exited 0 before its horizon. Absent on every other line.
   */
  topic?: SuperviseTopic;
}

/** See {@link SuperviseEvent.topic}. */
export type SuperviseTopic = 'run' | 'batch' | 'outcome' | 'early-exit';

/** Options of {@link supervise}. */
export interface SuperviseOptions {
  /** The trainer command with placeholders ({batch_size} {output_dir} {resume_from} {max_steps}); no shell. */
  argv: string[];
  store: CheckpointStore;
  /** How to name the store in messages. @default store.description */
  storeName?: string;
  /** The trainer's output folder, watched for checkpoints (a relative path is read against `cwd`). */
  outputDir: string;
  /** Whether the caller chose `outputDir` (else an argv without {output_dir} is warned about). @default false */
  outputDirGiven?: boolean;
  /**
   * Where the trainer runs, and what relative paths (`outputDir`, fingerprint files) are read against.
   * @default process.cwd()
   */
  cwd?: string;
  /** The trainer's environment. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Ends the session (stop the trainer, push, return `segment-saved`).
   * @default none: the session ends with the trainer
   */
  signal?: AbortSignal;
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
  /**
   * The one-writer lease on the store (see acquireLease): its TTL, or null to take none. @default the store's (2 min
   * on a directory, 10 min on the Hub)
   */
  leaseTtlMs?: number | null;
  /**
   * A live-looking lease whose holder nothing here can judge (another host, container or an older soup) is waited
   * for until it expires unrenewed, with a countdown (acquireLease's `wait`); false refuses at once. @default false
   */
  leaseWait?: boolean;
  /** The id of the lease to take over at once (its holder is known dead): acquireLease's `takeOver`. @default null */
  takeOverLease?: string | null;
  /**
   * Squash the Hub repo's history: `'auto'` once it passes 500 commits, `true` after each prune, `false` never (see
   * createPushQueue). @default 'auto'
   */
  squashHistory?: boolean | 'auto';
  /**
   * Least time between two pushes' starts; saves meanwhile coalesce (the newest wins) and the session-end push never
   * waits for it. @default the store's (5 min on the Hub, 0 on a directory)
   */
  minCommitIntervalMs?: number;
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
  /**
   * Why the trainer stops before its horizon by design (soup train's `--stop-after-steps`): an exit 0 before the
   * horizon is then the segment saved for this reason, without the warning of an early exit. @default null
   */
  stopBeforeHorizon?: string | null;
  /** @default 'checkpoint-*' */
  checkpointGlob?: string;
  /** The step in a checkpoint name (first capture group); a string is compiled. @default the name's last number */
  stepRegex?: RegExp | string;
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
   * Each complete checkpoint is snapshotted at once into `<outputDir>/.soup-snapshots/` (hard links) and pushed from
   * there, so a trainer's rotation cannot delete it mid-push; where a link fails (another file system), a copy of up
   * to this many bytes, else it is pushed from the trainer's folder with a warning. @default 1 GiB
   */
  snapshotCopyLimitBytes?: number;
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
  /**
   * Several nodes: this soup's `--node-rank` / `--nnodes`, else SLURM's SLURM_NODEID / SLURM_NNODES, else torchrun's
   * `--node_rank` / `--nnodes` in `argv` (see nodeRoleOf). Node 0 takes the lease and pushes; every other node
   * follows (no lease, no store writes). @default one node
   */
  nodeFlags?: { nodeRank?: number | undefined; nnodes?: number | undefined };
  /** The folder the nodes share (a shared file system) for their notes. @default `<outputDir>/.soup-nodes` */
  nodesDir?: string;
  /**
   * After a session end is saved and its push verified, node 0 runs `scontrol requeue $SLURM_JOB_ID`. @default false
   */
  requeue?: boolean;
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
      evidence: 'horizon-reached' | 'trainer-done' | 'trainer-stopped' | 'done-marker' | 'store';
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

/** The options as a session uses them: `cwd`, `env` and `signal` filled in, `outputDir` absolute. */
export type SessionOptions = SuperviseOptions & { cwd: string; env: NodeJS.ProcessEnv; signal: AbortSignal };
