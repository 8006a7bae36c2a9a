// GPU memory of an external command, sampled with nvidia-smi while it runs: per process (every
// pid of its process group) where the driver lists them with a figure, else the device's
// used-memory delta from before the command started (the probe owns the GPU while it runs).
import { formatBytes } from './_format';
import { treePids } from './_tree-pids';
import { fullThresholdBytes, type GpuVerdict } from './_gpu-measure';
import { queryComputeApps, queryGpus, visibleGpu, type GpuInfo } from './_nvidia-smi';

export interface GpuSamplerOptions {
  nvidiaSmiPath: string;
  /** CUDA's device index under `env`'s CUDA_VISIBLE_DEVICES. */
  deviceId: number;
  env: NodeJS.ProcessEnv;
  pollMs: number;
  /** Cap on the budget (the user's budget), bytes. */
  limitBytes: number | null;
}

/** A {@link GpuVerdict}, or `not-measured`: the trainer's processes used memory on another GPU, none on this one. */
export type SamplerVerdict = GpuVerdict | (Omit<GpuVerdict, 'measurement'> & { measurement: 'not-measured' });

export interface GpuSampler {
  /** The command's pid (= its process group): from now on, samples are taken. */
  attach(pid: number): void;
  /** Stops sampling and judges what was seen. */
  stop(): Promise<SamplerVerdict & { samples: number }>;
}

/** Reads the device once (before the command starts), then samples while it runs. */
export async function startGpuSampler(o: GpuSamplerOptions): Promise<GpuSampler> {
  const read = async (): Promise<{ gpu: GpuInfo; all: GpuInfo[] } | { why: string }> => {
    const gpus = await queryGpus(o.nvidiaSmiPath);
    if (!gpus.ok) return { why: gpus.why };
    const g = visibleGpu(gpus.value, o.deviceId, o.env);
    return g.ok ? { gpu: g.value, all: gpus.value } : { why: g.why };
  };
  // What the trial's processes held on the other GPUs (uuid -> peak bytes), and those GPUs.
  const elsewhere = new Map<string, number>();
  const known = new Map<string, GpuInfo>();
  const start = await read();
  let pid: number | null = null;
  let stopped = false;
  let samples = 0;
  let minFree: number | null = null;
  let perProcessPeak: number | null = null;
  let perProcessWhy: string | null = null;
  let deviceWhy: string | null = null;

  const sampleOnce = async (): Promise<void> => {
    if (pid === null || !('gpu' in start)) return;
    const now = await read();
    if (!('gpu' in now)) {
      deviceWhy = now.why;
      return;
    }
    samples += 1;
    if (now.gpu.freeBytes !== null)
      minFree = minFree === null ? now.gpu.freeBytes : Math.min(minFree, now.gpu.freeBytes);
    const apps = await queryComputeApps(o.nvidiaSmiPath);
    if (!apps.ok) {
      perProcessWhy = apps.why;
      return;
    }
    const pids = treePids(pid);
    for (const g of now.all) known.set(g.uuid, g);
    const others = new Map<string, number>();
    for (const a of apps.value) {
      if (pids.has(a.pid) && a.gpuUuid !== now.gpu.uuid && a.usedBytes !== null)
        others.set(a.gpuUuid, (others.get(a.gpuUuid) ?? 0) + a.usedBytes);
    }
    for (const [uuid, used] of others) elsewhere.set(uuid, Math.max(elsewhere.get(uuid) ?? 0, used));
    const mine = apps.value.filter((a) => pids.has(a.pid) && a.gpuUuid === now.gpu.uuid);
    if (mine.some((a) => a.usedBytes === null) || (mine.length === 0 && apps.value.some((a) => a.usedBytes === null))) {
      perProcessWhy = 'the driver reports per-process memory as [N/A] (WDDM)';
    } else if (mine.length > 0) {
      const used = mine.reduce((s, a) => s + (a.usedBytes ?? 0), 0);
      perProcessPeak = perProcessPeak === null ? used : Math.max(perProcessPeak, used);
    }
  };

  let loop: Promise<void> = Promise.resolve();
  const schedule = (): void => {
    if (stopped) return;
    loop = sampleOnce()
      .catch(() => undefined)
      .then(() => new Promise<void>((r) => setTimeout(r, o.pollMs)))
      .then(() => schedule());
  };

  return {
    attach(p: number) {
      pid = p;
      schedule();
    },
    async stop() {
      stopped = true;
      await Promise.race([loop, new Promise((r) => setTimeout(r, o.pollMs * 2 + 50))]);
      const cap = (b: number) => (o.limitBytes === null ? b : Math.min(o.limitBytes, b));
      if (!('gpu' in start))
        return {
          measurement: 'exceptions-only',
          budgetBytes: null,
          peakBytes: null,
          note: `nvidia-smi cannot answer: ${start.why}`,
          samples,
        };
      const freeStart = start.gpu.freeBytes;
      if (samples === 0 || freeStart === null) {
        return {
          measurement: 'exceptions-only',
          budgetBytes: null,
          peakBytes: null,
          note:
            samples === 0
              ? `no GPU sample while the command ran${deviceWhy ? ` (${deviceWhy})` : ' (too fast to sample)'}`
              : 'the driver does not report free memory',
          samples,
        };
      }
      const deviceFull = minFree !== null && minFree <= fullThresholdBytes(freeStart);
      if (perProcessPeak !== null && perProcessWhy === null) {
        return {
          measurement: 'cuda-per-process',
          budgetBytes: cap(freeStart),
          peakBytes: perProcessPeak,
          freeBeforeBytes: freeStart,
          ...(deviceFull ? { deviceFull } : {}),
          samples,
        };
      }
      const ranOn = [...elsewhere].filter(([, used]) => used > 0);
      if (perProcessPeak === null && ranOn.length > 0) {
        // The trainer's processes are listed, with memory, on other GPUs only: this GPU was not what it used.
        const name = (uuid: string) => {
          const g = known.get(uuid);
          return g ? `GPU ${g.index} (${g.name}, ${uuid})` : uuid;
        };
        const where = ranOn.map(([uuid, used]) => `${name(uuid)}, ${formatBytes(used)}`).join('; ');
        return {
          measurement: 'not-measured',
          budgetBytes: null,
          peakBytes: null,
          freeBeforeBytes: freeStart,
          note:
            `the trainer ran on ${where}, not on the measured ${name(start.gpu.uuid)}: point --device (or ` +
            `CUDA_VISIBLE_DEVICES) at the GPU it uses`,
          samples,
        };
      }
      const why = perProcessWhy ?? "nvidia-smi does not list the command's processes (another PID namespace, or WSL2)";
      return {
        measurement: 'cuda-device-delta',
        budgetBytes: cap(freeStart),
        freeBeforeBytes: freeStart,
        peakBytes: minFree === null ? 0 : Math.max(0, freeStart - minFree),
        ...(deviceFull ? { deviceFull } : {}),
        note: `${why}: judged by the device's used-memory delta`,
        samples,
      };
    },
  };
}
