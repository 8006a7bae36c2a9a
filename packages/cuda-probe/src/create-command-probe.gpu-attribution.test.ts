// Real children and a fake nvidia-smi with 2 GPUs: a GPU verdict needs the trainer's memory on the
// GPU measured, summed per process over the trial's whole process tree.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pickBatchSize } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { writeFakeNvidiaSmi } from './_fake-nvidia-smi';
import { createCommandProbe } from './create-command-probe';

const MiB = 2 ** 20;
const A100 = 'GPU-aaaa0000-1111-2222-3333-444455556666';
const RTX = 'GPU-bbbb0000-1111-2222-3333-444455556666';
const idle = {
  gpus: [`0, ${A100}, NVIDIA A100-SXM4-80GB, 81920, 8000`, `1, ${RTX}, NVIDIA GeForce RTX 4090, 24564, 4500`],
  apps: [] as string[],
};

/**
 * A trainer that takes batch_size × 100 MiB on physical GPU `onGpu`, split between itself and a
 * helper it starts in its own process group (a data-loader daemon, a launcher's worker).
 */
function trainer(dir: string, statePath: string): string {
  const path = join(dir, 'trainer.cjs');
  writeFileSync(
    path,
    `const fs = require('fs'); const { spawn } = require('child_process');
const [onGpu, b] = [Number(process.argv[2]), Number(process.argv[3])];
const idle = ${JSON.stringify(idle)};
const uuid = onGpu === 0 ? '${A100}' : '${RTX}';
const free0 = onGpu === 0 ? 8000 : 4500;
const put = (s) => { fs.writeFileSync(${JSON.stringify(statePath)} + '.tmp', JSON.stringify(s)); fs.renameSync(${JSON.stringify(statePath)} + '.tmp', ${JSON.stringify(statePath)}); };
const helper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 5000)'], { detached: true, stdio: 'ignore' });
const used = b * 100;
const gpus = idle.gpus.map((row, i) => i === onGpu ? row.replace(/, \\d+$/, ', ' + Math.max(0, free0 - used)) : row);
put({ gpus, apps: [process.pid + ', ' + uuid + ', ' + used / 2, helper.pid + ', ' + uuid + ', ' + used / 2] });
setTimeout(() => { put(idle); helper.kill('SIGKILL'); process.exit(0); }, 2500);
`,
  );
  return path;
}

describe('[slow] createCommandProbe on a 2-GPU machine (fake nvidia-smi): memory attributed per process over the ' +
  'whole tree', {
  timeout: 180_000,
}, () => {
  it(
    'the trainer on its device 0 while cuda:1 is measured: "not measured (the trainer ran on GPU 0 ' +
      '…)", never cached',
    async () => {
      const dir = useTempDir();
      const smi = writeFakeNvidiaSmi(dir, idle);
      const script = trainer(dir, join(dir, 'fake-smi-state.json'));
      const probe = createCommandProbe({
        command: [process.execPath, script, '0', '{batch_size}'],
        env: { ...process.env, CUDA_VISIBLE_DEVICES: '0,1' },
        gpu: { deviceId: 1, nvidiaSmiPath: smi.path, pollMs: 40 },
        timeoutMs: 30_000,
      });
      const o = await probe(30);
      expect(o.measurement, o.detail).toBe('not-measured');
      expect(o.detail).toMatch(/the trainer ran on GPU 0 \(NVIDIA A100-SXM4-80GB, GPU-aaaa/);
      expect(o.detail).toMatch(/not on the measured GPU 1 \(NVIDIA GeForce RTX 4090/);
      const location = { env: { SOUP_BATCH_CACHE_PATH: join(dir, 'cache.json') }, homeDir: dir, cwd: dir, tmpDir: dir };
      const r = await pickBatchSize({
        ...location,
        base: 'exec:t',
        maxLength: 512,
        quantization: 'none',
        loraR: 0,
        gpuName: 'NVIDIA GeForce RTX 4090',
        gpuMemoryGb: 24,
        staticEstimate: 8,
        ceiling: 16,
        strategy: 'probe',
        probe,
        saveExceptionsOnly: true,
      });
      expect(r).toMatchObject({ saved: false, notSavedReason: expect.stringMatching(/not measured on this GPU/) });
    },
  );

  it(
    "the trainer on the measured GPU: its own and its helper's memory (another process group) are " + 'summed',
    async () => {
      const dir = useTempDir();
      const smi = writeFakeNvidiaSmi(dir, idle);
      const script = trainer(dir, join(dir, 'fake-smi-state.json'));
      const probe = createCommandProbe({
        command: [process.execPath, script, '1', '{batch_size}'],
        env: { ...process.env, CUDA_VISIBLE_DEVICES: '0,1' },
        gpu: { deviceId: 1, nvidiaSmiPath: smi.path, pollMs: 40 },
        timeoutMs: 30_000,
      });
      const fits = await probe(40);
      expect(fits, fits.detail).toMatchObject({
        fits: true,
        measurement: 'cuda-per-process',
        peakBytes: 4000 * MiB,
        budgetBytes: 4500 * MiB,
      });
      const over = await probe(46);
      expect(over, over.detail).toMatchObject({
        fits: false,
        reason: 'over-budget',
        measurement: 'cuda-per-process',
        peakBytes: 4600 * MiB,
      });
    },
  );
});
