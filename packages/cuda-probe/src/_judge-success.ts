// The peak-vs-budget verdict of a worker probe trial whose step completed.
import { formatBytes } from './_format';
import type { WorkerSuccess } from './_protocol';
import type { ProbeTrialOutcome } from './types';

/** Exported for its unit test: the peak-vs-budget decision on a child's report. */
export function judgeSuccess(
  cfg: { device: 'cpu' | 'cuda'; gpuMemLimitBytes: number | null },
  batchSize: number,
  r: WorkerSuccess,
  wallMs: number,
  limit: Pick<ProbeTrialOutcome, 'limitMethod' | 'addressSpaceBytes' | 'calibrationMs' | 'memoryCgroup'>,
): ProbeTrialOutcome {
  const timing = {
    ms: wallMs,
    stepMs: r.stepMs,
    overheadMs: Math.max(0, wallMs - r.stepMs),
    ...limit,
    ...(r.notes.length ? { notes: r.notes } : {}),
  };
  if (cfg.device === 'cuda') {
    const c = r.cuda;
    if (!c || c.budgetBytes === null || c.peakBytes === null) {
      return {
        fits: true,
        batchSize,
        reason: 'fit',
        measurement: 'exceptions-only',
        detail:
          `step completed; the driver cannot answer (${c?.note ?? 'no reading'}), so only an out-of-memory ` +
          `failure would refuse this batch`,
        ...(c?.budgetBytes != null ? { budgetBytes: c.budgetBytes } : {}),
        ...(c?.peakBytes != null ? { peakBytes: c.peakBytes } : {}),
        ...timing,
      };
    }
    const measurement = c.measurement ?? 'cuda-per-process';
    const fits = c.peakBytes <= c.budgetBytes && c.deviceFull !== true;
    const capped = cfg.gpuMemLimitBytes !== null ? ', capped by gpuMemLimitBytes' : '';
    return {
      fits,
      batchSize,
      reason: fits ? 'fit' : 'over-budget',
      measurement,
      peakBytes: c.peakBytes,
      budgetBytes: c.budgetBytes,
      detail:
        measurement === 'cuda-device-delta'
          ? `device used-memory delta across the trial ${formatBytes(c.peakBytes)} ` +
            `${c.peakBytes <= c.budgetBytes ? '<=' : '>'} budget ${formatBytes(c.budgetBytes)} (free before the ` +
            `trial${capped})` +
            (c.deviceFull
              ? '; the device had almost nothing free after the step ' +
                '(under WDDM the allocator spills to host memory instead of failing): does not fit'
              : '') +
            `${c.note ? ` — ${c.note}` : ''}`
          : `device memory after the step ${formatBytes(c.peakBytes)} ${fits ? '<=' : '>'} budget ` +
            `${formatBytes(c.budgetBytes)} (free + held before the step${capped})`,
      ...timing,
    };
  }
  const peakBytes = r.cpu.peakRssBytes - r.cpu.baselineRssBytes;
  const budgetBytes = r.cpu.budgetBytes;
  const fits = peakBytes <= budgetBytes;
  return {
    fits,
    batchSize,
    reason: fits ? 'fit' : 'over-budget',
    measurement: 'peak-rss',
    peakBytes,
    budgetBytes,
    detail:
      `step peak ${formatBytes(peakBytes)} ${fits ? '<=' : '>'} budget ${formatBytes(budgetBytes)} ` +
      `(VmHWM above the ${formatBytes(r.cpu.baselineRssBytes)} resident before the step` +
      `${r.cpu.peakReset ? '' : ', setup peak included: clear_refs refused'}; ` +
      `budget ${r.cpu.budgetSource === 'given' ? 'given' : `from ${r.cpu.budgetSource}`})`,
    ...timing,
  };
}
