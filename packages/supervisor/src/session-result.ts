// The one result a supervised session ends with, whatever the trainer: what ran, what the store holds, the
// micro-batch and its step-downs, the session's peak against its budget. A key a caller cannot know is null,
// never missing, so every command that runs supervise() reports the same shape.
import { microBatchText } from './_tell';
import type { OomStepDown, SessionMemory } from './run-identity';
import type { SessionFacts } from './supervise';

/** Why a session ended before the horizon. */
export type SegmentReason =
  | 'stop-after-steps'
  | 'time-limit'
  | 'SIGTERM'
  | 'SIGINT'
  | 'SIGHUP'
  | 'signal'
  | 'abort'
  | 'external-signal'
  | 'before-horizon';

/** Where a session's memory budget comes from (see {@link resolveMemoryBudget}). */
export type BudgetSource = 'memory_budget' | 'flag' | 'reachable' | 'device';

/** What the session's peak was, where, and against what. */
export interface SessionPeakReport {
  /** The trainer tree's peak memory, null when no reading succeeded. */
  peak_bytes: number | null;
  /** The phase in which it was reached: `step 12`, `before the first reported step`. */
  peak_at: string | null;
  /** The step during (or right after) which it was reached; null before any step. */
  peak_step: number | null;
  budget_bytes: number | null;
  /** Where the budget comes from (a config field, a flag, the memory reachable at the start, the GPU's memory). */
  budget_source: BudgetSource | null;
  /** budget − peak (negative: over). */
  headroom_bytes: number | null;
  max_memory_bytes: number | null;
  /** The phase in which the peak first passed max_memory_bytes, or null. */
  max_memory_passed_at: string | null;
  /** tree-rss / cuda-per-process: the trainer's tree, sampled by the supervisor. */
  method: 'VmHWM' | 'tree-rss' | 'cuda-per-process' | 'unavailable';
  /**
   * A tuner that timed steps in the caller's own process before the session: that process's peak through tuning
   * (VmHWM, null where unreadable). The session's peak above is the trainer's, so it never includes it
   * (`in_session_peak` false; `resident_at_reset_bytes` null, there being no mark to reset). Absent when nothing
   * was tuned in this session.
   */
  tuning?: { peak_bytes: number | null; in_session_peak: boolean; resident_at_reset_bytes: number | null };
}

/** The result of a supervised session (the same keys for every trainer). */
export interface SessionResult {
  /** false only when the run failed (status `failed`). */
  ok: boolean;
  /**
   * `finished`: reached the horizon and pushed final/ this session; `segment`: segment saved, run the same
   * command again (exit 75); `complete`: the store already held final/, nothing ran; `failed`: the trainer failed.
   */
  status: 'finished' | 'segment' | 'complete' | 'failed';
  /** The process's exit code. */
  exit_code: number;
  run: string;
  store: string;
  /** Step this session started from (0: fresh); null when unknown (a fresh trainer that reports none). */
  start_step: number | null;
  /** Step the store holds for this run at the end (pushed or final); null when nothing was pushed. */
  final_step: number | null;
  /** The horizon; null when it is not known. */
  horizon: number | null;
  /** The session ended before the horizon (same as status `segment`). */
  segment_stop: boolean;
  /** Why and when the session ended early, and the step it saved; null when it did not. */
  session_end: { reason: SegmentReason; after_s: number; saved_step: number | null } | null;
  pushed_steps: number[];
  final_pushed: boolean;
  /** G: sequences per optimizer step; null when unknown. */
  batch_size: number | null;
  /** m: sequences per forward/backward this session (after any out-of-memory step-down); null when unknown. */
  micro_batch_size: number | null;
  /** a = G / (m × world size); null when unknown. */
  grad_accum: number | null;
  /** `m × a = G`, e.g. `4 × 4 = 16`; null when unknown. */
  micro_batch: string | null;
  /**
   * Allocation failures this session answered with a smaller m (the trainer resumed from its newest complete
   * checkpoint, with the tree's peak in that launch). null without a global batch.
   */
  oom_step_downs: OomStepDown[] | null;
  /** The session's peak memory, where it happened, the budget and the headroom; null when unknown. */
  memory: SessionPeakReport | null;
  batch_source: string | null;
  tokens_per_step: number | null;
  tokens_consumed: number | null;
  initial_loss: number | null;
  final_loss: number | null;
  val_loss: number | null;
  val_skipped: boolean | null;
  grad_ckpt: string | false | null;
  /** Activation offloading as applied: `cpu` / `disk` (segmented execution) or null (none, or unknown). */
  offload: 'cpu' | 'disk' | null;
  /** Seconds spent in training steps this session (no probe, validation, pushes); null when unknown. */
  train_s: number | null;
  /** Wall time of the whole session, seconds. */
  elapsed_s: number;
  /** Training throughput: tokens of this session's steps / train_s; null when no step ran or unknown. */
  tokens_per_s: number | null;
  /** How a trainer the caller did not write ended; null when the caller is the trainer's author. */
  trainer: { exit_code: number | null; signal: string | null; killed: boolean; error: string | null } | null;
}

