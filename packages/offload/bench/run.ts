// @soup/offload bench: what activation offloading buys under a HARD memory cap.
//   npm run bench -w @soup/offload -- [--json] [--batch 16] [--steps 2] [--threads 2] [--margin 0.08]
//                                      [--scratch-dir DIR] [--max-batch 256] [--timing-rounds 2]
//
// Every child runs inside a memory cgroup (@soup/cuda-probe's runInMemoryCgroup): the cap counts
// anonymous memory AND page cache, as a GPU's memory counts every allocation. RSS is not memory:
// a tensor written to a file leaves the resident set but not the cgroup until its pages are written
// back and reclaimed.
//
// 1. The cap: a fused step at batch --batch (B) runs in an uncapped cgroup; cap = its cgroup peak
//    × (1 + --margin). So the fused step fits B under the cap, and not much more.
// 2. Largest batch that trains under the cap, for fused, segmented-keep and segmented-disk:
//    doubling from B, then bisection to a resolution of B/4 (a batch "trains" when the child
//    completes its warm-up and timed steps; the OOM killer answers the others).
// 3. Step time of each mode at F, the fused step's largest batch (same cap).
// 4. Scratch files: every disk child must leave none; then a disk child is SIGKILLed inside the
//    cap while it holds scratch files, and none may be left (anonymous files need no sweep; the
//    next store's sweep is run anyway and counted).
// Goals: diskMaxBatchOverFused ≥ 2.0; diskSlowdownVsFused ≤ 2.0 at F; zero scratch files left.
// Where no cgroup can be made the bench prints "not measured" and why; it never falls back to RSS.
//
// Imports: this package must not depend on @soup/onnx-train or @soup/cuda-probe (both depend on
// it), so they resolve through the workspace's node_modules symlinks without being declared.
// Build them first: npx turbo run build --filter=@soup/cuda-probe...
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryCgroupSupport, runInMemoryCgroup, type MemoryCgroupRun } from '@soup/cuda-probe';
import { memoryBackedFs } from '../src/_fs-type';
import { sweepScratchFiles } from '../src/index';

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, '..');
const args = process.argv.slice(2);
const json = args.includes('--json');
const flag = (name: string, def: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const strFlag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4, dFF: 1024, tieEmbeddings: true };
const B = flag('--batch', 16);
const steps = flag('--steps', 2);
const threads = flag('--threads', 2);
const margin = flag('--margin', 0.08);
const maxBatch = flag('--max-batch', 256);
const timingRounds = flag('--timing-rounds', 2);
const resolution = Math.max(1, Math.floor(B / 4));
const MODES = ['fused', 'segmented-keep', 'segmented-disk'] as const;
type Mode = (typeof MODES)[number];
const GOALS = { diskMaxBatchOverFused: 2.0, diskSlowdownVsFused: 2.0 } as const;
const MiB = 2 ** 20;
const round = (x: number, d = 0): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (s: string): void => {
  if (!json) process.stderr.write(`${s}\n`);
};
const outDir = join(pkgDir, 'bench-results');
const emit = (result: object): void => {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'offload.json'), `${JSON.stringify(result, null, 2)}\n`);
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
};

const support = memoryCgroupSupport();
if (!support.available) {
  log(`not measured: no memory cgroup can be made here (${support.reason}); this bench does not fall back to RSS`);
  emit({ measured: false, reason: support.reason });
  process.exit(0);
}

// Scratch files go under --scratch-dir (default: this package's .bench-scratch, on the repo's
// disk), never os.tmpdir() by default: /tmp is a tmpfs on many systems, and files there stay in RAM.
const scratchRoot = resolve(strFlag('--scratch-dir') ?? join(pkgDir, '.bench-scratch'));
mkdirSync(scratchRoot, { recursive: true });
const scratchFs = memoryBackedFs(scratchRoot);
if (scratchFs) log(`WARNING: --scratch-dir ${scratchRoot} is on ${scratchFs}: scratch files stay in RAM there; pick a disk-backed folder`);

