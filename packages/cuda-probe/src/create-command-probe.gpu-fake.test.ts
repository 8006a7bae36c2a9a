import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeBatchSize } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createCommandProbe } from './create-command-probe';

const MiB = 2 ** 20;
const UUID = 'GPU-aaaa0000-1111-2222-3333-444455556666';
const OTHER = 'GPU-bbbb0000-1111-2222-3333-444455556666';
const idle = {
  gpus: [`0, ${OTHER}, NVIDIA A10G, 23028, 23000`, `1, ${UUID}, NVIDIA H100 80GB HBM3, 81559, 2000`],
  apps: [] as string[],
};

/** The fake driver's state: rows of `--query-gpu` and of `--query-compute-apps`, one file each. */
interface FakeSmi {
  path: string;
  gpus: string;
  apps: string;
  calls: string;
}

/**
 * nvidia-smi for this file: a POSIX shell script that answers the two queries the sampler makes from
 * two text files, and appends each call to a log once it has read its answer. Shell, not the Node fake
 * of _fake-nvidia-smi.ts: every sample is two calls, and a Node start-up (0.1–0.5 s on a loaded
 * machine) left each probe waiting on the fake rather than on the code under test.
 */
function fakeSmi(dir: string): FakeSmi {
  const f = {
    path: join(dir, 'nvidia-smi'),
    gpus: join(dir, 'smi-gpus.txt'),
    apps: join(dir, 'smi-apps.txt'),
    calls: join(dir, 'smi-calls.log'),
  };
  writeFileSync(f.gpus, idle.gpus.join('\n'));
  writeFileSync(f.apps, idle.apps.join('\n'));
  writeFileSync(
    f.path,
    `#!/bin/sh
case "$*" in
  *--query-gpu=*) out=$(cat '${f.gpus}') ;;
  *--query-compute-apps=*) out=$(cat '${f.apps}') ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
echo "$*" >> '${f.calls}'
printf '%s\\n' "$out"
`,
  );
  chmodSync(f.path, 0o755);
  return f;
}

/**
 * A "trainer" that takes batch_size × 100 MiB of GPU 1 while it runs, as the fake driver reports
 * it: per process (its own pid listed), WSL2 (no process listed), WDDM ([N/A]) or from another
 * PID namespace (a host pid listed); memory is released when it exits. It holds the memory until the
 * sampler has read it, not for a fixed time: two samples taken wholly after it took the memory (each
 * sample is a --query-gpu call then a --query-compute-apps call, in the fake's call log) and a third
 * begun, so the second was judged while the trainer still ran. A fixed hold had to be long enough for
 * the slowest loaded machine (2.5 s a run); this one ends as soon as the claim is observable.
 */
function trainer(dir: string, smi: FakeSmi): string {
  const path = join(dir, 'trainer.cjs');
  writeFileSync(
    path,
    `const fs = require('fs');
const [mode, b] = [process.argv[2], Number(process.argv[3])];
const idle = ${JSON.stringify(idle)};
const used = b * 100;
const free = Math.max(0, 2000 - used);
const row = mode === 'per-process' ? [process.pid + ', ${UUID}, ' + used] : mode === 'wddm' ? [process.pid + ', ${UUID}, [N/A]'] : mode === 'pidns' ? ['918273, ${UUID}, ' + used] : [];
// Atomic writes: the fake nvidia-smi may read either file at any moment.
const write = (file, rows) => { fs.writeFileSync(file + '.tmp', rows.join('\\n')); fs.renameSync(file + '.tmp', file); };
const put = (s) => { write(${JSON.stringify(smi.gpus)}, s.gpus); write(${JSON.stringify(smi.apps)}, s.apps); };
put({ gpus: [idle.gpus[0], '1, ${UUID}, NVIDIA H100 80GB HBM3, 81559, ' + free], apps: row });
const calls = ${JSON.stringify(smi.calls)};
const size = () => { try { return fs.statSync(calls).size; } catch { return 0; } };
const from = size();
const sampled = () => {
  let apps = 0;
  for (const line of (size() > from ? fs.readFileSync(calls).subarray(from).toString() : '').split('\\n')) {
    if (line.includes('--query-compute-apps=')) apps += 1;
    else if (apps >= 2 && line.includes('--query-gpu=')) return true;
  }
  return false;
};
// A sampler that never samples still ends the run (the verdict then fails the test), well inside timeoutMs.
const until = Date.now() + 20000;
const tick = () => (sampled() || Date.now() > until ? (put(idle), process.exit(0)) : setTimeout(tick, 10));
tick();
`,
  );
  return path;
}

describe('[slow] createCommandProbe with gpu: nvidia-smi sampled while the command runs (fake nvidia-smi)', {
  timeout: 120_000,
}, () => {
  for (const [mode, measurement] of [
    ['per-process', 'cuda-per-process'],
    ['wsl2', 'cuda-device-delta'],
    ['wddm', 'cuda-device-delta'],
    ['pidns', 'cuda-device-delta'],
  ] as const) {
    it(
      `${mode}: judged by ${measurement}; CUDA_VISIBLE_DEVICES=1 picks the right GPU; the search ` + `finds 19`,
      async () => {
        const dir = useTempDir();
        const smi = fakeSmi(dir);
        const script = trainer(dir, smi);
        const probe = createCommandProbe({
          command: [process.execPath, script, mode, '{batch_size}'],
          env: { ...process.env, CUDA_VISIBLE_DEVICES: '1' },
          gpu: { deviceId: 0, nvidiaSmiPath: smi.path, pollMs: 40 },
          timeoutMs: 30_000,
        });
        const small = await probe(12);
        expect(small, small.detail).toMatchObject({
          fits: true,
          reason: 'fit',
          measurement,
          peakBytes: 1200 * MiB,
          budgetBytes: 2000 * MiB,
        });
        // 20 × 100 MiB takes every free byte: per process it is at the budget; device-wide the GPU is full (WDDM would
        // spill).
        const full = await probe(25);
        expect(full, full.detail).toMatchObject({ fits: false, reason: 'over-budget', measurement });
        const r = await probeBatchSize(probe, { start: 8, ceiling: 64, predict: true });
        expect(r.batchSize).toBe(19);
        expect(r.bound).toBe('exact');
        expect(r.trials.at(-1)?.measurement).toBe(measurement);
      },
    );
  }

  it('budgetBytes caps the GPU budget', async () => {
    const dir = useTempDir();
    const smi = fakeSmi(dir);
    const script = trainer(dir, smi);
    const probe = createCommandProbe({
      command: [process.execPath, script, 'per-process', '{batch_size}'],
      env: { ...process.env, CUDA_VISIBLE_DEVICES: UUID },
      gpu: { nvidiaSmiPath: smi.path, pollMs: 40 },
      budgetBytes: 1000 * MiB,
      timeoutMs: 30_000,
    });
    expect(await probe(10)).toMatchObject({ fits: true, budgetBytes: 1000 * MiB });
    expect(await probe(11)).toMatchObject({
      fits: false,
      reason: 'over-budget',
      peakBytes: 1100 * MiB,
      budgetBytes: 1000 * MiB,
    });
  });
});
