// Benchmark of @soup/batch-probe: the original halve-then-double search (refine: false) against
// the refined search, over every capacity 1..1024 (ceiling 1024, start 8), and the cache-hit
// latency of pickBatchSize, the `real` section (bench/real.ts: the Node proportional trainer under
// a real RSS budget, bisection vs predictive), and the `predictive` section (bench/predictive.ts: fake peak models
// and the real ORT CPU probe; `--no-real` skips the real part). `--json` prints one JSON object;
// the JSON also goes to bench-results/batch-probe.json.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  makeCacheKey,
  OutOfMemoryError,
  pickBatchSize,
  probeBatchSize,
  saveCacheEntry,
  type ProbeFn,
} from '../src/index';
import { predictiveSection } from './predictive';
import { realSection } from './real';

const CAPACITY_MAX = 1024;
const CEILING = 1024;
const START = 8;

interface SearchStats {
  exactRate: number;
  meanFoundOverTrue: number;
  worstFoundOverTrue: number;
  meanTrials: number;
  maxTrials: number;
}

async function searchStats(refine: boolean): Promise<SearchStats> {
  let exact = 0;
  let ratioSum = 0;
  let worst = 1;
  let trialSum = 0;
  let maxTrials = 0;
  for (let capacity = 1; capacity <= CAPACITY_MAX; capacity++) {
    const probe: ProbeFn = async (batchSize) => {
      if (batchSize > capacity) throw new OutOfMemoryError(`out of memory at ${batchSize}`);
      return { fits: true };
    };
    const { batchSize, trials } = await probeBatchSize(probe, { start: START, ceiling: CEILING, refine });
    const truth = Math.min(capacity, CEILING);
    if (batchSize === truth) exact += 1;
    ratioSum += batchSize / truth;
    worst = Math.min(worst, batchSize / truth);
    trialSum += trials.length;
    maxTrials = Math.max(maxTrials, trials.length);
  }
  return {
    exactRate: round(exact / CAPACITY_MAX, 4),
    meanFoundOverTrue: round(ratioSum / CAPACITY_MAX, 4),
    worstFoundOverTrue: round(worst, 4),
    meanTrials: round(trialSum / CAPACITY_MAX, 2),
    maxTrials,
  };
}

async function cacheTimings(): Promise<{ cacheHitMsMedian: number; cacheWriteMsMedian: number; cacheEntries: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'soup-bp-bench-'));
  try {
    const env = { SOUP_BATCH_CACHE_PATH: join(dir, 'batch_cache.json') };
    const location = { env, homeDir: dir, cwd: dir, tmpDir: dir };
    // A cache already holding one entry per capacity (1024 other configurations).
    const entries: Record<string, number> = {};
    for (let i = 1; i <= CAPACITY_MAX; i++) {
      entries[
        makeCacheKey({
          base: `model-${i}`,
          maxLength: 512,
          quantization: 'none',
          loraR: 0,
          gpuName: 'cpu',
          gpuMemoryGb: 23,
        })
      ] = i;
    }
    mkdirSync(dir, { recursive: true });
    writeFileSync(env.SOUP_BATCH_CACHE_PATH, JSON.stringify(entries, null, 2));
    const fields = {
      base: 'model-500',
      maxLength: 512,
      quantization: 'none',
      loraR: 0,
      gpuName: 'cpu',
      gpuMemoryGb: 23,
    };
    const neverCalled: ProbeFn = async () => {
      throw new Error('a cache hit must not probe');
    };
    const hit: number[] = [];
    for (let i = 0; i < 220; i++) {
      const t0 = performance.now();
      const r = await pickBatchSize({
        ...fields,
        ...location,
        staticEstimate: 8,
        strategy: 'auto',
        probe: neverCalled,
      });
      const ms = performance.now() - t0;
      if (r.source !== 'cache' || r.batchSize !== 500)
        throw new Error(`expected a cache hit of 500, got ${JSON.stringify(r)}`);
      if (i >= 20) hit.push(ms); // first 20: warm-up
    }
    const write: number[] = [];
    for (let i = 0; i < 60; i++) {
      const t0 = performance.now();
      const r = await saveCacheEntry({ ...location, key: `bench-${i}`, batchSize: i + 1 });
      if (!r.saved) throw r.error;
      if (i >= 10) write.push(performance.now() - t0);
    }
    return {
      cacheHitMsMedian: round(median(hit), 3),
      cacheWriteMsMedian: round(median(write), 3),
      cacheEntries: CAPACITY_MAX,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

const classic = await searchStats(false);
const refine = await searchStats(true);
const cache = await cacheTimings();
const predictive = await predictiveSection({ real: !process.argv.includes('--no-real') });
const repeatsAt = process.argv.indexOf('--repeats');
const real = realSection({
  skip: process.argv.includes('--no-real'),
  repeats: repeatsAt >= 0 ? Number(process.argv[repeatsAt + 1]) : 3,
});
const result = {
  capacities: `1..${CAPACITY_MAX}`,
  ceiling: CEILING,
  start: START,
  classic,
  refine,
  ...cache,
  predictive,
  real,
  targets: {
    refineExactRate: refine.exactRate === 1,
    refineMaxTrialsAtMost22: refine.maxTrials <= 2 * Math.ceil(Math.log2(CEILING)) + 2,
    cacheHitUnder2Ms: cache.cacheHitMsMedian < 2,
  },
  node: process.version,
};

const outDir = join(import.meta.dirname, '..', 'bench-results');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'batch-probe.json'), `${JSON.stringify(result, null, 2)}\n`);

