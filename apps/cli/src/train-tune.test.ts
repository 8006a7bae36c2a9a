// gradient_checkpointing: auto is a measured choice in soup plan / soup train: every tier gets its
// largest micro-batch (a divisor of G that fits the budget) and is timed from there down; the
// choice is the fastest of soup's own table (or its tie rule), applied (recompute set and
// micro-batch), and remembered in the tune cache. At two budgets (the second binds) the choice fits again in a probe
// child of its own; its speed against an exhaustive grid is the bench's (apps/cli/bench/tune.ts: tunedOverBestRatio).
import type { TuneRow } from '@soup/tune';
import { makeTempDir, runNode } from '@soup/test-utils';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SOUP_BIN } from '../test/run-helpers';
import { loadConfig } from '@soup/config';
import { gptSpecOf, recomputeOf } from '@soup/plan';
import { createTrainStepProbe } from '@soup/cuda-probe';
import { pastItsBest } from '@soup/tune';

interface PlanJson {
  micro_batch_size: number;
  grad_ckpt: { setting: string; description: string; recompute: string[] };
  tune?: { chosen: number; reason: string; rows: TuneRow[] };
}

/** The small template with threads 1 in a fresh folder (HOME too), and its first `soup plan` at 300 MiB. */
interface Planned {
  cwd: string;
  env: NodeJS.ProcessEnv;
  yaml: string;
  first: { code: number | null; stdout: string; stderr: string };
}

