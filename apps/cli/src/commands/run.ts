import { deviceIdentity } from '@soup/cuda-probe';
import { resolveHubToken } from '@soup/hub-ckpt';
import { describeSessionPeak, resolveStopSignal, supervise, supervisedResultOf } from '@soup/supervisor';
import { checkTries } from '@soup/tune';
import { resolve } from 'node:path';
import {
  commandBudgetHold,
  DEFAULT_MAX_LENGTH,
  describeResolution,
  type ProbedBatch,
  resolveTrainerBatch,
  type TrainerMicro,
  tuneTrainerBatch,
} from '@soup/plan';
import { planIo } from '../_batch-lines';
import type { CommandContext } from '../_context';
import { runMicro } from '../_run-micro';
import { openSessionStore, plainListeners, printResult, sessionMemory, sessionOptions } from '../_session';
import { tuneExec } from '../_tune-exec';
import { UsageError } from '../errors';
import { EXIT_CODES } from '../exit-codes';
import type { RunOptions } from './run.options';

/**
 * `soup run [options] -- <trainer argv>`: a thin shell over @soup/supervisor's supervise(): flags in,
 * lines and one result out (`RUN_JSON`, the shape soup train prints), exit codes.
 */
export async function run(opts: RunOptions, ctx: CommandContext, argv: string[]): Promise<number> {
  if (argv.length === 0)
    throw new UsageError(
      'soup run needs the trainer command after --, e.g. soup run --repo file://ckpt -- python train.py ' +
        '--output_dir {output_dir}',
    );
  const t0 = Date.now();
  const stopSignal = resolveStopSignal(opts.stopSignal);
  const tries = checkTries({
    tries: opts.try,
    timeSteps: opts.timeSteps,
    globalBatchSize: opts.globalBatchSize,
    command: opts.probe,
    commandName: 'the --probe command',
    argv,
    steps: { pattern: opts.stepsPattern, file: opts.stepsFile },
  });
  if (tries.errors[0] !== undefined) throw new UsageError(tries.errors[0]);
  const micro = runMicro(opts, ctx, argv, (m) =>
    opts.try !== undefined ? tuneBatch(opts, ctx, m, tries.tries) : probeBatch(opts, ctx, m),
  );
  if (opts.batchSize === 'auto' && opts.probe === undefined)
    throw new UsageError(
      '--batch-size auto needs --probe "<the trainer\'s one-step command with {batch_size}>" (used when the batch ' +
        'cache has no answer)',
    );

  const outputDir = resolve(ctx.cwd, opts.outputDir ?? 'output');
  const { store, storeName } = openSessionStore(ctx, { repo: opts.repo, output: outputDir, repoType: opts.repoType });
  const kind = opts.device?.kind ?? 'cpu';
  const deviceId = opts.device?.id ?? 0;
  const mem = sessionMemory(ctx, { kind, id: deviceId });
  const budget = { budgetBytes: opts.budget ?? null, maxMemory: opts.maxMemory, hint: 'pass --budget', env: ctx.env };
  await mem.hold(commandBudgetHold({ device: { kind, id: deviceId }, ...budget }));
  const r = await supervise({
    argv,
    ...sessionOptions(ctx, { store, storeName, startedAtMs: t0, identity: null, fallbackFlag: '--resume force' }),
    outputDir,
    outputDirGiven: opts.outputDir !== undefined,
    fingerprintFiles: opts.fingerprint ?? [],
    // The token (resolved as the store resolves it) is never shown nor stored: its sha256 stands in.
    secrets: [resolveHubToken({ env: ctx.env }).token],
    leaseTtlMs: opts.leaseTtl,
    leaseWait: opts.waitLease !== false,
    takeOverLease: opts.takeOverLease ?? null,
    squashHistory: opts.squashHistory,
    minCommitIntervalMs: opts.minCommitInterval,
    resume: opts.resume,
    batchSize: opts.batchSize ?? null,
    probeBatchSize: async () => (await probeBatch(opts, ctx)).batchSize,
    ...micro.supervise,
    // Over --max-memory mid-run (a data-dependent peak the probe's one step never saw): stepped down where it can be.
    memory: { ...mem.watch, overMax: 'step-down' },
    horizon: opts.horizon ?? null,
    checkpointGlob: opts.checkpointGlob,
    stepRegex: opts.stepRegex,
    completeFile: opts.completeFile,
    // Unset flags are left to supervise()'s own defaults (settle 10 s, grace 2 min, poll 1 s, 3 kept remote).
    settleMs: opts.settle,
    graceMs: opts.grace,
    pollMs: opts.poll,
    timeLimitMs: opts.timeLimit,
    stopSignal,
    finalDir: opts.final === undefined ? null : resolve(ctx.cwd, opts.final),
    keepRemote: opts.keepRemote,
    pushNice: opts.pushNice,
    nodeFlags: { nodeRank: opts.nodeRank, nnodes: opts.nnodes },
    nodesDir: opts.nodesDir === undefined ? undefined : resolve(ctx.cwd, opts.nodesDir),
    requeue: opts.requeue === true,
    ...plainListeners(ctx),
  });
  const memory = mem.report(r.memory);
  if (r.memory !== null) ctx.say(describeSessionPeak(memory)); // null: no trainer was launched
  const result = supervisedResultOf(r, {
    store,
    startedAtMs: t0,
    memory,
    exitCodes: { ok: EXIT_CODES.ok, segmentSaved: EXIT_CODES.segmentSaved, interrupted: EXIT_CODES.interrupted },
  });
  if (r.outcome === 'not-launched') ctx.stderr.write('interrupted before the trainer started; nothing was launched\n');
  if (r.outcome === 'trainer-failed') ctx.stderr.write(`${r.message}\n`);
  printResult(ctx, result);
  return result.exit_code;
}

