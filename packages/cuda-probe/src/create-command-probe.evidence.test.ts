// Real children: a kill is out-of-memory only with evidence (a flaky trainer never shrinks the
// answer), and an out-of-memory line on exit 0 is "unknown" at that size: never a fit, never cached as one.
// Each scenario runs against a Node trainer (always) and its torch twin where torch imports
// under /usr/bin/python3.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pickBatchSize, probeBatchSize } from '@soup/batch-probe';
import { useTempDir, torchMissing } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createCommandProbe } from './create-command-probe';
import { ProbeChildError } from './errors';

const MiB = 2 ** 20;
const nodeTrainer = fileURLToPath(new URL('./_fixtures/proportional-trainer.cjs', import.meta.url));
const torchTrainer = fileURLToPath(new URL('./_fixtures/proportional_trainer.py', import.meta.url));
const torchWhy = torchMissing('/usr/bin/python3');
if (torchWhy) console.log(`skipping the torch twins: ${torchWhy}`);

const trainers = [
  { name: 'node', argv: [process.execPath, nodeTrainer, '{batch_size}'], skip: null as string | null },
  { name: 'torch', argv: ['/usr/bin/python3', torchTrainer, '{batch_size}'], skip: torchWhy },
];

describe('[slow] a kill is out of memory only with evidence (real children)', { timeout: 300_000 }, () => {
  for (const t of trainers) {
    it.skipIf(t.skip !== null)(
      `${t.name}: a trainer that kills itself every other run still gets the true answer (retried once per kill)`,
      async () => {
        const dir = useTempDir();
        const env = { ...process.env, EDGE: '37', MIB_PER_SAMPLE: '1', FLAKY: join(dir, 'counter') };
        const probe = createCommandProbe({ command: t.argv, env, timeoutMs: 60_000 });
        const r = await probeBatchSize(probe, { start: 8, ceiling: 64, predict: true });
        expect(r.batchSize).toBe(37);
        expect(r.bound).toBe('exact');
        expect(r.trials.every((x) => x.fits === x.batchSize <= 37)).toBe(true);
      },
    );

    it.skipIf(t.skip !== null)(
      `${t.name}: killed by SIGKILL with a small peak, under --budget 2GiB: "killed by signal 9 (not memory)" ` +
        `after one retry, never "does not fit"`,
      async () => {
        const env = { ...process.env, KILL_AT: '20', MIB_PER_SAMPLE: '1' };
        const probe = createCommandProbe({ command: t.argv, env, timeoutMs: 60_000, budgetBytes: 2 * 2 ** 30 });
        expect(await probe(8)).toMatchObject({ fits: true });
        const err = await probe(24).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ProbeChildError);
        expect((err as Error).message).toMatch(/killed by signal 9 \(not memory\), twice/);
        const search = await probeBatchSize(probe, { start: 8, ceiling: 64 }).catch((e: unknown) => e);
        expect(search).toBeInstanceOf(ProbeChildError);
      },
    );
  }

  it(
    'node: a kill whose peak reached 90 % of the budget is out of memory (killed), and its peak is ' + 'censored',
    async () => {
      const budget = 300 * MiB;
      const env = { ...process.env, FRACTION_OF: String(budget), FRACTION: '0.97' };
      const probe = createCommandProbe({
        command: [process.execPath, nodeTrainer, '{batch_size}'],
        env,
        timeoutMs: 60_000,
        budgetBytes: budget,
      });
      const o = await probe(4);
      expect(o, o.detail).toMatchObject({ fits: false, reason: 'killed', censored: true });
      expect(o.detail).toMatch(/out of memory \(its peak reached \d+ % of the budget\)/);
    },
  );
});

describe('[slow] an out-of-memory line on exit 0 (a trainer that skips the batch) (real children)', {
  timeout: 300_000,
}, () => {
  for (const t of trainers) {
    it.skipIf(t.skip !== null)(
      `${t.name}: the trial is unknown at that size, taken as not fitting and never cached as a fit`,
      async () => {
        const dir = useTempDir();
        const env = { ...process.env, EDGE: '20', OOM_TEXT_AT: '12', MIB_PER_SAMPLE: '1' };
        const probe = createCommandProbe({ command: t.argv, env, timeoutMs: 60_000 });
        const o = await probe(16);
        expect(o).toMatchObject({ fits: false, unknown: true, reason: 'oom' });
        expect(o.detail).toMatch(
          /printed an out-of-memory error \(torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB/,
        );
        expect(o.detail).toMatch(/unknown at this size.*taken as not fitting, for safety/);
        const location = {
          env: { SOUP_BATCH_CACHE_PATH: join(dir, 'cache.json') },
          homeDir: dir,
          cwd: dir,
          tmpDir: dir,
        };
        const r = await pickBatchSize({
          ...location,
          base: 'exec:test',
          maxLength: 512,
          quantization: 'none',
          loraR: 0,
          gpuName: 'cpu',
          gpuMemoryGb: 23,
          staticEstimate: 8,
          ceiling: 64,
          strategy: 'probe',
          probe,
          saveExceptionsOnly: true,
        });
        // The edge is the last size that printed nothing, not the trainer's own EDGE above it.
        expect(r.batchSize).toBe(11);
        const cached = Object.values(JSON.parse(readFileSync(join(dir, 'cache.json'), 'utf8')) as object);
        expect(cached).toEqual([11]);
      },
    );
  }
});
