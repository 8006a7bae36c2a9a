// @soup/grad-ckpt bench: what each gradient-checkpointing tier really costs and saves, applied by
// @soup/onnx-train to its GPT training step, next to torch.utils.checkpoint on the PyTorch peer.
//
//   npm run bench -w @soup/grad-ckpt -- [--json] [--batch 32] [--threads 2] [--steps 6] [--warmup 2]
// [--rounds 2] [--budget-fraction 0.5] [--small-batch 2] [--no-torch] [--no-arena-stats]
//
// Needs @soup/onnx-train built (the root `npm run bench`, through turbo, builds it first). The bench declares
// what it imports in its own private workspace package, bench/package.json (@soup/grad-ckpt-bench):
// onnx-train depends on grad-ckpt, so a devDependency of grad-ckpt on onnx-train would put a cycle
// in the workspace graph. The bench is not part of the published package (files: ["dist"]).
//
// Per tier, each in a FRESH process (tier-child.ts), the onnx-train bench geometry at a batch
// where activations dominate, and again (fresh process, same method) at `--small-batch`:
//   stepPeakMB        the steps' peak RSS (VmHWM after a reset through /proc/self/clear_refs)
//                     minus the RSS right after the session was created; a V8 collection after
//                     every step keeps the previous step's state arrays out of the next one.
//                     Counts batch-independent memory too (parameter/moment inputs and their
//                     updated outputs, gradients, arena rounding).
//   peakActivationMB  the batch-dependent part of stepPeakMB, extrapolated linearly to the bench
//                     batch B from the small batch b: (stepPeak(B) − stepPeak(b)) · B / (B − b);
//                     batchIndependentMB = stepPeak(B) − peakActivationMB
//   stepMs            median step (feeds + session.run + state swap) after `warmup` steps, at B
//   memoryCutVsOff    1 − peakActivationMB / off's;  stepPeakCutVsOff  1 − stepPeakMB / off's
//   slowdownVsOff     stepMs / off's − 1
// Tiers off, selective, medium and full come from @soup/grad-ckpt via onnx-train's
// `gradientCheckpointing`; onnx-train applies `selective` as `h.<i>.attn.core` for every block (only
// the attention probabilities recomputed, q/k/v/o kept: Megatron-LM's selective recomputation).
// `selective-attn` is a variant measured beside the tiers: explicit `recompute: ['h.<i>.attn', …]`
// (the whole attention module re-run: planCheckpoint's selection taken literally). The budget tier is planned by
// `planBudgetTier` in a child of its own
// (its in-process measurements would leave allocator state behind), for a budget `--budget-fraction`
// of the way from the full to the off peak (in the planner's units: the peak above the RSS before
// the session was created), then trained with the chosen plan in a fresh child like the others.
// The PyTorch peer (Debian python3-torch, /usr/bin/python3) runs the same model eager, with every
// block under torch.utils.checkpoint(use_reentrant=False) for `full`, measured the same way, with
// OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset for the peer only and the same thread count.
// Rounds alternate the tiers (each round rotated by one); each tier keeps its fastest round's median
// step and its highest peak.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
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
const batchSize = flag('--batch', 32);
const steps = flag('--steps', 6);
const warmup = flag('--warmup', 2);
const rounds = flag('--rounds', 2);
const budgetFraction = flag('--budget-fraction', 0.5);
const smallBatch = flag('--small-batch', 2);
if (!(smallBatch >= 1 && smallBatch < batchSize))
  throw new Error(`--small-batch must be ≥ 1 and below --batch (${batchSize})`);
const torchAsked = !args.includes('--no-torch');
const arenaStats = !args.includes('--no-arena-stats');
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4, dFF: 1024 };
const MiB = 2 ** 20;
const log = (s: string): void => {
  if (!json) process.stderr.write(`${s}\n`);
};

let onnxTrainEntry: string | null = null;
try {
  onnxTrainEntry = fileURLToPath(import.meta.resolve('@soup/onnx-train'));
} catch {
  onnxTrainEntry = null;
}
if (onnxTrainEntry === null || !existsSync(onnxTrainEntry)) {
  process.stderr.write('this bench needs @soup/onnx-train built: npx turbo run build --filter=@soup/onnx-train\n');
  process.exit(1);
}

