import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { deviceIdentity } from './device-identity';
import { writeFakeNvidiaSmi, type FakeSmiState } from './_fake-nvidia-smi';
import { judgeGpu } from './_gpu-measure';
import { gpuSnapshot, visibleGpu, type GpuInfo } from './_nvidia-smi';

const MiB = 2 ** 20;
const PID = 4242;
// Two different GPUs, so a wrong mapping shows in the name, the total and the readings.
const A10 = (free: number) => `0, GPU-aaaa0000-1111-2222-3333-444455556666, NVIDIA A10G, 23028, ${free}`;
const H100 = (free: number) => `1, GPU-bbbb0000-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 81559, ${free}`;

/** Readings before the child loads anything, right before the step and right after it, through the fake nvidia-smi. */
async function trial(
  states: [FakeSmiState, FakeSmiState, FakeSmiState],
  deviceId: number,
  env: NodeJS.ProcessEnv,
  gpuMemLimitBytes: number | null = null,
) {
  const smi = writeFakeNvidiaSmi(useTempDir(), states[0]);
  const read = async () => {
    const r = await gpuSnapshot(smi.path, deviceId, PID, env);
    return r.ok ? r.value : { why: r.why };
  };
  const start = await read();
  smi.update(states[1]);
  const pre = await read();
  smi.update(states[2]);
  const post = await read();
  return judgeGpu({ start, pre, post, gpuMemLimitBytes });
}

