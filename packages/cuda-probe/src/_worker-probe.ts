// The part of createOrtProbe / createTrainStepProbe that runs dist/worker.js once per
// candidate: calibration of the child's baseline, the RLIMIT_AS sizing rule, the peak gate.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { type ChildRun, tail } from './_child-runner';
import { formatBytes } from './_format';
import { judgeFailure } from './_interpret';
import { spawnSync } from 'node:child_process';
import { buildLaunch, findExecutable, type Launch } from './_launch';
import type { OrtJob, SegmentedStepJob, WorkerJob } from './_protocol';
import { batchSizeArg } from './_validate';
import { ProbeChildError, ProbeTimeoutError } from './errors';
import { reachableMemory } from './reachable-memory';
import type { ChildProbeFn, ProbeTrialOutcome } from './types';
import { judgeSuccess } from './_judge-success';
import { probeTempDir } from './_probe-temp-dir';
import { asResult, memoryCgroupLimitBytes, send, sendCapped, startSpare, type Spare } from './_worker-child';
import type { WorkerProbeConfig } from './_worker-config';

export type { WorkerProbeConfig } from './_worker-config';
export { judgeSuccess, memoryCgroupLimitBytes };

const MiB = 2 ** 20;

/**
 * RLIMIT_AS sizing rule (measured on Linux x64, Node 20, onnxruntime-node 1.30, see README):
 * the child's VmSize at the start of the step (calibrated) + the batch's feed tensors
 * + 2 × budget + 256 MiB + 64 MiB per intra-op thread. ORT's CPU arena grows in power-of-two
 * regions, so the address space a step reserves runs up to ~1.7× the RSS it touches; glibc
 * reserves a 64 MiB heap per thread that first allocates during the step. With this limit a
 * step that stays within the budget never hits it: the exact decision is the peak gate, and
 * the limit stops a candidate far above the budget before it can swap or wake the OOM killer.
 */
export function addressSpaceLimitBytes(p: {
  baselineVmBytes: number;
  feedBytes: number;
  budgetBytes: number;
  threads: number;
}): number {
  return p.baselineVmBytes + p.feedBytes + 2 * p.budgetBytes + 256 * MiB + 64 * MiB * p.threads;
}

interface Calibration {
  baselineVmBytes: number;
  baselineRssBytes: number;
  feedBytesPerSample: number;
  ms: number;
  /** What every trial runs: the ORT or segmented job itself, or a train-step's prepared (optimised) model. */
  work: OrtJob | SegmentedStepJob;
}

