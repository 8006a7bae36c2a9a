// @soup/offload bench: what activation offloading buys under a HARD memory cap.
//   npm run bench -w @soup/offload -- [--json] [--batch 16] [--steps 2] [--threads 2] [--margin 0.15]
//                                      [--scratch-dir DIR] [--max-batch 256] [--timing-rounds 3] [--timing-steps 5]
//
// Every child runs inside a memory cgroup (@soup/cuda-probe's runInMemoryCgroup): the cap counts
// anonymous memory AND page cache, as a GPU's memory counts every allocation. RSS is not memory:
// a tensor written to a file leaves the resident set but not the cgroup until its pages are written
// back and reclaimed.
//
// 1. The cap, by one fixed rule: two fused steps at batch --batch (B) run in uncapped cgroups;
//    cap = the larger of their two cgroup peaks × (1 + --margin), rounded up to 4 MiB. (The larger:
//    a child is charged for the shared libraries' page cache only when nobody else holds those
//    pages, so one reading can come out tens of MB low; with a margin of 0.08 the fused step at B
//    peaked at the cap and was OOM-killed in one timing child of five.) So the fused step fits B,
//    and not much more.
// 2. Largest batch that trains under the cap, for fused, segmented-keep and segmented-disk:
//    doubling from B, then bisection to a resolution of B/4 (a batch "trains" when the child
//    completes its warm-up and --steps steps; the OOM killer answers the others). The fused one,
//    F, is confirmed with --timing-steps steps (lowered until it trains them).
// 3. Step time of every mode at F, the fused step's largest batch, under the same cap:
//    --timing-rounds rounds, each one child per mode (the order rotating from round to round), each
//    child a warm-up + --timing-steps timed steps whose MEDIAN is its step time. Per round the
//    ratios keep / fused and disk / fused; the headline is the median of the rounds' ratios, printed
//    with their spread (min–max) and every round's figures. Never the fastest trial.
// 4. Scratch files: every disk child must leave none; then a disk child is SIGKILLed inside the
//    cap while it holds scratch files, and none may be left (anonymous files need no sweep; the
//    next store's sweep is run anyway and counted).
// Goals: diskMaxBatchOverFused ≥ 3; keepSlowdownVsFused ≤ 1.3 and diskSlowdownVsFused ≤ 2.0 at F
// (medians); zero scratch files left. The load average before and after is recorded: the ratios
// are only as good as the machine is quiet.
// Where no cgroup can be made the bench prints "not measured" and why; it never falls back to RSS.
//
// Imports: this package must not depend on @soup/onnx-train or @soup/cuda-probe (both depend on
// it), so the bench declares them in its own private workspace package, bench/package.json
// (@soup/offload-bench). The root `npm run bench`, through turbo, builds them first.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryCgroupSupport } from '@soup/cuda-probe';
import { memoryBackedFs } from '../src/_fs-type';
import { createCappedTrials, type Trial } from './_capped-trials';
import { MODES, MiB, median, round, type Mode } from './_numbers';
import { printSummary } from './_print';
import { killInsideCap } from './_sigkill';
import { summarizeModes } from './_summary';

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
const margin = flag('--margin', 0.15);
const maxBatch = flag('--max-batch', 256);
const timingRounds = flag('--timing-rounds', 3);
const timingSteps = flag('--timing-steps', 5);
if (!(timingSteps >= 5))
  throw new Error(
    `--timing-steps must be at least 5 (got ${timingSteps}): a step time is the median of at least 5 timed steps`,
  );
if (!(timingRounds >= 1)) throw new Error(`--timing-rounds must be at least 1 (got ${timingRounds})`);
const resolution = Math.max(1, Math.floor(B / 4));
const GOALS = { diskMaxBatchOverFused: 3, keepSlowdownVsFused: 1.3, diskSlowdownVsFused: 2.0 } as const;
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
if (scratchFs)
  log(
    `WARNING: --scratch-dir ${scratchRoot} is on ${scratchFs}: scratch files stay in RAM there; pick a ` +
      `disk-backed folder`,
  );
const { trials, runCapped, trial, largestBatch } = createCappedTrials({
  here,
  scratchRoot,
  spec,
  threads,
  steps,
  B,
  maxBatch,
  resolution,
  log,
});

const t0 = performance.now();
const loadAvg = (): number[] => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
const loadBefore = loadAvg();
log(
  `geometry ${JSON.stringify(spec)}, ${threads} threads; cgroup v${support.version} under ${support.parentDir}` +
    `; load average ${loadBefore.join(' ')}`,
);
log(`scratch folder ${scratchRoot} (${scratchFs ?? 'disk-backed'})`);

