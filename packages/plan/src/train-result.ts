// soup train's result (`RUN_JSON {...}`, the same shape as any supervised session's): what a session of soup's
// own trainer did, or what the store holds when the run was complete before it started.
import { formatMicroBatch } from '@soup/batch-probe';
import type { SoupConfig } from '@soup/config';
import type { CheckpointStore } from '@soup/hub-ckpt';
import {
  emptySessionResult,
  secondsOf,
  sessionResultOf,
  type SessionFacts,
  type SessionResult,
  type SuperviseOutcome,
} from '@soup/supervisor';
import type { TrainFacts } from './train-facts';

/** The result of a session that trained (or ended before its first step). */
export function trainResultOf(p: {
  facts: TrainFacts;
  r: SuperviseOutcome & SessionFacts;
  config: SoupConfig;
  store: CheckpointStore;
  startedAtMs: number;
  exitCode: number;
}): SessionResult {
  const { facts: t, r, config, store, exitCode } = p;
  const t0 = p.startedAtMs;
  const horizon = config.training.steps;
  const pushed = r.pushedSteps;
  const prepared = t.prepared;
  const segment = r.outcome !== 'complete';
  const batchSize = config.training.batchSize;
  const tokensPerStep = batchSize * config.data.maxLength;
  const m = r.microBatchSize ?? prepared?.microBatchSize ?? batchSize;
  const ended =
    t.ended ?? (r.outcome === 'not-launched' ? { reason: 'abort' as const, afterMs: Date.now() - t0 } : null);
  return {
    ...sessionResultOf(r, {
      store,
      status: segment ? 'segment' : 'finished',
      exitCode,
      startedAtMs: t0,
      memory: t.memory,
    }),
    start_step: t.startStep,
    final_step: t.lastStep,
    horizon,
    segment_stop: segment,
    session_end:
      ended !== null
        ? {
            reason: ended.reason,
            after_s: secondsOf(ended.afterMs),
            // The step the session end saved and pushed (null: it was a boundary, pushed already, or none ran).
            saved_step:
              t.lastStep > t.startStep &&
              !(t.plan?.pushSteps.includes(t.lastStep) ?? false) &&
              pushed.includes(t.lastStep)
                ? t.lastStep
                : null,
          }
        : segment
          ? {
              reason: 'stop-after-steps',
              after_s: secondsOf(Date.now() - t0),
              saved_step: pushed.includes(t.lastStep) ? t.lastStep : null,
            }
          : null,
    final_pushed: !segment,
    batch_size: batchSize,
    batch_source: prepared?.batchSource ?? null,
    tokens_per_step: tokensPerStep,
    tokens_consumed: t.tokensConsumed,
    initial_loss: t.initialLoss,
    final_loss: t.lastLoss,
    val_loss: t.valLoss,
    val_skipped: segment,
    micro_batch_size: m,
    grad_accum: batchSize / m,
    micro_batch: formatMicroBatch({ microBatchSize: m, accumulation: batchSize / m }),
    oom_step_downs: r.oomStepDowns,
    grad_ckpt: prepared?.tier.granularity ?? false,
    offload: prepared?.offload?.target ?? null,
    train_s: secondsOf(t.trainMs),
    tokens_per_s:
      t.stepsRun > 0 && t.trainMs > 0 ? Math.round((t.stepsRun * tokensPerStep) / (t.trainMs / 1000)) : null,
  };
}

/** The store already holds this run's final/ (`pathInRepo`, at `step`): the result says what it holds. */
export async function completedTrainResult(p: {
  store: CheckpointStore;
  config: SoupConfig;
  runId: string;
  step: number;
  pathInRepo: string;
  startedAtMs: number;
  exitCode: number;
}): Promise<SessionResult> {
  const { store, config, step, pathInRepo } = p;
  const state = await store.readFile({ path: `${pathInRepo}/trainer_state.json` });
  const record = await store.readFile({ path: `${pathInRepo}/soup_run.json` });
  const s = state ? (JSON.parse(new TextDecoder().decode(state)) as Record<string, unknown>) : {};
  const r = record ? (JSON.parse(new TextDecoder().decode(record)) as Record<string, unknown>) : {};
  return {
    ...emptySessionResult({
      run: p.runId,
      store: store.description,
      status: 'complete',
      exit_code: p.exitCode,
      elapsedMs: Date.now() - p.startedAtMs,
    }),
    start_step: step,
    final_step: step,
    horizon: config.training.steps,
    tokens_consumed: Number(s.tokens_consumed ?? 0),
    final_loss: typeof s.last_loss === 'number' ? s.last_loss : null,
    val_loss: typeof r.val_loss === 'number' ? r.val_loss : null,
    val_skipped: false,
    batch_size: Number(r.batch_size ?? 0),
    micro_batch_size: Number(r.micro_batch_size ?? r.batch_size ?? 0),
    grad_accum: Number(r.grad_accum ?? 1),
    micro_batch: String(r.micro_batch ?? ''),
    oom_step_downs: [],
    batch_source: 'checkpoint',
    grad_ckpt: (r.grad_ckpt as string | false | undefined) ?? false,
    // auto: not known without measuring
    offload: config.training.activationOffloading === 'auto' ? null : config.training.activationOffloading,
    tokens_per_step: Number(r.batch_size ?? 0) * config.data.maxLength,
  };
}
