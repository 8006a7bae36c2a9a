// soup train with a global batch G: sessions on "different devices" (another micro-batch), and a
// step that raises a real allocation failure (ONNX Runtime's arena under `ulimit -v`): soup steps
// the micro-batch down to the next divisor of G and relaunches its trainer from the newest complete
// checkpoint. Every run trains the same model.
import { readSafetensors } from '@soup/onnx-train';
import { runNode, runProcess, useTempDir } from '@soup/test-utils';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assetPath } from './_assets';
import type { SessionResult as RunJson } from '@soup/supervisor';
import { EXIT_CODES } from './exit-codes';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));

function configText(o: { G: number; m: number | 'auto'; steps: number; maxLength: number; dModel: number }): string {
  return `base: soup/e2e-micro
model: {vocab_size: 256, d_model: ${o.dModel}, n_heads: 2, n_layers: 2, d_ff: ${o.dModel * 2}}
data:
  train: ${assetPath('corpus/train.txt')}
  val: ${assetPath('corpus/val.txt')}
  max_length: ${o.maxLength}
training:
  steps: ${o.steps}
  batch_size: ${o.G}
  micro_batch_size: ${o.m}
  lr: 0.01
  warmup_steps: 1
  threads: 1
  val_batches: 1
`;
}

const env = (cwd: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: cwd,
  NO_COLOR: '1',
  SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
});

function runJson(stdout: string): RunJson {
  const line = stdout.split('\n').find((l) => l.startsWith('RUN_JSON '));
  if (!line) throw new Error(`no RUN_JSON line in:\n${stdout}`);
  return JSON.parse(line.slice('RUN_JSON '.length)) as RunJson;
}

function maxAbsDiff(a: string, b: string): number {
  const x = readSafetensors(a).tensors;
  const y = readSafetensors(b).tensors;
  let worst = 0;
  for (const [name, t] of x) {
    const u = y.get(name)!.data;
    for (let i = 0; i < t.data.length; i++) worst = Math.max(worst, Math.abs(Number(t.data[i]) - Number(u[i])));
  }
  return worst;
}

