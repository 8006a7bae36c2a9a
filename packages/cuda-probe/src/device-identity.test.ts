import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { deviceIdentity } from './device-identity';
import { DeviceQueryError } from './errors';
import { writeFakeNvidiaSmi } from './_fake-nvidia-smi';
import { processGpuUsage } from './_nvidia-smi';

const H100 = '0, GPU-1111, NVIDIA H100 80GB HBM3, 81559, 80000';
const A10 = '1, GPU-2222, NVIDIA A10G, 23028, 22000';

describe('deviceIdentity', () => {
  it('cpu: "cpu" and the host RAM in whole GiB, rounded down', async () => {
    const dir = useTempDir();
    mkdirSync(join(dir, 'proc'));
    writeFileSync(join(dir, 'proc/meminfo'), 'MemTotal:       24684084 kB\nMemAvailable:   24183296 kB\n');
    expect(await deviceIdentity({ device: 'cpu', procRoot: join(dir, 'proc') })).toEqual({
      device: 'cpu',
      gpuName: 'cpu',
      gpuMemoryGb: 23,
    });
  });

  it('cuda: the GPU name and whole GiB from nvidia-smi, for the requested index', async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), { gpus: [H100, A10] });
    expect(await deviceIdentity({ device: 'cuda', nvidiaSmiPath: smi.path })).toEqual({
      device: 'cuda',
      gpuName: 'NVIDIA H100 80GB HBM3',
      gpuMemoryGb: 79,
      gpuUuid: 'GPU-1111',
      gpuIndex: 0,
    });
    expect(await deviceIdentity({ device: 'cuda', deviceId: 1, nvidiaSmiPath: smi.path })).toMatchObject({
      gpuName: 'NVIDIA A10G',
      gpuMemoryGb: 22,
    });
  });

  it("auto: the GPU when nvidia-smi answers, this machine's RAM when it is absent", async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), { gpus: [H100] });
    expect((await deviceIdentity({ nvidiaSmiPath: smi.path })).device).toBe('cuda');
    const cpu = await deviceIdentity({ nvidiaSmiPath: join(useTempDir(), 'no-such-nvidia-smi') });
    expect(cpu.device).toBe('cpu');
    expect(cpu.gpuName).toBe('cpu');
    expect(cpu.gpuMemoryGb).toBeGreaterThan(0);
  });

  it('cuda: a DeviceQueryError saying why when the driver cannot answer', async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), {
      fail: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    });
    await expect(deviceIdentity({ device: 'cuda', nvidiaSmiPath: smi.path })).rejects.toThrow(DeviceQueryError);
    await expect(deviceIdentity({ device: 'cuda', nvidiaSmiPath: smi.path })).rejects.toThrow(
      /couldn't communicate with the NVIDIA driver/,
    );
    await expect(
      deviceIdentity({
        device: 'cuda',
        deviceId: 3,
        nvidiaSmiPath: writeFakeNvidiaSmi(useTempDir(), { gpus: [H100] }).path,
      }),
    ).rejects.toThrow(/no GPU with index 3/);
  });
});

describe('processGpuUsage (nvidia-smi per-process memory)', () => {
  it("sums this pid's rows on the right GPU, with the GPU's free memory", async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), {
      gpus: [H100, A10],
      apps: ['4242, GPU-1111, 1024', '4242, GPU-2222, 9999', '777, GPU-1111, 50000', '4242, GPU-1111, 512'],
    });
    const got = await processGpuUsage(smi.path, 0, 4242);
    expect(got).toEqual({
      ok: true,
      value: {
        usedBytes: 1536 * 2 ** 20,
        listed: true,
        gpu: expect.objectContaining({ uuid: 'GPU-1111', freeBytes: 80000 * 2 ** 20 }),
      },
    });
  });

  it('a process not listed holds nothing (listed: false)', async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), { gpus: [H100], apps: ['777, GPU-1111, 50000'] });
    expect(await processGpuUsage(smi.path, 0, 5)).toMatchObject({ ok: true, value: { usedBytes: 0, listed: false } });
  });

  it('says the driver cannot answer under WDDM ([N/A])', async () => {
    const smi = writeFakeNvidiaSmi(useTempDir(), { gpus: [H100], apps: ['4242, GPU-1111, [N/A]'] });
    expect(await processGpuUsage(smi.path, 0, 4242)).toEqual({
      ok: false,
      why: 'the driver reports per-process memory as [N/A] (WDDM)',
    });
    expect(await processGpuUsage(smi.path, 0, 5)).toEqual({
      ok: false,
      why: 'the driver reports per-process memory as [N/A] (WDDM)',
    });
  });
});
