// The one result shape `soup train` and `soup run` end with: printed as `RUN_JSON {...}` on stdout,
// or, with --json, as the same object alone. A key one command cannot know is null, never missing.
import type { CommandContext } from './_context';
import type { OomStepDown } from './_micro-sessions';
import type { OomStepDown as RunOomStepDown } from '@soup/supervisor';
import type { SessionPeakReport } from './_session-peak';

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

/** The result of `soup train` and `soup run` (same keys in both). */
export interface RunResult {
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
  /** Step this session started from (0: fresh); null when unknown (soup run, a fresh trainer). */
  start_step: number | null;
  /** Step the store holds for this run at the end (pushed or final); null when nothing was pushed. */
  final_step: number | null;
  /** The horizon (training.steps); null when soup does not know it (soup run). */
  horizon: number | null;
  /** The session ended before the horizon (same as status `segment`). */
  segment_stop: boolean;
  /** Why and when the session ended early, and the step it saved; null when it did not. */
  session_end: { reason: SegmentReason; after_s: number; saved_step: number | null } | null;
  pushed_steps: number[];
  final_pushed: boolean;
  /** G: sequences per optimizer step; null when unknown. */
  batch_size: number | null;
  /**
   * m: sequences per forward/backward this session (after any out-of-memory step-down); null when soup does not know it
   * (soup run without --global-batch-size).
   */
  micro_batch_size: number | null;
  /** a = G / m; null when unknown. */
  grad_accum: number | null;
  /** `m × a = G`, e.g. `4 × 4 = 16`; null when unknown. */
  micro_batch: string | null;
  /**
   * Allocation failures this session answered with a smaller m: soup train redoes the step; soup run resumes the
   * trainer from its newest complete checkpoint (with the tree's peak in that launch). null without a global batch.
   */
  oom_step_downs: Array<OomStepDown | RunOomStepDown> | null;
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
  /**
   * `training.activation_offloading` as applied: `cpu` / `disk` (segmented execution) or null (fused step, or unknown).
   */
  offload: 'cpu' | 'disk' | null;
  peak_rss_mb: number | null;
  /** Seconds spent in training steps this session (no probe, validation, pushes); null when unknown. */
  train_s: number | null;
  /** Wall time of the whole session, seconds. */
  elapsed_s: number;
  /** Training throughput: tokens of this session's steps / train_s; null when no step ran or unknown. */
  tokens_per_s: number | null;
  /** soup run: how the trainer ended; null for soup train. */
  trainer: { exit_code: number | null; signal: string | null; killed: boolean; error: string | null } | null;
}

/** Every key, null / empty where the command has nothing to say; fill in what it knows. */
export function emptyResult(
  p: Pick<RunResult, 'run' | 'store' | 'status' | 'exit_code'> & { elapsedMs: number },
): RunResult {
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
    peak_rss_mb: null,
    train_s: null,
    elapsed_s: Math.round(p.elapsedMs / 100) / 10,
    tokens_per_s: null,
    trainer: null,
  };
}

/** Prints the result: `RUN_JSON {...}` among the human lines, or the object alone with --json. */
export function printResult(ctx: CommandContext, result: RunResult): void {
  if (ctx.json) ctx.emit(result);
  else ctx.stdout.write(`RUN_JSON ${JSON.stringify(result)}\n`);
}
