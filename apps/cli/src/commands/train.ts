import {
  DiskFullError,
  isDiskFull,
  planSegment,
  pullResume,
  pushCheckpoint,
  pushFinal,
  StoreError,
  type PullResumeResult,
  type PushPhaseEvent,
  type PushResult,
  type StoreLease,
} from '@soup/hub-ckpt';
import { sequentialBatches, Trainer, type TrainerOptions } from '@soup/onnx-train';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { CommandContext } from '../_context';
import { assertTrainable, offloadChoicesOf } from '../_plan';
import { prepareRun, type PreparedRun } from '../_prepare';
import { explainRefusal } from '../_refusal';
import { resolveTimeLimitMs, watchSession, type SessionEnd } from '../_session-end';
import { defaultStoreDir, openCheckpointStore } from '../_store';
import { holdStoreLease } from '../_store-lease';
import { TrainRunError, UsageError } from '../errors';
import { EXIT_CODES } from '../exit-codes';
import { formatBytes } from '../format-bytes';
import { loadConfig } from '../load-config';
import { formatDuration, type Progress } from '../progress';
import { runFingerprint } from '../run-fingerprint';
import { showLossPlot } from '../_show-plot';
import { emptyResult, printResult, type RunResult } from '../_result';
import type { SoupConfig } from '../validate-config';
import { readMicroSessions, type MicroSession } from '../_micro-sessions';
import { describePeak, microBatchesOf, sessionPeak, startMicro, validate } from '../_train-micro';
import type { TrainOptions } from './train.options';

/** The result `soup train` ends with (`RUN_JSON {...}`, or --json): the same shape as `soup run`'s. */
export type RunJson = RunResult;

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

function peakRssMb(): number {
  return Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10;
}

function readState(dir: string): {
  step: number;
  tokensConsumed: number;
  lastLoss: number | null;
  sessions: MicroSession[];
} {
  const json = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
  return {
    step: Number(json.step),
    tokensConsumed: Number(json.tokens_consumed),
    lastLoss: typeof json.last_loss === 'number' ? json.last_loss : null,
    sessions: readMicroSessions(dir),
  };
}

/** `soup train`: trains the config's model in segments, pushing checkpoints as it goes. */
export async function run(opts: TrainOptions, ctx: CommandContext): Promise<number | void> {
  const held: StoreLease[] = [];
  try {
    return await trainSession(opts, ctx, held);
  } finally {
    for (const lease of held) await lease.release();
  }
}

/** A push that failed because the store could not be reached (after the retries): training goes on. */
function isOutage(err: unknown): err is StoreError {
  return err instanceof StoreError;
}

