import { describe, expect, it } from 'vitest';
import type { WorkerSuccess } from './_protocol';
import { addressSpaceLimitBytes, judgeSuccess } from './_worker-probe';

const MiB = 2 ** 20;

function report(p: { baseline: number; peak: number; budget: number; cuda?: WorkerSuccess['cuda'] }): WorkerSuccess {
  return {
    ok: true,
    mode: 'step',
    pid: 1234,
    setupMs: 80,
    stepMs: 20,
    feedBytes: 1024,
    batchedFeedBytes: 1024,
    cpu: {
      baselineVmBytes: 1000 * MiB,
      baselineRssBytes: p.baseline,
      peakRssBytes: p.peak,
      vmPeakBytes: 1100 * MiB,
      peakReset: true,
      budgetBytes: p.budget,
      budgetSource: 'given',
    },
    cuda: p.cuda ?? null,
    notes: [],
  };
}

const cpu = { device: 'cpu' as const, gpuMemLimitBytes: null };
const limit = { limitMethod: 'prlimit' as const, addressSpaceBytes: 2 ** 31 };

describe('judgeSuccess (the #649 gate)', () => {
  it('CPU: a peak equal to the budget fits, one byte more does not', () => {
    const budget = 300 * MiB;
    const at = judgeSuccess(cpu, 8, report({ baseline: 80 * MiB, peak: 80 * MiB + budget, budget }), 150, limit);
    const over = judgeSuccess(cpu, 8, report({ baseline: 80 * MiB, peak: 80 * MiB + budget + 1, budget }), 150, limit);
    expect(at).toMatchObject({
      fits: true,
      reason: 'fit',
      peakBytes: budget,
      budgetBytes: budget,
      ms: 150,
      stepMs: 20,
      overheadMs: 130,
    });
    expect(over).toMatchObject({ fits: false, reason: 'over-budget', peakBytes: budget + 1 });
    expect(over.detail).toBe(
      'step peak 300.0 MiB > budget 300.0 MiB (VmHWM above the 80.0 MiB resident before the step; budget given)',
    );
  });

  it('CUDA: per-process memory after the step against free + held, exact', () => {
    const gpu = { device: 'cuda' as const, gpuMemLimitBytes: null };
    const at = judgeSuccess(
      gpu,
      4,
      report({ baseline: 0, peak: 0, budget: 0, cuda: { budgetBytes: 8 * 2 ** 30, peakBytes: 8 * 2 ** 30 } }),
      900,
      limit,
    );
    const over = judgeSuccess(
      gpu,
      4,
      report({ baseline: 0, peak: 0, budget: 0, cuda: { budgetBytes: 8 * 2 ** 30, peakBytes: 8 * 2 ** 30 + 1 } }),
      900,
      limit,
    );
    expect(at).toMatchObject({ fits: true, measurement: 'cuda-per-process' });
    expect(over).toMatchObject({ fits: false, reason: 'over-budget', measurement: 'cuda-per-process' });
  });

  it(
    'CUDA without per-process figures (WSL2, WDDM, PID namespace): the device delta judges, and a full ' +
      'device does not fit',
    () => {
      const gpu = { device: 'cuda' as const, gpuMemLimitBytes: null };
      const cuda = {
        budgetBytes: 20 * 2 ** 30,
        peakBytes: 12 * 2 ** 30,
        measurement: 'cuda-device-delta' as const,
        note: 'nvidia-smi does not list this process',
      };
      const fits = judgeSuccess(gpu, 4, report({ baseline: 0, peak: 0, budget: 0, cuda }), 900, limit);
      expect(fits).toMatchObject({
        fits: true,
        reason: 'fit',
        measurement: 'cuda-device-delta',
        peakBytes: 12 * 2 ** 30,
      });
      expect(fits.detail).toMatch(/^device used-memory delta across the trial 12\.00 GiB <= budget 20\.00 GiB/);
      const full = judgeSuccess(
        gpu,
        4,
        report({ baseline: 0, peak: 0, budget: 0, cuda: { ...cuda, peakBytes: 20 * 2 ** 30, deviceFull: true } }),
        900,
        limit,
      );
      expect(full).toMatchObject({ fits: false, reason: 'over-budget', measurement: 'cuda-device-delta' });
      expect(full.detail).toMatch(/spills to host memory/);
    },
  );

  it('CUDA: when the driver cannot answer (WDDM) it says so and falls back to exceptions only', () => {
    const gpu = { device: 'cuda' as const, gpuMemLimitBytes: null };
    const got = judgeSuccess(
      gpu,
      4,
      report({
        baseline: 0,
        peak: 0,
        budget: 0,
        cuda: { budgetBytes: null, peakBytes: null, note: 'the driver reports per-process memory as [N/A] (WDDM)' },
      }),
      900,
      limit,
    );
    expect(got).toMatchObject({ fits: true, reason: 'fit', measurement: 'exceptions-only' });
    expect(got.detail).toMatch(/driver cannot answer \(the driver reports per-process memory as \[N\/A\] \(WDDM\)\)/);
    expect(got.peakBytes).toBeUndefined();
  });
});

describe('addressSpaceLimitBytes (RLIMIT_AS sizing rule)', () => {
  it('baseline VmSize + feeds + 2 x budget + 256 MiB + 64 MiB per thread', () => {
    expect(
      addressSpaceLimitBytes({ baselineVmBytes: 1000 * MiB, feedBytes: 3 * MiB, budgetBytes: 100 * MiB, threads: 2 }),
    ).toBe((1000 + 3 + 200 + 256 + 128) * MiB);
  });
});