describe('[slow] soup train: a fixed global batch on any micro-batch', { timeout: 600_000 }, () => {
  it(
    'session 1 trains 8 × 1, session 2 (another device) 2 × 4: "micro 2 × 4 = 8 (was 8 × 1 last ' +
      'session)", the same final weights as 8 × 1 throughout',
    async () => {
      const cwd = useTempDir();
      const cfg = { G: 8, steps: 8, maxLength: 16, dModel: 32 };
      const train = (m: number, args: string[]) => {
        writeFileSync(join(cwd, 'soup.yaml'), configText({ ...cfg, m }));
        return runNode([bin, 'train', '-c', 'soup.yaml', '--push-every-steps', '4', ...args], {
          cwd,
          timeoutMs: 240_000,
          env: env(cwd),
        });
      };
      const leg1 = await train(8, ['--output-dir', 'out', '--stop-after-steps', '4']);
      expect(leg1.code, leg1.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(leg1.stdout).toContain('micro 8 × 1 = 8 (config)');
      expect(runJson(leg1.stdout)).toMatchObject({
        final_step: 4,
        batch_size: 8,
        micro_batch_size: 8,
        grad_accum: 1,
        micro_batch: '8 × 1 = 8',
      });
      rmSync(join(cwd, 'out'), { recursive: true, force: true });
      // Session 2 on a "smaller device": m is not part of the run, so the run resumes.
      const leg2 = await train(2, ['--output-dir', 'out']);
      expect(leg2.code, leg2.stderr).toBe(0);
      expect(leg2.stdout).toContain('resuming from ckpt/checkpoint-4 at step 4');
      expect(leg2.stdout).toContain('micro 2 × 4 = 8 (was 8 × 1 last session) (config)');
      const rj2 = runJson(leg2.stdout);
      expect(rj2).toMatchObject({
        final_step: 8,
        batch_size: 8,
        micro_batch_size: 2,
        grad_accum: 4,
        micro_batch: '2 × 4 = 8',
        oom_step_downs: [],
        tokens_consumed: 8 * 8 * 16,
      });
      // The run-long peak: where it happened and against what. The supervisor samples the trainer child's tree
      // (as for any trainer); the step is the one the trainer was on.
      expect(rj2.memory).toMatchObject({
        method: 'tree-rss',
        budget_source: 'reachable',
        peak_at: expect.stringMatching(/^(before the first reported step|step \d+)$/),
      });
      expect(rj2.memory!.peak_bytes!).toBeGreaterThan(10 * 2 ** 20);
      expect(rj2.memory!.headroom_bytes).toBe(rj2.memory!.budget_bytes! - rj2.memory!.peak_bytes!);
      expect(leg2.stdout).toMatch(/memory: session peak .* at (before the first reported step|step \d+)/);
      const record = JSON.parse(readFileSync(join(cwd, 'out', 'final', 'soup_run.json'), 'utf8')) as {
        sessions: unknown[];
      };
      expect(record.sessions).toEqual([
        { start_step: 1, micro_batch_size: 8, grad_accum: 1, source: 'config', oom_step_downs: [] },
        { start_step: 5, micro_batch_size: 2, grad_accum: 4, source: 'config', oom_step_downs: [] },
      ]);
      // The uninterrupted 8 × 1 run.
      const straight = await train(8, ['--output-dir', 'straight', '--repo', `file://${join(cwd, 'straight-ckpt')}`]);
      expect(straight.code, straight.stderr).toBe(0);
      expect(runJson(straight.stdout).final_loss).toBeCloseTo(rj2.final_loss!, 4);
      expect(
        maxAbsDiff(join(cwd, 'out', 'final', 'model.safetensors'), join(cwd, 'straight', 'final', 'model.safetensors')),
      ).toBeLessThanOrEqual(1e-5);
    },
  );

  it(
    'an allocation failure raised by a step (ulimit -v) steps m down to the next divisor and resumes ' +
      'from the newest checkpoint; the weights match a run at the smaller m',
    async () => {
      const cwd = useTempDir();
      // G = 1024 sequences of 128 tokens. Measured alone (VmPeak, MALLOC_ARENA_MAX=1), a run at m = 512
      // peaks at 1.93–1.97 GB of address space, one at m = 1024 at 3.0 GB: a cap of 2.45 GB sits half a
      // GB from both. MALLOC_ARENA_MAX=1 because glibc reserves 64 MiB of address space per thread arena
      // and the thread count varies with the machine's load (without it the same m = 512 run peaked at
      // 1.73 GB with 64-token sequences, where 1.5 and 1.7 GB caps each failed now and then). The failed
      // 1024 attempt leaves the process larger than a fresh one, so m may step down more than once.
      const cfg = { G: 1024, steps: 2, maxLength: 128, dModel: 32 };
      writeFileSync(join(cwd, 'soup.yaml'), configText({ ...cfg, m: 1024 }));
      const args = ['train', '-c', 'soup.yaml', '--push-every-steps', '2', '--max-memory', '1MiB'];
      const capped = await runProcess(
        '/bin/sh',
        ['-c', `ulimit -v 2450000 && exec "${process.execPath}" "${bin}" ${args.join(' ')} --output-dir out`],
        { cwd, timeoutMs: 400_000, env: { ...env(cwd), MALLOC_ARENA_MAX: '1' } },
      );
      expect(capped.code, capped.stderr).toBe(0);
      const rj = runJson(capped.stdout);
      expect(rj.oom_step_downs!.length).toBeGreaterThanOrEqual(1);
      expect(rj.oom_step_downs![0]).toMatchObject({
        step: 1,
        from: 1024,
        to: 512,
        error: expect.stringMatching(/Failed to allocate memory|std::bad_alloc/),
      });
      expect(capped.stderr + capped.stdout).toMatch(
        // The trainer is relaunched from the newest complete checkpoint (none yet: the beginning) with the smaller m.
        /out of memory at step 1 with micro 1024 × 1 = 1024 .*: resuming from the beginning \(no complete checkpoint yet\) with micro 512 × 2 = 1024/,
      );
      const m = rj.micro_batch_size!;
      expect(1024 % m).toBe(0);
      expect(rj).toMatchObject({
        final_step: 2,
        batch_size: 1024,
        grad_accum: 1024 / m,
        tokens_consumed: 2 * 1024 * 128,
      });
      // Validation ran (at most m sequences at a time) and gave a loss: the run is complete.
      expect(capped.stdout).toMatch(/validation loss \d+\.\d+ over \d+ sequences/);
      expect(rj.val_loss).toEqual(expect.any(Number));
      // --max-memory warned once, naming where.
      expect((capped.stderr.match(/peak passed --max-memory /g) ?? []).length).toBe(1);
      expect(rj.memory?.max_memory_passed_at).toEqual(expect.any(String));
      const record = JSON.parse(readFileSync(join(cwd, 'out', 'final', 'soup_run.json'), 'utf8')) as {
        sessions: { oom_step_downs: unknown[] }[];
      };
      expect(record.sessions.at(-1)!.oom_step_downs).toEqual(rj.oom_step_downs);
      // The same run at the smaller m from the start, no limit: the same weights.
      writeFileSync(join(cwd, 'soup.yaml'), configText({ ...cfg, m }));
      const plain = await runNode(
        [bin, ...args.slice(0, 5), '--output-dir', 'plain', '--repo', `file://${join(cwd, 'plain-ckpt')}`],
        { cwd, timeoutMs: 400_000, env: env(cwd) },
      );
      expect(plain.code, plain.stderr).toBe(0);
      expect(
        maxAbsDiff(join(cwd, 'out', 'final', 'model.safetensors'), join(cwd, 'plain', 'final', 'model.safetensors')),
      ).toBeLessThanOrEqual(1e-5);
    },
  );
});