// 1. The cap, by the fixed rule: the larger of two uncapped fused peaks at B, × (1 + margin).
const calibration: number[] = [];
for (let i = 0; i < 2; i++) {
  const loose = await trial('fused', B, 16 * 1024 * MiB);
  trials.pop(); // the uncapped calibration runs are not trials under the cap
  if (!loose.trained || loose.cgroupPeakMB === null)
    throw new Error(`the fused step at batch ${B} did not train without a cap: ${loose.outcome}`);
  calibration.push(loose.cgroupPeakMB);
}
const calibrationPeakMB = Math.max(...calibration);
const capBytes = Math.ceil((calibrationPeakMB * (1 + margin)) / 4) * 4 * MiB;
const capRule =
  `cap = max of 2 uncapped fused cgroup peaks at batch ${B} (${calibration.join(', ')} MB) × ` +
  `${1 + margin}, rounded up to 4 MiB`;
log(`cap: ${capBytes / MiB} MiB (${capRule})`);

// 2. Largest batch per mode.
const largest = {} as Record<Mode, { batchSize: number; firstFailing: number | null }>;
for (const mode of MODES) {
  log(`largest batch under the cap: ${mode}`);
  largest[mode] = await largestBatch(mode, capBytes);
}
// The fused step's largest batch is where every mode is timed, with --timing-steps steps: it must
// train that many. A batch that passed the search (warm-up + --steps) can still be OOM-killed over
// more steps (measured: batch 20 trained 2 steps under a 380 MiB cap, then was killed in all six
// timing children of 5 steps). So F is confirmed by one fused child of --timing-steps steps, and
// lowered by the search's resolution until one trains; every lowering is recorded.
const fusedLowered: { batchSize: number; outcome: string }[] = [];
let F = largest.fused.batchSize;
for (;;) {
  const c = await trial('fused', F, capBytes, timingSteps);
  if (c.trained || F - resolution < 1) break;
  fusedLowered.push({ batchSize: F, outcome: c.outcome });
  log(`  the fused step does not train ${timingSteps} steps at batch ${F} (${c.outcome}): F := ${F - resolution}`);
  F -= resolution;
}
largest.fused = {
  batchSize: F,
  firstFailing: fusedLowered.length ? fusedLowered.at(-1)!.batchSize : largest.fused.firstFailing,
};

// 3. Step time of every mode at F: rounds of one child per mode, the order rotating; each child's
// step time is the median of its timed steps; per round, the ratios to the round's fused child.
log(
  `step time at the fused step's largest batch ${F}: ${timingRounds} rounds × ${MODES.length} modes, each the ` +
    `median of ${timingSteps} steps after a warm-up`,
);
const timing: Trial[] = [];
interface Round {
  round: number;
  order: Mode[];
  stepMs: Partial<Record<Mode, number>>;
  stepTimesMs: Partial<Record<Mode, number[]>>;
  keepSlowdownVsFused: number | null;
  diskSlowdownVsFused: number | null;
}
const rounds: Round[] = [];
const oomRetries: { round: number; mode: Mode; batchSize: number }[] = [];
for (let r = 0; r < timingRounds; r++) {
  const order = MODES.map((_, i) => MODES[(i + r) % MODES.length]!);
  const got = {} as Partial<Record<Mode, Trial>>;
  for (const mode of order) {
    let t = await trial(mode, F, capBytes, timingSteps);
    // F trained in the search, so an OOM kill here is the edge of the cap, not a verdict: the child
    // is run once more (no time is picked: a killed child has none) and the kill is recorded.
    if (t.outcome === 'oom-killed') {
      oomRetries.push({ round: r + 1, mode, batchSize: F });
      t = await trial(mode, F, capBytes, timingSteps);
    }
    timing.push(t);
    got[mode] = t;
  }
  const ms = (m: Mode): number | null => (got[m]?.report ? got[m]!.report!.stepMs : null);
  const ratio = (m: Mode): number | null =>
    ms(m) !== null && ms('fused') !== null ? round(ms(m)! / ms('fused')!, 2) : null;
  rounds.push({
    round: r + 1,
    order,
    stepMs: Object.fromEntries(MODES.flatMap((m) => (ms(m) === null ? [] : [[m, round(ms(m)!)]]))),
    stepTimesMs: Object.fromEntries(
      MODES.flatMap((m) => (got[m]?.report ? [[m, got[m]!.report!.stepTimesMs.map((x) => round(x))]] : [])),
    ),
    keepSlowdownVsFused: ratio('segmented-keep'),
    diskSlowdownVsFused: ratio('segmented-disk'),
  });
  log(`  round ${r + 1}: keep / fused ${ratio('segmented-keep')}, disk / fused ${ratio('segmented-disk')}`);
}
/** Median and spread (min–max) of the rounds' values; null where a round has none (a child failed). */
const across = (
  pick: (r: Round) => number | null,
): { median: number | null; min: number | null; max: number | null; perRound: (number | null)[] } => {
  const perRound = rounds.map(pick);
  const xs = perRound.filter((x): x is number => x !== null);
  const complete = xs.length === rounds.length;
  return {
    median: complete ? round(median(xs)!, 2) : null,
    min: xs.length ? Math.min(...xs) : null,
    max: xs.length ? Math.max(...xs) : null,
    perRound,
  };
};

