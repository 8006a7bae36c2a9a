// `soup run --global-batch-size 16` with a trainer that runs in a memory cgroup of its own, behind a shell
// wrapper (the process the kernel kills is the wrapper's child, not the pid soup launched): at m = 16 the
// cgroup's OOM killer kills it mid-run, with no error of its own printed. The kill is judged out of memory on the
// kernel's evidence and stepped down to m = 8 in the same session, which fits and finishes.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { memoryCgroupSupport } from '@soup/cuda-probe';
import { useTempDir, torchMissing } from '@soup/test-utils';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runJsonOf, soupEnv, soupRun, TINY_SAFETENSORS_JS } from '../test/run-helpers';

const MiB = 2 ** 20;
const support = memoryCgroupSupport();
const why = support.available ? null : support.reason;
if (why) process.stdout.write(`run.oom-kill.test.ts: skipped, no memory cgroup can be made here: ${why}\n`);

// The trainer contract in miniature: checkpoint-<step>/ (weights, trainer_state.json) every 2 steps, resume from
// one, and from step 3 on it holds m × 16 MiB (touched), which a 200 MiB cgroup holds at m = 8 and not at m = 16.
const TRAINER = `
const fs = require('node:fs');
const a = process.argv.slice(2);
const arg = (name) => (a.indexOf(name) >= 0 ? a[a.indexOf(name) + 1] : '');
const [out, m, resume, maxSteps] = ['--out', '--m', '--resume', '--max'].map(arg);
let step = resume ? JSON.parse(fs.readFileSync(resume + '/trainer_state.json', 'utf8')).global_step : 0;
const held = [];
const tick = () => {
  step += 1;
  if (step >= 3 && held.length === 0) held.push(Buffer.alloc(Number(m) * ${16 * MiB}, 1));
  console.log('step ' + step + ' micro ' + m);
  if (step % 2 === 0 || step === Number(maxSteps)) {
    const dir = out + '/checkpoint-' + step;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(dir + '/model.safetensors', ${TINY_SAFETENSORS_JS});
    fs.writeFileSync(dir + '/trainer_state.json', JSON.stringify({ global_step: step, max_steps: Number(maxSteps) }));
  }
  if (step >= Number(maxSteps)) process.exit(0);
  setTimeout(tick, 150);
};
setTimeout(tick, 150);
`;

// The PyTorch twin of TRAINER: the same contract, holding m × 32 MiB in a torch tensor (filled) from step 3.
const TORCH_TRAINER = `
import json, os, sys, time, torch
a = sys.argv[1:]
arg = lambda name: a[a.index(name) + 1] if name in a else ''
out, m, resume, max_steps = arg('--out'), int(arg('--m')), arg('--resume'), int(arg('--max'))
step = json.load(open(os.path.join(resume, 'trainer_state.json')))['global_step'] if resume else 0
header = b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
held = []
while True:
    step += 1
    if step >= 3 and not held:
        held.append(torch.ones(m * 32 * 2**20 // 4))
    print(f'step {step} micro {m}', flush=True)
    if step % 2 == 0 or step == max_steps:
        d = os.path.join(out, f'checkpoint-{step}')
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, 'model.safetensors'), 'wb').write(len(header).to_bytes(8, 'little') + header + b'\\x01')
        json.dump({'global_step': step, 'max_steps': max_steps}, open(os.path.join(d, 'trainer_state.json'), 'w'))
    if step >= max_steps:
        sys.exit(0)
    time.sleep(0.15)
`;
const torchWhy = torchMissing('/usr/bin/python3');
if (torchWhy) process.stdout.write(`run.oom-kill.test.ts: the PyTorch twin is skipped: ${torchWhy}\n`);

/** A bare `import torch` process's resident size: the torch twin's cgroup is sized above it. */
function torchBaselineBytes(): number {
  const code =
    "import torch, re; print(int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read())[1]) * 1024)";
  return Number(spawnSync('/usr/bin/python3', ['-c', code], { encoding: 'utf8' }).stdout.trim());
}

function memoryCgroup(limitBytes: number): string {
  if (!support.available) throw new Error(why ?? 'no cgroup');
  const dir = join(support.parentDir, `soup-test-run-${process.pid}-${Date.now()}`);
  mkdirSync(dir);
  writeFileSync(join(dir, support.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), String(limitBytes));
  onTestFinished(() => {
    for (let i = 0; i < 50; i++) {
      try {
        rmdirSync(dir);
        return;
      } catch {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      }
    }
  });
  return join(dir, 'cgroup.procs');
}

/** soup run over `trainer` (argv after the wrapper) in a cgroup of `limitBytes`: the step-down and the finish. */
async function killedAndSteppedDown(cwd: string, trainer: string[], limitBytes: number): Promise<void> {
  const procs = memoryCgroup(limitBytes);
  // The wrapper enters the cgroup, then forks the trainer (not exec): soup's pid is the shell's.
  const argv = [
    'sh',
    '-c',
    'echo $$ > "$0" || exit 125; "$@"; exit $?',
    procs,
    ...trainer,
    '--out',
    '{output_dir}',
    '--m',
    '{micro_batch_size}',
    '--max',
    '8',
    '--resume',
    '{resume_from}',
  ];
  const options = ['--repo', 'file://store', '--output-dir', 'out', '--global-batch-size', '16'];
  // The probe's one step holds nothing: it answers m = 16, which the cgroup holds only until step 3.
  const probe = ['--probe', `${process.execPath} -e 0 {micro_batch_size}`, '--no-cache'];
  const more = [...probe, '--horizon', '8', '--settle', '300ms', '--poll', '200ms'];
  const r = await soupRun(cwd, [...options, ...more], argv, soupEnv(cwd), 100_000);
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
  expect(r.stdout).toMatch(/out of memory at step \d+ with micro 16 × 1 = 16 \(killed by SIGKILL: .*oom_kill/);
  expect(r.stdout).toMatch(/with micro 8 × 2 = 16 \(step-down 1 of at most 3\)/);
  const result = runJsonOf<{ status: string; micro_batch_size: number; oom_step_downs: unknown[] }>(r.stdout);
  expect(result).toMatchObject({ status: 'finished', micro_batch_size: 8 });
  expect(result.oom_step_downs).toEqual([expect.objectContaining({ from: 16, to: 8 })]);
}

describe('[slow] soup run: a kernel OOM kill in the trainer memory cgroup steps m down', { timeout: 120_000 }, () => {
  it.skipIf(why !== null)(
    'killed by the cgroup at m = 16 (rc 137, nothing printed): one session, stepped down to m = 8, finished',
    async () => {
      const cwd = useTempDir('soup-run-oom-kill-');
      writeFileSync(join(cwd, 'trainer.cjs'), TRAINER);
      await killedAndSteppedDown(cwd, [process.execPath, join(cwd, 'trainer.cjs')], 200 * MiB);
    },
  );

  it.skipIf(why !== null || torchWhy !== null)(
    'PyTorch twin: killed by the cgroup at m = 16 (a torch tensor of m × 32 MiB): stepped down to m = 8, finished',
    async () => {
      const cwd = useTempDir('soup-run-oom-kill-torch-');
      writeFileSync(join(cwd, 'trainer.py'), TORCH_TRAINER);
      // Above torch's own resident size: 256 MiB more holds at m = 8, 512 MiB at m = 16 does not.
      const limit = torchBaselineBytes() + 384 * MiB;
      await killedAndSteppedDown(cwd, ['/usr/bin/python3', join(cwd, 'trainer.py')], limit);
    },
  );
});