export function createWorkerProbe(cfg: WorkerProbeConfig): ChildProbeFn {
  // Over 150 lines: calibration, warm spare and previous child are state the returned probe shares across trials.
  let calibration: Promise<Calibration> | undefined;
  // At most one warm spare, for the next trial (CPU ORT jobs; SOUP_PROBE_WARM=0 turns it off).
  let spare: Spare | null = null;
  // The previous trial's child when its trial ended on its result: it must be gone before the next one.
  let previousExit: Promise<void> | undefined;
  const prlimit = findExecutable('prlimit', cfg.env);
  const job = (mode: WorkerJob['mode'], batchSize: number, work: WorkerJob['work']): WorkerJob => ({
    mode,
    batchSize,
    device: cfg.device,
    budgetBytes: cfg.budgetBytes,
    cuda: cfg.cuda,
    work,
  });
  const direct = (): Launch =>
    buildLaunch({ file: cfg.nodePath, args: [...cfg.nodeArgs, cfg.workerPath], allowShell: true });

  const calibrate = async (): Promise<Calibration> => {
    const work =
      cfg.work.kind === 'train-step' ? { ...cfg.work, modelPath: join(probeTempDir(), 'train-step.onnx') } : cfg.work;
    const run = await send(cfg, direct(), job('calibrate', 1, work));
    const result = asResult(run);
    if (result?.ok && run.exitCode === 0) {
      const prepared = work.kind === 'train-step' ? result.prepared : work;
      if (!prepared)
        throw new ProbeChildError(`${cfg.what} did not report its prepared model`, {
          batchSize: 1,
          exitCode: 0,
          signal: null,
          stderrTail: tail(run.stderr),
        });
      return {
        baselineVmBytes: result.cpu.baselineVmBytes,
        baselineRssBytes: result.cpu.baselineRssBytes,
        feedBytesPerSample: result.batchedFeedBytes,
        ms: run.wallMs,
        work: prepared,
      };
    }
    if (run.aborted) throw cfg.signal?.reason ?? new Error('probe aborted');
    if (run.timedOut)
      throw new ProbeTimeoutError(
        1,
        cfg.timeoutMs,
        tail(run.stderr),
        `${cfg.what} measuring its baseline (model load, batch of 1, no step)`,
      );
    const message = result && !result.ok ? result.error.message : (run.resultError ?? 'no result');
    throw new ProbeChildError(
      `${cfg.what} could not load the model to measure its baseline (` +
        `${run.signal ? `signal ${run.signal}` : `exit code ${run.exitCode}`}): ${message.split('\n')[0]}`,
      { batchSize: 1, exitCode: run.exitCode, signal: run.signal, stderrTail: tail(run.stderr) },
    );
  };

  return async (batchSizeInput: number): Promise<ProbeTrialOutcome> => {
    // Over 150 lines: one trial in order (wait for the last child, take or start one, run, judge) on shared state.
    const callStart = performance.now();
    const batchSize = batchSizeArg(batchSizeInput);
    if (previousExit) {
      await previousExit;
      previousExit = undefined;
    }
    let launch = direct();
    let calibrationMs: number | undefined;
    let work: OrtJob | SegmentedStepJob | undefined = cfg.work.kind === 'train-step' ? undefined : cfg.work;
    const cgroupCap = cfg.device === 'cpu' && cfg.hardCap === 'memory-cgroup';
    const limited = cfg.device === 'cpu' && cfg.addressSpaceLimit !== 'off' && !cgroupCap;
    let cgroupLimitBytes: number | undefined;
    if (limited || cgroupCap || !work) {
      let fresh = false;
      if (!calibration) {
        fresh = true;
        calibration = calibrate();
        calibration.catch(() => (calibration = undefined)); // a failed calibration is retried next call
      }
      const cal = await calibration;
      if (fresh) calibrationMs = cal.ms;
      work = cal.work;
      if (cgroupCap) {
        cgroupLimitBytes = memoryCgroupLimitBytes({
          baselineRssBytes: cal.baselineRssBytes,
          feedBytes: cal.feedBytesPerSample * batchSize,
          budgetBytes: cfg.budgetBytes ?? reachableMemory().bytes,
        });
      }
      if (limited) {
        const budgetForLimit = cfg.budgetBytes ?? reachableMemory().bytes;
        launch = buildLaunch({
          file: cfg.nodePath,
          args: [...cfg.nodeArgs, cfg.workerPath],
          addressSpaceBytes: addressSpaceLimitBytes({
            baselineVmBytes: cal.baselineVmBytes,
            feedBytes: cal.feedBytesPerSample * batchSize,
            budgetBytes: budgetForLimit,
            threads: cfg.threads ?? availableParallelism(),
          }),
          allowShell: true,
          method: cfg.addressSpaceLimit === 'off' ? 'auto' : cfg.addressSpaceLimit,
          env: cfg.env,
        });
      }
    }
    const warm =
      cfg.device === 'cpu' &&
      !cgroupCap &&
      work.kind === 'ort' &&
      (cfg.env.SOUP_PROBE_WARM ?? process.env.SOUP_PROBE_WARM) !== '0' &&
      (!limited || (prlimit !== null && launch.limitMethod === 'prlimit'));
    let run: ChildRun | undefined;
    let warmUsed = false;
    if (warm) {
      const stepJob = job('step', 0, work);
      let mine = spare !== null && spare.key === JSON.stringify(stepJob) ? spare : null;
      if (spare !== null && mine === null) spare.release(null);
      spare = null;
      mine ??= startSpare(cfg, direct(), stepJob);
      let limitOk = true;
      if (limited && launch.addressSpaceBytes !== null) {
        // The spare was started without a limit: RLIMIT_AS is set on it now, before its trial.
        const n = String(launch.addressSpaceBytes);
        const r =
          mine.pid !== undefined
            ? spawnSync(prlimit!, ['--pid', String(mine.pid), `--as=${n}:${n}`], { stdio: 'ignore', timeout: 10_000 })
            : null;
        limitOk = r !== null && r.status === 0;
      }
      if (limitOk) {
        mine.release(`${batchSize}\n`);
        // The next trial's child starts now, while this one runs: its runtime import and session
        // creation overlap this step, and each trial is still a fresh process.
        spare = startSpare(cfg, direct(), stepJob);
        run = await mine.done;
        warmUsed = true;
      } else mine.release(null);
    }
    const capped =
      !run && cgroupLimitBytes !== undefined
        ? await sendCapped(cfg, launch, job('step', batchSize, work), cgroupLimitBytes)
        : null;
    run ??= capped?.run ?? (await send(cfg, launch, job('step', batchSize, work)));
    if (run.exited) previousExit = run.exited;
    const limit = {
      ...(capped ? { memoryCgroup: capped.report } : {}),
      limitMethod: capped ? ('memory-cgroup' as const) : launch.limitMethod,
      ...(launch.addressSpaceBytes !== null ? { addressSpaceBytes: launch.addressSpaceBytes } : {}),
      ...(calibrationMs !== undefined ? { calibrationMs } : {}),
    };
    const result = asResult(run);
    if (result?.ok && (run.exitCode === 0 || run.endedOnResult === true) && !run.timedOut && !run.aborted) {
      const out = judgeSuccess(
        { device: cfg.device, gpuMemLimitBytes: cfg.cuda?.gpuMemLimitBytes ?? null },
        batchSize,
        result,
        run.wallMs,
        limit,
      );
      const m = result.marks;
      if (m && run.spawnedAt !== undefined && run.closedAt !== undefined) {
        const r1 = (x: number) => Math.round(x);
        // The parent's own share: everything in this call outside the child's wall time.
        const parent = r1(Math.max(0, performance.now() - callStart - run.wallMs));
        const sessionAt = m.session ?? m.ready;
        out.phasesMs = warmUsed
          ? {
              // Warm: spawn, module load, runtime import and session creation happened before the
              // trial was handed over; `runtime` is any wait for the spare to be ready.
              parent,
              spawn: 0,
              moduleLoad: 0,
              runtime: r1(Math.max(0, m.jobRead - run.spawnedAt)),
              session: 0,
              batch: r1(m.ready - Math.max(m.jobRead, run.spawnedAt)),
              step: r1(result.stepMs),
              report: r1(m.sent - m.ready - result.stepMs),
              exit: r1(run.closedAt - m.sent),
            }
          : {
              parent,
              spawn: r1(m.processStart - run.spawnedAt),
              moduleLoad: r1(m.main - m.processStart),
              runtime: r1(m.runtime - m.main),
              session: r1(sessionAt - m.runtime),
              batch: r1(m.ready - sessionAt),
              step: r1(result.stepMs),
              report: r1(m.sent - m.ready - result.stepMs),
              exit: r1(run.closedAt - m.sent),
            };
      }
      return out;
    }
    const message =
      result && !result.ok
        ? result.error.message
        : (run.resultError ?? (run.exitCode === 0 ? 'the child exited without reporting a result' : undefined));
    const verdict = capped?.report.oomKilled
      ? ({
          reason: 'killed',
          detail:
            `${cfg.what} for batch_size=${batchSize} was killed by the kernel's OOM killer at its memory cgroup's ` +
            `limit ` +
            `${formatBytes(capped.report.limitBytes)} (baseline + feeds + budget; oom_kill ${capped.report.oomKills})`,
        } as const)
      : judgeFailure(run, {
          batchSize,
          timeoutMs: cfg.timeoutMs,
          what: cfg.what,
          ...(message !== undefined ? { message } : {}),
          ...(cfg.signal ? { signal: cfg.signal } : {}),
        });
    if (verdict.reason === 'not-memory') {
      throw new ProbeChildError(verdict.detail, {
        batchSize,
        exitCode: run.exitCode,
        signal: run.signal,
        stderrTail: tail(run.stderr),
      });
    }
    return {
      fits: false,
      batchSize,
      reason: verdict.reason,
      measurement: cfg.device === 'cuda' ? 'cuda-per-process' : 'peak-rss',
      detail: verdict.detail,
      ms: run.wallMs,
      ...(verdict.reason === 'oom' ? { oom: verdict.oom } : {}),
      ...limit,
    };
  };
}
