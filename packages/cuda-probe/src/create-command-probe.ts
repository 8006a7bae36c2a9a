import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { runChild } from './_child-runner';
import { killEvidenceBaseline, oomKillEvidence } from './_kill-evidence';
import { formatBytes } from './_format';
import { judgeFailure } from './_interpret';
import { startGpuSampler, type GpuSampler } from './_gpu-sampler';
import { argvOf, substituteBatchSize } from './_argv';
import { oomLineIn, spillsToHost } from './_output-oom';
import { buildLaunch, findExecutable } from './_launch';
import { batchSizeArg, optionalBytes, optionalIntegerAtLeast, requireObject } from './_validate';
import { ProbeChildError, ProbeOptionsError } from './errors';
import type { ChildProbeFn, ProbeTrialOutcome } from './types';

/** Options of {@link createCommandProbe}. */
export interface CreateCommandProbeOptions {
  /**
   * The trainer's command for ONE step. A string is split into argv like a POSIX shell splits
   * words (quotes and backslashes), but nothing else: no variables, globs, pipes or redirections,
   * and it never runs through a shell. An array is used as argv as it is. Every `{batch_size}` in
   * an argument is replaced by the candidate.
   */
  command: string | readonly string[];
  /**
   * Environment of the command; `SOUP_PROBE_BATCH_SIZE` is added with the candidate.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the command. @default process.cwd() */
  cwd?: string;
  /**
   * Kill the command (SIGKILL, whole process group) after this long; the trial throws
   * `ProbeTimeoutError`.
   * @default 600000
   */
  timeoutMs?: number;
  /**
   * Peak resident memory the command may reach, in bytes (its whole VmHWM, sampled from
   * /proc every `peakRssPollMs` while it runs: growth in the last interval before it exits can
   * be missed). A command that exits 0 above it does not fit; one whose sample passes it while it
   * runs is stopped at once (SIGKILL of its process group) and does not fit, so a trial far over
   * the budget never takes more host memory than the budget plus one sampling interval's growth.
   * @default no gate: exit 0 fits
   */
  budgetBytes?: number;
  /**
   * RLIMIT_AS of the command, applied with prlimit (util-linux) — never through a shell; an
   * allocation beyond it fails inside the command, which then reports its own out-of-memory
   * error. Leave it unset for CUDA trainers: the driver reserves far more address space.
   * @default no limit
   */
  addressSpaceBytes?: number;
  /**
   * How often VmHWM is sampled when `budgetBytes` is set.
   * @default 20
   */
  peakRssPollMs?: number;
  /**
   * How the caller names the timeout in a timeout error's advice (soup passes `--timeout`).
   * @default 'timeoutMs'
   */
  timeoutName?: string;
  /** Aborts the running trial (its process group is killed) and every later one. */
  signal?: AbortSignal;
  /**
   * Judge the command by its GPU memory, sampled with nvidia-smi every `pollMs` while it runs:
   * the memory of its processes (its whole process group) where the driver lists them, else the
   * device's used-memory delta from before the command started (WSL2, WDDM `[N/A]`, another PID
   * namespace: the probe owns the GPU while it runs). The budget is the GPU's free memory before
   * the command, capped by `budgetBytes`; peak RSS is then not gated. `deviceId` is CUDA's index
   * under the command's `CUDA_VISIBLE_DEVICES`. A peak reached and released between two samples
   * is missed (PyTorch and ORT keep what they reserved until exit, so the high-water mark stays).
   * @default no GPU measurement
   */
  gpu?: { deviceId?: number; nvidiaSmiPath?: string; pollMs?: number };
}

/**
 * A probe for any trainer: runs `command` once per candidate, without a shell, `{batch_size}`
 * replaced. Exit 0 fits (and, with `budgetBytes`, its sampled peak RSS is within the budget).
 * Otherwise the output is read against the out-of-memory catalogue: a match, or death by
 * SIGKILL (the OOM killer), resolves to `fits: false`; any other failure throws
 * `ProbeChildError` with the tail of stderr, a hung command `ProbeTimeoutError`.
 *
 * @throws {ProbeOptionsError} a bad option (its `field` names it), e.g. an unclosed quote
 */
