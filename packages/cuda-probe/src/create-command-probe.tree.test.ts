// Real children: a trainer behind a launcher (`bash -c`, a two-rank launcher as torchrun is one) is judged by the
// memory of its whole process tree, so it answers what the bare trainer answers, not the ceiling. Both ways of
// measuring are run: a memory cgroup around each trial, and the sum of RSS over the tree.
import { torchMissing } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { probeBatchSize } from '@soup/batch-probe';
import { describe, expect, it } from 'vitest';
import { createCommandProbe } from './create-command-probe';
import { memoryCgroupSupport } from './run-in-memory-cgroup';

const MiB = 2 ** 20;
const fixture = (name: string): string => fileURLToPath(new URL(`./_fixtures/${name}`, import.meta.url));
const nodeTrainer = fixture('proportional-trainer.cjs');
const torchTrainer = fixture('proportional_trainer.py');
const launcher = fixture('two-rank-launcher.cjs');
const torchWhy = torchMissing('/usr/bin/python3');
if (torchWhy) console.log(`skipping the torch twin: ${torchWhy}`);

/** The answer of a search over `command` (an argv with {batch_size}) under `budgetMiB`. */
async function answer(
  command: string[],
  o: { budgetMiB: number; env: Record<string, string>; memoryCgroup: 'auto' | 'off'; start: number; ceiling: number },
): Promise<{ batchSize: number; seq: string; details: string[] }> {
  const probe = createCommandProbe({
    command,
    env: { ...process.env, ...o.env, HOLD_MS: '150' },
    budgetBytes: o.budgetMiB * MiB,
    memoryCgroup: o.memoryCgroup,
    timeoutMs: 60_000,
  });
  // Doublings only (a divisor ladder, as a global batch's micro-batches are): few trials, and "within one halving"
  // is the acceptance.
  const r = await probeBatchSize(probe, { start: o.start, ceiling: o.ceiling, refine: false });
  return {
    batchSize: r.batchSize,
    seq: r.trials.map((t) => `${t.batchSize}${t.fits ? '+' : '-'}`).join(' '),
    details: r.trials.map((t) => (t as { detail?: string }).detail ?? ''),
  };
}

const cgroupWhy = memoryCgroupSupport().available ? null : 'no writable memory cgroup here';

describe('[slow] a trainer behind a launcher is judged by its whole process tree', { timeout: 120_000 }, () => {
  for (const mode of ['off', 'auto'] as const) {
    const how = mode === 'off' ? 'tree RSS' : 'cgroup';
    it.skipIf(mode === 'auto' && cgroupWhy !== null)(
      `Node twin (${how}): bash -c and a two-rank launcher answer what the bare trainer answers, within one halving`,
      { timeout: 60_000 },
      async () => {
        const o = { budgetMiB: 400, env: { MIB_PER_SAMPLE: '20' }, memoryCgroup: mode, start: 8, ceiling: 32 };
        const bare = await answer([process.execPath, nodeTrainer, '{batch_size}'], o);
        const bash = await answer(['bash', '-c', `"${process.execPath}" "${nodeTrainer}" {batch_size}; echo x`], o);
        const ranks = await answer(
          [process.execPath, launcher, '--', process.execPath, nodeTrainer, '{batch_size}'],
          o,
        );
        const all = `bare ${bare.seq}; bash ${bash.seq}; ranks ${ranks.seq}`;
        expect(bare.batchSize, all).toBeLessThan(32);
        for (const r of [bash, ranks]) {
          expect(r.batchSize, all).toBeLessThanOrEqual(bare.batchSize);
          expect(r.batchSize, all).toBeGreaterThanOrEqual(Math.floor(bare.batchSize / 2));
        }
        // Every verdict says how it measured.
        const said =
          mode === 'off'
            ? /\(tree RSS, \d+ process(es)?\)/
            : /\((cgroup|tree RSS, \d+ process(es)?, above its cgroup's .*)\)/;
        for (const d of [...bash.details, ...ranks.details].filter((x) => /peak/.test(x))) expect(d).toMatch(said);
        expect(ranks.details.join('\n'), all).toMatch(mode === 'off' ? /tree RSS, [34] processes/ : /cgroup/);
      },
    );
  }

  it.skipIf(torchWhy !== null)(
    'torch twin: bash -c and a two-rank launcher answer what the bare trainer answers, within one halving',
    { timeout: 300_000 },
    async () => {
      const o = { budgetMiB: 700, env: { MIB_PER_SAMPLE: '40' }, memoryCgroup: 'auto' as const, start: 4, ceiling: 16 };
      const py = '/usr/bin/python3';
      const bare = await answer([py, torchTrainer, '{batch_size}'], o);
      const bash = await answer(['bash', '-c', `"${py}" "${torchTrainer}" {batch_size}; echo x`], o);
      const ranks = await answer([process.execPath, launcher, '--', py, torchTrainer, '{batch_size}'], o);
      const all = `bare ${bare.seq}; bash ${bash.seq}; ranks ${ranks.seq}`;
      expect(bare.batchSize, all).toBeLessThan(16);
      for (const r of [bash, ranks]) {
        expect(r.batchSize, all).toBeLessThanOrEqual(bare.batchSize);
        expect(r.batchSize, all).toBeGreaterThanOrEqual(Math.floor(bare.batchSize / 2));
      }
    },
  );
});