type Row = Record<string, unknown>;
function runJson(cmd: string, argv: string[], env: NodeJS.ProcessEnv): Row {
  const r = spawnSync(cmd, argv, { cwd: pkgDir, env, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv.slice(-2, -1).join(' ')} failed (${r.status ?? r.signal}): ` +
        `${(r.stderr || r.error?.message || '').slice(-2000)}`,
    );
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Row;
}
const ortChild = (cfg: Row): Row =>
  runJson(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      'tsx',
      join(here, 'tier-child.ts'),
      JSON.stringify({ spec, batchSize, threads, steps, warmup, ...cfg }),
    ],
    process.env,
  );
const attnSet = Array.from({ length: spec.nLayers }, (_, i) => `h.${i}.attn`);
const python = process.env.PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
const torchEnv = { ...process.env };
delete torchEnv.OPENBLAS_CORETYPE;
delete torchEnv.OPENBLAS_L2_SIZE;
// The peer is a comparison, not the subject: where this machine has no PyTorch, the tiers are still
// measured and the JSON says why the peer is missing.
const torchMissing = ((): string | null => {
  if (!torchAsked) return '--no-torch';
  const r = spawnSync(python, ['-c', 'import torch'], { env: torchEnv, encoding: 'utf8' });
  return r.status === 0
    ? null
    : `${python} cannot import torch (${(r.stderr || r.error?.message || '').trim().split('\n').at(-1)})`;
})();
const withTorch = torchMissing === null;
if (torchAsked && !withTorch) log(`PyTorch peer skipped: ${torchMissing}`);
const torchChild = (tier: string, b = batchSize): Row =>
  runJson(
    python,
    [join(here, 'torch_ckpt_peer.py'), JSON.stringify({ ...spec, batchSize: b, threads, steps, warmup, tier })],
    torchEnv,
  );

const fixed = ['off', 'selective', 'selective-attn', 'medium', 'full'] as const;
const runs = new Map<string, Row[]>();
const add = (k: string, r: Row): void => void runs.set(k, [...(runs.get(k) ?? []), r]);
const small = new Map<string, Row[]>();
const addSmall = (k: string, r: Row): void => void small.set(k, [...(small.get(k) ?? []), r]);
let plan: Row | null = null;
log(
  `geometry ${JSON.stringify(spec)} batch ${batchSize}, ${threads} threads, ${warmup} warm-up + ${steps}` +
    ` timed steps, ${rounds} rounds`,
);
const runTier = (tier: string, round: number): void => {
  log(
    `round ${round + 1}/${rounds}: ${tier.startsWith('torch:') ? 'PyTorch peer' : 'onnx-train'} ` +
      `${tier.replace('torch:', '')} ...`,
  );
  const which =
    tier === 'budget' ? { recompute: plan!.recompute } : tier === 'selective-attn' ? { recompute: attnSet } : { tier };
  if (tier.startsWith('torch:')) {
    add(tier, torchChild(tier.slice('torch:'.length)));
    addSmall(tier, torchChild(tier.slice('torch:'.length), smallBatch));
  } else {
    add(tier, ortChild({ mode: 'step', ...which, arenaStats: arenaStats && round === 0 }));
    addSmall(tier, ortChild({ mode: 'step', ...which, batchSize: smallBatch, steps: 3, warmup: 1 }));
  }
};
const order: string[] = [...fixed, 'budget', ...(withTorch ? ['torch:off', 'torch:full'] : [])];
for (let round = 0; round < rounds; round++) {
  // Each round starts one tier later, so a burst of load from other tenants does not always hit the same tier.
  const rotated = round === 0 ? order : [...order.slice(round % order.length), ...order.slice(0, round % order.length)];
  for (const tier of rotated) {
    if (tier === 'budget' && plan === null) {
      const act = (t: string): number => Number(runs.get(t)![0]!.stepPeakMB);
      const create = (Number(runs.get('off')![0]!.createDeltaMB) + Number(runs.get('full')![0]!.createDeltaMB)) / 2;
      const memoryBudgetBytes = Math.round((create + act('full') + budgetFraction * (act('off') - act('full'))) * MiB);
      log(`planning the budget tier for ${(memoryBudgetBytes / MiB).toFixed(0)} MiB ...`);
      plan = ortChild({ mode: 'plan', memoryBudgetBytes });
    }
    runTier(tier, round);
  }
}

const round2 = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const peakOf = (r: Row): number => Number(r.stepPeakMB ?? r.peakActivationMB);
const best = (k: string): { peak: number; smallPeak: number; act: number; stepMs: number; first: Row } => {
  const rs = runs.get(k)!;
  const peak = Math.max(...rs.map(peakOf));
  const smallPeak = Math.max(...small.get(k)!.map(peakOf));
  // stepPeak(b) = fixed + perSeq · b  ⇒  activation at B = (stepPeak(B) − stepPeak(b)) · B / (B − b)
  const act = ((peak - smallPeak) * batchSize) / (batchSize - smallBatch);
  return { peak, smallPeak, act, stepMs: Math.min(...rs.map((r) => Number(r.stepMs))), first: rs[0]! };
};
const summarize = (k: string, offKey: string): Row => {
  const b = best(k);
  const off = best(offKey);
  return {
    peakActivationMB: round2(b.act),
    stepPeakMB: round2(b.peak),
    smallBatchStepPeakMB: round2(b.smallPeak),
    batchIndependentMB: round2(b.peak - b.act),
    stepMs: round2(b.stepMs),
    memoryCutVsOff: round2(1 - b.act / off.act, 3),
    stepPeakCutVsOff: round2(1 - b.peak / off.peak, 3),
    slowdownVsOff: round2(b.stepMs / off.stepMs - 1, 3),
  };
};
const tiers: Record<string, Row> = {};
for (const t of [...fixed, 'budget']) {
  const b = best(t);
  tiers[t] = {
    ...summarize(t, 'off'),
    recompute: b.first.recompute,
    ...(b.first.arena
      ? {
          ortPeakInUseMB: round2((b.first.arena as Row).peakInUseMB as number),
          ortArenaHeldMB: round2((b.first.arena as Row).peakHeldMB as number),
        }
      : {}),
  };
}
const p = plan!;
tiers.budget = {
  ...tiers.budget,
  memoryBudgetMB: round2(Number(p.memoryBudgetBytes) / MiB),
  planPredictedPeakMB: round2(Number(p.predictedPeakBytes) / MiB),
  planMeasuredPeakMB: round2(Number(p.measuredPeakBytes) / MiB),
  planFits: p.fits,
  planOffPeakMB: round2(Number(p.offPeakBytes) / MiB),
  planFullPeakMB: round2(Number(p.fullPeakBytes) / MiB),
  planAttempts: (p.attempts as Row[]).length,
  planMs: round2(Number(p.planMs), 0),
};
const torchPeer = withTorch
  ? {
      off: summarize('torch:off', 'torch:off'),
      full: summarize('torch:full', 'torch:off'),
      torchVersion: best('torch:off').first.torchVersion,
    }
  : null;
const torch = torchPeer ?? { skipped: torchMissing };
const full = tiers.full!;
const selective = tiers.selective!;
const selectiveAttn = tiers['selective-attn']!;
const result = {
  tiers,
  torch,
  targets: {
    fullMemoryCutAtLeast: 0.6,
    fullSlowdownAtMost: 0.35,
    selectiveSlowdownAtMost: 0.1,
    fullMemoryCutMet: Number(full.memoryCutVsOff) >= 0.6,
    fullSlowdownMet: Number(full.slowdownVsOff) <= 0.35,
    selectiveSlowdownMet: Number(selective.slowdownVsOff) <= 0.1,
    selectiveAttnSlowdownMet: Number(selectiveAttn.slowdownVsOff) <= 0.1,
  },
  definitions: {
    peakActivationMB:
      `batch-dependent part of the step peak, extrapolated to batch B=${batchSize}` +
      ` from a fresh run at b=${smallBatch}: (stepPeakMB(B) − stepPeakMB(b)) · B / (B − b)`,
    stepPeakMB:
      'peak RSS during the steps minus RSS right after session creation (VmHWM reset via /proc/self/clear_refs); ' +
      'includes batch-independent state',
    memoryCutVsOff: '1 − peakActivationMB / off.peakActivationMB',
    stepPeakCutVsOff: '1 − stepPeakMB / off.stepPeakMB',
    selective:
      'tier: planCheckpoint selects h.<i>.attn; onnx-train applies h.<i>.attn.core (attention probabilities ' +
      'recomputed, q/k/v/o kept)',
    'selective-attn': 'variant: explicit recompute h.<i>.attn for every block (the whole attention module re-run)',
  },
  spec,
  batchSize,
  threads,
  steps,
  warmup,
  rounds,
  budgetFraction,
  smallBatch,
};

mkdirSync(join(pkgDir, 'bench-results'), { recursive: true });
writeFileSync(join(pkgDir, 'bench-results', 'grad-ckpt.json'), `${JSON.stringify(result, null, 2)}\n`);
if (json) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const pct = (x: unknown): string => `${(Number(x) * 100).toFixed(0)}%`;
  const line = (name: string, r: Row, extra = ''): string =>
    `${name.padEnd(26)} ${String(r.peakActivationMB).padStart(8)} ${pct(r.memoryCutVsOff).padStart(6)} ` +
    `${String(r.stepPeakMB).padStart(9)} ${pct(r.stepPeakCutVsOff).padStart(6)} ${String(r.stepMs).padStart(8)} ` +
    `${pct(r.slowdownVsOff).padStart(9)}  ${extra}`;
  console.log(
    `${'tier'.padEnd(26)} ${'act MB'.padStart(8)} ${'cut'.padStart(6)} ${'step MB'.padStart(9)} ` +
      `${'cut'.padStart(6)} ${'step ms'.padStart(8)} ${'slowdown'.padStart(9)}  recompute`,
  );
  for (const [k, r] of Object.entries(tiers))
    console.log(line(`onnx-train ${k}`, r, (r.recompute as string[]).join(',') || '-'));
  if (torchPeer)
    for (const k of ['off', 'full'] as const)
      console.log(line(`torch ${k}`, torchPeer[k], k === 'full' ? 'torch.utils.checkpoint per block' : '-'));
  else console.log(`torch peer skipped: ${torchMissing}`);
  console.log(
    `budget: ${tiers.budget!.memoryBudgetMB} MB planned → predicted ${tiers.budget!.planPredictedPeakMB}` +
      `, measured ${tiers.budget!.planMeasuredPeakMB} (fits: ${tiers.budget!.planFits})`,
  );
  console.log(
    `targets: full cut ≥ 60%: ${result.targets.fullMemoryCutMet}, full slowdown ≤ 35%: ` +
      `${result.targets.fullSlowdownMet}, selective slowdown ≤ 10%: ${result.targets.selectiveSlowdownMet}`,
  );
}
