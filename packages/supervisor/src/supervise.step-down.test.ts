// supervise() with a global batch, driven directly: a real trainer process that saves a checkpoint
// every step and, from step 3 on, dies with an out-of-memory line when m exceeds its capacity. The
// judge and the divisors are injected (as soup run injects @soup/cuda-probe's and @soup/batch-probe's).
import { DirStore } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRunRecord } from './run-identity';
import { supervise, type SuperviseEvent, type SuperviseOptions } from './supervise';
import { ONE_BYTE_SAFETENSORS_JS } from './_test-trainer-js';

// argv: out m a resume_from. Trains 6 steps; a checkpoint (a one-byte safetensors model) each step; OOM text when
// m > CAP from step 3 on.
const TRAINER = `
const fs = require('node:fs'), path = require('node:path');
${ONE_BYTE_SAFETENSORS_JS}
const [out, m, a, resume] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3]), process.argv[4] || ''];
let step = resume ? JSON.parse(fs.readFileSync(path.join(resume, 'trainer_state.json'), 'utf8')).global_step : 0;
console.log('trainer: m ' + m + ' a ' + a + (resume ? ' resumed at step ' + step : ' fresh'));
while (step < 6) {
  if (step + 1 >= 3 && m > Number(process.env.CAP)) {
    console.error(process.env.FAIL === 'other' ? 'ValueError: bad shape' : 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB');
    process.exit(1);
  }
  step += 1;
  console.log('step ' + step);
  const d = path.join(out, 'checkpoint-' + step);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'model.safetensors'), st(step));
  fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: step, max_steps: 6, m, a }));
}
fs.writeFileSync(path.join(out, 'model.safetensors'), st(9));
`;

const divisorsBelow = (G: number, m: number): number | null => {
  for (let d = m - 1; d >= 1; d--) if (G % d === 0) return d;
  return null;
};

function options(
  cwd: string,
  env: NodeJS.ProcessEnv,
  extra: Partial<SuperviseOptions>,
  events: SuperviseEvent[],
): SuperviseOptions {
  return {
    argv: [process.execPath, '-e', TRAINER, '{output_dir}', '{micro_batch_size}', '{grad_accum}', '{resume_from}'],
    store: new DirStore({ root: join(cwd, 'store') }),
    outputDir: join(cwd, 'out'),
    cwd,
    env: { ...process.env, ...env },
    signal: new AbortController().signal,
    settleMs: 200,
    pollMs: 50,
    pushNice: 0,
    leaseTtlMs: null,
    globalBatchSize: 16,
    resolveMicroBatchSize: async () => ({ microBatchSize: 16, source: 'test' }),
    judgeOutOfMemory: (exit) => exit.stderrTail.find((l) => /out of memory/i.test(l)) ?? null,
    nextMicroBatchSize: (m) => divisorsBelow(16, m),
    onEvent: (e) => events.push(e),
    ...extra,
  };
}

describe('[slow] supervise(): a mid-run out-of-memory steps the micro-batch down', { timeout: 120_000 }, () => {
  it(
    '16 → 8 → 4 (capacity 4) in one session, each resumed from the newest checkpoint; recorded; told ' +
      'to onOomStepDown',
    async () => {
      const cwd = useTempDir('soup-supervise-stepdown-');
      const events: SuperviseEvent[] = [];
      const told: number[] = [];
      const r = await supervise(options(cwd, { CAP: '4' }, { onOomStepDown: (s) => void told.push(s.to) }, events));
      expect(r).toMatchObject({ outcome: 'complete', microBatchSize: 4, gradAccum: 4, globalBatchSize: 16 });
      expect(r.oomStepDowns.map((s) => [s.step, s.from, s.to])).toEqual([
        [2, 16, 8],
        [2, 8, 4],
      ]);
      expect(r.oomStepDowns[0]!.error).toBe('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB');
      expect(told).toEqual([8, 4]);
      const lines = events.map((e) => e.line).join('\n');
      expect(lines).toMatch(
        /out of memory at step 2 with micro 16 × 1 = 16 .*resuming from out\/checkpoint-2 \(step 2\) with micro 8 × 2 = 16 \(step-down 1 of at most 3\)/,
      );
      expect(lines).toMatch(/launched trainer .* 4 4 .*checkpoint-2/);
      const record = await readRunRecord(new DirStore({ root: join(cwd, 'store') }));
      expect(record?.sessions?.[0]).toMatchObject({
        micro_batch_size: 4,
        grad_accum: 4,
        source: 'test',
        oom_step_downs: [
          { from: 16, to: 8 },
          { from: 8, to: 4 },
        ],
      });
    },
  );

  it(
    'no retry left (--max-oom-retries 1 with capacity 4), or a failure that is not out of memory: the ' +
      'trainer fails as before, with what it pushed',
    async () => {
      const cwd = useTempDir('soup-supervise-stepdown-');
      const events: SuperviseEvent[] = [];
      const r = await supervise(options(cwd, { CAP: '4' }, { maxOomRetries: 1 }, events));
      expect(r).toMatchObject({ outcome: 'trainer-failed', exitCode: 1, microBatchSize: 8 });
      expect(r.oomStepDowns).toHaveLength(1);
      expect(
        events
          .filter((e) => e.level === 'warn')
          .map((e) => e.line)
          .join('\n'),
      ).toMatch(/ran out of memory with micro 8 × 2 = 16 .*--max-oom-retries 1 step-down already made this session/);

      const other = useTempDir('soup-supervise-stepdown-');
      const r2 = await supervise(options(other, { CAP: '4', FAIL: 'other' }, {}, []));
      expect(r2).toMatchObject({ outcome: 'trainer-failed', exitCode: 1, microBatchSize: 16, oomStepDowns: [] });
    },
  );
});
