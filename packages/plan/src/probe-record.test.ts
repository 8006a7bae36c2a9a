import { describe, expect, it } from 'vitest';
import { probeRecord } from './probe-record';
import { resolutionOf } from './_test-resolution';
import type { BatchResolution } from './resolve-batch';

const resolution = resolutionOf;
const device = { gpuName: 'cpu', gpuMemoryGb: 23 };

describe('probeRecord', () => {
  it('the keys every probe has, in order; those that do not apply left out', () => {
    const record = probeRecord(resolution(), { device });
    expect(record).toEqual({
      batch_size: 8,
      source: 'probe',
      cache_key: 'k'.repeat(32),
      cache_path: '/tmp/batch_cache.json',
      device: { name: 'cpu', memory_gb: 23 },
      provenance: null,
      saved: true,
      trials: [],
    });
    expect(Object.keys(record)).toEqual([
      'batch_size',
      'source',
      'cache_key',
      'cache_path',
      'device',
      'provenance',
      'saved',
      'trials',
    ]);
  });

  it('a micro-batch, a tier, a capped cache answer, a reason not saved, a flat peak and the step growth', () => {
    const micro = {
      fields: (m: number) => ({
        micro_batch_size: m,
        grad_accum: 32 / m,
        global_batch_size: 32,
        world_size: 1,
        micro_batch: `${m} × ${32 / m} = 32`,
      }),
    };
    const record = probeRecord(
      resolution({
        skippedCache: 'older provenance',
        cappedFrom: 30,
        saved: false,
        notSavedReason: 'no peak measured',
        flatPeak: { warning: 'flat' } as BatchResolution['flatPeak'],
      }),
      {
        device,
        micro,
        gradCkpt: 'selective',
        offload: null,
        growth: { steps: 4, peakBytes: 200, oneStepPeakBytes: 150, growthBytes: 50, unknown: null },
      },
    );
    expect(record).toMatchObject({
      batch_size: 8,
      micro_batch_size: 8,
      grad_accum: 4,
      global_batch_size: 32,
      grad_ckpt: 'selective',
      offload: null,
      skipped_cache: 'older provenance',
      capped_from: 30,
      saved: false,
      not_saved_reason: 'no peak measured',
      flat_peak: 'flat',
      step_growth: { steps: 4, peak_bytes: 200, one_step_peak_bytes: 150, growth_bytes: 50 },
    });
    expect(record.step_growth).not.toHaveProperty('unknown');
    const unknown = probeRecord(resolution(), {
      device,
      growth: { steps: 4, peakBytes: null, oneStepPeakBytes: null, growthBytes: null, unknown: 'no peak' },
    });
    expect(unknown.step_growth).toEqual({
      steps: 4,
      peak_bytes: null,
      one_step_peak_bytes: null,
      growth_bytes: null,
      unknown: 'no peak',
    });
  });
});
