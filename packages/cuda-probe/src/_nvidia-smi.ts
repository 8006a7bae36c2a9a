// nvidia-smi queries (the driver's own tool: no native binding needed). Every query resolves
// to null when the tool is missing or cannot answer, and says why.
import { execFile } from 'node:child_process';

const MiB = 2 ** 20;

export interface GpuInfo {
  index: number;
  uuid: string;
  name: string;
  totalBytes: number;
  freeBytes: number | null;
}

export interface ComputeApp {
  pid: number;
  gpuUuid: string;
  /** null when the driver reports `[N/A]` (WDDM does). */
  usedBytes: number | null;
}

export type SmiAnswer<T> = { ok: true; value: T } | { ok: false; why: string };

function run(nvidiaSmiPath: string, args: string[], timeoutMs: number): Promise<SmiAnswer<string>> {
  return new Promise((resolve) => {
    execFile(nvidiaSmiPath, args, { timeout: timeoutMs, windowsHide: true }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        resolve({
          ok: false,
          why:
            code === 'ENOENT'
              ? `${nvidiaSmiPath} not found`
              : `${nvidiaSmiPath} failed: ${(stderr || stdout || err.message).trim().slice(0, 300)}`,
        });
      } else resolve({ ok: true, value: stdout });
    });
  });
}

function mib(field: string | undefined): number | null {
  if (field === undefined) return null;
  const n = Number(field.trim());
  return field.trim() !== '' && Number.isFinite(n) ? Math.round(n * MiB) : null;
}

function rows(csv: string): string[][] {
  return csv
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => l.split(',').map((f) => f.trim()));
}

export async function queryGpus(nvidiaSmiPath = 'nvidia-smi', timeoutMs = 10_000): Promise<SmiAnswer<GpuInfo[]>> {
  const r = await run(
    nvidiaSmiPath,
    ['--query-gpu=index,uuid,name,memory.total,memory.free', '--format=csv,noheader,nounits'],
    timeoutMs,
  );
  if (!r.ok) return r;
  const gpus: GpuInfo[] = [];
  for (const [index, uuid, name, total, free] of rows(r.value)) {
    const totalBytes = mib(total);
    if (index === undefined || uuid === undefined || name === undefined || totalBytes === null) continue;
    gpus.push({ index: Number(index), uuid, name, totalBytes, freeBytes: mib(free) });
  }
  if (gpus.length === 0) return { ok: false, why: `${nvidiaSmiPath} listed no GPU` };
  return { ok: true, value: gpus };
}

export async function queryComputeApps(
  nvidiaSmiPath = 'nvidia-smi',
  timeoutMs = 10_000,
): Promise<SmiAnswer<ComputeApp[]>> {
  const r = await run(
    nvidiaSmiPath,
    ['--query-compute-apps=pid,gpu_uuid,used_memory', '--format=csv,noheader,nounits'],
    timeoutMs,
  );
  if (!r.ok) return r;
  const apps: ComputeApp[] = [];
  for (const [pid, gpuUuid, used] of rows(r.value)) {
    if (pid === undefined || gpuUuid === undefined || !/^\d+$/.test(pid)) continue;
    apps.push({ pid: Number(pid), gpuUuid, usedBytes: mib(used) });
  }
  return { ok: true, value: apps };
}

/**
 * The GPU nvidia-smi lists for CUDA's device `deviceId` in a process with this environment.
 * CUDA numbers only the devices `CUDA_VISIBLE_DEVICES` leaves visible, in its order; an entry is
 * a physical index or a UUID (`GPU-…`, a unique prefix is enough). The match is made by UUID,
 * so the budget, the peak and the cache key's GPU name all come from the GPU actually used.
 * (CUDA orders devices fastest-first unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`; on a machine
 * mixing GPU models, set it so that a bare index means what nvidia-smi means.)
 */
