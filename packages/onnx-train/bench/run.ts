// @soup/onnx-train bench: the same GPT training step in onnx-train (ONNX Runtime) and in eager
// PyTorch, in one run, same geometry and thread count. Each side runs in a fresh child process.
// npm run bench -w @soup/onnx-train -- [--json] [--steps 10] [--rounds 2] [--threads 2] [--batch 8] [--no-torch]
// [--profile] [--no-accum]
// Gradient accumulation: the peak and the time per sample of G = 128 as 16 × 8 over G = 16 as 16 × 1
// (accumPeakRatio, accumTimePerSampleRatio; goal ≤ 1.05 each), each in its own process, alternating.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, '..');
const args = process.argv.slice(2);
const json = args.includes('--json');
const flag = (name: string, def: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const threads = flag('--threads', 2);
const steps = flag('--steps', 10);
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4, dFF: 1024, tieEmbeddings: true };
const batchSize = flag('--batch', 8);
const log = (s: string): void => {
  if (!json) process.stderr.write(`${s}\n`);
};

function runJson(cmd: string, argv: string[], env: NodeJS.ProcessEnv): Record<string, unknown> {
  const r = spawnSync(cmd, argv, { cwd: pkgDir, env, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv[0]} failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').slice(-2000)}`,
    );
  const last = r.stdout.trim().split('\n').at(-1)!;
  return JSON.parse(last) as Record<string, unknown>;
}

const rounds = flag('--rounds', 2);
log(`geometry ${JSON.stringify(spec)} batch ${batchSize}, ${threads} threads, ${steps} timed steps per side and round`);
const python = process.env.PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
const withTorch = !args.includes('--no-torch');
// OpenBLAS tuning variables set for other tools are dropped for the peer's run only.
const torchEnv = { ...process.env };
delete torchEnv.OPENBLAS_CORETYPE;
delete torchEnv.OPENBLAS_L2_SIZE;
type Side = Record<string, unknown>;
const ortRuns: Side[] = [];
const torchRuns: Side[] = [];
// The sides alternate, `rounds` times each; each side keeps its fastest round (the machine may be shared).
for (let r = 0; r < rounds; r++) {
  log(`round ${r + 1}/${rounds}: onnx-train (ONNX Runtime) ...`);
  ortRuns.push(
    runJson(
      process.execPath,
      [
        '--import',
        'tsx',
        join(here, 'ort-child.ts'),
        JSON.stringify({ spec, batchSize, threads, steps, warmup: 2, maxSeconds: 60 }),
      ],
      process.env,
    ),
  );
  if (withTorch) {
    log(`round ${r + 1}/${rounds}: PyTorch peer (${python}) ...`);
    torchRuns.push(
      runJson(
        python,
        [
          join(here, 'torch_peer.py'),
          JSON.stringify({ ...spec, batchSize, threads, steps, warmup: 2, maxSeconds: 120 }),
        ],
        torchEnv,
      ),
    );
  }
}
const best = (runs: Side[]): Side | null => {
  if (runs.length === 0) return null;
  const fastest = runs.reduce((a, b) => (Number(a.stepMsMedian) <= Number(b.stepMsMedian) ? a : b));
  return {
    ...fastest,
    gemmGflops: Math.max(...runs.map((x) => Number(x.gemmGflops))),
    peakRssMB: Math.max(...runs.map((x) => Number(x.peakRssMB))),
  };
};
const ort = best(ortRuns)!;
const torch = best(torchRuns);
// One extra, profiled ORT run (ORT's enableProfiling: per-node kernel times) says where the time goes.
let profile: unknown = null;
if (args.includes('--profile')) {
  log('profiling onnx-train ...');
  const prefix = join(tmpdir(), `soup-onnx-train-prof-${process.pid}`);
  profile = runJson(
    process.execPath,
    [
      '--import',
      'tsx',
      join(here, 'ort-child.ts'),
      JSON.stringify({ spec, batchSize, threads, steps: 5, warmup: 2, maxSeconds: 60, profileFilePrefix: prefix }),
    ],
    process.env,
  ).profile;
}

