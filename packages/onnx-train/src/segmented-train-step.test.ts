import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ActivationStore, ScratchFileMissingError } from '@soup/offload';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createTrainStep } from './create-train-step';
import { TrainInputError, TrainStepError } from './errors';
import { estimateActivationBytes } from './estimate-activation-bytes';
import { defineGptSpec, type GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { runOneStep } from './run-one-step';
import { SegmentedTrainStep, type SegmentedTrainStepOptions } from './segmented-train-step';
import { TrainStep } from './train-step';
import { Trainer } from './trainer';

const tied = defineGptSpec({ vocabSize: 16, seqLen: 6, dModel: 8, nHeads: 2, nLayers: 3, dFF: 16 });
const untied = defineGptSpec({
  vocabSize: 16,
  seqLen: 6,
  dModel: 8,
  nHeads: 2,
  nLayers: 2,
  dFF: 16,
  tieEmbeddings: false,
});
const PLAN = ['h.0', 'h.1.attn', 'h.2.mlp'];
/** Attention-core recompute (the probabilities only), alone and next to the other kinds. */
const CORE_PLAN = ['h.0.attn.core', 'h.1', 'h.2.attn.core', 'h.2.mlp'];

function maxAbsDiff(a: ReadonlyMap<string, FloatArray>, b: ReadonlyMap<string, FloatArray>): number {
  expect([...b.keys()]).toEqual([...a.keys()]);
  let worst = 0;
  for (const [name, x] of a) {
    const y = b.get(name)!;
    expect(y.length, name).toBe(x.length);
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
  }
  return worst;
}

function files(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Gradients at the start, then parameters and moments after two steps: segmented vs fused. */
async function compareWithFused(
  spec: GptSpec,
  segmented: Omit<SegmentedTrainStepOptions, 'spec'>,
): Promise<{ grad: number; state: number }> {
  const common = {
    spec,
    seed: 5,
    intraOpNumThreads: 1,
    ...(segmented.recompute ? { recompute: segmented.recompute } : {}),
    ...(segmented.dtype ? { dtype: segmented.dtype } : {}),
  };
  const fused = await TrainStep.create(common);
  const seg = await SegmentedTrainStep.create({ ...segmented, ...common });
  try {
    const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 1 });
    const gf = await fused.gradients(batch);
    const gs = await seg.gradients(batch);
    expect(gs.loss).toBeCloseTo(gf.loss, 6);
    expect(Math.abs(gs.gradNorm - gf.gradNorm)).toBeLessThanOrEqual(1e-6);
    const grad = maxAbsDiff(gf.grads, gs.grads);
    for (const [i, lr] of [
      [1, 0.01],
      [2, 0.02],
    ] as const) {
      const b = makeSyntheticBatch({ spec, batchSize: 2, seed: 10 + i });
      const rf = await fused.run(b, { lr });
      const rs = await seg.run(b, { lr });
      expect(rs.step).toBe(i);
      expect(Math.abs(rs.loss - rf.loss)).toBeLessThanOrEqual(1e-6);
      expect(Math.abs(rs.gradNorm - rf.gradNorm)).toBeLessThanOrEqual(1e-6);
    }
    const sf = fused.getState();
    const ss = seg.getState();
    expect(ss.step).toBe(2);
    const state = Math.max(maxAbsDiff(sf.parameters, ss.parameters), maxAbsDiff(sf.m, ss.m), maxAbsDiff(sf.v, ss.v));
    return { grad, state };
  } finally {
    await fused.release();
    await seg.release();
  }
}