/** --batch-size auto, or the micro-batch of --global-batch-size: @soup/plan's answer for the --probe command. */
async function probeBatch(opts: RunOptions, ctx: CommandContext, micro?: TrainerMicro): Promise<ProbedBatch> {
  const trainer = await trainerOptions(opts, ctx);
  const { probed, resolution: r } = await resolveTrainerBatch({
    ...trainer,
    command: opts.probe ?? '',
    base: opts.base,
    micro,
    start: opts.start,
    ceiling: opts.ceiling,
  });
  ctx.say(describeResolution(r, { gpuName: trainer.identity.gpuName, micro, flagHints: true }));
  return probed;
}

/** The trainer probe's device, budget, cache key fields and search flags (shared by --probe and --try). */
async function trainerOptions(opts: RunOptions, ctx: CommandContext) {
  const deviceId = opts.device?.id ?? 0;
  return {
    ...planIo(ctx),
    identity: await deviceIdentity({ device: opts.device?.kind ?? 'cpu', deviceId, env: ctx.env }),
    deviceId,
    budgetBytes: opts.budget ?? null,
    timeoutMs: 600_000,
    maxLength: opts.maxLength ?? DEFAULT_MAX_LENGTH,
    quantization: opts.quantization,
    loraR: opts.loraR,
    refresh: opts.refresh === true,
    noCache: opts.cache === false,
    cacheExceptionsOnly: opts.cacheExceptionsOnly === true,
    predict: opts.predict !== false,
    steps: { pattern: opts.stepsPattern, file: opts.stepsFile },
  };
}

/**
 * --try: this session's levers and micro-batch, the fastest at G (the tune cache first), as soup probe --exec --try
 * measures them.
 */
async function tuneBatch(
  opts: RunOptions,
  ctx: CommandContext,
  micro: TrainerMicro,
  tries: Record<string, string[]>,
): Promise<ProbedBatch> {
  const typed = opts.probe ?? '';
  const base = opts.base;
  return tuneTrainerBatch({
    ...(await trainerOptions(opts, ctx)),
    command: typed,
    tries,
    micro,
    timeSteps: opts.timeSteps ?? 8,
    // A candidate's batch-cache base: --base with its levers, else the filled command and its files.
    baseOf: base !== undefined ? (trial) => `${base} ${trial}` : undefined,
    start: opts.start,
    tune: (options) => tuneExec({ ctx, emitJson: false, ...options }),
    onStale: (e) => ctx.say(e.line),
  });
}
