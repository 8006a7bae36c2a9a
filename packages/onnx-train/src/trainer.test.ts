import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode, useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from './errors';
import { defineGptSpec } from './gpt-spec';
import { readSafetensors } from './read-safetensors';
import { Trainer, type TrainerOptions } from './trainer';

const corpusFile = fileURLToPath(new URL('./__fixtures__/soup.txt', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const indexTs = fileURLToPath(new URL('./index.ts', import.meta.url));

const small = defineGptSpec({ vocabSize: 256, seqLen: 32, dModel: 32, nHeads: 2, nLayers: 2 });

describe('Trainer', () => {
  it('lowers the loss of a 2-layer model on a small text by ≥ 30% within 200 steps, finite throughout', async () => {
    const trainer = await Trainer.create({
      spec: small,
      files: [corpusFile],
      batchSize: 8,
      totalSteps: 200,
      lr: 3e-3,
      warmupSteps: 10,
      seed: 1,
      intraOpNumThreads: 1,
    });
    const losses: number[] = [];
    const evalBefore = await trainer.evaluate();
    const summary = await trainer.train({ onStep: (l) => void losses.push(l.loss) });
    const evalAfter = await trainer.evaluate();
    expect(summary).toMatchObject({ step: 200, stopReason: 'horizon', tokensConsumed: 200 * 8 * 32 });
    expect(losses).toHaveLength(200);
    expect(losses.every(Number.isFinite)).toBe(true);
    const first = losses[0]!;
    const lastTen = losses.slice(-10).reduce((a, b) => a + b, 0) / 10;
    expect(first).toBeGreaterThan(5); // ≈ ln 256 at init
    expect(lastTen).toBeLessThanOrEqual(0.7 * first);
    expect(evalAfter!).toBeLessThan(evalBefore!);
    await trainer.close();
  });

  it('checkpoints every P steps through the hook, and a checkpoint of another run is refused', async () => {
    const dir = useTempDir();
    const opts: TrainerOptions = {
      spec: small,
      text: readFileSync(corpusFile, 'utf8'),
      batchSize: 2,
      totalSteps: 10,
      seed: 3,
      intraOpNumThreads: 1,
    };
    const trainer = await Trainer.create(opts);
    const pushed: number[] = [];
    const summary = await trainer.train({
      untilStep: 7,
      outputDir: dir,
      checkpointEvery: 3,
      onCheckpoint: (c) => {
        for (const f of c.files) expect(existsSync(join(c.dir, f))).toBe(true);
        pushed.push(c.step);
      },
    });
    expect(summary.stopReason).toBe('untilStep');
    expect(pushed).toEqual([3, 6, 7]); // every 3, plus the stop point
    const state = JSON.parse(readFileSync(join(dir, 'checkpoint-7', 'trainer_state.json'), 'utf8'));
    expect(state).toMatchObject({ step: 7, cursor: 14, tokens_consumed: 7 * 2 * 32, run: trainer.fingerprint });
    const model = readSafetensors(join(dir, 'checkpoint-7', 'model.safetensors'));
    expect(model.tensors.get('h.1.mlp.c_fc.weight')?.shape).toEqual([32, 128]);
    expect(model.metadata.format).toBe('pt');
    await trainer.close();

    const other = await Trainer.create({ ...opts, totalSteps: 12 });
    expect(other.fingerprint).not.toBe(trainer.fingerprint);
    const err = (() => {
      try {
        other.loadCheckpoint(join(dir, 'checkpoint-7'));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as CheckpointError).code).toBe('SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH');
    expect((err as Error).message).toContain(trainer.fingerprint);
    expect(() => other.loadCheckpoint(join(dir, 'nowhere'))).toThrow(/has no model\.safetensors/);
    await other.close();

    // Extended to 12 steps on the same schedule (10): the same run, it resumes step 7, and past 10 the rate is minLr.
    const extended = await Trainer.create({ ...opts, totalSteps: 12, scheduleSteps: 10 });
    expect(extended.fingerprint).toBe(trainer.fingerprint);
    extended.loadCheckpoint(join(dir, 'checkpoint-7'));
    const lrs: number[] = [];
    const done = await extended.train({ outputDir: dir, checkpointEvery: 5, onStep: (l) => void lrs.push(l.lr) });
    expect(done).toMatchObject({ step: 12, stopReason: 'horizon' });
    expect(lrs).toHaveLength(5); // steps 8..12
    const minLr = 3e-4 / 10; // the defaults: lr 3e-4, minLr lr / 10
    expect(lrs.slice(2)).toEqual([minLr, minLr, minLr]); // steps 10, 11, 12: from the schedule's end on
    expect(lrs[0]).toBeGreaterThan(minLr);
    const last = JSON.parse(readFileSync(join(dir, 'checkpoint-12', 'trainer_state.json'), 'utf8'));
    expect(last).toMatchObject({ global_step: 12, max_steps: 12, config: { total_steps: 10 } });
    await extended.close();
  });

  it('resumes bit-exactly in a new process: N straight = N/2, checkpoint, new process, N/2', {
    timeout: 120_000,
  }, async () => {
    const dir = useTempDir();
    const script = join(dir, 'child.mts');
    writeFileSync(
      script,
      `import { Trainer, defineGptSpec } from ${JSON.stringify(indexTs)};
const [mode, out, from] = process.argv.slice(2);
const opts = { spec: defineGptSpec(${JSON.stringify(small)}), files: [${JSON.stringify(corpusFile)}], batchSize: 4,
  totalSteps: 8, lr: 2e-3, warmupSteps: 2, seed: 9, intraOpNumThreads: 1 };
const trainer = mode === 'resume' ? await Trainer.fromCheckpoint({ ...opts, dir: from }) : await Trainer.create(opts);
const until = mode === 'half' ? 4 : 8;
const s = await trainer.train({ untilStep: until, outputDir: out });
console.log(JSON.stringify({ pid: process.pid, step: s.step, loss: s.lastLoss }));
await trainer.close();
`,
    );
    const run = async (args: string[]): Promise<{ pid: number; step: number }> => {
      const r = await runNode(['--import', 'tsx', script, ...args], { cwd: packageDir, timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { pid: number; step: number };
    };
    const straight = await run(['straight', join(dir, 'a')]);
    const half = await run(['half', join(dir, 'b')]);
    const resumed = await run(['resume', join(dir, 'c'), join(dir, 'b', 'checkpoint-4')]);
    expect([straight.step, half.step, resumed.step]).toEqual([8, 4, 8]);
    expect(new Set([straight.pid, half.pid, resumed.pid]).size).toBe(3);
    for (const f of ['model.safetensors', 'optimizer.safetensors', 'trainer_state.json']) {
      const a = readFileSync(join(dir, 'a', 'checkpoint-8', f));
      const c = readFileSync(join(dir, 'c', 'checkpoint-8', f));
      expect(a.equals(c), f).toBe(true);
    }
    // and the run really moved: step-4 parameters differ from step-8 ones
    const p4 = readFileSync(join(dir, 'b', 'checkpoint-4', 'model.safetensors'));
    expect(p4.equals(readFileSync(join(dir, 'a', 'checkpoint-8', 'model.safetensors')))).toBe(false);
  });
});
