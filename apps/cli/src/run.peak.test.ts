// The run-long peak of `soup run`: the trainer's whole process tree is sampled for the whole session.
// A trainer whose eval pass (after step 8) holds 400 MiB more than a training step: its one-step
// probe never sees it, the session summary does (peak, step, budget, headroom), and --max-memory
// warns once, naming the step, where no step-down is left (--max-oom-retries 0; with one left the
// session steps down instead: run.over-max.test).
import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
// The fake nvidia-smi the cuda-probe tests use (a real executable answering from a state file).
import { writeFakeNvidiaSmi } from '../../../packages/cuda-probe/src/_fake-nvidia-smi';
import { describe, expect, it } from 'vitest';
import {
  memoryKeysOf,
  NODE_TRAINER,
  readJson,
  runJsonOf,
  soupEnv,
  soupRun,
  TINY_SAFETENSORS_JS,
} from '../test/run-helpers';

const MiB = 2 ** 20;

interface Memory {
  peak_bytes: number;
  peak_at: string;
  peak_step: number;
  budget_bytes: number;
  budget_source: string;
  headroom_bytes: number;
  max_memory_bytes: number;
  max_memory_passed_at: string | null;
  method: string;
}

describe('[slow] soup run: the peak over the whole run', { timeout: 300_000 }, () => {
  it(
    'an eval pass above the one-step peak: reported with its step, budget and headroom; with no step-down ' +
      'left, --max-memory warns once naming step 8',
    async () => {
      const cwd = useTempDir('soup-run-peak-');
      const cmd = [process.execPath, NODE_TRAINER];
      const argv = [
        ...cmd,
        '--output_dir',
        '{output_dir}',
        '--per_device_train_batch_size',
        '{micro_batch_size}',
        '--gradient_accumulation_steps',
        '{grad_accum}',
        '--max_steps',
        '12',
        '--save_steps',
        '4',
        '--resume_from_checkpoint',
        '{resume_from}',
      ];
      const probe = [
        ...cmd,
        '--output_dir',
        'probe-out',
        '--per_device_train_batch_size',
        '{micro_batch_size}',
        '--max_steps',
        '1',
        '--save_steps',
        '0',
      ].join(' ');
      const env = soupEnv(cwd, { SOUP_EXAMPLE_EVAL_MEMORY: '8:400' });
      const r = await soupRun(
        cwd,
        [
          '--repo',
          'file://store',
          '--global-batch-size',
          '16',
          '--budget',
          '6GiB',
          '--max-memory',
          '300MiB',
          '--max-oom-retries',
          '0',
          '--settle',
          '500ms',
          '--probe',
          probe,
        ],
        argv,
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      // The probe's one step stays far below the eval pass.
      const trialPeaks = [...(r.stdout + r.stderr).matchAll(/^soup:\s+batch\s+\d+\s+fits\s+peak ([\d.]+) MiB/gm)].map(
        (m) => Number(m[1]),
      );
      expect(trialPeaks.length).toBeGreaterThan(0);
      expect(Math.max(...trialPeaks)).toBeLessThan(300);

      // soup run's result has one unit of memory too: bytes, as soup train's (plan.test).
      const memoryKeys = memoryKeysOf(runJsonOf(r.stdout));
      expect(memoryKeys.all).toContain('peak_bytes');
      expect(memoryKeys.notBytes).toEqual([]);
      const memory = runJsonOf<{ memory: Memory }>(r.stdout).memory;
      expect(memory).toMatchObject({
        peak_at: 'step 8',
        peak_step: 8,
        budget_bytes: 6 * 2 ** 30,
        budget_source: 'flag',
        max_memory_bytes: 300 * MiB,
        max_memory_passed_at: 'step 8',
        method: 'tree-rss',
      });
      expect(memory.peak_bytes).toBeGreaterThan(400 * MiB);
      expect(memory.headroom_bytes).toBe(memory.budget_bytes - memory.peak_bytes);
      expect(r.stdout).toMatch(
        /memory: session peak [\d.]+ MiB \(the trainer's whole process tree, sum of RSS, sampled\) at step 8; budget 6\.00 GiB \(--budget\), headroom [\d.]+ GiB; passed --max-memory 300 MiB at step 8/,
      );
      expect(r.stderr.match(/the trainer's peak passed --max-memory 300 MiB at step 8: /g)).toHaveLength(1);
      const session = readJson<{
        sessions: { memory: { peak_step: number; peak_bytes: number; max_memory_passed_step: number } }[];
      }>(join(cwd, 'store', 'soup_run.json')).sessions[0]!;
      expect(session.memory).toMatchObject({ peak_step: 8, max_memory_passed_step: 8, peak_bytes: memory.peak_bytes });
    },
  );

  it(
    "CUDA (fake nvidia-smi): the GPU memory of the trainer's whole tree (itself and a detached " +
      "helper) at step 3, against the GPU's memory",
    async () => {
      const cwd = useTempDir('soup-run-peak-gpu-');
      const UUID = 'GPU-aaaa0000-1111-2222-3333-444455556666';
      const gpus = [`0, ${UUID}, NVIDIA A100-SXM4-80GB, 81920, 80000`];
      const smi = writeFakeNvidiaSmi(cwd, { gpus, apps: [] });
      const state = join(cwd, 'fake-smi-state.json');
      // Each step holds 1000 MiB on the GPU; at step 3 it holds 5000 MiB and a helper it started (own process group)
      // 2000
      // MiB more.
      writeFileSync(
        join(cwd, 'gpu-trainer.cjs'),
        `const fs = require('fs'); const { spawn } = require('child_process');
const put = (apps) => { fs.writeFileSync(${JSON.stringify(state)} + '.tmp', JSON.stringify({ gpus: ${JSON.stringify(gpus)}, apps })); fs.renameSync(${JSON.stringify(state)} + '.tmp', ${JSON.stringify(state)}); };
const out = process.argv[2];
(async () => {
  for (let step = 1; step <= 5; step++) {
    console.log('step ' + step + ' loss 1.0');
    const apps = [process.pid + ', ${UUID}, ' + (step === 3 ? 5000 : 1000)];
    let helper = null;
    if (step === 3) {
      helper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 5000)'], { detached: true, stdio: 'ignore' });
      apps.push(helper.pid + ', ${UUID}, 2000');
    }
    put(apps);
    await new Promise((r) => setTimeout(r, 1200));
    if (helper) helper.kill('SIGKILL');
  }
  put([]);
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(out + '/model.safetensors', ${TINY_SAFETENSORS_JS});
})();
`,
      );
      const env = soupEnv(cwd, { PATH: `${cwd}:${process.env.PATH}` });
      expect(smi.path).toBe(join(cwd, 'nvidia-smi'));
      const r = await soupRun(
        cwd,
        ['--repo', 'file://store', '--device', 'cuda', '--max-memory', '90%', '--settle', '300ms'],
        [process.execPath, 'gpu-trainer.cjs', '{output_dir}'],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      // soup run's result has one unit of memory too: bytes, as soup train's (plan.test).
      const memoryKeys = memoryKeysOf(runJsonOf(r.stdout));
      expect(memoryKeys.all).toContain('peak_bytes');
      expect(memoryKeys.notBytes).toEqual([]);
      const memory = runJsonOf<{ memory: Memory }>(r.stdout).memory;
      expect(memory).toMatchObject({
        peak_bytes: 7000 * MiB,
        peak_at: 'step 3',
        peak_step: 3,
        budget_bytes: 80 * 2 ** 30,
        budget_source: 'device',
        method: 'cuda-per-process',
        max_memory_passed_at: null,
      });
      expect(r.stdout).toMatch(
        /memory: session peak 6\.84 GiB \(GPU memory of the trainer's processes, nvidia-smi\) at step 3; budget 80\.0 GiB \(the GPU's memory\), headroom 73\.2 GiB; under --max-memory 72\.0 GiB/,
      );
    },
  );
});
