import { formatMicroBatch } from '@soup/batch-probe';
import type { CheckpointStore } from '@soup/hub-ckpt';
import { emptySessionResult, secondsOf, type SessionFacts, type SuperviseOutcome } from '@soup/supervisor';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { CommandContext } from '../_context';
import { assertTrainable, offloadChoicesOf } from '@soup/plan';
import {
  describeRunPeak,
  describeTuning,
  openSessionStore,
  printResult,
  resolveTimeLimitMs,
  sessionResult,
  type RunResult,
} from '../_session';
import { showLossPlot } from '../_show-plot';
import type { TrainSession } from '../_train-lines';
import { trainSession } from '../_train-session';
import { UsageError } from '../errors';
import { EXIT_CODES } from '../exit-codes';
import { loadConfig, runFingerprint, type SoupConfig } from '@soup/config';
import type { LossPoint } from '@soup/loss-plot';
import type { TrainOptions } from './train.options';

/** The result `soup train` ends with (`RUN_JSON {...}`, or --json): the same shape as `soup run`'s. */
export type RunJson = RunResult;

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** `soup train`: trains the config's model in segments under supervise(), pushing checkpoints as it goes. */
export async function run(opts: TrainOptions, ctx: CommandContext): Promise<number | void> {
  const t0 = Date.now();
  const loaded = loadConfig({ path: opts.config, cwd: ctx.cwd });
  const file = loaded.displayPath;
  const config: SoupConfig = structuredClone(loaded.config);
  if (opts.steps !== undefined) config.training.steps = opts.steps;
  if (opts.outputDir !== undefined) config.output = resolve(ctx.cwd, opts.outputDir);
  const budgetFrom: 'flag' | 'config' | null =
    opts.budget !== undefined ? 'flag' : config.training.memoryBudgetBytes !== null ? 'config' : null;
  if (opts.budget !== undefined) config.training.memoryBudgetBytes = opts.budget;
  if (opts.resume === 'force') {
    throw new UsageError(
      "--resume force: soup train cannot continue another run's checkpoints (its model or data differ, so the " +
        'weights would not load or not mean the same); pass a new --repo for this run, or restore the old config ' +
        'to resume it',
    );
  }
  // null (hub.keep_remote: null) keeps every remote checkpoint; the default is 3 (KEEP_REMOTE_DEFAULT, in the config
  // schema).
  const keepRemote: number | null = opts.keepRemote ?? config.hub.keepRemote;
  if (opts.device !== undefined) config.device = opts.device;
  // Refusals first: a field train cannot honour is an error, not also a warning.
  const offloadWarnings = assertTrainable(config, file, ctx.cwd);
  for (const w of [...loaded.warnings, ...offloadWarnings])
    ctx.warn(`${file}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`);
  // Disk offload's scratch folder: removed at the end when this run created it (each step deletes its files).
  // (with activation_offloading: auto, the disk candidate's folder, which tuning may create)
  const scratchDir = offloadChoicesOf(config, ctx.cwd).find((o) => o?.saveDir)?.saveDir ?? null;
  const ownScratch = scratchDir !== null && !existsSync(scratchDir) ? scratchDir : null;

  const horizon = config.training.steps;
  const pushEvery = opts.pushEverySteps ?? config.hub.pushEverySteps ?? Math.max(1, Math.floor(horizon / 4));
  const stopAfterSteps = opts.stopAfterSteps;
  const timeLimitMs = resolveTimeLimitMs(opts.timeLimit, config.training.timeLimitMs);
  const showPath = (p: string): string => relative(ctx.cwd, p) || '.';
  const { store, storeName, where } = openSessionStore(ctx, {
    repo: opts.repo ?? config.hub.repo ?? undefined,
    output: config.output,
    flag: opts.repo !== undefined ? '--repo' : 'hub.repo',
    repoType: config.hub.repoType,
    private: config.hub.private,
    endpoint: config.hub.endpoint,
    show: showPath,
  });

  const trainSha256 = sha256File(config.data.trainPath);
  const valSha256 = config.data.valPath ? sha256File(config.data.valPath) : null;
  const { run: runId, identity } = runFingerprint({ config, trainSha256, valSha256 });
  ctx.say(
    `run ${runId}: ${config.base}, ${horizon} step${horizon === 1 ? '' : 's'}, checkpoints every ${pushEvery} to ` +
      `${storeName}`,
  );
  // The session: supervise() around soup's own trainer (see _train-session.ts): resume, lease, launch, pushes,
  // session end, step-down and peak are the supervisor's, as for any trainer under `soup run`.
  let t: TrainSession;
  try {
    t = await trainSession({
      ctx,
      opts,
      config,
      store,
      storeName,
      storeWhere: where,
      runId,
      identity,
      pushEvery,
      stopAfterSteps,
      timeLimitMs,
      leaseTtlMs: opts.leaseTtl ?? config.hub.leaseTtlMs,
      keepRemote,
      squashHistory: opts.squashHistory === true || config.hub.squashHistory,
      budgetFrom,
      startedAtMs: t0,
      showPath,
    });
  } finally {
    removeEmptyDir(ownScratch);
    rmSync(join(config.output, '.soup-train-job.json'), { force: true });
  }
  const { r } = t;
  if (r === null) {
    return endUnpushed(ctx, {
      unpushed: [...t.unpushed, { step: t.lastStep, reason: t.finalError?.message ?? 'the store is unreachable' }],
      pushed: t.pushed,
      storeName,
      localDir: showPath(join(config.output, 'final')),
      final: true,
    });
  }
  if (r.outcome === 'complete' && !r.launched) return alreadyComplete(ctx, { r, store, config, runId, horizon, t0 });
  if (r.outcome === 'trainer-failed') {
    t.bar?.fail();
    ctx.stderr.write(`${r.message}\n`);
    return r.exitCode;
  }
  const pushed = r.pushedSteps;
  const finalPushed = r.outcome === 'complete';
  const segment = !finalPushed;
  if (finalPushed) t.bar?.done(t.lastLoss !== null ? `loss ${t.lastLoss.toFixed(3)}` : undefined);
  else t.bar?.fail();
  // The newest checkpoint this session saved is not in the store (it was unreachable): said plainly, 75 or 5.
  const saved = t.savedStep ?? t.startStep;
  if (segment && saved > (pushed.at(-1) ?? t.startStep) && t.unpushed.length > 0) {
    return endUnpushed(ctx, {
      unpushed: t.unpushed,
      pushed,
      storeName,
      localDir: showPath(join(config.output, 'checkpoints', `checkpoint-${saved}`)),
    });
  }
  if (r.outcome === 'not-launched') {
    ctx.say(
      `session end (${t.ended?.reason ?? 'abort'}) at step ${t.startStep}: no step was run this session; nothing ` +
        `new to push`,
    );
  }
  if (t.ended !== null || r.outcome === 'not-launched') {
    ctx.say(
      `segment saved at step ${t.lastStep}: run the same command again to continue from ${storeName} (exit ` +
        `${EXIT_CODES.segmentSaved})`,
    );
  } else if (segment) {
    ctx.say(
      `segment saved at step ${t.lastStep} (--stop-after-steps): validation skipped; run the same command again ` +
        `to continue from ${storeName} (exit ${EXIT_CODES.segmentSaved})`,
    );
  } else {
    ctx.say(`pushed final/, verified, latest.json → final (terminal) at step ${r.step}`);
  }
  const exitCode = segment ? EXIT_CODES.segmentSaved : EXIT_CODES.ok;
  const json = resultOf({ t, r, config, store, t0, exitCode });
  if (t.memory !== null) ctx.say(`${describeRunPeak(t.memory)}${describeTuning(t.memory)}`);
  if (finalPushed)
    ctx.say(
      `final model: ${showPath(join(config.output, 'final'))}/ (model.safetensors + config.json: loads as ` +
        `transformers' GPT-2)`,
    );
  showLossPlot(ctx, {
    history: historyOf(
      finalPushed ? join(config.output, 'final') : join(config.output, 'checkpoints', `checkpoint-${t.lastStep}`),
    ),
    horizon,
    title: `${config.base}: training loss`,
    ...(opts.plot !== undefined ? { plotPath: opts.plot } : {}),
  });
  printResult(ctx, json);
  // "Segment saved, run the same command again" is exit 75 however the segment ended.
  return exitCode;
}

