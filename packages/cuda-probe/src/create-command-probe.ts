import { openTrialCgroup } from './_cgroup-trial';
import { runChild } from './_child-runner';
import { killEvidenceBaseline, oomKillEvidence } from './_kill-evidence';
import { formatBytes } from './_format';
import { judgeFailure } from './_interpret';
import { startGpuSampler, type GpuSampler } from './_gpu-sampler';
import { argvOf, substituteBatchSize } from './_argv';
import { oomLineIn, spillsToHost } from './_output-oom';
import { buildLaunch, checkCommandProgram } from './_launch';
import { batchSizeArg, oneOf, optionalBytes, optionalIntegerAtLeast, requireObject } from './_validate';
import type { MemoryCgroupCounters } from './_memory-cgroup';
import { ProbeChildError, ProbeOptionsError } from './errors';
import type { ChildProbeFn, ProbeTrialOutcome } from './types';
import type { CreateCommandProbeOptions } from './command-probe-options';
import { checkStepsEvidence, startStepsCount } from './steps-seen';

export type { CreateCommandProbeOptions } from './command-probe-options';

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
  const cgroupMode = oneOf('memoryCgroup', o.memoryCgroup, ['auto', 'off'] as const, 'auto');
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
  checkCommandProgram(argv[0]!, o.cwd, baseEnv);
  const steps = o.steps === undefined ? {} : (requireObject('steps', o.steps) as NonNullable<typeof o.steps>);
  const stepsError = checkStepsEvidence(steps, { pattern: 'steps.pattern', file: 'steps.file' })[0];
  if (stepsError !== undefined) throw new ProbeOptionsError(stepsError, { field: 'steps' });

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
    // On the CPU under a budget: a memory cgroup around the whole tree when one can be made.
    const opened =
      budgetBytes !== null && !gpu && cgroupMode === 'auto' ? openTrialCgroup(budgetBytes, 'soup-probe') : null;
    const cg = opened && 'dir' in opened ? opened : null;
    let counters: MemoryCgroupCounters | null = null;
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
    const count = startStepsCount(steps, o.cwd ?? process.cwd());
    try {
      run = await runChild({
        launch: cg ? cg.wrap(launch) : launch,
        env: { ...baseEnv, SOUP_PROBE_BATCH_SIZE: String(batchSize) },
        cwd: o.cwd,
        timeoutMs,
        ...(o.signal ? { signal: o.signal } : {}),
        // Peak RSS is always sampled (it is part of the evidence a kill needs); only a CPU budget stops the trial.
        peakRssPollMs: pollMs,
        ...(budgetBytes !== null && !gpu ? { killAboveRssBytes: budgetBytes } : {}),
        ...(sampler ? { onSpawn: (pid: number) => sampler.attach(pid) } : {}),
        ...(count ? { onOutput: count.onOutput } : {}),
      });
    } catch (err) {
      await sampler?.stop();
      cg?.finish();
      throw new ProbeChildError(`could not start ${file}: ${(err as Error).message}`, {
        batchSize,
        exitCode: null,
        signal: null,
        stderrTail: '',
        cause: err,
      });
    }
    if (cg) counters = cg.finish();
    const seen = sampler ? await sampler.stop() : null;
    const limit = {
      limitMethod: cg && launch.limitMethod === 'none' ? ('memory-cgroup' as const) : launch.limitMethod,
      ...(launch.addressSpaceBytes !== null ? { addressSpaceBytes: launch.addressSpaceBytes } : {}),
      ...(cg && counters
        ? { memoryCgroup: { limitBytes: cg.limitBytes, ...counters, oomKilled: (counters.oomKills ?? 0) > 0 } }
        : {}),
    };
    const n = run.sampledProcesses ?? 0;
    // How the CPU peak was measured, named in every verdict.
    const rssPeak = run.sampledPeakRssBytes;
    const cgPeak = counters?.peakBytes ?? null;
    // In a cgroup the peak is the larger of its usage and the tree's RSS (shared pages charged elsewhere count in
    // RSS only): the safe side, never below what the tree's RSS alone says.
    const byCgroup = cgPeak !== null && (rssPeak === null || cgPeak >= rssPeak);
    const tree = `tree RSS, ${n} process${n === 1 ? '' : 'es'}`;
    const peakWord = byCgroup ? 'peak' : 'peak RSS';
    const how = byCgroup ? 'cgroup' : cg ? `${tree}, above its cgroup's ${formatBytes(cgPeak ?? 0)}` : tree;
    const exitedOk = run.exitCode === 0 && !run.timedOut && !run.aborted;
    // Its wall time (spawn to exit), when it printed the span of its output (first line to last) and its size, and
    // the steps the trainer counted (where the caller declared how it shows them).
    const timing = {
      ...(count ? { stepsSeen: count.finish() } : {}),
      ms: run.wallMs,
      ...(typeof run.outputSpanMs === 'number' ? { outputSpanMs: run.outputSpanMs } : {}),
      ...(typeof run.outputChars === 'number' ? { outputChars: run.outputChars } : {}),
    };
    // A trainer that catches an out-of-memory error and carries on (skips the batch) exits 0: what
    // it did at this size is unknown, so it is never a fit; the search takes it as not fitting, for safety.
    const oomText = exitedOk ? oomLineIn(run) : null;
    if (oomText !== null) {
      return {
        fits: false,
        unknown: true,
        batchSize,
        reason: 'oom',
        measurement: seen ? 'exceptions-only' : budgetBytes !== null ? 'sampled-rss' : 'exceptions-only',
        censored: true,
        detail:
          `the command exited 0 but printed an out-of-memory error (${oomText}): unknown at this size (it may ` +
          `have skipped work); taken as not fitting, for safety, and never cached as a fit`,
        ...timing,
        ...limit,
      };
    }
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
        ...limit,
      };
    }
    const measurement = seen
      ? seen.measurement
      : budgetBytes !== null
        ? ('sampled-rss' as const)
        : ('exceptions-only' as const);
    const peak = seen ? seen.peakBytes : byCgroup ? cgPeak : rssPeak;
    const shownPeak = seen || budgetBytes !== null ? peak : null;
    // Over the budget: stopped while it ran (its tree's RSS passed the budget, or its memory cgroup's
    // OOM killer fired at the budget), or it exited 0 above it.
    const cgroupKilled = (counters?.oomKills ?? 0) > 0;
    const stoppedOver = (run.killedAboveRss || cgroupKilled) && !run.aborted && !run.timedOut;
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
        detail: cgroupKilled
          ? `stopped while running: its memory cgroup's OOM killer fired at the budget ${formatBytes(budgetBytes)}` +
            ` (peak ${formatBytes(peak)} (${how}))`
          : stoppedOver
            ? `stopped while running: its ${peakWord} ${formatBytes(peak)} (${how}) passed the budget ` +
              formatBytes(budgetBytes)
            : `command exited 0 but its ${peakWord} ${formatBytes(peak)} (${how}) > budget ${formatBytes(budgetBytes)}`,
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
              : `command exited 0 with ${peakWord} ${formatBytes(peak)} (${how}) <= budget ${formatBytes(budgetBytes)}`,
        ...timing,
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
