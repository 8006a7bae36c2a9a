import { createPushQueue, pushFinal, redactArgv, resolveHubToken, StaleRunError, type CheckpointStore, type StoreLease } from '@soup/hub-ckpt';
import { createCommandProbe, deviceIdentity } from '@soup/cuda-probe';
import { readdirSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { relative, resolve } from 'node:path';
import { resolveBatch } from '../_batch';
import type { CommandContext } from '../_context';
import { explainRefusal } from '../_refusal';
import { resumeSupervised } from '../_resume-supervised';
import { describeIdentityChange, identityOf, readRunRecord, supervisedFingerprint, writeRunRecord, type RunRecord } from '../_run-identity';
import { openCheckpointStore } from '../_store';
import { holdStoreLease } from '../_store-lease';
import { stageFinal } from '../_stage-final';
import { expandArgv, placeholdersIn, startTrainer, trainerEnv, trainerErrorLine, type TrainerExit } from '../_trainer-child';
import { createCheckpointWatcher } from '../_watch-checkpoints';
import { ResumeRefusedError, UsageError } from '../errors';
import { EXIT_CODES } from '../exit-codes';
import { formatDuration } from '../progress';

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGUSR1', 'SIGUSR2', 'SIGHUP', 'SIGQUIT'] as const;

/** `soup run [options] -- <trainer argv>`: supervise the user's own trainer across sessions. */
export async function run(opts: Record<string, unknown>, ctx: CommandContext, argv: string[]): Promise<number> {
  const held: StoreLease[] = [];
  try {
    return await supervise(opts, ctx, argv, held);
  } finally {
    for (const lease of held) await lease.release();
  }
}

async function supervise(opts: Record<string, unknown>, ctx: CommandContext, argv: string[], held: StoreLease[]): Promise<number> {
  if (argv.length === 0) throw new UsageError('soup run needs the trainer command after --, e.g. soup run --repo file://ckpt -- python train.py --output_dir {output_dir}');
  const t0 = Date.now();
  const stopSignal = String(opts.stopSignal ?? 'SIGTERM').toUpperCase() as NodeJS.Signals;
  if (!(SIGNALS as readonly string[]).includes(stopSignal)) throw new UsageError(`--stop-signal ${String(opts.stopSignal)}: expected one of ${SIGNALS.join(', ')}`);
  const settleMs = (opts.settle as number | undefined) ?? 10_000;
  const graceMs = (opts.grace as number | undefined) ?? 120_000;
  const pollMs = (opts.poll as number | undefined) ?? 1000;
  const timeLimitMs = opts.timeLimit as number | undefined;
  const outputDir = resolve(ctx.cwd, String(opts.outputDir ?? 'output'));
  const show = (p: string): string => relative(ctx.cwd, p) || '.';
  let stepRegex: RegExp | undefined;
  if (opts.stepRegex !== undefined) {
    try {
      stepRegex = new RegExp(String(opts.stepRegex));
    } catch (err) {
      throw new UsageError(`--step-regex ${String(opts.stepRegex)}: not a regular expression (${(err as Error).message})`);
    }
  }
  const used = placeholdersIn(argv);
  const batchOpt = opts.batchSize as string | undefined;
  if (used.has('{batch_size}') && batchOpt === undefined) throw new UsageError('the trainer command uses {batch_size}: pass --batch-size N or --batch-size auto');
  if (batchOpt !== undefined && batchOpt !== 'auto' && !/^[1-9]\d*$/.test(batchOpt)) throw new UsageError(`--batch-size ${batchOpt}: expected a positive integer or auto`);
  if (batchOpt === 'auto' && opts.probe === undefined) throw new UsageError('--batch-size auto needs --probe "<the trainer\'s one-step command with {batch_size}>" (used when the batch cache has no answer)');

  // 1. Identity and stale guard.
  // The token (resolved as the store resolves it) never reaches soup_run.json nor a message: its sha256 stands in.
  const secrets = [resolveHubToken({ env: ctx.env }).token];
  const identity = identityOf(argv, (opts.fingerprint as string[] | undefined) ?? [], ctx.cwd, secrets);
  const fingerprint = supervisedFingerprint(identity);
  const repo = String(opts.repo);
  const store = openCheckpointStore({ ctx, repo, repoType: (opts.repoType as 'model' | 'dataset' | undefined) ?? 'model', needsWrite: true });
  const storeName = store.kind === 'dir' ? `directory ${show(repo.replace(/^file:\/\//, ''))}` : store.description;
  // One writer per store: refused here, before anything is written or launched, while another session holds it.
  const lease = await holdStoreLease({ ctx, store, run: fingerprint, ttlMs: (opts.leaseTtl as number | undefined) ?? 600_000 });
  held.push(lease);
  const force = opts.resume === 'force';
  let record = await readRunRecord(store);
  let runId = fingerprint;
  if (record !== null) {
    if (record.run === fingerprint || record.accepted.includes(fingerprint)) runId = record.run;
    else if ((await store.readFile({ path: 'latest.json' })) === null && (await store.list({ prefix: 'ckpt' })).length === 0) {
      // The other command never pushed a checkpoint: nothing to protect, this command takes the store.
      ctx.say(`soup: ${storeName} holds no checkpoint of run ${record.run} (${describeIdentityChange(record.identity, identity).join('; ') || 'another command'}): starting run ${fingerprint} there`);
      record = null;
    } else {
      const changes = describeIdentityChange(record.identity, identity);
      const what = changes.length > 0 ? changes.join('; ') : 'the fingerprint differs';
      if (!force) {
        throw new ResumeRefusedError(
          `resume refused as stale: ${storeName} holds run ${record.run}, not this command's ${fingerprint}: ${what}. ` +
            'A changed run needs its own checkpoints: pass a new --repo, restore the old command, or pass --resume force to continue that run anyway.',
        );
      }
      ctx.warn(`--resume force: continuing run ${record.run} although ${what}; this command is now accepted as the same run`);
      record = { ...record, accepted: [...record.accepted, fingerprint], identity };
      await writeRunRecord(store, record);
      runId = record.run;
    }
  }

  // 2. Resume.
  let resumed: Awaited<ReturnType<typeof resumeSupervised>>;
  try {
    resumed = await resumeSupervised({ store, run: runId, outputDir, ctx });
  } catch (err) {
    if (err instanceof StaleRunError && force) {
      ctx.warn(`--resume force: ${storeName} holds run ${err.pointerRun} (step ${err.pointerStep}) with no soup_run.json; continuing it as this run`);
      runId = err.pointerRun;
      resumed = await resumeSupervised({ store, run: runId, outputDir, ctx });
    } else {
      return explainRefusal(err, { store, run: runId, identity: null, fallbackFlag: '--resume force', repoFlag: '--repo' });
    }
  }
  if (resumed.outcome === 'complete') {
    ctx.say(`run ${runId} is complete: ${storeName} ${resumed.pathInRepo}/ holds step ${resumed.step}; nothing to launch`);
    ctx.emit({ ok: true, outcome: 'complete', run: runId, step: resumed.step, path_in_repo: resumed.pathInRepo, launched: false });
    return EXIT_CODES.ok;
  }

  // 3. Batch size.
  let batchSize: number | null = null;
  if (batchOpt !== undefined) {
    if (batchOpt !== 'auto') batchSize = Number(batchOpt);
    if (record?.batch_size != null && batchOpt === 'auto') {
      batchSize = record.batch_size;
      ctx.say(`batch size ${batchSize} (chosen by this run's first session, kept so the run computes the same numbers)`);
    } else if (record?.batch_size != null && batchSize !== record.batch_size) {
      ctx.warn(`--batch-size ${batchSize} differs from the ${record.batch_size} this run started with: the resumed run will not match an uninterrupted one`);
    }
    if (batchSize === null) batchSize = await probeBatch(opts, ctx);
  }
  if (record === null || (batchSize !== null && record.batch_size === null)) {
    record = { format: 'soup-run/1', run: runId, identity, accepted: record?.accepted ?? [], batch_size: batchSize };
    await writeRunRecord(store, record);
  }

  // 4. Launch, watch, push.
  const resumeFrom = resumed.outcome === 'resume' ? resumed.dir : null;
  const placeholders = { batchSize, outputDir, resumeFrom };
  const childArgv = expandArgv(argv, placeholders);
  const queue = createPushQueue({
    store,
    run: runId,
    afterStep: resumed.outcome === 'resume' ? resumed.step : -1,
    keepRemote: (opts.keepRemote as number | undefined) ?? 3,
    lease,
    ...(opts.squashHistory === true ? { squashHistory: true } : {}),
    onPushed: (r) => ctx.say(`soup: pushed ${r.pathInRepo} (step ${r.step}, ${r.fileCount} files, verified; latest.json moved) in ${formatDuration(r.timings.totalMs)}`),
    onError: (err, job) => ctx.warn(`push of step ${job.step} failed: ${(err as Error).message}`),
    onPhase: (e) => {
      if (e.phase === 'hash') ctx.say(`soup: pushing ${e.pathInRepo} (step ${e.step})…`);
    },
  });
  const watcher = createCheckpointWatcher({
    dir: outputDir,
    glob: (opts.checkpointGlob as string | undefined) ?? 'checkpoint-*',
    ...(stepRegex ? { stepRegex } : {}),
    completeFile: (opts.completeFile as string | undefined) ?? 'trainer_state.json',
    settleMs,
  });
  const warnedFiles = new Set<string>();
  const offerNewest = (asOfMs: number, trainerExited: boolean): void => {
    for (const c of watcher.scan(Date.now())) {
      if (c.kind === 'file' && !warnedFiles.has(c.name)) {
        warnedFiles.add(c.name);
        ctx.warn(`${c.name} matches --checkpoint-glob but is a file: soup run pushes checkpoint folders (give the trainer one folder per checkpoint, e.g. Lightning's filename="checkpoint-{step}/model")`);
      }
    }
    const c = watcher.newestComplete({ asOfMs, trainerExited });
    if (c && c.checkpoint.kind === 'dir') queue.offer({ step: c.checkpoint.step, dir: c.checkpoint.path });
  };

  if (ctx.signal.aborted) {
    ctx.stderr.write('soup: interrupted before the trainer started; nothing was launched\n');
    return EXIT_CODES.interrupted;
  }
  const human = ctx.json ? ctx.stderr : ctx.stdout;
  ctx.say(`run ${runId}: ${resumeFrom ? `resuming from step ${resumed.outcome === 'resume' ? resumed.step : 0}` : 'fresh start'}; checkpoints in ${show(outputDir)} pushed to ${storeName}`);
  const child = await startTrainer({
    argv: childArgv,
    env: trainerEnv(ctx.env, placeholders),
    cwd: ctx.cwd,
    onStdout: (d) => void human.write(d),
    onStderr: (d) => void ctx.stderr.write(d),
  }).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot start the trainer ${JSON.stringify(childArgv[0])}: ${err.code ?? err.message}`, { cause: err });
  });
  ctx.say(`soup: launched trainer (pid ${child.pid}): ${redactArgv(childArgv, { secrets }).map((a) => (/\s/.test(a) || a === '' ? JSON.stringify(a) : a)).join(' ')}`);

  // The pushes are background work: lower soup's own CPU priority (the trainer, already started,
  // keeps its own), so hashing and copying checkpoints yield to the trainer on a busy machine.
  const nice = (opts.pushNice as number | undefined) ?? 10;
  if (nice > 0) lowerOwnPriority(nice);

  let stopReason: string | null = null;
  const poll = setInterval(() => offerNewest(Date.now(), false), pollMs);
  const stopped = new Promise<void>((resolveStop) => {
    if (ctx.signal.aborted) resolveStop();
    ctx.signal.addEventListener('abort', () => resolveStop(), { once: true });
    if (timeLimitMs !== undefined) setTimeout(() => resolveStop(), Math.max(0, timeLimitMs - (Date.now() - t0))).unref();
  }).then(() => {
    stopReason ??= ctx.signal.aborted ? 'signal' : `time limit ${formatDuration(timeLimitMs ?? 0)}`;
  });
  let end: TrainerExit & { killed: boolean };
  const first = await Promise.race([child.exited.then(() => 'exited' as const), stopped.then(() => 'stop' as const)]);
  if (first === 'stop' && !child.done) {
    ctx.say(`soup: ${stopReason === 'signal' ? 'session ending (signal)' : `${stopReason} reached`}: sending ${stopSignal} to the trainer, waiting up to ${formatDuration(graceMs)} for it to save`);
    end = await child.stop({ signal: stopSignal, graceMs });
    if (end.killed) ctx.warn(`the trainer did not exit within --grace ${formatDuration(graceMs)}: killed it (SIGKILL)`);
  } else {
    end = { ...(await child.exited), killed: false };
  }
  clearInterval(poll);
  // A trainer ended by SIGTERM/SIGINT/SIGHUP that soup did not send (SLURM and some notebook hosts
  // signal every process of the job) is the session ending, not a trainer failure.
  if (stopReason === null && end.code === null && (end.signal === 'SIGTERM' || end.signal === 'SIGINT' || end.signal === 'SIGHUP')) {
    stopReason = `the trainer got ${end.signal} from outside`;
  }
  const killAt = Date.now();
  const stoppedEarly = stopReason !== null;
  const exitedItself = end.code !== null && !end.killed;

  // 5. The end.
  if (!stoppedEarly && end.code !== 0) {
    // The trainer failed: what was already complete finishes pushing, nothing found after the failure.
    await queue.drain();
    const code = end.code ?? 128 + signalNumber(end.signal);
    const why = trainerErrorLine(end.stderrTail);
    const saved = queue.pushedStep >= 0 ? `the store still points at step ${queue.pushedStep}` : 'no checkpoint was pushed';
    ctx.stderr.write(`soup: the trainer failed with ${end.code !== null ? `exit code ${end.code}` : `signal ${end.signal}`}${why ? `: ${why}` : ''}; ${saved}; no final pushed\n`);
    ctx.emit({ ok: false, outcome: 'trainer-failed', run: runId, exit_code: code, trainer_error: why, pushed_step: queue.pushedStep >= 0 ? queue.pushedStep : null });
    return code;
  }

  // The trainer has exited: a folder that exited-by-itself trainer left with its marker is complete; after a
  // SIGKILL only what was complete before the kill counts.
  offerNewest(killAt, exitedItself);
  await queue.drain();
  if (queue.failures.length > 0 && queue.failures.at(-1)!.job.step > queue.pushedStep) {
    const last = queue.failures.at(-1)!.job;
    ctx.warn(`retrying the push of step ${last.step}`);
    queue.offer(last);
    await queue.drain();
  }
  const pushedStep = queue.pushedStep;

  if (stoppedEarly) {
    const where = pushedStep >= 0 ? `step ${pushedStep} is saved in ${storeName}` : 'no complete checkpoint yet: the next session starts from the beginning';
    ctx.say(`soup: segment saved (${stopReason}): ${where}; run the same command again to continue`);
    ctx.emit({ ok: true, outcome: 'segment-saved', run: runId, step: pushedStep >= 0 ? pushedStep : null, stop_reason: stopReason, trainer_exit: end.code, trainer_killed: end.killed });
    return EXIT_CODES.segmentSaved;
  }

  // Trainer exited 0: push the final model with a terminal pointer.
  const fin = stageFinal({ outputDir, finalDir: opts.final === undefined ? null : resolve(ctx.cwd, String(opts.final)), newest: watcher.newestComplete({ asOfMs: killAt, trainerExited: true })?.checkpoint ?? null });
  try {
    const step = Math.max(pushedStep, fin.step ?? -1, 0);
    const res = await pushFinal({ store, step, dir: fin.dir, run: runId, keepRemote: (opts.keepRemote as number | undefined) ?? 3, lease, squashHistory: opts.squashHistory === true });
    ctx.say(`soup: run complete: pushed final/ (${res.fileCount} file${res.fileCount === 1 ? '' : 's'} from ${show(fin.source)}, step ${step}, verified) with a terminal pointer`);
    ctx.emit({ ok: true, outcome: 'complete', run: runId, step, path_in_repo: res.pathInRepo, launched: true });
  } finally {
    fin.cleanup();
  }
  return EXIT_CODES.ok;
}

/** Renices every thread of this process (on Linux a niceness is per thread: main, libuv pool, V8 helpers). */
function lowerOwnPriority(nice: number): void {
  let tids: number[] = [0];
  try {
    tids = readdirSync('/proc/self/task').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    // not Linux: the main thread only
  }
  for (const tid of tids) {
    try {
      setPriority(tid, nice);
    } catch {
      // not permitted, or the thread is gone: that thread keeps its priority
    }
  }
}

/** The signal's number on this platform (SIGKILL 9, SIGTERM 15, …), 0 when unknown. */
function signalNumber(sig: NodeJS.Signals | null): number {
  return sig ? (constants.signals[sig] ?? 0) : 0;
}

async function probeBatch(opts: Record<string, unknown>, ctx: CommandContext): Promise<number> {
  const command = String(opts.probe);
  if (!command.includes('{batch_size}')) throw new UsageError('--probe needs {batch_size} in the command, e.g. --probe "python train.py --max_steps 1 --per_device_train_batch_size {batch_size}"');
  const deviceSpec = (opts.device as string | undefined) ?? 'cpu';
  const [kind, idText] = deviceSpec.split(':') as ['cpu' | 'cuda', string | undefined];
  const deviceId = idText === undefined ? 0 : Number(idText);
  const identity = await deviceIdentity({ device: kind, deviceId, env: ctx.env });
  const budgetBytes = opts.budget as number | undefined;
  const start = (opts.start as number | undefined) ?? 8;
  // As `soup probe --exec`: on a GPU the trainer is judged by its GPU memory (nvidia-smi), on the CPU
  // by its sampled peak RSS against --budget; without a budget only by what it raised.
  const probe = createCommandProbe({
    command,
    env: ctx.env,
    cwd: ctx.cwd,
    timeoutMs: 600_000,
    signal: ctx.signal,
    ...(budgetBytes !== undefined ? { budgetBytes } : {}),
    ...(identity.device === 'cuda' ? { gpu: { deviceId } } : {}),
  });
  const r = await resolveBatch({
    ctx,
    probe,
    budgetBytes: budgetBytes ?? null,
    refresh: opts.refresh === true,
    saveExceptionsOnly: opts.cacheExceptionsOnly === true,
    predict: true,
    key: {
      base: (opts.base as string | undefined) ?? `exec:${command}`,
      maxLength: (opts.maxLength as number | undefined) ?? 512,
      quantization: (opts.quantization as string | undefined) ?? 'none',
      loraR: (opts.loraR as number | undefined) ?? 0,
      gpuName: identity.gpuName,
      gpuMemoryGb: identity.gpuMemoryGb,
    },
    start,
    ...(opts.ceiling !== undefined ? { ceiling: opts.ceiling as number } : {}),
    noCache: opts.cache === false,
  });
  ctx.say(`batch size ${r.batchSize} (${r.source === 'cache' ? `from the cache, key ${r.cacheKey}` : `probed on ${identity.gpuName}, ${r.trials.length} trial${r.trials.length === 1 ? '' : 's'}`})`);
  return r.batchSize;
}

export type { RunRecord, CheckpointStore };