/** RUN_JSON of a session that trained (or ended before its first step). */
function resultOf(p: {
  t: TrainSession;
  r: SuperviseOutcome & SessionFacts;
  config: SoupConfig;
  store: CheckpointStore;
  t0: number;
  exitCode: number;
}): RunJson {
  const { t, r, config, store, t0, exitCode } = p;
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
    ...sessionResult(r, {
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
    peak_rss_mb: t.memory?.peak_bytes != null ? Math.round((t.memory.peak_bytes / 2 ** 20) * 10) / 10 : null,
    train_s: secondsOf(t.trainMs),
    tokens_per_s:
      t.stepsRun > 0 && t.trainMs > 0 ? Math.round((t.stepsRun * tokensPerStep) / (t.trainMs / 1000)) : null,
  };
}

/** The store already holds this run's final/: nothing to do, and the result says what it holds. */
async function alreadyComplete(
  ctx: CommandContext,
  p: { r: SuperviseOutcome; store: CheckpointStore; config: SoupConfig; runId: string; horizon: number; t0: number },
): Promise<number> {
  const { store, config } = p;
  const step = p.r.outcome === 'complete' ? p.r.step : 0;
  const pathInRepo = p.r.outcome === 'complete' ? p.r.pathInRepo : 'final';
  const state = await store.readFile({ path: `${pathInRepo}/trainer_state.json` });
  const record = await store.readFile({ path: `${pathInRepo}/soup_run.json` });
  const s = state ? (JSON.parse(new TextDecoder().decode(state)) as Record<string, unknown>) : {};
  const r = record ? (JSON.parse(new TextDecoder().decode(record)) as Record<string, unknown>) : {};
  ctx.say(`run ${p.runId} is already complete: ${pathInRepo}/ holds step ${step}; nothing to do`);
  const json: RunJson = {
    ...emptySessionResult({
      run: p.runId,
      store: store.description,
      status: 'complete',
      exit_code: EXIT_CODES.ok,
      elapsedMs: Date.now() - p.t0,
    }),
    start_step: step,
    final_step: step,
    horizon: p.horizon,
    tokens_consumed: Number(s.tokens_consumed ?? 0),
    final_loss: typeof s.last_loss === 'number' ? s.last_loss : null,
    val_loss: typeof r.val_loss === 'number' ? r.val_loss : null,
    val_skipped: false,
    peak_rss_mb: null,
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
  printResult(ctx, json);
  return EXIT_CODES.ok;
}

/** The loss history a checkpoint's trainer_state.json holds (none when it cannot be read). */
function historyOf(dir: string): LossPoint[] {
  try {
    const json = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as { log_history?: unknown };
    return Array.isArray(json.log_history) ? (json.log_history as LossPoint[]) : [];
  } catch {
    return [];
  }
}

/**
 * The session ends with its newest checkpoint not pushed (the store unreachable): says so plainly, and exits
 * 75 when a checkpoint of this session is safe in the store (run again to continue from it), else 5.
 */
function endUnpushed(
  ctx: CommandContext,
  p: {
    unpushed: Array<{ step: number; reason: string }>;
    pushed: number[];
    storeName: string;
    localDir: string;
    final?: boolean;
  },
): number {
  const last = p.unpushed.at(-1)!;
  const steps = [...new Set(p.unpushed.map((u) => u.step))].join(', ');
  const safe = p.pushed.at(-1);
  ctx.stderr.write(
    `soup: could not push ${p.final ? 'final/' : `checkpoint-${last.step}`} to ${p.storeName}: ${last.reason}` +
      `. Not pushed this session: step${p.unpushed.length === 1 ? '' : 's'} ${steps} ` +
      `(the newest is kept locally in ${p.localDir}). ` +
      (safe !== undefined
        ? `The store holds step ${safe} from this session: run the same command again to continue from it (exit ` +
          `${EXIT_CODES.segmentSaved}).\n`
        : `Nothing from this session is in the store (exit ${EXIT_CODES.hub}).\n`),
  );
  const code = safe !== undefined ? EXIT_CODES.segmentSaved : EXIT_CODES.hub;
  ctx.emit({
    ok: false,
    outcome: 'not-pushed',
    not_pushed_steps: [...new Set(p.unpushed.map((u) => u.step))],
    stored_step: safe ?? null,
    local_dir: p.localDir,
    exit_code: code,
  });
  return code;
}

/** Removes the offload scratch folder if it is empty (each step deletes its own files). */
function removeEmptyDir(dir: string | null): void {
  if (dir === null) return;
  try {
    rmdirSync(dir);
  } catch {
    // not empty (someone else's files) or already gone: leave it
  }
}