describe('SegmentedTrainStep', () => {
  describe('gradients and AdamW updates equal the fused step (≤ 1e-6)', () => {
    const cases: [string, GptSpec, string[], 'keep' | 'cpu' | 'disk', 'float32' | 'float64'][] = [
      ['keep', tied, [], 'keep', 'float32'],
      ['keep with a plan', tied, PLAN, 'keep', 'float32'],
      ['cpu', tied, [], 'cpu', 'float32'],
      ['cpu with a plan', untied, ['h.0.mlp', 'h.1'], 'cpu', 'float32'],
      ['disk', untied, [], 'disk', 'float32'],
      ['disk with a plan', tied, PLAN, 'disk', 'float32'],
      ['keep, attention core recomputed', tied, CORE_PLAN, 'keep', 'float32'],
      ['disk, float64, attention core recomputed', untied, ['h.0.attn.core', 'h.1.attn.core'], 'disk', 'float64'],
      ['disk, float64, every block recomputed', tied, ['h.0', 'h.1', 'h.2'], 'disk', 'float64'],
    ];
    for (const [label, spec, recompute, target, dtype] of cases) {
      it(label, async () => {
        const cwd = useTempDir('soup-seg-');
        const saveDir = join(cwd, 'acts');
        const stores: ActivationStore[] = [];
        // 'cpu' is a CUDA option (the offload check refuses it on a CPU device): its store is opened directly.
        const options: Omit<SegmentedTrainStepOptions, 'spec'> =
          target === 'cpu'
            ? { openActivationStore: () => (stores.push(new ActivationStore({ target: 'cpu' })), stores.at(-1)!) }
            : { offload: { target, saveDir: target === 'disk' ? 'acts' : null, cwd } };
        const { grad, state } = await compareWithFused(spec, { ...options, recompute, dtype });
        expect(grad).toBeLessThanOrEqual(1e-6);
        expect(state).toBeLessThanOrEqual(1e-6);
        if (target === 'cpu') {
          expect(stores.length).toBeGreaterThan(3);
          expect(stores.every((s) => s.closed && s.stats.tensorsUnpacked === s.stats.tensorsPacked)).toBe(true);
          expect(stores.at(-1)!.stats.peakResidentBytes).toBeGreaterThan(0);
        }
        expect(files(saveDir)).toEqual([]);
      });
    }
  });

  it(
    "packs exactly the tensors the fused graph's modules declare, through scratch files, and leaves " + 'none',
    async () => {
      const cwd = useTempDir('soup-seg-');
      const batchSize = 4;
      for (const recompute of [[], PLAN, CORE_PLAN]) {
        const step = await SegmentedTrainStep.create({
          spec: tied,
          seed: 1,
          intraOpNumThreads: 1,
          recompute,
          offload: { target: 'disk', saveDir: 'acts', cwd },
        });
        expect(step.offload).toEqual({ target: 'disk', saveDir: join(cwd, 'acts') });
        expect(step.model.units).toEqual(['h.0.attn', 'h.0.mlp', 'h.1.attn', 'h.1.mlp', 'h.2.attn', 'h.2.mlp']);
        await step.run(makeSyntheticBatch({ spec: tied, batchSize }));
        const stats = step.lastStepStats!;
        const declared = estimateActivationBytes({ spec: tied, batchSize, recompute });
        const blocks = Object.entries(declared.byModule).filter(([m]) => /^h\.\d+$/.test(m));
        expect(stats.store.bytesPacked).toBe(blocks.reduce((n, [, b]) => n + b, 0));
        expect(stats.store.filesWritten).toBe(stats.store.tensorsPacked);
        expect(stats.store.filesDeleted).toBe(stats.store.filesWritten);
        expect(stats.store.peakResidentBytes).toBe(0);
        expect(stats.store.peakDiskBytes).toBe(stats.store.bytesPacked); // every block's tensors on disk at the turn
        expect(files(join(cwd, 'acts'))).toEqual([]);
        await step.release();
        expect(files(join(cwd, 'acts'))).toEqual([]);
      }
    },
  );

  it('deletes every scratch file when a step throws midway, and the next step runs', async () => {
    const cwd = useTempDir('soup-seg-');
    let sabotage = true;
    /** A store whose files vanish behind its back after the 5th pack (as an outside cleanup would). */
    class VanishingStore extends ActivationStore {
      override pack(tensor: Parameters<ActivationStore['pack']>[0]): ReturnType<ActivationStore['pack']> {
        const handle = super.pack(tensor);
        if (sabotage && this.stats.tensorsPacked === 5)
          for (const f of files(this.saveDir!)) rmSync(join(this.saveDir!, f));
        return handle;
      }
    }
    const opened: ActivationStore[] = [];
    const step = await SegmentedTrainStep.create({
      spec: tied,
      seed: 1,
      intraOpNumThreads: 1,
      openActivationStore: () => {
        opened.push(new VanishingStore({ target: 'disk', saveDir: 'acts', cwd }));
        return opened.at(-1)!;
      },
    });
    const batch = makeSyntheticBatch({ spec: tied, batchSize: 2 });
    const err = await step.run(batch).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrainStepError);
    expect((err as Error).message).toMatch(/segment h\.\d\.(attn|mlp) backward: the activation store could not unpack/);
    expect((err as Error).cause).toBeInstanceOf(ScratchFileMissingError);
    const failed = opened.at(-1)!;
    expect(failed.closed).toBe(true);
    expect(failed.stats.filesWritten).toBeGreaterThan(5); // the units after the sabotage still wrote theirs …
    expect(files(join(cwd, 'acts'))).toEqual([]); // … and close() deleted them
    expect(step.step).toBe(0);
    sabotage = false;
    const r = await step.run(batch);
    expect(r.step).toBe(1);
    expect(Number.isFinite(r.loss)).toBe(true);
    await step.release();
    expect(files(join(cwd, 'acts'))).toEqual([]);
  });

  it('checks the offload config with @soup/offload and fails with its messages', async () => {
    const cwd = useTempDir('soup-seg-');
    const base = { spec: tied, intraOpNumThreads: 1 };
    await expect(SegmentedTrainStep.create({ ...base, offload: { target: 'cpu', cwd } })).rejects.toThrow(
      /offload: Activation offloading requires CUDA training\. Current device: cpu\./,
    );
    await expect(SegmentedTrainStep.create({ ...base, offload: { target: 'disk', cwd } })).rejects.toThrow(
      "offload: activation_offloading='disk' requires a save_dir (scratch directory for offloaded activation tensors).",
    );
    const escaped = await SegmentedTrainStep.create({
      ...base,
      offload: { target: 'disk', saveDir: '../elsewhere', cwd },
    }).catch((e: unknown) => e);
    expect(escaped).toBeInstanceOf(TrainInputError);
    expect((escaped as Error).message).toMatch(
      /^offload: activation_offloading='disk': save_dir '\.\.\/elsewhere' resolves to .*, outside the working directory/,
    );
    await expect(SegmentedTrainStep.create({ ...base, offload: { target: 'gpu' as never } })).rejects.toThrow(
      /offload\.target must be 'keep', 'cpu' or 'disk'/,
    );
    await expect(
      createTrainStep({ ...base, execution: 'fused', offload: { target: 'disk', saveDir: 'acts', cwd } }),
    ).rejects.toThrow(/offload\.target 'disk' needs execution: 'segmented'/);
    await expect(
      SegmentedTrainStep.create({
        ...base,
        gradientCheckpointing: { tier: 'budget', memoryBudgetBytes: 2 ** 30, batchSize: 2 },
      }),
    ).rejects.toThrow(/tier 'budget' plans by measuring the fused step/);
    expect(files(cwd)).toEqual([]); // nothing was created for a refused config
  });

  it('createTrainStep picks segmented for an offload target; runOneStep runs it and leaves no file', async () => {
    const cwd = useTempDir('soup-seg-');
    const keep = await createTrainStep({ spec: tied, intraOpNumThreads: 1 });
    expect(keep).toBeInstanceOf(TrainStep);
    await keep.release();
    const disk = await createTrainStep({
      spec: tied,
      intraOpNumThreads: 1,
      offload: { target: 'disk', saveDir: 'acts', cwd },
    });
    expect(disk).toBeInstanceOf(SegmentedTrainStep);
    await disk.release();
    const fused = await runOneStep({ spec: tied, seed: 3, intraOpNumThreads: 1, batchSize: 3, steps: 2 });
    const seg = await runOneStep({
      spec: tied,
      seed: 3,
      intraOpNumThreads: 1,
      batchSize: 3,
      steps: 2,
      offload: { target: 'disk', saveDir: 'acts', cwd },
    });
    expect(Math.abs(seg.loss - fused.loss)).toBeLessThanOrEqual(1e-6);
    expect(Math.abs(seg.gradNorm - fused.gradNorm)).toBeLessThanOrEqual(1e-6);
    expect(files(join(cwd, 'acts'))).toEqual([]);
  });

  it(
    'Trainer takes execution and offload: the same losses as fused, and checkpoints that resume ' + 'across modes',
    async () => {
      const cwd = useTempDir('soup-seg-');
      const spec = defineGptSpec({ vocabSize: 256, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 2 });
      const options = {
        spec,
        text: 'soup is warm and good. '.repeat(30),
        batchSize: 2,
        totalSteps: 6,
        lr: 1e-2,
        intraOpNumThreads: 1,
      };
      const fused = await Trainer.create(options);
      const seg = await Trainer.create({
        ...options,
        execution: 'segmented',
        offload: { target: 'disk', saveDir: 'acts', cwd },
      });
      expect(seg.trainStep).toBeInstanceOf(SegmentedTrainStep);
      expect(seg.fingerprint).toBe(fused.fingerprint); // the execution mode does not change the run
      const lf: number[] = [];
      const ls: number[] = [];
      await fused.train({ untilStep: 3, onStep: (l) => void lf.push(l.loss) });
      await seg.train({ untilStep: 3, outputDir: join(cwd, 'out'), onStep: (l) => void ls.push(l.loss) });
      expect(ls.map((l, i) => Math.abs(l - lf[i]!)).every((d) => d <= 1e-6)).toBe(true);
      expect(files(join(cwd, 'acts'))).toEqual([]);
      await seg.close();
      // fused, from a segmented checkpoint
      const resumed = await Trainer.fromCheckpoint({ ...options, dir: join(cwd, 'out', 'checkpoint-3') });
      const a = await resumed.train();
      const b = await fused.train();
      expect(Math.abs(a.lastLoss! - b.lastLoss!)).toBeLessThanOrEqual(1e-6);
      await resumed.close();
      await fused.close();
    },
  );

  it(
    'keep: nothing offloaded, so the pass is one chain and no saved activation is copied out of the ' +
      "runtime (a plan's recompute still applies)",
    async () => {
      const step = await SegmentedTrainStep.create({
        spec: tied,
        seed: 2,
        intraOpNumThreads: 1,
        recompute: PLAN,
        offload: { target: 'keep' },
      });
      const fused = await TrainStep.create({ spec: tied, seed: 2, intraOpNumThreads: 1, recompute: PLAN });
      try {
        expect(step.model.segments.slice(0, 2)).toEqual(['fwd+head+bwd', 'grad-norm']);
        const batch = makeSyntheticBatch({ spec: tied, batchSize: 3, seed: 5 });
        const g = await step.gradients(batch);
        expect(step.lastStepStats!.store.tensorsPacked).toBe(0);
        expect(step.lastStepStats!.store.bytesPacked).toBe(0);
        const r = await step.run(batch, { microBatchSize: 1 });
        expect(step.lastStepStats!.store.tensorsPacked).toBe(0);
        const f = await fused.run(batch, { microBatchSize: 1 });
        expect(Math.abs(r.loss - f.loss)).toBeLessThanOrEqual(1e-6);
        expect(maxAbsDiff(step.getParameters(), fused.getParameters())).toBeLessThanOrEqual(1e-6);
        expect(g.grads.size).toBe(step.model.params.length);
      } finally {
        await step.release();
        await fused.release();
      }
    },
  );

  it('evaluates, round-trips its state and refuses use after release', async () => {
    const step = await SegmentedTrainStep.create({ spec: tied, seed: 2, intraOpNumThreads: 1 });
    const fused = await TrainStep.create({ spec: tied, seed: 2, intraOpNumThreads: 1 });
    const batch = makeSyntheticBatch({ spec: tied, batchSize: 2, seed: 4 });
    expect(await step.evaluate(batch)).toBe(await fused.evaluate(batch));
    const s0 = step.getState();
    await step.run(batch);
    step.setState(s0);
    expect(step.step).toBe(0);
    expect(maxAbsDiff(step.getParameters(), s0.parameters)).toBe(0);
    await expect(step.run({ ...batch, batchSize: 3 })).rejects.toThrow(/batchSize × seqLen = 3 × 6 = 18/);
    await step.release();
    await fused.release();
    await expect(step.run(batch)).rejects.toThrow(/released/);
  });
});
