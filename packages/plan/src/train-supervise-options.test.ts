import { validateConfig } from '@soup/config';
import { describe, expect, it } from 'vitest';
import { trainPathsOf, trainSuperviseOptions } from './train-supervise-options';
import { tinyConfigText } from './_test-config';

const text = tinyConfigText({ rest: 'hub:\n  keep_local: 0\n' });

describe("supervise()'s options for soup's own trainer", () => {
  const { config } = validateConfig({ text, file: '/proj/soup.yaml' });
  if (!config) throw new Error('expected a valid config');
  const base = {
    config,
    childPath: '/cli/dist/train-child.js',
    runId: 'soup-0123',
    timeLimitMs: null,
    leaseTtlMs: 600_000,
    squashHistory: false,
    resume: 'auto' as const,
    stopAfterSteps: 0,
  };

  it("launches the child with the job and the supervisor's placeholders, in the config's output folder", () => {
    const paths = trainPathsOf(config.output);
    expect(paths).toEqual({
      ckptRoot: `${config.output}/checkpoints`,
      finalDir: `${config.output}/final`,
      jobPath: `${config.output}/.soup-train-job.json`,
    });
    const o = trainSuperviseOptions({ ...base, keepRemote: 3 });
    expect(o.argv).toEqual([
      process.execPath,
      '/cli/dist/train-child.js',
      paths.jobPath,
      '--output-dir',
      '{output_dir}',
      '--micro-batch-size',
      '{micro_batch_size}',
      '--resume-from',
      '{resume_from}',
    ]);
    expect(o).toMatchObject({
      outputDir: paths.ckptRoot,
      finalDir: paths.finalDir,
      horizon: 12,
      completeFile: 'trainer_state.json',
      settleMs: 0,
      pushEach: true,
      stopSignal: 'SIGTERM',
      keepRemote: 3,
      stopBeforeHorizon: null,
    });
  });

  it('--stop-after-steps is a stop by design: the supervisor names it, no early-exit warning', () => {
    const o = trainSuperviseOptions({ ...base, keepRemote: 3, stopAfterSteps: 4 });
    expect(o.stopBeforeHorizon).toBe('--stop-after-steps; validation skipped');
  });

  it('keeps at least the newest checkpoint locally (a step-down resumes from it), every remote one for null', () => {
    const o = trainSuperviseOptions({ ...base, keepRemote: null });
    expect(o.keepLocal).toBe(1);
    expect(o.keepRemote).toBe(Number.MAX_SAFE_INTEGER);
  });
});
