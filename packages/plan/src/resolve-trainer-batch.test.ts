import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { PlanUsageError } from './errors';
import { resolveTrainerBatch } from './trainer-batch';
import { cpuTrainerOptions } from './_test-trainer';

describe("resolveTrainerBatch: soup run's --probe command", () => {
  it('is refused without {batch_size} ({micro_batch_size} with a global batch), before any trial runs', async () => {
    const dir = useTempDir();
    const o = {
      ...cpuTrainerOptions(dir),
      refresh: false,
      noCache: false,
      cacheExceptionsOnly: false,
      predict: true,
    };
    const refused = (command: string, micro?: { globalBatchSize: number; worldSize: number; headroom: number }) =>
      resolveTrainerBatch({ ...o, command, micro }).then(
        () => null,
        (err: unknown) => err,
      );
    const plain = await refused('python train.py --max_steps 1');
    expect(plain).toBeInstanceOf(PlanUsageError);
    expect((plain as PlanUsageError).message).toBe(
      '--probe needs {batch_size} in the command, e.g. --probe "python train.py --max_steps 1 ' +
        '--per_device_train_batch_size {batch_size}"',
    );
    // {micro_batch_size} is the candidate only under a global batch.
    expect(await refused('python train.py --bs {micro_batch_size}')).toBeInstanceOf(PlanUsageError);
    const micro = { globalBatchSize: 8, worldSize: 1, headroom: 0 };
    expect(await refused('python train.py --bs 4', micro)).toBeInstanceOf(PlanUsageError);
    // Accepted: its trials run (and fail, the trainer exits 1), which is not a refusal.
    const trial = await refused(`${process.execPath} -e process.exit(1) {micro_batch_size}`, micro);
    expect(trial).toBeInstanceOf(Error);
    expect(trial).not.toBeInstanceOf(PlanUsageError);
  });
});
