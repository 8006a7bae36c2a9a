import type { ProbeOutcome } from '@soup/batch-probe';
import type { OutOfMemoryClassification } from './classify-out-of-memory';

/** How a trial decided `fits`. */
export type ProbeMeasurement =
  /** CPU: VmHWM after the step minus VmRSS right before it, against the budget. */
  | 'peak-rss'
  /** Command probe: the child's VmHWM sampled from /proc while it ran, against the budget. */
  | 'sampled-rss'
  /** CUDA: the child's per-process device memory after the step, against free + held. */
  | 'cuda-per-process'
  /**
   * CUDA where per-process memory is not visible (WSL2, WDDM `[N/A]`, another PID namespace): the
   * device's used-memory delta from before the child loaded anything to after the step, against
   * the free memory before it; a device left with almost nothing free does not fit.
   */
  | 'cuda-device-delta'
  /** Nothing to compare (no budget, or the driver cannot answer): only a failure says "does not fit". */
  | 'exceptions-only'
  /**
   * CUDA: the trainer's processes used memory on another GPU than the one measured (named in
   * `detail`): nothing was measured here, and such an answer is never cached.
   */
  | 'not-measured';

/**
 * What one trial reports: a {@link ProbeOutcome} for `probeBatchSize`, plus how it was decided
 * and what it cost. `fits: false` covers both a refusal by the peak gate (the step completed
 * above the budget) and an out-of-memory failure of the child; any other failure throws.
 */
export interface ProbeTrialOutcome extends ProbeOutcome {
  batchSize: number;
  /** `fit`, `over-budget` (peak gate), `oom` (an out-of-memory message) or `killed` (SIGKILL: the OOM killer). */
  reason: 'fit' | 'over-budget' | 'oom' | 'killed';
  measurement: ProbeMeasurement;
  detail: string;
  /** Wall time of the whole trial as the caller saw it (spawn, setup, step, exit). */
  ms: number;
  /**
   * Commands: the time from the command's first chunk of output (stdout or stderr) to its last, in
   * ms; absent when it printed nothing. What `--try` times a run by where it agrees with `ms`.
   */
  outputSpanMs?: number;
  /**
   * Commands: the characters printed on stdout and stderr together. For a trainer that prints as it
   * steps, it grows with the steps run: what `--try` reads to see that a timing run ran its steps.
   */
  outputChars?: number;
  /**
   * Commands with `steps` declared: the steps the trainer itself counted in this run (the largest a
   * pattern captured in its output, the `global_step` of a trainer_state.json it wrote; 0: none shown).
   */
  stepsSeen?: number;
  /** The step alone, measured in the child; absent when the child did not get that far (or for commands). */
  stepMs?: number;
  /** `ms - stepMs`: spawn + runtime import + session create + batch build + exit. */
  overheadMs?: number;
  /**
   * Where the trial's time went (ms): `parent` (in this process, around the child: the spare's
   * RLIMIT_AS through prlimit, starting the next spare, judging), `spawn` (spawn until the child
   * process started: fork/exec, prlimit), `moduleLoad` (node boot and the worker's modules),
   * `runtime` (reading the job and importing onnxruntime-node; for a warm spare, any wait for it
   * to be ready), `session` (session creation), `batch` (building the synthetic batch), `step`,
   * `report` (peak reading and the result), `exit` (result sent until the parent ended the trial:
   * the child's exit, or with the result channel closed, at once). Worker probes only; with a
   * warm spare, spawn, module load and session creation happened before the trial (0).
   */
  phasesMs?: {
    parent?: number;
    spawn: number;
    moduleLoad: number;
    runtime: number;
    session: number;
    batch?: number;
    step: number;
    report?: number;
    exit: number;
  };
  /** One-off cost of measuring the child's baseline, reported on the trial that paid it. */
  calibrationMs?: number;
  /**
   * The command exited 0 but printed an out-of-memory error: what it did at this size is unknown (it may have
   * skipped work). Such a trial is `fits: false` (the search takes it as not fitting, for safety) and never a fit.
   */
  unknown?: boolean;
  /** The catalogue entry that matched, when the trial failed with an out-of-memory message. */
  oom?: OutOfMemoryClassification;
  /** RLIMIT_AS the child ran under, and how it was applied (`memory-cgroup`: see `memoryCgroup`). */
  addressSpaceBytes?: number;
  limitMethod?: 'prlimit' | 'ulimit' | 'none' | 'memory-cgroup';
  /** The memory cgroup the child ran in (`hardCap: 'memory-cgroup'`): its limit, peak and OOM kills. */
  memoryCgroup?: MemoryCgroupReport;
  /** Anything the probe had to guess (e.g. a symbolic dimension set to 1). */
  notes?: string[];
}

/** A probe for `probeBatchSize`: runs one candidate in a fresh child process. */
export type ChildProbeFn = (batchSize: number) => Promise<ProbeTrialOutcome>;

/** A trial's memory cgroup (`hardCap: 'memory-cgroup'`), read after its child exited. */
export interface MemoryCgroupReport {
  limitBytes: number;
  /** Highest usage, page cache included (null where the kernel has no peak file). */
  peakBytes: number | null;
  oomKills: number | null;
  limitHits: number | null;
  oomKilled: boolean;
}
