// A process tree's memory read for real: the sum over a trainer and the helper it started (own
// process group), a re-parented worker its session still ties to the trainer; on CUDA, the tree's pids as the
// (fake) nvidia-smi lists them.
import { spawn } from 'node:child_process';
import { useTempDir } from '@soup/test-utils';
import { onTestFinished, describe, expect, it } from 'vitest';
import { writeFakeNvidiaSmi } from './_fake-nvidia-smi';
import { createTreeMemoryReader } from './create-tree-memory-reader';

const MiB = 2 ** 20;
const HOLD = (mib: number) => `const b = Buffer.alloc(${mib} * 1024 * 1024, 1); setInterval(() => b[0]++, 50);`;

function startTree(): Promise<{ pid: number; helper: number }> {
  const script = `const { spawn } = require('child_process');
const h = spawn(process.execPath, ['-e', ${JSON.stringify(HOLD(120))}], { detached: true, stdio: 'ignore' });
${HOLD(80)}
setTimeout(() => console.log(h.pid), 400);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  onTestFinished(() => void child.kill('SIGKILL'));
  return new Promise((resolve) => {
    child.stdout.setEncoding('utf8').once('data', (d: string) => {
      const helper = Number(d.trim());
      onTestFinished(() => {
        try {
          process.kill(helper, 'SIGKILL');
        } catch {
          // gone
        }
      });
      resolve({ pid: child.pid!, helper });
    });
  });
}

describe('[slow] createTreeMemoryReader', { timeout: 60_000 }, () => {
  it('CPU: the sum of VmRSS over the trainer and its detached helper (≥ 200 MiB held between them)', async () => {
    const { pid } = await startTree();
    const r = await createTreeMemoryReader().read(pid);
    expect(r!.processes).toBe(2);
    expect(r!.bytes).toBeGreaterThan(200 * MiB);
  });

  it('CPU: a worker in a process group of its own whose parent exited (re-parented) stays in the tree', async () => {
    // bash leads its session (detached), starts the worker as a job (own process group), and exits: the worker is
    // re-parented and only its session still ties it to the trainer.
    const hold = `${HOLD(100)} console.log(process.pid);`;
    const child = spawn('bash', ['-c', `set -m; "$0" -e "$1" & sleep 0.2`, process.execPath, hold], {
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // The worker prints its pid once its memory is held.
    const workerPid = await new Promise<number>((resolve) =>
      child.stdout.setEncoding('utf8').once('data', (d: string) => resolve(Number(d.trim()))),
    );
    onTestFinished(() => {
      try {
        process.kill(workerPid, 'SIGKILL');
      } catch {
        // gone
      }
    });
    await exited;
    const r = await createTreeMemoryReader().read(child.pid!);
    expect(r).not.toBeNull();
    expect(r!.bytes).toBeGreaterThan(100 * MiB);
  });

  it("CUDA: nvidia-smi's per-process memory of the tree's pids on the visible GPU only", async () => {
    const { pid, helper } = await startTree();
    const dir = useTempDir();
    const A = 'GPU-aaaa0000-1111-2222-3333-444455556666';
    const B = 'GPU-bbbb0000-1111-2222-3333-444455556666';
    const smi = writeFakeNvidiaSmi(dir, {
      gpus: [`0, ${A}, NVIDIA A100-SXM4-80GB, 81920, 1000`, `1, ${B}, NVIDIA A100-SXM4-80GB, 81920, 80000`],
      apps: [`${pid}, ${A}, 3000`, `${helper}, ${A}, 1500`, `${helper}, ${B}, 700`, `999999, ${A}, 9000`],
    });
    const reader = createTreeMemoryReader({ device: 'cuda', deviceId: 0, env: {}, nvidiaSmiPath: smi.path });
    expect(reader.method).toBe('cuda-per-process');
    expect(await reader.read(pid)).toEqual({ bytes: 4500 * MiB, processes: 2 });
  });
});