async function trainSession(opts: TrainOptions, ctx: CommandContext, held: StoreLease[]): Promise<number | void> {
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
      "--resume force: soup train cannot continue another run's checkpoints (its model or data differ, so the weights would not load or not mean the same); pass a new --repo for this run, or restore the old config to resume it",
    );
  }
  // null (hub.keep_remote: null) keeps every remote checkpoint; the default is 3 (KEEP_REMOTE_DEFAULT, in the config schema).
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
  // The default store sits beside the output folder, not inside it: `rm -rf <output>` keeps the checkpoints.
  const repo = opts.repo ?? config.hub.repo ?? `file://${defaultStoreDir(config.output)}`;
  let logLine: (line: string) => void = (line) => ctx.warn(line);
  const store = openCheckpointStore({
    ctx,
    repo,
    repoType: config.hub.repoType,
    private: config.hub.private,
    endpoint: config.hub.endpoint,
    needsWrite: true,
    log: (line) => logLine(line),
    flag: opts.repo !== undefined ? '--repo' : 'hub.repo',
  });
  const showPath = (p: string): string => relative(ctx.cwd, p) || '.';
  const storeName = store.kind === 'dir' ? `directory ${showPath(repo.replace(/^file:\/\//, ''))}` : store.description;

  const trainSha256 = sha256File(config.data.trainPath);
  const valSha256 = config.data.valPath ? sha256File(config.data.valPath) : null;
  const { run: runId, identity } = runFingerprint({ config, trainSha256, valSha256 });
  ctx.say(
    `run ${runId}: ${config.base}, ${horizon} step${horizon === 1 ? '' : 's'}, checkpoints every ${pushEvery} to ${storeName}`,
  );
  // One writer per store: refused here, before the resume (which may repair the pointer) and before any step.
  const lease = await holdStoreLease({
    ctx,
    store,
    run: runId,
    ttlMs: opts.leaseTtl ?? config.hub.leaseTtlMs,
    log: (line) => logLine(line),
  });
  held.push(lease);
  const squashHistory = opts.squashHistory === true || config.hub.squashHistory;
  const pushOpts = { lease, squashHistory, ...(keepRemote !== null ? { keepRemote } : {}) };
  /** Pushes that failed on an unreachable store this session (the newest is retried at the next boundary). */
  const unpushed: Array<{ step: number; reason: string }> = [];

  // Where this session starts: pullResume picks, verifies and pulls (walking back past a checkpoint that
  // fails to verify or pull, as --resume auto does everywhere) and repairs the pointer this session will move anyway.
  let outcome: PullResumeResult;
  const resumeParent = join(config.output, 'resume');
  if (opts.resume === 'never') {
    outcome = { outcome: 'fresh', reason: 'no-checkpoint' };
    const raw = (await store.exists()) ? await store.readFile({ path: 'latest.json' }) : null;
    if (raw !== null) {
      throw new UsageError(
        `${storeName} already holds checkpoints (latest.json); --resume never would overwrite them: pass another --repo, or --resume auto`,
      );
    }
  } else {
    // --resume auto walks back past a checkpoint that fails to verify or pull, as in soup run.
    const fallback = true;
    const pullBar = ctx.progress({ label: 'resume', unit: 'file', summary: false });
    try {
      outcome = await pullResume({
        store,
        run: runId,
        dir: resumeParent,
        fallback,
        repair: true,
        overwrite: true,
        // No abort signal, as for pushes: a signal while pulling lets the pull finish, and the session
        // ends before its first step (see _session-end.ts), with nothing new to push.
        logger: { info: (l) => pullBar.log(l) },
        onFile: (e) => pullBar.update(e.index + 1, e.name),
      });
      pullBar.done();
    } catch (err) {
      pullBar.fail();
      return explainRefusal(err, {
        store,
        run: runId,
        identity,
        fallbackFlag: '--resume auto',
        repoFlag: '--repo',
        fallbackUsed: fallback,
      });
    }
  }

  if (outcome.outcome === 'complete') {
    const state = await store.readFile({ path: `${outcome.pathInRepo}/trainer_state.json` });
    const record = await store.readFile({ path: `${outcome.pathInRepo}/soup_run.json` });
    const s = state ? (JSON.parse(new TextDecoder().decode(state)) as Record<string, unknown>) : {};
    const r = record ? (JSON.parse(new TextDecoder().decode(record)) as Record<string, unknown>) : {};
    ctx.say(`run ${runId} is already complete: ${outcome.pathInRepo}/ holds step ${outcome.step}; nothing to do`);
    const json: RunJson = {
      ...emptyResult({
        run: runId,
        store: store.description,
        status: 'complete',
        exit_code: EXIT_CODES.ok,
        elapsedMs: Date.now() - t0,
      }),
      start_step: outcome.step,
      final_step: outcome.step,
      horizon,
      tokens_consumed: Number(s.tokens_consumed ?? 0),
      final_loss: typeof s.last_loss === 'number' ? s.last_loss : null,
      val_loss: typeof r.val_loss === 'number' ? r.val_loss : null,
      val_skipped: false,
      peak_rss_mb: peakRssMb(),
      batch_size: Number(r.batch_size ?? 0),
      micro_batch_size: Number(r.micro_batch_size ?? r.batch_size ?? 0),
      grad_accum: Number(r.grad_accum ?? 1),
      micro_batch: String(r.micro_batch ?? ''),
      oom_step_downs: [],
      batch_source: 'checkpoint',
      grad_ckpt: (r.grad_ckpt as string | false | undefined) ?? false,
      offload: config.training.activationOffloading === 'auto' ? null : config.training.activationOffloading, // auto: not known without measuring
      tokens_per_step: Number(r.batch_size ?? 0) * config.data.maxLength,
    };
    finish(ctx, json);
    return;
  }

  // A resumed session pulls its checkpoint and keeps the run's global batch G (part of the
  // fingerprint); its micro-batch m is resolved for this session's device.
  let resumeDir: string | null = null;
  let resumed: ReturnType<typeof readState> | null = null;
  if (outcome.outcome === 'resume') {
    resumeDir = outcome.localDir;
    resumed = readState(resumeDir);
    const skipped = outcome.skipped.filter((k) => k.step <= (outcome.previousStep ?? Infinity));
    for (const k of skipped) ctx.say(`skipped ${k.pathInRepo}: ${k.problems.slice(0, 2).join('; ')}`);
    const via = outcome.via
      ? ` (${outcome.via}${outcome.previousStep !== null ? `, pointer was at ${outcome.previousStep}` : ''}${outcome.repaired ? ', pointer repaired' : ''})`
      : '';
    ctx.say(`resuming from ${outcome.pathInRepo} at step ${outcome.step}${via}`);
  } else {
    const where = store.kind === 'dir' ? showPath(repo.replace(/^file:\/\//, '')) : store.description;
    ctx.say(
      `fresh run: store is at ${where} and empty` +
        (outcome.reason === 'repo-missing'
          ? ' (it does not exist yet; the first push creates it)'
          : ' (no checkpoint of this run)'),
    );
  }

  // 22: a resumed session resolves its own micro-batch m for this device (G is the run's, in the fingerprint).
  const prepared: PreparedRun = await prepareRun({
    ctx,
    config,
    noCache: opts.cache === false,
    predict: opts.predict !== false,
    budgetFrom,
  });
  const batchSize = prepared.globalBatchSize;
  const micro = startMicro({
    prepared,
    resumed: resumed?.sessions ?? [],
    startStep: outcome.outcome === 'resume' ? outcome.step : 0,
  });
  const tokensPerStep = batchSize * config.data.maxLength;
  const gradCkpt: string | false = prepared.tier.granularity ?? false;
  const plan = planSegment({
    horizon,
    pushEvery,
    stopAfterSteps,
    startStep: outcome.outcome === 'resume' ? outcome.step : 0,
  });

  const trainerOptions: TrainerOptions = {
    spec: prepared.spec,
    files: [config.data.trainPath],
    batchSize,
    microBatchSize: prepared.microBatchSize,
    totalSteps: horizon,
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
          offload: { target: prepared.offload.target, saveDir: prepared.offload.saveDir, cwd: ctx.cwd },
        }
      : {}),
    executionProvider: config.device.kind,
    deviceId: config.device.id,
    ...(config.training.threads > 0 ? { intraOpNumThreads: config.training.threads } : {}),
    // One run id everywhere: trainer_state.json, soup_run.json and latest.json.
    run: runId,
  };
  const trainer = resumeDir
    ? await Trainer.fromCheckpoint({ ...trainerOptions, dir: resumeDir })
    : await Trainer.create(trainerOptions);
  if (resumeDir) rmSync(resumeParent, { recursive: true, force: true });
  ctx.say(
    `training steps ${plan.startStep + 1}..${plan.stopStep} of ${horizon}: batch ${batchSize} × ${config.data.maxLength} tokens, ${micro.describe()} (${prepared.batchSource}), ` +
      `checkpointing ${prepared.tier.description}, ` +
      (prepared.offload
        ? `offload ${prepared.offload.target}${prepared.offload.saveDir ? ` to ${showPath(prepared.offload.saveDir)}` : ''} (segmented), `
        : '') +
      `${prepared.identity.gpuName}; ` +
      (plan.segmentStop ? `stops at step ${plan.stopStep} (segment boundary)` : 'runs to the horizon'),
  );

  // A full disk while saving is said as such (path, bytes needed; exit 12), not as a failed step or a bad manifest.
  const paramBytes =
    trainer.trainStep.model.params.reduce((a, p) => a + p.shape.reduce((x, y) => x * y, 1), 0) *
    (trainer.trainStep.dtype === 'float64' ? 8 : 4);
  const save = (dir: string): void => {
    try {
      trainer.saveCheckpoint(dir);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      // Weights, then AdamW's two moments, each the size of the weights.
      throw new DiskFullError({ path: dir, bytesNeeded: 3 * paramBytes, what: `saving ${showPath(dir)}`, cause: err });
    }
  };
  const pushSet = new Set(plan.pushSteps);
  const ckptRoot = join(config.output, 'checkpoints');
  const pushed: number[] = [];
  let initialLoss: number | null = null;
  let lastLoss: number | null = resumed?.lastLoss ?? null;
  let stepsRun = 0;
  // Time inside training steps only: tokens_per_s is the training throughput, not the session's.
  let trainMs = 0;
  const writeRecord = (dir: string, extra: Record<string, unknown> = {}): void => {
    writeFileSync(
      join(dir, 'soup_run.json'),
      `${JSON.stringify({ run: runId, identity, batch_size: batchSize, ...micro.record(trainer.microBatchSize), batch_source: prepared.batchSource, grad_ckpt: gradCkpt, ...extra }, null, 2)}\n`,
    );
  };
  const pushInfo = (bar: Progress, step: number) => (e: PushPhaseEvent) => {
    const what = e.pathInRepo === 'final' ? 'final' : `checkpoint-${step}`;
    const words: Record<string, string> = {
      hash: 'hashing',
      upload: 'uploading',
      uploaded: 'verifying',
      verified: 'moving the pointer',
      pointer: 'moving the pointer',
      pointed: 'pruning',
      prune: 'pruning',
      done: 'done',
    };
    bar.update(trainer.state.step, `push ${what}: ${words[e.phase] ?? e.phase}`);
  };
  // Counts and percentages are relative to the horizon (a resumed session shows 90/120, 75 %);
  // plain lines from the first 10 %, and one at every push.
  const bar = ctx.progress({
    label: 'train',
    total: horizon,
    start: plan.startStep,
    end: plan.stopStep,
    unit: 'step',
    delayMs: 0,
  });
  logLine = (line) => bar.log(`warning: ${line}`);
  // SIGTERM / SIGINT / --time-limit: the running step finishes, no new one starts, and that step is saved and pushed below.
  // Pushes get no abort signal on purpose: the first signal lets a push finish; a second one quits the process.
  const session = watchSession({ signal: ctx.signal, timeLimitMs, startedAtMs: t0 });
  const peak = sessionPeak(opts, prepared, (line) => bar.log(`warning: ${line}`));
  let sessionEnd: SessionEnd | null = null;
  try {
    while (trainer.state.step < plan.stopStep) {
      sessionEnd = await session.check();
      if (sessionEnd !== null) break;
      const stepT0 = performance.now();
      const log = await micro.step(trainer, opts, (line) => bar.log(line));
      trainMs += performance.now() - stepT0;
      peak.mark(`step ${log.step}`, log.step);
      stepsRun += 1;
      if (!Number.isFinite(log.loss))
        throw new TrainRunError(
          `the loss is ${log.loss} at step ${log.step}: lower training.lr or raise training.warmup_steps`,
        );
      initialLoss ??= log.loss;
      lastLoss = log.loss;
      const status = `loss ${log.loss.toFixed(3)}  lr ${log.lr.toExponential(1)}  micro ${log.microBatchSize} × ${log.accumulation} = ${batchSize}`;
      bar.update(log.step, status);
      if (pushSet.has(log.step)) {
        const dir = join(ckptRoot, `checkpoint-${log.step}`);
        save(dir);
        writeRecord(dir);
        let r: PushResult;
        try {
          r = await pushCheckpoint({
            store,
            step: log.step,
            dir,
            run: runId,
            keepLocal: config.hub.keepLocal,
            ...pushOpts,
            onPhase: pushInfo(bar, log.step),
          });
        } catch (err) {
          if (!isOutage(err)) throw err;
          // The store is unreachable (after the retries): training goes on; the next boundary pushes its newer checkpoint.
          unpushed.push({ step: log.step, reason: err.message });
          peak.mark(`save and push checkpoint-${log.step}`, log.step);
          bar.log(
            `warning: could not push checkpoint-${log.step} (${err.message}); training goes on, the next boundary pushes again (kept locally in ${showPath(dir)})`,
          );
          bar.mark(status);
          continue;
        }
        pushed.push(log.step);
        peak.mark(`save and push checkpoint-${log.step}`, log.step);
        bar.log(
          `pushed ${r.pathInRepo} (${r.fileCount} files, ${formatBytes(r.totalBytes)}), verified, latest.json → step ${r.step}${r.squashed ? ', history squashed' : ''}  ${ctx.style.dim(formatDuration(r.timings.totalMs))}`,
        );
        bar.mark(status);
      }
    }
  } catch (err) {
    bar.fail();
    session.dispose();
    await trainer.close();
    removeEmptyDir(ownScratch);
    throw err;
  }
  session.dispose();
  bar.done(lastLoss !== null ? `loss ${lastLoss.toFixed(3)}` : undefined);
  // A signal during the run's last step changes nothing: the run ends as usual (validation, final/), exit 0.
  sessionEnd ??= trainer.state.step < horizon ? session.ended : null;

  let valLoss: number | null = null;
  let finalPushed = false;
  let savedStep: number | null = null;
  try {
    if (sessionEnd !== null) {
      // The session ends here: save the step just completed and push it, unless the store holds it already.
      const step = trainer.state.step;
      // A step runs inside ONNX Runtime without yielding: the signal is handled once the step running
      // when it arrived has completed, and no step starts after it (see _session-end.ts). That step is saved.
      const why =
        sessionEnd.reason === 'time-limit'
          ? `--time-limit ${formatDuration(timeLimitMs ?? 0)} reached`
          : sessionEnd.reason;
      if (step > (pushed.at(-1) ?? plan.startStep)) {
        ctx.say(`session end (${why}) at step ${step}: saving checkpoint-${step} and pushing it`);
        const dir = join(ckptRoot, `checkpoint-${step}`);
        save(dir);
        writeRecord(dir);
        const pushBar = ctx.progress({ label: `push checkpoint-${step}`, unit: 'phase', summary: false });
        let phases = 0;
        let r: PushResult;
        try {
          r = await pushCheckpoint({
            store,
            step,
            dir,
            run: runId,
            keepLocal: config.hub.keepLocal,
            ...pushOpts,
            onPhase: (e) => pushBar.update(++phases, e.phase),
          });
        } catch (err) {
          pushBar.fail();
          if (!isOutage(err)) throw err;
          unpushed.push({ step, reason: err.message });
          return endUnpushed(ctx, { unpushed, pushed, storeName, localDir: showPath(dir) });
        }
        pushBar.fail();
        pushed.push(step);
        savedStep = step;
        peak.mark(`save and push checkpoint-${step}`, step);
        ctx.say(
          `pushed ${r.pathInRepo} (${r.fileCount} files, ${formatBytes(r.totalBytes)}), verified, latest.json → step ${r.step}  ${ctx.style.dim(formatDuration(r.timings.totalMs))}`,
        );
      } else {
        ctx.say(
          `session end (${why}) at step ${step}: ${step === plan.startStep && pushed.length === 0 ? 'no step was run this session' : `checkpoint-${step} is already pushed`}; nothing new to push`,
        );
      }
      ctx.say(
        `segment saved at step ${step}: run the same command again to continue from ${store.kind === 'dir' ? storeName : store.description} (exit ${EXIT_CODES.segmentSaved})`,
      );
    } else if (plan.segmentStop) {
      if (unpushed.length > 0 && unpushed.at(-1)!.step > (pushed.at(-1) ?? -1)) {
        return endUnpushed(ctx, {
          unpushed,
          pushed,
          storeName,
          localDir: showPath(join(ckptRoot, `checkpoint-${unpushed.at(-1)!.step}`)),
        });
      }
      ctx.say(
        `segment saved at step ${plan.stopStep} (--stop-after-steps): validation skipped; run the same command again to continue from ${store.kind === 'dir' ? storeName : store.description} (exit ${EXIT_CODES.segmentSaved})`,
      );
    } else {
      if (config.data.valPath) {
        const tokens = new Uint8Array(readFileSync(config.data.valPath));
        const batches = sequentialBatches({
          tokens,
          seqLen: config.data.maxLength,
          batchSize,
          maxBatches: config.training.valBatches,
        });
        if (batches.length === 0)
          ctx.warn(`${file}: data.val has ${tokens.length} bytes, fewer than max_length + 1: no validation`);
        else {
          const v = await validate(trainer, microBatchesOf(batches, trainer.microBatchSize));
          peak.mark('validation', trainer.state.step);
          if ('oom' in v) {
            ctx.warn(
              `validation loss unknown: out of memory at a validation batch of ${v.batchSize} (${v.oom}); the trained weights are kept and pushed as final/`,
            );
          } else {
            valLoss = v.loss;
            trainer.logEval(valLoss);
            ctx.say(`validation loss ${valLoss.toFixed(4)} over ${v.windows} sequences`);
          }
        }
      }
      const finalDir = join(config.output, 'final');
      save(finalDir);
      writeRecord(finalDir, { val_loss: valLoss });
      const finalBar = ctx.progress({ label: 'push final', unit: 'phase', summary: false });
      let phases = 0;
      let r: PushResult;
      try {
        r = await pushFinal({
          store,
          step: trainer.state.step,
          dir: finalDir,
          run: runId,
          ...pushOpts,
          onPhase: (e) => finalBar.update(++phases, e.phase),
        });
      } catch (err) {
        finalBar.fail();
        if (!isOutage(err)) throw err;
        unpushed.push({ step: trainer.state.step, reason: err.message });
        return endUnpushed(ctx, { unpushed, pushed, storeName, localDir: showPath(finalDir), final: true });
      }
      finalBar.fail();
      finalPushed = true;
      peak.mark('save and push final', trainer.state.step);
      ctx.say(
        `pushed final/ (${r.fileCount} files, ${formatBytes(r.totalBytes)}), verified, latest.json → final (terminal)  ${ctx.style.dim(formatDuration(r.timings.totalMs))}`,
      );
    }
  } finally {
    await trainer.close();
    removeEmptyDir(ownScratch);
  }
  const state = trainer.state;
  const segment = plan.segmentStop || sessionEnd !== null;
  const exitCode = segment ? EXIT_CODES.segmentSaved : EXIT_CODES.ok;
  const json: RunJson = {
    ...emptyResult({
      run: runId,
      store: store.description,
      status: segment ? 'segment' : 'finished',
      exit_code: exitCode,
      elapsedMs: Date.now() - t0,
    }),
    start_step: plan.startStep,
    final_step: state.step,
    horizon,
    segment_stop: segment,
    session_end:
      sessionEnd !== null
        ? { reason: sessionEnd.reason, after_s: Math.round(sessionEnd.afterMs / 100) / 10, saved_step: savedStep }
        : plan.segmentStop
          ? {
              reason: 'stop-after-steps',
              after_s: Math.round((Date.now() - t0) / 100) / 10,
              saved_step: pushed.includes(state.step) ? state.step : null,
            }
          : null,
    pushed_steps: pushed,
    final_pushed: finalPushed,
    batch_size: batchSize,
    batch_source: prepared.batchSource,
    tokens_per_step: tokensPerStep,
    tokens_consumed: state.tokensConsumed,
    initial_loss: initialLoss,
    final_loss: lastLoss,
    val_loss: valLoss,
    val_skipped: segment,
    ...micro.runJson(trainer.microBatchSize),
    memory: peak.report(),
    grad_ckpt: gradCkpt,
    offload: prepared.offload?.target ?? null,
    peak_rss_mb: peakRssMb(),
    train_s: Math.round(trainMs / 100) / 10,
    tokens_per_s: stepsRun > 0 && trainMs > 0 ? Math.round((stepsRun * tokensPerStep) / (trainMs / 1000)) : null,
  };
  ctx.say(describePeak(json.memory));
  if (sessionEnd === null && existsSync(join(config.output, 'final')))
    ctx.say(
      `final model: ${showPath(join(config.output, 'final'))}/ (model.safetensors + config.json: loads as transformers' GPT-2)`,
    );
  showLossPlot(ctx, {
    history: trainer.logHistory,
    horizon,
    title: `${config.base}: training loss`,
    ...(opts.plot !== undefined ? { plotPath: opts.plot } : {}),
  });
  finish(ctx, json);
  // "Segment saved, run the same command again" is exit 75 however the segment ended.
  return exitCode;
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
    `soup: could not push ${p.final ? 'final/' : `checkpoint-${last.step}`} to ${p.storeName}: ${last.reason}. Not pushed this session: step${p.unpushed.length === 1 ? '' : 's'} ${steps} ` +
      `(the newest is kept locally in ${p.localDir}). ` +
      (safe !== undefined
        ? `The store holds step ${safe} from this session: run the same command again to continue from it (exit ${EXIT_CODES.segmentSaved}).\n`
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

function finish(ctx: CommandContext, json: RunJson): void {
  printResult(ctx, json);
}