export function visibleGpu(
  gpus: readonly GpuInfo[],
  deviceId: number,
  env: NodeJS.ProcessEnv = {},
): SmiAnswer<GpuInfo> {
  const list = env.CUDA_VISIBLE_DEVICES;
  if (list === undefined) {
    const gpu = gpus.find((g) => g.index === deviceId);
    return gpu ? { ok: true, value: gpu } : { ok: false, why: `nvidia-smi lists no GPU with index ${deviceId}` };
  }
  const entries = list.split(',').map((e) => e.trim());
  // CUDA stops at the first entry it cannot use.
  const firstBad = entries.findIndex((e) => !/^(\d+|GPU-[0-9a-fA-F-]+)$/.test(e));
  const usable = firstBad === -1 ? entries : entries.slice(0, firstBad);
  const entry = usable[deviceId];
  if (entry === undefined || entry === '') {
    return {
      ok: false,
      why: `CUDA_VISIBLE_DEVICES=${list} leaves no device ${deviceId} visible (${usable.length} visible)`,
    };
  }
  const gpu = /^\d+$/.test(entry)
    ? gpus.find((g) => g.index === Number(entry))
    : (() => {
        const hits = gpus.filter((g) => g.uuid.toLowerCase().startsWith(entry.toLowerCase()));
        return hits.length === 1 ? hits[0] : undefined;
      })();
  return gpu
    ? { ok: true, value: gpu }
    : {
        ok: false,
        why:
          `CUDA_VISIBLE_DEVICES=${list}: device ${deviceId} is "${entry}", which matches no single GPU ` +
          `nvidia-smi lists`,
      };
}

/**
 * Memory `pid` holds on CUDA device `deviceId` (0 and `listed: false` when nvidia-smi does not
 * list it), with the GPU's free memory, or why the driver cannot tell (WDDM reports `[N/A]`).
 * With `env`, `deviceId` is CUDA's index under its `CUDA_VISIBLE_DEVICES`; without, nvidia-smi's.
 */
export async function processGpuUsage(
  nvidiaSmiPath: string,
  deviceId: number,
  pid: number,
  env?: NodeJS.ProcessEnv,
): Promise<SmiAnswer<{ usedBytes: number; listed: boolean; gpu: GpuInfo }>> {
  const gpus = await queryGpus(nvidiaSmiPath);
  if (!gpus.ok) return gpus;
  const found = visibleGpu(gpus.value, deviceId, env ?? {});
  if (!found.ok) return found;
  const gpu = found.value;
  const apps = await queryComputeApps(nvidiaSmiPath);
  if (!apps.ok) return apps;
  const mine = apps.value.filter((a) => a.pid === pid && a.gpuUuid === gpu.uuid);
  if (mine.some((a) => a.usedBytes === null) || (mine.length === 0 && apps.value.some((a) => a.usedBytes === null))) {
    return { ok: false, why: 'the driver reports per-process memory as [N/A] (WDDM)' };
  }
  return {
    ok: true,
    value: { usedBytes: mine.reduce((s, a) => s + (a.usedBytes ?? 0), 0), listed: mine.length > 0, gpu },
  };
}

/** One reading of a GPU: the device (free memory) and, when the driver can say, what `pid` holds on it. */
export interface GpuSnapshot {
  gpu: GpuInfo;
  process: { usedBytes: number; listed: boolean } | { why: string };
}

/** Reads the GPU CUDA's `deviceId` maps to, and what `pid` holds there. */
export async function gpuSnapshot(
  nvidiaSmiPath: string,
  deviceId: number,
  pid: number,
  env: NodeJS.ProcessEnv,
): Promise<SmiAnswer<GpuSnapshot>> {
  const gpus = await queryGpus(nvidiaSmiPath);
  if (!gpus.ok) return gpus;
  const found = visibleGpu(gpus.value, deviceId, env);
  if (!found.ok) return found;
  const mine = await processGpuUsage(nvidiaSmiPath, deviceId, pid, env);
  return {
    ok: true,
    value: {
      gpu: found.value,
      process: mine.ok ? { usedBytes: mine.value.usedBytes, listed: mine.value.listed } : { why: mine.why },
    },
  };
}