describe('CUDA trial measurement through nvidia-smi (fake nvidia-smi)', () => {
  it('per process when the driver lists the process: free + held before the step vs held after', async () => {
    const v = await trial(
      [
        { gpus: [A10(22000), H100(80000)], apps: [] },
        { gpus: [A10(20000), H100(80000)], apps: [`${PID}, GPU-aaaa0000-1111-2222-3333-444455556666, 2000`] },
        { gpus: [A10(12000), H100(80000)], apps: [`${PID}, GPU-aaaa0000-1111-2222-3333-444455556666, 10000`] },
      ],
      0,
      {},
    );
    expect(v).toEqual({ measurement: 'cuda-per-process', budgetBytes: 22000 * MiB, peakBytes: 10000 * MiB });
  });

  it('WSL2 (no process listed at all): the device-level used-memory delta judges the trial', async () => {
    const v = await trial(
      [
        { gpus: [A10(22000)], apps: [] },
        { gpus: [A10(20000)], apps: [] },
        { gpus: [A10(9000)], apps: [] },
      ],
      0,
      {},
    );
    expect(v).toMatchObject({ measurement: 'cuda-device-delta', budgetBytes: 22000 * MiB, peakBytes: 13000 * MiB });
    expect(v.deviceFull).toBeUndefined();
    expect(v.note).toMatch(/does not list this process/);
  });

  it(
    'WDDM ([N/A] per process): device delta, and a device left with nothing free does not fit (#649: ' +
      'the allocator spilled)',
    async () => {
      const v = await trial(
        [
          { gpus: [A10(22000)], apps: [] },
          { gpus: [A10(20000)], apps: [`${PID}, GPU-aaaa0000-1111-2222-3333-444455556666, [N/A]`] },
          { gpus: [A10(3)], apps: [`${PID}, GPU-aaaa0000-1111-2222-3333-444455556666, [N/A]`] },
        ],
        0,
        {},
      );
      expect(v).toMatchObject({
        measurement: 'cuda-device-delta',
        budgetBytes: 22000 * MiB,
        peakBytes: 21997 * MiB,
        deviceFull: true,
      });
      expect(v.note).toMatch(/\[N\/A\] \(WDDM\)/);
    },
  );

  it('a container with its own PID namespace (the host pid is listed, not ours): device delta', async () => {
    const v = await trial(
      [
        { gpus: [A10(22000)], apps: [] },
        { gpus: [A10(20000)], apps: ['918273, GPU-aaaa0000-1111-2222-3333-444455556666, 2000'] },
        { gpus: [A10(15000)], apps: ['918273, GPU-aaaa0000-1111-2222-3333-444455556666, 7000'] },
      ],
      0,
      {},
      4000 * MiB,
    );
    expect(v).toMatchObject({ measurement: 'cuda-device-delta', budgetBytes: 4000 * MiB, peakBytes: 7000 * MiB });
  });

  it('CUDA_VISIBLE_DEVICES=1: CUDA device 0 is nvidia-smi GPU 1, for the readings and the cache key', async () => {
    const env = { CUDA_VISIBLE_DEVICES: '1' };
    const v = await trial(
      [
        { gpus: [A10(22000), H100(80000)], apps: [] },
        { gpus: [A10(22000), H100(78000)], apps: [`${PID}, GPU-bbbb0000-1111-2222-3333-444455556666, 2000`] },
        { gpus: [A10(22000), H100(50000)], apps: [`${PID}, GPU-bbbb0000-1111-2222-3333-444455556666, 30000`] },
      ],
      0,
      env,
    );
    expect(v).toEqual({ measurement: 'cuda-per-process', budgetBytes: 80000 * MiB, peakBytes: 30000 * MiB });
    const smi = writeFakeNvidiaSmi(useTempDir(), { gpus: [A10(22000), H100(80000)] });
    expect(await deviceIdentity({ device: 'cuda', deviceId: 0, env, nvidiaSmiPath: smi.path })).toMatchObject({
      gpuName: 'NVIDIA H100 80GB HBM3',
      gpuMemoryGb: 79,
      gpuIndex: 1,
    });
  });

  it('CUDA_VISIBLE_DEVICES=GPU-<uuid> (a unique prefix is enough), and the errors when nothing matches', async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), { gpus: [A10(22000), H100(80000)] });
    for (const uuid of ['GPU-bbbb0000-1111-2222-3333-444455556666', 'GPU-bbbb']) {
      expect(
        await deviceIdentity({ device: 'cuda', env: { CUDA_VISIBLE_DEVICES: uuid }, nvidiaSmiPath: smi.path }),
      ).toMatchObject({ gpuName: 'NVIDIA H100 80GB HBM3', gpuIndex: 1 });
    }
    expect(
      await deviceIdentity({
        device: 'cuda',
        deviceId: 1,
        env: { CUDA_VISIBLE_DEVICES: '1,0' },
        nvidiaSmiPath: smi.path,
      }),
    ).toMatchObject({ gpuName: 'NVIDIA A10G' });
    await expect(
      deviceIdentity({ device: 'cuda', env: { CUDA_VISIBLE_DEVICES: 'GPU-cccc' }, nvidiaSmiPath: smi.path }),
    ).rejects.toThrow(/GPU-cccc.*matches no single GPU/);
    await expect(
      deviceIdentity({ device: 'cuda', deviceId: 1, env: { CUDA_VISIBLE_DEVICES: '0' }, nvidiaSmiPath: smi.path }),
    ).rejects.toThrow(/leaves no device 1 visible/);
  });

  it('visibleGpu: CUDA stops at the first entry it cannot use; an empty list hides every GPU', () => {
    const gpus: GpuInfo[] = [
      { index: 0, uuid: 'GPU-a', name: 'A', totalBytes: 1, freeBytes: 1 },
      { index: 1, uuid: 'GPU-b', name: 'B', totalBytes: 1, freeBytes: 1 },
    ];
    expect(visibleGpu(gpus, 0, { CUDA_VISIBLE_DEVICES: '1,x,0' })).toMatchObject({ ok: true, value: { name: 'B' } });
    expect(visibleGpu(gpus, 1, { CUDA_VISIBLE_DEVICES: '1,x,0' })).toMatchObject({ ok: false });
    expect(visibleGpu(gpus, 0, { CUDA_VISIBLE_DEVICES: '' })).toMatchObject({ ok: false });
    expect(visibleGpu(gpus, 1, {})).toMatchObject({ ok: true, value: { name: 'B' } });
  });

  it('nothing readable: exceptions only, saying why', async () => {
    const v = await trial(
      [{ fail: 'NVIDIA-SMI has failed' }, { fail: 'NVIDIA-SMI has failed' }, { fail: 'NVIDIA-SMI has failed' }],
      0,
      {},
    );
    expect(v).toMatchObject({ measurement: 'exceptions-only', budgetBytes: null, peakBytes: null });
    expect(v.note).toMatch(/NVIDIA-SMI has failed/);
  });
});
