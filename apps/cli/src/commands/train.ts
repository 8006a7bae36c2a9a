import { rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { CommandContext } from '../_context';
import {
  assertTrainable,
  completedTrainResult,
  ownOffloadScratch,
  pushEveryOf,
  removeEmptyScratch,
  trainPathsOf,
  trainResultOf,
  trainRunFingerprint,
} from '@soup/plan';
import { openSessionStore, printResult } from '../_session';
import { showLossPlot } from '../_show-plot';
import { trainSession, type TrainSession } from '../_train-session';
import { UsageError } from '../errors';
import { EXIT_CODES } from '../exit-codes';
import { configWithOverrides, loadConfig } from '@soup/config';
import { readLossHistory } from '@soup/loss-plot';
import { describeSessionPeak, describeTuningPeak } from '@soup/supervisor';
import type { TrainOptions } from './train.options';

/** Says how the learning rate goes when the run trains past its schedule (an extended run). */
function sayScheduleRule(ctx: CommandContext, schedule: number | null, horizon: number): void {
  if (schedule !== null && schedule < horizon)
    ctx.say(
      `the learning rate follows the schedule of ${schedule} steps, then stays at its minimum to step ${horizon}`,
    );
}

/** `soup train`: trains the config's model in segments under supervise(), pushing checkpoints as it goes. */
export async function run(opts: TrainOptions, ctx: CommandContext): Promise<number | void> {
  const t0 = Date.now();
  const loaded = loadConfig({ path: opts.config, cwd: ctx.cwd });
  const file = loaded.displayPath;
  const { config, budgetFrom } = configWithOverrides(loaded.config, {
    steps: opts.steps,
    extendTo: opts.extendTo,
    outputDir: opts.outputDir,
    budgetBytes: opts.budget,
    device: opts.device,
    cwd: ctx.cwd,
  });
  if (opts.resume === 'force') {
    throw new UsageError(
      "--resume force: soup train cannot continue another run's checkpoints (its model or data differ, so the " +
        'weights would not load or not mean the same); pass a new --repo for this run, or restore the old config ' +
        'to resume it',
    );
  }
  // null (hub.keep_remote: null) keeps every remote checkpoint; the default (3) is the config schema's.
  const keepRemote: number | null = opts.keepRemote ?? config.hub.keepRemote;
  // Refusals first: a field train cannot honour is an error, not also a warning.
  const offloadWarnings = assertTrainable(config, file, ctx.cwd);
  for (const w of [...loaded.warnings, ...offloadWarnings])
    ctx.warn(`${file}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`);
  // Disk offload's scratch folder: removed at the end when this run created it (each step deletes its files).
  const ownScratch = ownOffloadScratch(config, ctx.cwd);

  const horizon = config.training.steps;
  const pushEvery = pushEveryOf(config, opts.pushEverySteps);
  const stopAfterSteps = opts.stopAfterSteps;
  const timeLimitMs = opts.timeLimit ?? config.training.timeLimitMs;
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

  const { run: runId, identity } = trainRunFingerprint(config);
  ctx.say(
    `run ${runId}: ${config.base}, ${horizon} step${horizon === 1 ? '' : 's'}, checkpoints every ${pushEvery} to ` +
      `${storeName}`,
  );
  sayScheduleRule(ctx, config.training.scheduleSteps, horizon);
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
      squashHistory: opts.squashHistory ?? config.hub.squashHistory,
      minCommitIntervalMs: opts.minCommitInterval ?? config.hub.minCommitIntervalMs,
      budgetFrom,
      startedAtMs: t0,
      showPath,
    });
  } finally {
    removeEmptyScratch(ownScratch);
    rmSync(trainPathsOf(config.output).jobPath, { force: true });
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
  if (r.outcome === 'complete' && !r.launched)
    return alreadyComplete(ctx, { step: r.step, pathInRepo: r.pathInRepo, store, config, runId, startedAtMs: t0 });
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
  const json = trainResultOf({ facts: t, r, config, store, startedAtMs: t0, exitCode });
  if (t.memory !== null) ctx.say(`${describeSessionPeak(t.memory)}${describeTuningPeak(t.memory)}`);
  if (finalPushed)
    ctx.say(
      `final model: ${showPath(join(config.output, 'final'))}/ (model.safetensors + config.json: loads as ` +
        `transformers' GPT-2)`,
    );
  showLossPlot(ctx, {
    history: readLossHistory(
      finalPushed ? join(config.output, 'final') : join(config.output, 'checkpoints', `checkpoint-${t.lastStep}`),
    ).history,
    horizon,
    title: `${config.base}: training loss`,
    ...(opts.plot !== undefined ? { plotPath: opts.plot } : {}),
  });
  printResult(ctx, json);
  // "Segment saved, run the same command again" is exit 75 however the segment ended.
  return exitCode;
}

/** The store already holds this run's final/: nothing to do, and the result says what it holds. */
async function alreadyComplete(
  ctx: CommandContext,
  p: Omit<Parameters<typeof completedTrainResult>[0], 'exitCode'>,
): Promise<number> {
  ctx.say(`run ${p.runId} is already complete: ${p.pathInRepo}/ holds step ${p.step}; nothing to do`);
  printResult(ctx, await completedTrainResult({ ...p, exitCode: EXIT_CODES.ok }));
  return EXIT_CODES.ok;
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
    `could not push ${p.final ? 'final/' : `checkpoint-${last.step}`} to ${p.storeName}: ${last.reason}` +
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