// 3b. The disk step at its own largest batch, where the cgroup sits at the cap and the kernel
// drops the flushed scratch pages (page cache counts): the reads come from the disk, not from the
// page cache. One child, the median of its timed steps; time per sample beside the one at F.
// Like F, the disk step's largest batch must train --timing-steps steps: lowered until it does.
const diskLowered: { batchSize: number; outcome: string }[] = [];
let diskMax = largest['segmented-disk'].batchSize;
let atDiskMax: Trial | null = null;
while (diskMax > F) {
  atDiskMax = await trial('segmented-disk', diskMax, capBytes, timingSteps);
  if (atDiskMax.trained) break;
  diskLowered.push({ batchSize: diskMax, outcome: atDiskMax.outcome });
  diskMax -= resolution;
}
if (diskLowered.length) largest['segmented-disk'] = { batchSize: diskMax, firstFailing: diskLowered.at(-1)!.batchSize };
if (atDiskMax) timing.push(atDiskMax);

// 4. SIGKILL inside the cap while scratch files exist. The step's files are anonymous by default
// (O_TMPFILE: no name in the save dir), so the bench counts what the child holds through
// /proc/<pid>/fd — named files and anonymous ones alike — and kills it once it holds four.
log('SIGKILL inside the cap: a disk child killed while it holds scratch files');
const killBatch = largest['segmented-disk'].batchSize || F;
const { killed, filesAtKill, leftAfterKill, swept, leftAfterSweep, leftInScratchRoot } = await killInsideCap({
  runCapped,
  killBatch,
  capBytes,
  steps,
  scratchRoot,
});

// Summary.
const { modes, timedAt } = summarizeModes({ trials, timing, largest, F, timingRounds });
const diskMaxBatchOverFused = round(modes['segmented-disk'].maxBatch / F, 2);
const keepMaxBatchOverFused = round(modes['segmented-keep'].maxBatch / F, 2);
const keepAcross = across((r) => r.keepSlowdownVsFused);
const diskAcross = across((r) => r.diskSlowdownVsFused);
const diskSlowdownVsFused = diskAcross.median;
const keepSlowdownVsFused = keepAcross.median;
const cpuOf = (mode: Mode): number | null => median(timedAt(mode).map((t) => t.report!.stepCpuMs));
const diskCpuRatioVsFused =
  cpuOf('fused') && cpuOf('segmented-disk') ? round(cpuOf('segmented-disk')! / cpuOf('fused')!, 2) : null;
const keepCpuRatioVsFused =
  cpuOf('fused') && cpuOf('segmented-keep') ? round(cpuOf('segmented-keep')! / cpuOf('fused')!, 2) : null;