// Gradient accumulation: same micro-batch (16), G = 16 (16 × 1) and G = 128 (16 × 8).
const ACCUM_MICRO = 16;
const ACCUM_G = 128;
let accum: Record<string, number> | null = null;
if (!args.includes('--no-accum')) {
  const single: Side[] = [];
  const accumulated: Side[] = [];
  const accumSteps = flag('--accum-steps', 3);
  for (let r = 0; r < rounds; r++) {
    log(`round ${r + 1}/${rounds}: accumulation, G = ${ACCUM_MICRO} as ${ACCUM_MICRO} × 1 ...`);
    single.push(
      runJson(
        process.execPath,
        [
          '--import',
          'tsx',
          join(here, 'ort-child.ts'),
          JSON.stringify({ spec, batchSize: ACCUM_MICRO, threads, steps: accumSteps * 4, warmup: 1, maxSeconds: 120 }),
        ],
        process.env,
      ),
    );
    log(`round ${r + 1}/${rounds}: accumulation, G = ${ACCUM_G} as ${ACCUM_MICRO} × ${ACCUM_G / ACCUM_MICRO} ...`);
    accumulated.push(
      runJson(
        process.execPath,
        [
          '--import',
          'tsx',
          join(here, 'ort-child.ts'),
          JSON.stringify({
            spec,
            batchSize: ACCUM_G,
            microBatchSize: ACCUM_MICRO,
            threads,
            steps: accumSteps,
            warmup: 1,
            maxSeconds: 240,
          }),
        ],
        process.env,
      ),
    );
  }
  // Time: each side's fastest round (a shared machine slows rounds, never speeds them); peak: each side's highest.
  const msPerSample = (runs: Side[], G: number): number => Math.min(...runs.map((x) => Number(x.stepMsMedian))) / G;
  const peak = (runs: Side[]): number => Math.max(...runs.map((x) => Number(x.peakRssMB)));
  const t1 = msPerSample(single, ACCUM_MICRO);
  const t8 = msPerSample(accumulated, ACCUM_G);
  accum = {
    accumPeakRatio: Math.round((peak(accumulated) / peak(single)) * 1000) / 1000,
    accumTimePerSampleRatio: Math.round((t8 / t1) * 1000) / 1000,
    accumPeakRssMB_16x1: Math.round(peak(single)),
    accumPeakRssMB_16x8: Math.round(peak(accumulated)),
    accumMsPerSample_16x1: Math.round(t1 * 100) / 100,
    accumMsPerSample_16x8: Math.round(t8 * 100) / 100,
  };
}

const num = (o: Side | null, k: string): number => (o ? Number(o[k]) : Number.NaN);
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const ortTps = num(ort, 'tokensPerSec');
const torchTps = num(torch, 'tokensPerSec');
const gflop = num(ort, 'modelGflopPerStep');
const result = {
  ortTokensPerSec: round(ortTps, 0),
  torchTokensPerSec: torch ? round(torchTps, 0) : null,
  ratio: torch ? round(ortTps / torchTps) : null,
  ortPeakRssMB: round(num(ort, 'peakRssMB'), 0),
  torchPeakRssMB: torch ? round(num(torch, 'peakRssMB'), 0) : null,
  mfu: round(gflop / (num(ort, 'stepMsMedian') / 1000) / num(ort, 'gemmGflops'), 3),
  // context
  ortStepMs: round(num(ort, 'stepMsMedian'), 1),
  torchStepMs: torch ? round(num(torch, 'stepMsMedian'), 1) : null,
  modelGflopPerStep: round(gflop, 2),
  ortGemmGflops: round(num(ort, 'gemmGflops'), 0),
  torchGemmGflops: torch ? round(num(torch, 'gemmGflops'), 0) : null,
  torchMfu: torch ? round(gflop / (num(torch, 'stepMsMedian') / 1000) / num(torch, 'gemmGflops'), 3) : null,
  ortBaselineRssMB: round(num(ort, 'baselineRssMB'), 0),
  torchBaselineRssMB: torch ? round(num(torch, 'baselineRssMB'), 0) : null,
  threads,
  batchSize,
  rounds,
  stepsPerRound: steps,
  spec,
  torchVersion: torch ? torch.torchVersion : null,
  ortProfile: profile,
  ...(accum ?? {}),
};

mkdirSync(join(pkgDir, 'bench-results'), { recursive: true });
writeFileSync(join(pkgDir, 'bench-results', 'onnx-train.json'), `${JSON.stringify(result, null, 2)}\n`);
if (json) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const rows: [string, string, string][] = [
    ['tokens/s', String(result.ortTokensPerSec), String(result.torchTokensPerSec ?? '-')],
    ['step ms (median)', String(result.ortStepMs), String(result.torchStepMs ?? '-')],
    ['peak RSS MB', String(result.ortPeakRssMB), String(result.torchPeakRssMB ?? '-')],
    ['baseline RSS MB', String(result.ortBaselineRssMB), String(result.torchBaselineRssMB ?? '-')],
    ['GEMM GFLOP/s (1024³)', String(result.ortGemmGflops), String(result.torchGemmGflops ?? '-')],
    ['MFU', String(result.mfu), String(result.torchMfu ?? '-')],
  ];
  console.log(`${'metric'.padEnd(22)} ${'onnx-train'.padStart(12)} ${'PyTorch'.padStart(12)}`);
  for (const [k, a, b] of rows) console.log(`${k.padEnd(22)} ${a.padStart(12)} ${b.padStart(12)}`);
  console.log(
    `ratio (onnx-train / PyTorch tokens/s): ${result.ratio ?? '-'}   model ${result.modelGflopPerStep} GFLOP/step`,
  );
  if (profile) console.log(`onnx-train profile (ms per step): ${JSON.stringify(profile)}`);
  if (accum) {
    console.log(
      `\ngradient accumulation (micro-batch ${ACCUM_MICRO})   G=${ACCUM_MICRO} (16 × 1)   G=${ACCUM_G}` +
        ` (16 × 8)   ratio (goal ≤ 1.05)`,
    );
    console.log(
      `peak RSS MB                      ${String(accum.accumPeakRssMB_16x1).padStart(14)} ` +
        `${String(accum.accumPeakRssMB_16x8).padStart(16)}   ${accum.accumPeakRatio}`,
    );
    console.log(
      `ms per sample                    ${String(accum.accumMsPerSample_16x1).padStart(14)} ` +
        `${String(accum.accumMsPerSample_16x8).padStart(16)}   ${accum.accumTimePerSampleRatio}`,
    );
  }
}
