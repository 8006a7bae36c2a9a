import { describe, expect, it } from 'vitest';
import { TrainInputError } from './errors';
import { defineGptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { resolveRecompute, type GradientCheckpointingOption } from './resolve-recompute';
import { runOneStep } from './run-one-step';
import { TrainStep } from './train-step';
import { Trainer } from './trainer';

const spec = defineGptSpec({ vocabSize: 13, seqLen: 6, dModel: 8, nHeads: 2, nLayers: 4, dFF: 16 });
const blocks = ['h.0', 'h.1', 'h.2', 'h.3'];
/** `selective`: planCheckpoint's attention modules, applied as attention-core recompute. */
const attn = ['h.0.attn.core', 'h.1.attn.core', 'h.2.attn.core', 'h.3.attn.core'];

describe('resolveRecompute', () => {
  const cases: [string, GradientCheckpointingOption, string[], string][] = [
    ['off', 'off', [], 'off'],
    ['false', false, [], 'off'],
    ['null', null, [], 'off'],
    ["''", '', [], 'off'],
    ['full', 'full', blocks, 'full (every block)'],
    ['true', true, blocks, 'full (every block)'],
    ['medium', 'medium', ['h.0', 'h.2'], 'medium (every other block)'],
    ['selective', 'selective', attn, 'selective (attention only)'],
    ['auto, unknown memory', 'auto', blocks, 'auto → full (unknown VRAM)'],
    ['auto, 16 GB', { tier: 'auto', gpuMemoryGb: 16 }, blocks, 'auto → full (VRAM 16GB)'],
    ['auto, 40 GB', { tier: 'auto', gpuMemoryGb: 40 }, ['h.0', 'h.2'], 'auto → medium (VRAM 40GB)'],
    ['auto, exactly 80 GB', { tier: 'auto', gpuMemoryGb: 80 }, ['h.0', 'h.2'], 'auto → medium (VRAM 80GB)'],
    ['auto, 192 GB', { tier: 'auto', gpuMemoryGb: 192 }, attn, 'auto → selective (VRAM 192GB)'],
    ['{tier: full}', { tier: 'full' }, blocks, 'full (every block)'],
  ];
  for (const [label, tier, recompute, description] of cases) {
    it(`${label} → [${recompute.join(', ')}]`, () => {
      const r = resolveRecompute({ spec, gradientCheckpointing: tier });
      expect(r.recompute).toEqual(recompute);
      expect(r.description).toBe(description);
      expect(r.budget).toBeNull();
    });
  }

  it('medium counts blocks across the model: 3 of 6', () => {
    const six = defineGptSpec({ ...spec, nLayers: 6 });
    expect(resolveRecompute({ spec: six, gradientCheckpointing: 'medium' }).recompute).toEqual(['h.0', 'h.2', 'h.4']);
  });

  it("keeps an explicit recompute set when no tier (or tier 'off') is given", () => {
    expect(resolveRecompute({ spec, recompute: ['h.3.mlp', 'h.1'] }).recompute).toEqual(['h.1', 'h.3.mlp']);
    expect(resolveRecompute({ spec, gradientCheckpointing: 'off', recompute: ['h.2'] })).toMatchObject({
      recompute: ['h.2'],
      description: 'recompute h.2',
    });
    expect(resolveRecompute({ spec }).recompute).toEqual([]);
  });

  it("returns the budget for tier 'budget' (planned later, by measured steps)", () => {
    const r = resolveRecompute({
      spec,
      gradientCheckpointing: { tier: 'budget', memoryBudgetBytes: 1.5 * 2 ** 30, batchSize: 4 },
    });
    expect(r).toEqual({
      recompute: [],
      granularity: null,
      description: 'budget (peak ≤ 1.50 GiB)',
      budget: { memoryBudgetBytes: 1.5 * 2 ** 30, batchSize: 4 },
    });
  });

  it('refuses unknown tiers, budgets without bytes, and a tier together with recompute, naming the field', () => {
    expect(() => resolveRecompute({ spec, gradientCheckpointing: 'sparse' })).toThrow(TrainInputError);
    expect(() => resolveRecompute({ spec, gradientCheckpointing: 'sparse' })).toThrow(
      /tier: unknown value 'sparse'; use one of off, full, medium, selective, auto, budget/,
    );
    expect(() => resolveRecompute({ spec, gradientCheckpointing: { tier: 'budget' } as never })).toThrow(
      /requires memoryBudgetBytes/,
    );
    expect(() =>
      resolveRecompute({ spec, gradientCheckpointing: { tier: 'budget', memoryBudgetBytes: 1e9, batchSize: 0 } }),
    ).toThrow(/gradientCheckpointing.batchSize/);
    expect(() => resolveRecompute({ spec, gradientCheckpointing: 'full', recompute: ['h.0'] })).toThrow(
      /either gradientCheckpointing .* or recompute/,
    );
    expect(() => resolveRecompute({ spec, gradientCheckpointing: { gpuMemoryGb: 40 } as never })).toThrow(
      /`tier` field/,
    );
  });
});

describe('gradientCheckpointing on the step', () => {
  const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 5 });
  const gradsOf = async (
    gradientCheckpointing: GradientCheckpointingOption | undefined,
  ): Promise<{ recompute: string[]; grads: Map<string, FloatArray> }> => {
    const step = await TrainStep.create({
      spec,
      seed: 3,
      intraOpNumThreads: 1,
      ...(gradientCheckpointing !== undefined ? { gradientCheckpointing } : {}),
    });
    const { grads } = await step.gradients(batch);
    const recompute = step.model.recompute;
    await step.release();
    return { recompute, grads };
  };

  it('builds each tier with its recompute set and gives the untiered gradients (≤ 1e-6)', async () => {
    const plain = await gradsOf(undefined);
    expect(plain.recompute).toEqual([]);
    const expected: [GradientCheckpointingOption, string[]][] = [
      ['full', blocks],
      ['medium', ['h.0', 'h.2']],
      ['selective', attn],
      [{ tier: 'auto', gpuMemoryGb: 40 }, ['h.0', 'h.2']],
      ['off', []],
    ];
    for (const [tier, recompute] of expected) {
      const other = await gradsOf(tier);
      expect(other.recompute, JSON.stringify(tier)).toEqual(recompute);
      let maxDiff = 0;
      for (const [name, g] of plain.grads) {
        const o = other.grads.get(name)!;
        for (let i = 0; i < g.length; i++) maxDiff = Math.max(maxDiff, Math.abs(g[i]! - o[i]!));
      }
      expect(maxDiff, JSON.stringify(tier)).toBeLessThanOrEqual(1e-6);
    }
  });

  it('Trainer and runOneStep take the tier too; TrainStep describes it', async () => {
    const trainer = await Trainer.create({
      spec: defineGptSpec({ ...spec, vocabSize: 256 }),
      text: 'soup '.repeat(80),
      batchSize: 2,
      totalSteps: 2,
      gradientCheckpointing: 'medium',
      intraOpNumThreads: 1,
    });
    expect(trainer.trainStep.model.recompute).toEqual(['h.0', 'h.2']);
    expect(trainer.trainStep.tierDescription).toBe('medium (every other block)');
    expect(trainer.trainStep.budgetReport).toBeUndefined();
    expect((await trainer.step()).loss).toBeGreaterThan(0);
    await trainer.close();
    const one = await runOneStep({ spec, batchSize: 2, gradientCheckpointing: 'selective', intraOpNumThreads: 1 });
    expect(one.recompute).toEqual(attn);
  });

  it("TrainStep.create needs the batch size for tier 'budget'", async () => {
    await expect(
      TrainStep.create({ spec, gradientCheckpointing: { tier: 'budget', memoryBudgetBytes: 2 ** 30 } }),
    ).rejects.toThrow(/pass gradientCheckpointing: \{tier: 'budget', memoryBudgetBytes, batchSize\}/);
  });
});
