import { rmSync } from 'node:fs';
import { relative } from 'node:path';
import type { CommandContext } from '../_context';
import {
  assertTrainable,
  describeTrainStart,
  ownOffloadScratch,
  pushEveryOf,
  removeEmptyScratch,
  trainEndOf,
  trainPathsOf,
  trainResumeOf,
  trainRunFingerprint,
} from '@soup/plan';
import { openSessionStore, printResult } from '../_session';
import { showLossPlot } from '../_show-plot';
import { trainSession, type TrainSession } from '../_train-session';
import { UsageError } from '../errors';
import { EXIT_CODES } from '../exit-codes';
import { configWithOverrides, loadConfig } from '@soup/config';
import { readLossHistory } from '@soup/loss-plot';
import { formatDuration } from '@soup/progress';
import type { TrainOptions } from './train.options';

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
  const resume = trainResumeOf(opts.resume);
  if (resume.refusal !== null) throw new UsageError(resume.refusal);
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
  for (const line of describeTrainStart({ runId, config, pushEvery, storeName })) ctx.say(line);
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
      resume: resume.resume,
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
  const end = await trainEndOf({
    facts: t,
    config,
    store,
    storeName,
    runId,
    startedAtMs: t0,
    exitCodes: { ok: EXIT_CODES.ok, segmentSaved: EXIT_CODES.segmentSaved, notPushed: EXIT_CODES.hub },
    timeLimit: formatDuration(timeLimitMs ?? 0),
    show: showPath,
  });
  if (end.outcome === 'final') t.bar?.done(t.lastLoss !== null ? `loss ${t.lastLoss.toFixed(3)}` : undefined);
  else t.bar?.fail();
  if (end.error !== null) ctx.stderr.write(`${end.error}\n`);
  for (const line of end.lines) ctx.say(line);
  if (end.notPushed !== null) ctx.emit(end.notPushed);
  if (end.lossDir !== null)
    showLossPlot(ctx, {
      history: readLossHistory(end.lossDir).history,
      horizon,
      title: `${config.base}: training loss`,
      ...(opts.plot !== undefined ? { plotPath: opts.plot } : {}),
    });
  if (end.result !== null) printResult(ctx, end.result);
  return end.exitCode;
}