interface ChildReport {
  mode: Mode;
  batchSize: number;
  stepMs: number;
  stepMsMin: number;
  stepCpuMs: number;
  losses: number[];
  peakRssMB: number;
  scratchFilesLeft: number;
  packedMB?: number;
  peakDiskMB?: number;
  packMs?: number;
  unpackMs?: number;
}
interface Trial {
  mode: Mode;
  batchSize: number;
  trained: boolean;
  /** `trained`, `oom-killed` (the kernel's OOM killer, counted in the cgroup) or what else ended it. */
  outcome: string;
  cgroupPeakMB: number | null;
  limitHits: number | null;
  oomKills: number | null;
  report: ChildReport | null;
  wallMs: number;
}

const trials: Trial[] = [];
async function runCapped(
  mode: Mode,
  batchSize: number,
  limitBytes: number,
  watch?: (dir: string) => { signal: AbortSignal; onSpawn: (child: { pid: number | undefined }) => void },
): Promise<{ trial: Trial; dir: string }> {
  const dir = mkdtempSync(join(scratchRoot, 'soup-i15-child-'));
  const cfg = JSON.stringify({ mode, spec, batchSize, threads, steps });
  let run: MemoryCgroupRun;
  try {
    run = await runInMemoryCgroup({
      file: process.execPath,
      args: [join(here, 'capped-step.mjs'), cfg],
      cwd: dir,
      limitBytes,
      timeoutMs: 300_000,
      namePrefix: 'soup-i15-bench',
      ...(watch ? watch(dir) : {}),
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const line = run.stdout.trim().split('\n').at(-1) ?? '';
  const report = run.exitCode === 0 && line.startsWith('{') ? (JSON.parse(line) as ChildReport) : null;
  const outcome = report
    ? 'trained'
    : run.cgroup.oomKilled
      ? 'oom-killed'
      : run.aborted
        ? 'killed by the bench'
        : `failed (${run.signal ?? `exit ${run.exitCode}`}): ${run.stderr.trim().split('\n').slice(-2).join(' | ')}`;
  const trial: Trial = {
    mode,
    batchSize,
    trained: report !== null,
    outcome,
    cgroupPeakMB: run.cgroup.peakBytes === null ? null : round(run.cgroup.peakBytes / MiB),
    limitHits: run.cgroup.limitHits,
    oomKills: run.cgroup.oomKills,
    report,
    wallMs: round(run.wallMs),
  };
  if (!watch) trials.push(trial);
  log(
    `  ${mode.padEnd(15)} batch ${String(batchSize).padStart(3)}: ${outcome}` +
      (trial.cgroupPeakMB !== null ? `, cgroup peak ${trial.cgroupPeakMB} MB` : '') +
      (report ? `, step ${round(report.stepMs)} ms, RSS peak ${round(report.peakRssMB)} MB` : '') +
      ` (${round(run.wallMs / 1000, 1)} s)`,
  );
  return { trial, dir };
}

async function trial(mode: Mode, batchSize: number, limitBytes: number): Promise<Trial> {
  const { trial: t, dir } = await runCapped(mode, batchSize, limitBytes);
  rmSync(dir, { recursive: true, force: true });
  if (t.report && t.report.scratchFilesLeft !== 0) throw new Error(`${mode} batch ${batchSize}: ${t.report.scratchFilesLeft} scratch file(s) left after release`);
  return t;
}

/** Largest batch that trains under the cap: doubling from B, then bisection to `resolution`. */
async function largestBatch(mode: Mode, limitBytes: number): Promise<{ batchSize: number; firstFailing: number | null }> {
  const memo = new Map<number, boolean>();
  const trains = async (b: number): Promise<boolean> => {
    if (!memo.has(b)) memo.set(b, (await trial(mode, b, limitBytes)).trained);
    return memo.get(b)!;
  };
  let lo = 0;
  let hi: number | null = null;
  if (await trains(B)) {
    lo = B;
    for (let b = 2 * B; b <= maxBatch; b *= 2) {
      if (await trains(b)) lo = b;
      else {
        hi = b;
        break;
      }
    }
    if (hi === null) return { batchSize: lo, firstFailing: null };
  } else hi = B;
  while (hi - lo > resolution) {
    const mid = Math.max(1, Math.round((lo + hi) / 2 / resolution) * resolution);
    if (mid <= lo || mid >= hi) break;
    if (await trains(mid)) lo = mid;
    else hi = mid;
  }
  return { batchSize: lo, firstFailing: hi };
}

const t0 = performance.now();
log(`geometry ${JSON.stringify(spec)}, ${threads} threads, ${steps} timed steps after a warm-up per child; cgroup v${support.version} under ${support.parentDir}`);
log(`scratch folder ${scratchRoot} (${scratchFs ?? 'disk-backed'})`);

// 1. The cap.
const loose = await trial('fused', B, 16 * 1024 * MiB);
trials.pop(); // the uncapped calibration run is not a trial under the cap
if (!loose.trained || loose.cgroupPeakMB === null) throw new Error(`the fused step at batch ${B} did not train without a cap: ${loose.outcome}`);
const capBytes = Math.ceil((loose.cgroupPeakMB * (1 + margin)) / 4) * 4 * MiB;
log(`cap: ${capBytes / MiB} MiB = fused batch ${B} cgroup peak ${loose.cgroupPeakMB} MB × ${1 + margin}`);

// 2. Largest batch per mode.
const largest = {} as Record<Mode, { batchSize: number; firstFailing: number | null }>;
for (const mode of MODES) {
  log(`largest batch under the cap: ${mode}`);
  largest[mode] = await largestBatch(mode, capBytes);
}
const F = largest.fused.batchSize;

// 3. Step time of each mode at F (the search's own run at F counts, plus --timing-rounds more per
// mode, the modes alternating; the fastest is kept: the machine is shared).
log(`step time at the fused step's largest batch ${F}`);
const atF = {} as Record<Mode, Trial[]>;
for (const mode of MODES) atF[mode] = trials.filter((t) => t.mode === mode && t.batchSize === F);
for (let r = 0; r < timingRounds; r++) for (const mode of MODES) atF[mode].push(await trial(mode, F, capBytes));
const best = (mode: Mode): Trial | null =>
  atF[mode].filter((t) => t.trained).reduce<Trial | null>((a, b) => (a === null || b.report!.stepMs < a.report!.stepMs ? b : a), null);

// 4. SIGKILL inside the cap while scratch files exist. The step's files are anonymous by default
// (O_TMPFILE: no name in the save dir), so the bench counts what the child holds through
// /proc/<pid>/fd — named files and anonymous ones alike — and kills it once it holds four.
log('SIGKILL inside the cap: a disk child killed while it holds scratch files');
const killBatch = largest['segmented-disk'].batchSize || F;
let filesAtKill = 0;
const heldIn = (pid: number, dir: string): number => {
  let n = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(`${dir}/`)) n += 1;
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // the child is gone
  }
  return n;
};
const { trial: killed, dir: killDir } = await runCapped('segmented-disk', killBatch, capBytes, (dir) => {
  const ac = new AbortController();
  const acts = join(realpathSync(dir), '.soup-acts');
  let poll: NodeJS.Timeout | undefined;
  ac.signal.addEventListener('abort', () => clearInterval(poll));
  return {
    signal: ac.signal,
    onSpawn: ({ pid }) => {
      if (pid === undefined) return;
      poll = setInterval(() => {
        const n = heldIn(pid, acts);
        if (n >= 4) {
          filesAtKill = n;
          ac.abort();
        }
      }, 2);
      setTimeout(() => clearInterval(poll), 280_000).unref();
    },
  };
});
const actsDir = join(killDir, '.soup-acts');
const leftAfterKill = existsSync(actsDir) ? readdirSync(actsDir).length : 0;
const swept = existsSync(actsDir) ? sweepScratchFiles({ saveDir: '.soup-acts', cwd: killDir }) : [];
const leftAfterSweep = existsSync(actsDir) ? readdirSync(actsDir).length : 0;
rmSync(killDir, { recursive: true, force: true });
const leftInScratchRoot = (readdirSync(scratchRoot, { recursive: true }) as string[]).filter((p) => /(^|\/)soup-act-[^/]*\.bin$/.test(p)).length;

// Summary.
const summary = (mode: Mode) => {
  const fastest = best(mode);
  const atMax = trials.find((t) => t.mode === mode && t.batchSize === largest[mode].batchSize && t.trained) ?? null;
  return {
    maxBatch: largest[mode].batchSize,
    firstFailingBatch: largest[mode].firstFailing,
    firstFailingOutcome: trials.find((t) => t.mode === mode && t.batchSize === largest[mode].firstFailing)?.outcome ?? null,
    cgroupPeakMBAtMax: atMax?.cgroupPeakMB ?? null,
    atFusedMax: fastest
      ? {
          batchSize: F,
          stepMs: round(fastest.report!.stepMs),
          stepCpuMs: round(Math.min(...atF[mode].filter((t) => t.trained).map((t) => t.report!.stepCpuMs))),
          cgroupPeakMB: fastest.cgroupPeakMB,
          rssPeakMB: round(fastest.report!.peakRssMB),
          loss: fastest.report!.losses[0]!,
          ...(fastest.report!.packMs !== undefined
            ? { packMs: round(fastest.report!.packMs), unpackMs: round(fastest.report!.unpackMs!), packedMB: round(fastest.report!.packedMB!) }
            : {}),
        }
      : { batchSize: F, trained: false, outcome: atF[mode].map((t) => t.outcome).join('; ') },
  };
};
const modes = Object.fromEntries(MODES.map((m) => [m, summary(m)])) as Record<Mode, ReturnType<typeof summary>>;
const fusedF = best('fused');
const diskF = best('segmented-disk');
const keepF = best('segmented-keep');
const diskMaxBatchOverFused = round(modes['segmented-disk'].maxBatch / F, 2);
const keepMaxBatchOverFused = round(modes['segmented-keep'].maxBatch / F, 2);
const diskSlowdownVsFused = fusedF && diskF ? round(diskF.report!.stepMs / fusedF.report!.stepMs, 2) : null;
const keepSlowdownVsFused = fusedF && keepF ? round(keepF.report!.stepMs / fusedF.report!.stepMs, 2) : null;
const cpuOf = (mode: Mode): number | null => {
  const xs = atF[mode].filter((t) => t.trained).map((t) => t.report!.stepCpuMs);
  return xs.length ? Math.min(...xs) : null;
};
const diskCpuRatioVsFused = cpuOf('fused') && cpuOf('segmented-disk') ? round(cpuOf('segmented-disk')! / cpuOf('fused')!, 2) : null;
const scratchLeftInRuns = trials.reduce((n, t) => n + (t.report?.scratchFilesLeft ?? 0), 0);
const lossesAtF = [fusedF, keepF, diskF].filter((t): t is Trial => t !== null).map((t) => t.report!.losses[0]!);
const result = {
  measured: true,
  cgroup: { version: support.version, parentDir: support.parentDir, capMB: capBytes / MiB, capFrom: `fused batch ${B} cgroup peak ${loose.cgroupPeakMB} MB × ${1 + margin}` },
  scratch: { root: scratchRoot, memoryBackedFs: scratchFs },
  modes,
  fusedMaxBatch: F,
  diskMaxBatchOverFused,
  keepMaxBatchOverFused,
  diskSlowdownVsFused,
  keepSlowdownVsFused,
  diskCpuRatioVsFused,
  sigkill: { batchSize: killBatch, outcome: killed.outcome, filesAtKill, leftAfterKill, sweptByNextStore: swept.length, leftAfterSweep },
  scratchFilesLeft: { afterRuns: scratchLeftInRuns, afterSigkillAndSweep: leftAfterSweep, inScratchRoot: leftInScratchRoot },
  goals: {
    diskMaxBatchOverFused: { target: `>= ${GOALS.diskMaxBatchOverFused}`, value: diskMaxBatchOverFused, met: diskMaxBatchOverFused >= GOALS.diskMaxBatchOverFused },
    diskSlowdownVsFused: { target: `<= ${GOALS.diskSlowdownVsFused}`, value: diskSlowdownVsFused, met: diskSlowdownVsFused !== null && diskSlowdownVsFused <= GOALS.diskSlowdownVsFused },
    zeroScratchFilesLeft: {
      target: 'no file after any run, and none after a SIGKILL inside the cap (before any sweep)',
      value: scratchLeftInRuns + leftAfterKill + leftInScratchRoot,
      met: scratchLeftInRuns === 0 && leftAfterKill === 0 && leftAfterSweep === 0 && leftInScratchRoot === 0,
    },
  },
  sameLossAtF: lossesAtF.every((l) => Math.abs(l - lossesAtF[0]!) <= 1e-5),
  trials: trials.map(({ report, ...t }) => ({ ...t, ...(report ? { stepMs: round(report.stepMs), rssPeakMB: round(report.peakRssMB) } : {}) })),
  definitions: {
    cgroupPeakMB: 'memory.max_usage_in_bytes (v1) / memory.peak (v2) of the child cgroup: anonymous memory + page cache + kernel memory it charged',
    rssPeakMB: 'RSS, for comparison only: VmHWM of the child (excludes page cache, e.g. dirty scratch-file pages)',
    maxBatch: `largest batch that completed a warm-up + ${steps} steps under the cap (doubling from ${B}, then bisection to ${resolution})`,
    diskCpuRatioVsFused: 'CPU time of a step (user + system, all threads), segmented-disk / fused, fastest children: less sensitive than wall time to other jobs on the cores, blind to I/O waits',
    diskSlowdownVsFused: `stepMs(segmented-disk) / stepMs(fused) at batch ${F}, each the fastest of ${timingRounds + 1} children under the cap (median of ${steps} steps each)`,
  },
  batch: B,
  steps,
  timingRounds,
  threads,
  spec,
  wallSeconds: round((performance.now() - t0) / 1000),
};
emit(result);
if (!json) {
  console.log(`cap ${capBytes / MiB} MiB (cgroup v${support.version}); fused batch ${B} peak ${loose.cgroupPeakMB} MB uncapped`);
  console.log(`${'mode'.padEnd(16)} ${'max batch'.padStart(9)} ${`step ms @${F}`.padStart(11)} ${`cgroup MB @${F}`.padStart(13)} ${`RSS MB @${F}`.padStart(11)} ${'cgroup MB @max'.padStart(14)}`);
  for (const m of MODES) {
    const x = modes[m];
    const a = x.atFusedMax as { stepMs?: number; cgroupPeakMB?: number | null; rssPeakMB?: number };
    console.log(
      `${m.padEnd(16)} ${String(x.maxBatch).padStart(9)} ${String(a.stepMs ?? 'n/a').padStart(11)} ${String(a.cgroupPeakMB ?? 'n/a').padStart(13)} ${String(a.rssPeakMB ?? 'n/a').padStart(11)} ${String(x.cgroupPeakMBAtMax ?? 'n/a').padStart(14)}`,
    );
  }
  for (const [k, g] of Object.entries(result.goals)) console.log(`goal ${k} ${g.target}: ${g.value} — ${g.met ? 'met' : 'NOT met'}`);
  console.log(`step CPU time (all threads) disk / fused at batch ${F}: ${diskCpuRatioVsFused}`);
  console.log(`SIGKILL at batch ${killBatch}: the child held ${filesAtKill} scratch files at the kill; ${leftAfterKill} left after it, ${leftAfterSweep} after the next store's sweep`);
  console.log(`bench wall time ${result.wallSeconds} s`);
}
