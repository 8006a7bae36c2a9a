// One tier of the grad-ckpt bench, in a fresh process (run by bench/run.ts; `node --expose-gc`).
//   mode 'step': build the onnx-train step with a tier (or an explicit recompute set), warm up,
//                time `steps` steps, and measure the steps' peak RSS above the RSS right after
//                the session was created (VmHWM reset through /proc/self/clear_refs).
//   mode 'plan': run the budget tier's planner (planBudgetTier) and print its report.
// Imports @soup/onnx-train through the workspace's node_modules (see run.ts: not a declared
// dependency of @soup/grad-ckpt, which would be a cycle).
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  defineGptSpec,
  makeSyntheticBatch,
  planBudgetTier,
  TrainStep,
  type GradientCheckpointingOption,
  type GptSpecInput,
} from '@soup/onnx-train';

interface Config {
  mode: 'step' | 'plan';
  spec: GptSpecInput;
  batchSize: number;
  threads: number;
  steps: number;
  warmup: number;
  /** mode 'step': a tier, or an explicit recompute set (the budget tier's plan). */
  tier?: GradientCheckpointingOption;
  recompute?: string[];
  /** mode 'plan' */
  memoryBudgetBytes?: number;
  /** mode 'step': also profile one step in a second session for ORT's allocator figures. */
  arenaStats?: boolean;
}

const cfg = JSON.parse(process.argv[2]!) as Config;
const MiB = 2 ** 20;
const status = (field: 'VmHWM' | 'VmRSS'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
const gc = (globalThis as { gc?: () => void }).gc ?? ((): void => {});
const spec = defineGptSpec(cfg.spec);
const batch = makeSyntheticBatch({ spec, batchSize: cfg.batchSize, seed: 1 });

if (cfg.mode === 'plan') {
  const t0 = performance.now();
  const report = await planBudgetTier({
    spec,
    batchSize: cfg.batchSize,
    memoryBudgetBytes: cfg.memoryBudgetBytes!,
    intraOpNumThreads: cfg.threads,
  });
  console.log(JSON.stringify({ ...report, planMs: performance.now() - t0 }));
} else {
  const beforeCreate = status('VmRSS');
  const step = await TrainStep.create({
    spec,
    seed: 0,
    intraOpNumThreads: cfg.threads,
    ...(cfg.tier !== undefined ? { gradientCheckpointing: cfg.tier } : { recompute: cfg.recompute ?? [] }),
  });
  gc();
  const baseline = status('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5');
  const times: number[] = [];
  let loss = Number.NaN;
  for (let i = 0; i < cfg.warmup + cfg.steps; i++) {
    const r = await step.run(batch);
    if (i >= cfg.warmup) times.push(r.totalMs);
    loss = r.loss;
    gc(); // the previous step's state arrays are garbage: do not let them count against the next step
  }
  const peak = status('VmHWM');
  const recompute = step.model.recompute;
  await step.release();
  let arena: { peakInUseMB: number; peakHeldMB: number } | null = null;
  if (cfg.arenaStats) arena = await arenaFigures(recompute);
  times.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      recompute,
      stepPeakMB: (peak - baseline) / MiB,
      stepMs: times[Math.floor(times.length / 2)],
      stepMsAll: times,
      baselineMB: baseline / MiB,
      createDeltaMB: (baseline - beforeCreate) / MiB,
      loss,
      arena,
    }),
  );
}

/** One profiled step in a fresh session: ORT's own allocator counters (bytes in use, bytes the arena holds). */
async function arenaFigures(recompute: string[]): Promise<{ peakInUseMB: number; peakHeldMB: number }> {
  const prefix = join(tmpdir(), `soup-grad-ckpt-bench-${process.pid}`);
  const step = await TrainStep.create({
    spec,
    seed: 0,
    intraOpNumThreads: cfg.threads,
    recompute,
    profileFilePrefix: prefix,
  });
  await step.run(batch);
  await step.run(batch);
  const path = step.endProfiling()!;
  await step.release();
  const events = JSON.parse(readFileSync(path, 'utf8')) as {
    cat?: string;
    name: string;
    ts: number;
    args?: Record<string, unknown>;
  }[];
  rmSync(path, { force: true });
  const runs = events.filter((e) => e.name === 'SequentialExecutor::Execute');
  const from = runs.at(-1)?.ts ?? 0;
  let inUse = 0;
  let held = 0;
  for (const e of events) {
    if (e.cat !== 'Node' || e.ts < from || !e.args) continue;
    inUse = Math.max(inUse, Number(e.args.mem_bytes_in_use ?? 0));
    held = Math.max(held, Number(e.args.mem_arena_held ?? 0));
  }
  return { peakInUseMB: inUse / MiB, peakHeldMB: held / MiB };
}