if (process.argv.includes('--json')) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const row = (name: string, s: SearchStats) =>
    `| ${name} | ${(s.exactRate * 100).toFixed(1)} % | ${s.meanFoundOverTrue.toFixed(3)} | ` +
    `${s.worstFoundOverTrue.toFixed(3)} | ${s.meanTrials.toFixed(2)} | ${s.maxTrials} |`;
  console.log(`capacities 1..${CAPACITY_MAX}, start ${START}, ceiling ${CEILING}\n`);
  console.log('| search | exact | mean found/true | worst found/true | mean trials | max trials |');
  console.log('|---|---|---|---|---|---|');
  console.log(row('original (refine: false)', classic));
  console.log(row('soup (refine: true)', refine));
  console.log(`\ncache hit (pickBatchSize, ${cache.cacheEntries}-entry cache): median ${cache.cacheHitMsMedian} ms`);
  console.log(`cache write (saveCacheEntry, locked + atomic): median ${cache.cacheWriteMsMedian} ms`);
  console.log('\npredictive search vs refine (trials: median / max, exact rate)');
  console.log('| case | refine | predictive |');
  console.log('|---|---|---|');
  const cell = (s: { medianTrials: number; maxTrials: number; exactRate: number }) =>
    `${s.medianTrials} / ${s.maxTrials}, ${(s.exactRate * 100).toFixed(1)} %`;
  for (const c of predictive.cases) console.log(`| ${c.name} | ${cell(c.refine)} | ${cell(c.predictive)} |`);
  if ('cases' in predictive.real)
    for (const c of predictive.real.cases)
      console.log(`| real ${c.name} | ${cell(c.refine)} | ${cell(c.predictive)} |`);
  else console.log(`real ORT probe skipped: ${predictive.real.skipped}`);
  for (const [name, g] of Object.entries(predictive.goals))
    console.log(`goal ${name}: ${g.status} ${JSON.stringify(g)}`);
  if ('cases' in real && real.cases && real.goals) {
    console.log(`\nreal: ${real.trainer}, ${real.repeats} runs each (trials: median / max, exact rate)`);
    console.log('| case | answer | bisection | predictive |');
    console.log('|---|---|---|---|');
    for (const c of real.cases)
      console.log(`| ${c.name} | ${c.consensus} | ${cell(c.refine)} | ${cell(c.predictive)} |`);
    for (const [name, g] of Object.entries(real.goals))
      console.log(`goal real ${name}: ${g.status} ${JSON.stringify(g)}`);
  } else console.log(`real command probe skipped: ${(real as { skipped?: string }).skipped}`);
  console.log(`\nwritten to ${join('bench-results', 'batch-probe.json')}`);
}