/** Seconds with one decimal, as the result gives every duration. */
export const secondsOf = (ms: number): number => Math.round(ms / 100) / 10;

/** Every key, null / empty where the caller has nothing to say; fill in what it knows. */
export function emptySessionResult(
  p: Pick<SessionResult, 'run' | 'store' | 'status' | 'exit_code'> & { elapsedMs: number },
): SessionResult {
  return {
    ok: p.status !== 'failed',
    status: p.status,
    exit_code: p.exit_code,
    run: p.run,
    store: p.store,
    start_step: null,
    final_step: null,
    horizon: null,
    segment_stop: p.status === 'segment',
    session_end: null,
    pushed_steps: [],
    final_pushed: false,
    batch_size: null,
    micro_batch_size: null,
    grad_accum: null,
    micro_batch: null,
    oom_step_downs: null,
    memory: null,
    batch_source: null,
    tokens_per_step: null,
    tokens_consumed: null,
    initial_loss: null,
    final_loss: null,
    val_loss: null,
    val_skipped: null,
    grad_ckpt: null,
    offload: null,
    train_s: null,
    elapsed_s: secondsOf(p.elapsedMs),
    tokens_per_s: null,
    trainer: null,
  };
}

/** supervise()'s stop reason (`SegmentSaved.stopReason`) in the result's one vocabulary. */
export function segmentReasonOf(stopReason: string): SegmentReason {
  if (stopReason.startsWith('time limit')) return 'time-limit';
  if (stopReason.startsWith('the trainer got')) return 'external-signal';
  if (stopReason.startsWith('the trainer exited 0')) return 'before-horizon';
  const sig = /SIG(TERM|INT|HUP)/.exec(stopReason)?.[0] as SegmentReason | undefined;
  return sig ?? 'signal';
}

/** The result's micro-batch fields from the session's facts (null without a global batch). */
export function microBatchFields(
  r: Pick<SessionFacts, 'globalBatchSize' | 'microBatchSize' | 'gradAccum' | 'worldSize' | 'oomStepDowns'>,
): Pick<SessionResult, 'micro_batch_size' | 'grad_accum' | 'micro_batch' | 'oom_step_downs'> {
  if (r.globalBatchSize === null || r.microBatchSize === null || r.gradAccum === null)
    return { micro_batch_size: null, grad_accum: null, micro_batch: null, oom_step_downs: null };
  return {
    micro_batch_size: r.microBatchSize,
    grad_accum: r.gradAccum,
    micro_batch: microBatchText(r.microBatchSize, r.gradAccum, r.worldSize),
    oom_step_downs: r.oomStepDowns,
  };
}

const at = (step: number | null): string => (step === null ? 'before the first reported step' : `step ${step}`);

/** The result's `memory` from the supervisor's reading of the trainer tree (null: nothing was sampled). */
export function memoryReportOf(m: SessionMemory | null, budgetSource: BudgetSource | null): SessionPeakReport | null {
  if (m === null) return null;
  return {
    peak_bytes: m.peak_bytes,
    peak_at: m.peak_bytes === null ? null : at(m.peak_step),
    peak_step: m.peak_step,
    budget_bytes: m.budget_bytes,
    budget_source: m.budget_bytes === null ? null : budgetSource,
    headroom_bytes: m.headroom_bytes,
    max_memory_bytes: m.max_memory_bytes,
    max_memory_passed_at: m.max_memory_passed ? at(m.max_memory_passed_step) : null,
    method: m.peak_bytes === null ? 'unavailable' : (m.method as SessionPeakReport['method']),
  };
}