describe('[slow] soup plan: gradient_checkpointing auto, measured', { timeout: 900_000 }, () => {
  // Both tests read the same first plan at 300 MiB (made with an empty tune cache, as `--no-cache` would be): the
  // measured tuning is the slow part, and running it twice on the same template proves nothing more.
  let planned: Promise<Planned> | null = null;
  const temp = makeTempDir();
  afterAll(() => temp.cleanup());
  const planAt300 = (): Promise<Planned> =>
    (planned ??= (async () => {
      const cwd = temp.dir;
      const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
      expect((await runNode([SOUP_BIN, 'init', '--template', 'small'], { cwd, env, timeoutMs: 60_000 })).code).toBe(0);
      const yaml = readFileSync(join(cwd, 'soup.yaml'), 'utf8');
      writeFileSync(join(cwd, 'soup.yaml'), yaml.replace(/^( {2}seed: .*)$/m, '$1\n  threads: 1'));
      const first = await runNode([SOUP_BIN, 'plan', '--budget', '300MiB', '--json'], { cwd, env, timeoutMs: 600_000 });
      return { cwd, env, yaml, first };
    })());

  it(
    'on the small template (threads 1, budget 300 MiB): every tier measured, the fastest applied, ' + 'remembered',
    async () => {
      const { cwd, env, yaml, first: r } = await planAt300();
      expect(yaml).toMatch(/gradient_checkpointing: auto/);
      const config = loadConfig({ path: 'soup.yaml', cwd }).config;
      expect(r.code, r.stderr).toBe(0);
      const plan = JSON.parse(r.stdout) as PlanJson;
      const tune = plan.tune!;
      expect(new Set(tune.rows.map((x) => x.values.gradient_checkpointing))).toEqual(
        new Set(['false', 'selective', 'full']),
      );
      const timed = tune.rows.filter((x) => x.samplesPerSecond !== null);
      for (const x of timed) expect(32 % x.microBatchSize!).toBe(0);
      // Each tier is timed from its largest fitting micro-batch down: at 300 MiB no checkpointing
      // does not fit 32 (431 MiB measured), full checkpointing does (205 MiB). Full is tried only
      // above what the lighter tiers fit, and not at all when one of them is slower at its largest
      // micro-batch than below it (soup's own rows show which).
      // The skip was decided on the first timings (a tie timed again at the end, with a row outside
      // the four below, may have reordered a tier's rows).
      const rowsOf = (tier: string) =>
        tune.rows
          .filter((x) => x.values.gradient_checkpointing === tier)
          .map((x) => (x.firstTiming ? { ...x, ...x.firstTiming } : x));
      const largest = (tier: string): number =>
        Math.max(...timed.filter((x) => x.values.gradient_checkpointing === tier).map((x) => x.microBatchSize!));
      expect(largest('false')).toBeLessThan(32);
      const past = ['false', 'selective'].map((t) => pastItsBest(rowsOf(t), largest(t))).find((x) => x !== null);
      const sps = (x: { samplesPerSecond: number | null }): string => x.samplesPerSecond!.toFixed(1);
      if (past) {
        expect(rowsOf('full')).toHaveLength(1);
        expect(rowsOf('full')[0]!.microBatchSize).toBeNull();
        expect(rowsOf('full')[0]!.note).toBe(
          `cannot win: ${past.top.label} is slower at ${past.top.microBatchSize} than at ` +
            `${past.below.microBatchSize} (${sps(past.top)} vs ${sps(past.below)} samples/s), ` +
            `so slower still above ${past.top.microBatchSize}, and this does more work at every micro-batch`,
        );
      } else {
        // Full is tried at 32, the one micro-batch above the lighter tiers' 16: on the CPU timed
        // before its fit, and fitted (a third probe search) only when that timing says it can win.
        expect(largest('full')).toBe(32);
        const [full] = rowsOf('full');
        expect(full!.note).toMatch(
          /timed before its fit \(on the CPU this process can hold its step: at most [\d.]+ [KMG]iB, twice gradient_checkpointing=(false|selective)'s peak at 16 scaled to 32\)/,
        );
        const searches = r.stderr.match(/^soup: probe: \d+ trials? in /gm) ?? [];
        if (full!.note!.startsWith('stopped early: cannot win')) {
          expect(full!.note).toMatch(/, so never fitted: it cannot win whether it fits or not$/);
          expect(full!.peakBytes).toBeNull();
          expect(searches, r.stderr).toHaveLength(2);
        } else expect(searches, r.stderr).toHaveLength(3);
      }
      const chosen = tune.rows[tune.chosen]!;
      const fastest = timed.reduce((a, b) => (b.samplesPerSecond! > a.samplesPerSecond! ? b : a));
      // No checkpointing and selective fit the same micro-batches here (16), so both walks open on 8
      // and 16, and those four first timings are taken side by side, in turn (or one stopped early).
      expect(largest('selective')).toBe(largest('false'));
      const start = largest('false') / 2;
      const four = [start, 2 * start].flatMap((m) =>
        ['false', 'selective'].map(
          (tier) => tune.rows.find((y) => y.values.gradient_checkpointing === tier && y.microBatchSize === m)!,
        ),
      ); // in the order timed
      for (const x of four) {
        const others = four.filter((y) => y !== x).map((y) => `${y.label} at ${y.microBatchSize}`);
        // A row a tie timed again at the end keeps its first timing's note.
        const note = x.firstTiming?.note ?? x.note;
        expect([`timed side by side with ${others.join(', ')}, alternately`, 'stopped early']).toContain(
          note!.startsWith('stopped early: cannot win') ? 'stopped early' : note,
        );
      }
      if (chosen !== fastest) {
        // The lower peak took a tie from the fastest row, and only after the two were timed side by
        // side: from the start (two of the four) or again at the end.
        expect(tune.reason).toMatch(/within the measured noise/);
        const pair = [chosen, fastest].every((x) => four.includes(x));
        if (pair)
          expect(tune.reason).toMatch(
            /the two were timed side by side from the start, alternately \(the same load on both\)/,
          );
        else for (const x of [chosen, fastest]) expect(x.note).toMatch(/^timed again, alternately with /);
      }
      // Applied: the plan's recompute set and micro-batch are the chosen ones.
      const tier = chosen.values.gradient_checkpointing!;
      expect(plan.grad_ckpt.recompute).toEqual(
        recomputeOf(config, tier === 'false' ? null : (tier as 'selective' | 'full')),
      );
      expect(plan.micro_batch_size).toBe(chosen.microBatchSize);
      expect(plan.grad_ckpt.description).toMatch(new RegExp(`^auto → ${tier === 'false' ? 'off' : tier} \\(measured`));
      // Remembered beside the batch cache, and reused without measuring.
      expect(existsSync(join(cwd, '.soup', 'tune_cache.json'))).toBe(true);
      const again = await runNode([SOUP_BIN, 'plan', '--budget', '300MiB', '--json'], { cwd, env, timeoutMs: 600_000 });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr + again.stdout).toMatch(/from the tune cache/);
      const plan2 = JSON.parse(again.stdout) as PlanJson;
      expect(plan2.micro_batch_size).toBe(chosen.microBatchSize);
      expect(plan2.grad_ckpt.recompute).toEqual(plan.grad_ckpt.recompute);
    },
  );

  // Whether the choice is also the fastest is a timing verdict, and a timing never gates CI: on the CI machine the
  // same two points read 2 % apart in the grid and 10 % apart timed again side by side, so no 5 % line holds there.
  // The speed against an exhaustive grid is bench/tune.ts's tunedOverBestRatio (`npm run bench -w @soup/cli -- --only
  // tune --train-budget 300|200`). This test keeps what rests on no clock, at two budgets: 300 MiB, and one that binds,
  // 90 % of the first choice's peak (measured again here; a peak repeats within 0.9 %) or 3 % over the lightest point's
  // where that is more, so the first choice no longer fits and the tuner must choose again within the smaller budget.
  it("at 300 MiB and at 90 % of its choice's peak, the choice fits its budget again in a probe child", async () => {
    const { cwd, env, first } = await planAt300();
    const config = loadConfig({ path: 'soup.yaml', cwd }).config;
    const spec = gptSpecOf(config);
    const MiB = 2 ** 20;
    const largestOf: number[] = [];
    const choices: string[] = [];
    let budget = 300;
    for (const round of [0, 1]) {
      const r =
        round === 0
          ? first
          : await runNode([SOUP_BIN, 'plan', '--budget', `${budget}MiB`, '--no-cache', '--json'], {
              cwd,
              env,
              timeoutMs: 600_000,
            });
      expect(r.code, r.stderr).toBe(0);
      const plan = JSON.parse(r.stdout) as PlanJson;
      const tune = plan.tune!;
      const chosen = tune.rows[tune.chosen]!;
      const tier = chosen.values.gradient_checkpointing!;
      // Applied: the plan trains the chosen tier at the chosen micro-batch.
      expect(plan.micro_batch_size).toBe(chosen.microBatchSize);
      expect(plan.grad_ckpt.recompute).toEqual(
        recomputeOf(config, tier === 'false' ? null : (tier as 'selective' | 'full')),
      );
      // Every row timed with a measured peak had it within the budget (a fit the search predicted, or a row timed
      // before its fit and stopped early, has none).
      for (const x of tune.rows.filter((y) => y.samplesPerSecond !== null && y.peakBytes !== null))
        expect(x.peakBytes!, `${x.label} at ${x.microBatchSize}`).toBeLessThanOrEqual(budget * MiB);
      largestOf[round] = Math.max(
        ...tune.rows
          .filter((x) => x.values.gradient_checkpointing === 'false' && x.samplesPerSecond !== null)
          .map((x) => x.microBatchSize!),
      );
      // The same judge again, in a new child: the chosen point fits this budget.
      const probe = createTrainStepProbe({
        device: 'cpu',
        spec,
        plan: plan.grad_ckpt.recompute,
        budgetBytes: budget * MiB,
        intraOpNumThreads: config.training.threads,
        cwd,
        env,
      });
      const again = await probe(chosen.microBatchSize!);
      expect(
        again.fits && again.peakBytes! <= budget * MiB,
        `soup chose ${tier} at ${chosen.microBatchSize} under ${budget} MiB; a probe child of its own measured ` +
          `${again.peakBytes} bytes (fits: ${again.fits})`,
      ).toBe(true);
      choices.push(`${tier}@${chosen.microBatchSize}`);
      const peak =
        chosen.peakBytes === null ? 'not measured (predicted)' : `${(chosen.peakBytes / MiB).toFixed(1)} MiB`;
      console.log(
        `${budget} MiB: soup chose ${tier}@${chosen.microBatchSize}, peak ${peak}, ` +
          `again ${(again.peakBytes! / MiB).toFixed(1)} MiB`,
      );
      if (round === 1) break;
      // 90 % of the choice's peak binds it. A choice at the smallest micro-batches (a CI run chose selective at 4,
      // 87.5 MiB) leaves no point under 90 % (full at 1: 82.6 MiB), so the budget is at least 3 % above the lightest
      // point's peak, measured in a probe child of its own (a peak repeats within 0.9 %); it must still bind the
      // choice.
      const lightest = await createTrainStepProbe({
        device: 'cpu',
        spec,
        plan: recomputeOf(config, 'full'),
        budgetBytes: budget * MiB,
        intraOpNumThreads: config.training.threads,
        cwd,
        env,
      })(1);
      expect(lightest.fits, lightest.detail).toBe(true);
      budget = Math.floor(Math.max(0.9 * again.peakBytes!, 1.03 * lightest.peakBytes!) / MiB);
      expect(budget * MiB, `full at 1: ${lightest.peakBytes} bytes; the choice: ${again.peakBytes}`).toBeLessThan(
        again.peakBytes!,
      );
    }
    // The smaller budget moved the choice, and never lets no checkpointing take a larger micro-batch.
    expect(choices[1]).not.toBe(choices[0]);
    expect(largestOf[1]).toBeLessThanOrEqual(largestOf[0]!);
  });
});