export function createCommandProbe(options: CreateCommandProbeOptions): ChildProbeFn {
  // Over 150 lines: the validated options are closed over by `once`, one trial's launch-measure-judge sequence.
  const o = requireObject('options', options) as unknown as CreateCommandProbeOptions;
  const argv = argvOf(o.command);
  const timeoutMs = optionalIntegerAtLeast('timeoutMs', o.timeoutMs, 1, 600_000);
  const budgetBytes = optionalBytes('budgetBytes', o.budgetBytes);
  const addressSpaceBytes = optionalBytes('addressSpaceBytes', o.addressSpaceBytes);
  const pollMs = optionalIntegerAtLeast('peakRssPollMs', o.peakRssPollMs, 1, 20);
  const baseEnv = o.env ?? process.env;
  const gpu =
    o.gpu === undefined ? null : (requireObject('gpu', o.gpu) as NonNullable<CreateCommandProbeOptions['gpu']>);
  const gpuDeviceId = gpu ? optionalIntegerAtLeast('gpu.deviceId', gpu.deviceId, 0, 0) : 0;
  const gpuPollMs = gpu ? optionalIntegerAtLeast('gpu.pollMs', gpu.pollMs, 1, 500) : 0;
  // Fail at creation, not at the first trial, when the limit cannot be applied.
  if (addressSpaceBytes !== null)
    buildLaunch({
      file: 'true',
      args: [],
      addressSpaceBytes,
      allowShell: false,
      field: 'addressSpaceBytes',
      env: baseEnv,
    });
  const program = argv[0]!;
  if (!program.includes('{batch_size}') && !program.includes('/') && findExecutable(program, baseEnv) === null) {
    throw new ProbeOptionsError(`command: ${program} is not on PATH`, { field: 'command' });
  }
  if (!program.includes('{batch_size}') && program.includes('/')) {
    // A path: it must exist and be executable now, not at the first trial.
    const full = isAbsolute(program) ? program : resolvePath(o.cwd ?? process.cwd(), program);
    let isFile = false;
    try {
      isFile = statSync(full).isFile();
    } catch {
      throw new ProbeOptionsError(
        `command: ${program} does not exist (looked for ${full}); check the path, or run it through its ` +
          `interpreter (python train.py …)`,
        { field: 'command' },
      );
    }
    if (!isFile) throw new ProbeOptionsError(`command: ${program} is not a file`, { field: 'command' });
    try {
      accessSync(full, fsConstants.X_OK);
    } catch {
      throw new ProbeOptionsError(
        `command: ${program} is not executable; chmod +x ${program}, or run it through its interpreter (e.g. bash ` +
          `${program} or python ${program})`,
        { field: 'command' },
      );
    }
  }

  const timeoutName = o.timeoutName ?? 'timeoutMs';
  const what = (file: string): string => `command ${JSON.stringify(file)}`;

  // One run of the command at this size: the verdict, or `not-memory` when it was killed without
  // evidence that memory was the cause.
  const once = async (batchSize: number): Promise<ProbeTrialOutcome | { notMemory: string; signalNumber: number }> => {
    // Over 150 lines: launch, sample, stop at the budget and judge the evidence of one run read as one story, in order.
    const [file, ...args] = substituteBatchSize(argv, batchSize) as [string, ...string[]];
    const launch = buildLaunch({
      file,
      args,
      addressSpaceBytes,
      allowShell: false,
      field: 'addressSpaceBytes',
      env: baseEnv,
    });
    let run: Awaited<ReturnType<typeof runChild>>;
    const sampler: GpuSampler | null = gpu
      ? await startGpuSampler({
          nvidiaSmiPath: gpu.nvidiaSmiPath ?? 'nvidia-smi',
          deviceId: gpuDeviceId,
          env: baseEnv,
          pollMs: gpuPollMs,
          limitBytes: budgetBytes,
        })
      : null;
    const evidenceBase = killEvidenceBaseline();
    try {
      run = await runChild({
        launch,
        env: { ...baseEnv, SOUP_PROBE_BATCH_SIZE: String(batchSize) },
        cwd: o.cwd,
        timeoutMs,
        ...(o.signal ? { signal: o.signal } : {}),
        // Peak RSS is always sampled (it is part of the evidence a kill needs); only a CPU budget stops the trial.
        peakRssPollMs: pollMs,
        ...(budgetBytes !== null && !gpu ? { killAboveRssBytes: budgetBytes } : {}),
        ...(sampler ? { onSpawn: (pid: number) => sampler.attach(pid) } : {}),
      });
    } catch (err) {
      await sampler?.stop();
      throw new ProbeChildError(`could not start ${file}: ${(err as Error).message}`, {
        batchSize,
        exitCode: null,
        signal: null,
        stderrTail: '',
        cause: err,
      });
    }
    const seen = sampler ? await sampler.stop() : null;
    const limit = {
      limitMethod: launch.limitMethod,
      ...(launch.addressSpaceBytes !== null ? { addressSpaceBytes: launch.addressSpaceBytes } : {}),
    };
    const exitedOk = run.exitCode === 0 && !run.timedOut && !run.aborted;
    // Its wall time (spawn to exit) and, when it printed, the span of its output (first line to last).
    const timing = {
      ms: run.wallMs,
      ...(typeof run.outputSpanMs === 'number' ? { outputSpanMs: run.outputSpanMs } : {}),
    };
    // A trainer that catches an out-of-memory error and carries on (skips the batch) exits 0:
    // the line it printed is a warning on the answer, which is then never cached as exact.
    const oomText = exitedOk ? oomLineIn(run) : null;
    const warning = oomText
      ? {
          warning:
            `the command exited 0 but printed an out-of-memory error (${oomText}): it may have skipped ` +
            `work; the answer is cached only as capped`,
        }
      : {};
    if (seen && seen.measurement === 'not-measured' && !run.timedOut && !run.aborted) {
      // The trainer's processes used another GPU than the one measured: nothing here says anything about this GPU.
      if (exitedOk)
        return {
          fits: true,
          batchSize,
          reason: 'fit',
          measurement: 'not-measured',
          detail: `command exited 0; not measured (${seen.note})`,
          ...timing,
          ...warning,
          ...limit,
        };
    }
    if (seen && seen.measurement !== 'not-measured' && exitedOk) {
      const { measurement: m, budgetBytes: gb, peakBytes: gp } = seen;
      if (m === 'exceptions-only' || gb === null || gp === null) {
        return {
          fits: true,
          batchSize,
          reason: 'fit',
          measurement: 'exceptions-only',
          detail:
            `command exited 0; GPU memory not measured (${seen.note ?? 'no reading'}), so only a failure ` +
            `would refuse this batch`,
          ...timing,
          ...warning,
          ...limit,
        };
      }
      const fits = gp <= gb && seen.deviceFull !== true;
      const whatGpu = m === 'cuda-per-process' ? "GPU memory of the command's processes" : 'device used-memory delta';
      return {
        fits,
        batchSize,
        reason: fits ? 'fit' : 'over-budget',
        measurement: m,
        peakBytes: gp,
        budgetBytes: gb,
        // A device left full: the peak is only a lower bound of what the step wanted.
        ...(seen.deviceFull ? { censored: true } : {}),
        detail:
          `command exited 0; ${whatGpu} peaked at ${formatBytes(gp)} ${gp <= gb ? '<=' : '>'} budget ` +
          `${formatBytes(gb)} (free before the command${budgetBytes !== null ? ', capped by budgetBytes' : ''}, ` +
          `${seen.samples} sample${seen.samples === 1 ? '' : 's'})` +
          (seen.deviceFull
            ? `; the device had almost nothing free` +
              (spillsToHost()
                ? ' (under WDDM the allocator spills to host memory instead of failing)'
                : ' (the trainer took all free memory)') +
              `: does not fit`
            : '') +
          (seen.note ? ` — ${seen.note}` : ''),
        ...timing,
        ...(fits ? warning : {}),
        ...limit,
      };
    }
    const measurement = seen
      ? seen.measurement
      : budgetBytes !== null
        ? ('sampled-rss' as const)
        : ('exceptions-only' as const);
    const peak = seen ? seen.peakBytes : run.sampledPeakRssBytes;
    const shownPeak = seen || budgetBytes !== null ? peak : null;
    // Over the budget: stopped by the probe itself while it ran (its RSS passed the budget), or it
    // exited 0 above it.
    const stoppedOver = run.killedAboveRss && !run.aborted;
    if (
      (stoppedOver || exitedOk) &&
      budgetBytes !== null &&
      !seen &&
      peak !== null &&
      (stoppedOver || peak > budgetBytes)
    ) {
      return {
        fits: false,
        batchSize,
        reason: 'over-budget',
        measurement,
        peakBytes: peak,
        budgetBytes,
        // Stopped at the budget: its peak says only "more than the budget".
        ...(stoppedOver ? { censored: true } : {}),
        detail: stoppedOver
          ? `stopped while running: its peak RSS ${formatBytes(peak)} passed the budget ${formatBytes(budgetBytes)}`
          : `command exited 0 but its peak RSS ${formatBytes(peak)} > budget ${formatBytes(budgetBytes)}`,
        ...timing,
        ...limit,
      };
    }
    if (exitedOk) {
      return {
        fits: true,
        batchSize,
        reason: 'fit',
        measurement,
        ...(shownPeak !== null ? { peakBytes: shownPeak } : {}),
        ...(budgetBytes !== null ? { budgetBytes } : {}),
        detail:
          budgetBytes === null
            ? 'command exited 0'
            : peak === null
              ? 'command exited 0 (too fast to sample its RSS)'
              : `command exited 0 with peak RSS ${formatBytes(peak)} <= budget ${formatBytes(budgetBytes)}`,
        ...timing,
        ...warning,
        ...limit,
      };
    }
    const killed = run.signal === 'SIGKILL' || run.exitCode === 137;
    const gpuBudget = seen && seen.measurement !== 'not-measured' ? seen.budgetBytes : null;
    const killEvidence = killed
      ? (oomKillEvidence(evidenceBase, {
          peakBytes: seen ? (seen.peakBytes ?? null) : run.sampledPeakRssBytes,
          budgetBytes: seen ? gpuBudget : budgetBytes,
          ...(seen ? { freeBytes: seen.freeBeforeBytes ?? null } : {}),
          ...(run.treePids ? { pids: run.treePids } : {}),
        }) ?? (seen?.deviceFull ? 'the GPU had almost nothing free' : null))
      : null;
    const verdict = judgeFailure(run, {
      batchSize,
      timeoutMs,
      timeoutName,
      what: what(file),
      killEvidence,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    if (verdict.reason === 'not-memory') return { notMemory: verdict.detail, signalNumber: verdict.signalNumber };
    return {
      fits: false,
      batchSize,
      reason: verdict.reason,
      measurement: measurement === 'not-measured' ? 'exceptions-only' : measurement,
      ...(shownPeak !== null ? { peakBytes: shownPeak } : {}),
      ...(budgetBytes !== null ? { budgetBytes } : {}),
      // A run that died of memory did not reach its peak: what was measured is a lower bound.
      censored: true,
      detail: verdict.detail,
      ...timing,
      ...(verdict.reason === 'oom' ? { oom: verdict.oom } : {}),
      ...limit,
    };
  };

  return async (batchSizeInput: number): Promise<ProbeTrialOutcome> => {
    const batchSize = batchSizeArg(batchSizeInput);
    const first = await once(batchSize);
    // A failing command never reports what it would have needed (stopped at the budget, killed,
    // out of memory): the search is told so up front.
    if (!('notMemory' in first)) return { ...first, censorsFailures: true };
    // Killed, with no sign of memory: once more, then stop. A flaky trainer never shrinks the answer.
    const second = await once(batchSize);
    if (!('notMemory' in second))
      return {
        ...second,
        censorsFailures: true,
        notes: [
          ...(second.notes ?? []),
          `a first run was ${first.notMemory.replace(/^command "[^"]*" for batch_size=\d+ was /, '')}; retried`,
        ],
      };
    const [file] = substituteBatchSize(argv, batchSize) as [string, ...string[]];
    throw new ProbeChildError(
      `${what(file)} for batch_size=${batchSize} was killed by signal ${second.signalNumber} (not memory), twice: ` +
        `no memory-cgroup oom_kill, no rise of /proc/vmstat oom_kill, and a peak under 90 % of the budget and of ` +
        `the free memory. Something else kills the trainer; soup will not read that as "does not fit".`,
      {
        batchSize,
        exitCode: null,
        signal: 'SIGKILL',
        stderrTail: '',
      },
    );
  };
}