const scratchLeftInRuns = trials.reduce((n, t) => n + (t.report?.scratchFilesLeft ?? 0), 0);
const lossesAtF = timing.filter((t) => t.batchSize === F && t.trained).map((t) => t.report!.losses[0]!);
const loadAfter = loadAvg();
const result = {
  measured: true,
  cgroup: {
    version: support.version,
    parentDir: support.parentDir,
    capMB: capBytes / MiB,
    capRule,
    calibrationPeaksMB: calibration,
  },
  scratch: { root: scratchRoot, memoryBackedFs: scratchFs },
  loadAverage: { before: loadBefore, after: loadAfter },
  modes,
  fusedMaxBatch: F,
  fusedMaxBatchLowered: fusedLowered,
  diskMaxBatchLowered: diskLowered,
  diskMaxBatchOverFused,
  keepMaxBatchOverFused,
  keepSlowdownVsFused,
  diskSlowdownVsFused,
  slowdownSpread: { keep: keepAcross, disk: diskAcross },
  rounds,
  oomRetries,
  keepCpuRatioVsFused,
  diskCpuRatioVsFused,
  diskAtMaxBatch: atDiskMax?.report
    ? {
        batchSize: diskMax,
        stepMs: round(atDiskMax.report.stepMs),
        stepTimesMs: atDiskMax.report.stepTimesMs.map((x) => round(x)),
        msPerSample: round(atDiskMax.report.stepMs / diskMax, 1),
        msPerSampleAtFusedMax:
          'stepMs' in modes['segmented-disk'].atFusedMax
            ? round(modes['segmented-disk'].atFusedMax.stepMs / F, 1)
            : null,
        packMs: round(atDiskMax.report.packMs ?? Number.NaN),
        unpackMs: round(atDiskMax.report.unpackMs ?? Number.NaN),
        packedMB: round(atDiskMax.report.packedMB ?? Number.NaN),
        cgroupPeakMB: atDiskMax.cgroupPeakMB,
      }
    : {
        batchSize: diskMax,
        outcome: atDiskMax?.outcome ?? 'not run (the disk step trains no batch above the fused one)',
      },
  sigkill: {
    batchSize: killBatch,
    outcome: killed.outcome,
    filesAtKill,
    leftAfterKill,
    sweptByNextStore: swept.length,
    leftAfterSweep,
  },
  scratchFilesLeft: {
    afterRuns: scratchLeftInRuns,
    afterSigkillAndSweep: leftAfterSweep,
    inScratchRoot: leftInScratchRoot,
  },
  goals: {
    diskMaxBatchOverFused: {
      target: `>= ${GOALS.diskMaxBatchOverFused}`,
      value: diskMaxBatchOverFused,
      met: diskMaxBatchOverFused >= GOALS.diskMaxBatchOverFused,
    },
    keepSlowdownVsFused: {
      target: `<= ${GOALS.keepSlowdownVsFused} (median of ${timingRounds} rounds)`,
      value: keepSlowdownVsFused,
      met: keepSlowdownVsFused !== null && keepSlowdownVsFused <= GOALS.keepSlowdownVsFused,
    },
    diskSlowdownVsFused: {
      target: `<= ${GOALS.diskSlowdownVsFused} (median of ${timingRounds} rounds)`,
      value: diskSlowdownVsFused,
      met: diskSlowdownVsFused !== null && diskSlowdownVsFused <= GOALS.diskSlowdownVsFused,
    },
    zeroScratchFilesLeft: {
      target: 'no file after any run, and none after a SIGKILL inside the cap (before any sweep)',
      value: scratchLeftInRuns + leftAfterKill + leftInScratchRoot,
      met: scratchLeftInRuns === 0 && leftAfterKill === 0 && leftAfterSweep === 0 && leftInScratchRoot === 0,
    },
  },
  sameLossAtF: lossesAtF.length > 0 && lossesAtF.every((l) => Math.abs(l - lossesAtF[0]!) <= 1e-5),
  trials: trials.map(({ report, ...t }) => ({
    ...t,
    ...(report ? { stepMs: round(report.stepMs), rssPeakMB: round(report.peakRssMB) } : {}),
  })),
  definitions: {
    cgroupPeakMB:
      'memory.max_usage_in_bytes (v1) / memory.peak (v2) of the child cgroup: anonymous memory + page cache + ' +
      'kernel memory it charged',
    rssPeakMB: 'RSS, for comparison only: VmHWM of the child (excludes page cache, e.g. dirty scratch-file pages)',
    maxBatch:
      `largest batch that completed a warm-up + ${steps} steps under the cap (doubling from ${B}` +
      `, then bisection to ${resolution}); for fused, confirmed with ${timingSteps} steps (lowered by ${resolution}` +
      ` until it trains); for segmented-disk, the child timed at its largest batch runs ${timingSteps} steps`,
    stepMs:
      `wall time of one training step (forward, backward, optimizer): the median of a child's ${timingSteps}` +
      ` timed steps after a warm-up step`,
    slowdownVsFused:
      `stepMs(mode) / stepMs(fused) at batch ${F} (the fused step's largest batch under the cap), ` +
      `computed per round from that round's children (one per mode, same cap, run back to back); the headline is ` +
      `the median of the ${timingRounds} rounds' ratios, spread = min–max of them`,
    cpuRatioVsFused:
      'CPU time of a step (user + system, all threads), mode / fused, medians: less sensitive than wall time to ' +
      'other jobs on the cores, blind to I/O waits',
  },
  batch: B,
  steps,
  timingRounds,
  timingSteps,
  threads,
  spec,
  wallSeconds: round((performance.now() - t0) / 1000),
};
emit(result);
if (!json) printSummary(result);
