// Bench: what `soup run` costs a trainer. The Node example trainer (examples/node-trainer, a GPT on
// @soup/onnx-train, 1 thread) writes ~64 MiB checkpoints (weights + AdamW moments) every few steps;
// it runs alone, then under `soup run` pushing each checkpoint (hash → copy → verify → pointer) to a
// directory store in the background, in the order A B B A. runOverheadRatio = median step time under
// soup run / median step time alone (the trainer times each step itself, saves excluded).
// Prints a table, or ONE JSON object with --json; writes bench-results/cli.json. Goal: ≤ 1.10.
// Then the tuner against the exhaustive grid (bench/tune.ts): tunedOverBestRatio (goal ≥ 0.95) and
// tuneCostRatio (goal ≤ 0.35), for `soup probe --exec --try` and for `soup plan` (gradient_checkpointing:
// auto). `--only tune` runs just that part, `--only run` just the first. `--runs N` runs the tuner
// part N times (each ratio then the median of its runs, every run listed). `--train-budget MiB` sets the train
// mode's budget (300 by default; 200 is the other budget the CLI's train-tune test checks the choice's fit at).
// `--soup <bin/soup.js>` measures another soup's tuner (another commit's) against this bench's grid and budgets.
import { makeTempDir, runNode, runProcess } from '@soup/test-utils';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { median } from './_median';
import { benchExec, benchTrain, TORCH_SQ_TWIN, type TuneBenchRow, useSoupBin } from './tune';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const json = process.argv.includes('--json');
/** The value after `--name` on the command line, or null when the flag is not given. */
const flagValue = (name: string): string | null =>
  process.argv.includes(name) ? (process.argv[process.argv.indexOf(name) + 1] ?? null) : null;
const only = flagValue('--only');
const runsArg = flagValue('--runs') ?? '1';
const runs = Number(runsArg);
if (!Number.isInteger(runs) || runs < 1)
  throw new Error(`--runs must be a whole number of runs, 1 or more (got ${runsArg})`);
if (only !== null && only !== 'tune' && only !== 'run') throw new Error(`--only must be tune or run (got ${only})`);
const trainBudgetArg = flagValue('--train-budget') ?? '300';
const trainBudgetMiB = Number(trainBudgetArg);
if (!Number.isInteger(trainBudgetMiB) || trainBudgetMiB < 1)
  throw new Error(`--train-budget must be a whole number of MiB (got ${trainBudgetArg})`);
// The tuner's modes: the Node twin (exec), soup's own step (train), and where torch imports the PyTorch twin whose
// throughput is not monotone in m (exec-torch-sq). `--modes a,b` runs only those.
type Mode = TuneBenchRow['mode'];
const torchImports = spawnSync('/usr/bin/python3', ['-c', 'import torch']).status === 0;
const modesArg = flagValue('--modes');
const MODES: Mode[] = (['exec', 'train', 'exec-torch-sq'] as Mode[]).filter(
  (m) => (modesArg === null || modesArg.split(',').includes(m)) && (m !== 'exec-torch-sq' || torchImports),
);
if (modesArg !== null && !torchImports && modesArg.includes('exec-torch-sq'))
  process.stderr.write('exec-torch-sq skipped: torch does not import under /usr/bin/python3\n');
const soupArg = flagValue('--soup');
if (soupArg !== null) useSoupBin(resolve(soupArg));
const GOAL = 1.1;
const STEPS = 20;
const SAVE_EVERY = 5;
const log = (line: string): void => {
  if (!json) process.stdout.write(`${line}\n`);
};
const soupBin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const trainer = fileURLToPath(new URL('../../../examples/node-trainer/train.mjs', import.meta.url));

function stepTimes(stdout: string): number[] {
  return [...stdout.matchAll(/^step (\d+) loss \S+ ms ([\d.]+)$/gm)].map((m) => Number(m[2]));
}

let runResult: Record<string, unknown> = {};
if (only !== 'tune') {
  const tmp = makeTempDir('soup-cli-bench-');
  try {
    const argv = (out: string): string[] => [
      trainer,
      '--output_dir',
      out,
      '--per_device_train_batch_size',
      '2',
      '--max_steps',
      String(STEPS),
      '--save_steps',
      String(SAVE_EVERY),
      '--d_model',
      '256',
      '--n_layers',
      '7',
    ];
    const alone: number[] = [];
    const supervised: number[] = [];
    const watchOnly: number[] = [];
    let pushes = 0;
    let checkpointMiB = 0;
    // Three cycles, each mode once per cycle in a rotated order, so a load swing on this shared machine
    // hits every mode alike.
    const modes = ['alone', 'soup', 'watch-only'] as const;
    const order = [0, 1, 2].flatMap((c) => [0, 1, 2].map((k) => modes[(c + k) % 3]!));
    for (const [i, mode] of order.entries()) {
      const cwd = join(tmp.dir, `round-${i}`);
      mkdirSync(cwd);
      const t0 = performance.now();
      if (mode === 'alone') {
        const r = await runProcess(process.execPath, argv(join(cwd, 'out')), { cwd, timeoutMs: 600_000 });
        if (r.code !== 0) throw new Error(`bench: trainer alone failed: ${r.stderr.slice(-2000)}`);
        alone.push(...stepTimes(r.stdout));
      } else {
        const r = await runNode(
          [
            soupBin,
            'run',
            '--repo',
            'file://store',
            '--output-dir',
            'out',
            '--settle',
            '1s',
            '--poll',
            '250ms',
            '--keep-remote',
            '2',
            // watch-only: the same supervisor (watcher, pipes, signals) with a glob that matches nothing, so no push.
            ...(mode === 'watch-only' ? ['--checkpoint-glob', 'no-such-*'] : []),
            '--',
            process.execPath,
            ...argv('{output_dir}'),
          ],
          { cwd, timeoutMs: 600_000, env: { ...process.env, HOME: cwd, NO_COLOR: '1' } },
        );
        if (r.code !== 0) throw new Error(`bench: soup run failed (${r.code}): ${r.stderr.slice(-2000)}`);
        (mode === 'soup' ? supervised : watchOnly).push(...stepTimes(r.stdout));
        if (mode === 'soup') pushes += (r.stdout.match(/soup: pushed ckpt\//g) ?? []).length;
        const dir = join(cwd, 'out', `checkpoint-${SAVE_EVERY}`);
        if (mode === 'soup')
          checkpointMiB = readdirSync(dir).reduce((a, f) => a + statSync(join(dir, f)).size, 0) / 2 ** 20;
      }
      log(`round ${i + 1}/${order.length} (${mode}): ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    const aloneMs = median(alone);
    const soupMs = median(supervised);
    const ratio = soupMs / aloneMs;
    const watchMs = median(watchOnly);
    const result = {
      runOverheadRatio: Number(ratio.toFixed(4)),
      goal: GOAL,
      met: ratio <= GOAL,
      verdict: ratio <= GOAL ? 'met' : 'not met',
      stepMsAlone: Number(aloneMs.toFixed(2)),
      stepMsUnderSoupRun: Number(soupMs.toFixed(2)),
      watchOnlyRatio: Number((watchMs / aloneMs).toFixed(4)),
      loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
      cpus: cpus().length,
      stepsMeasured: { alone: alone.length, soupRun: supervised.length },
      checkpointMiB: Number(checkpointMiB.toFixed(1)),
      backgroundPushes: pushes,
      store: 'directory (file://)',
      note:
        'median trainer step time (saves excluded); alone / pushing / watch-only three rotated cycles (A P W, ' +
        'P W A, W A P) in one run; the pushes run in the soup process (reniced) beside the trainer',
    };
    runResult = result;
    if (!json) {
      log('');
      log(`metric              value`);
      log(`step ms alone       ${result.stepMsAlone}`);
      log(
        `step ms soup run    ${result.stepMsUnderSoupRun}  (${pushes} background pushes of ${result.checkpointMiB}` +
          ` MiB checkpoints)`,
      );
      log(`watchOnlyRatio      ${result.watchOnlyRatio}  (supervised, nothing pushed)`);
      log(`load average        ${result.loadAverage1m} on ${result.cpus} CPUs`);
      log(`runOverheadRatio    ${result.runOverheadRatio}  goal <= ${GOAL}: ${result.met ? 'met' : 'not met'}`);
    }
  } finally {
    tmp.cleanup();
  }
}

// The tuner against the exhaustive grid.
let tuneResult: Record<string, unknown> = {};
if (only !== 'run') {
  const rows: TuneBenchRow[] = [];
  // --runs N: N runs of each mode, the modes in turn (exec, train, exec, …), so that a load swing
  // on this shared machine falls on both alike. Each ratio is reported as the median of its runs,
  // with every run's value beside it.
  for (let run = 1; run <= runs; run++) {
    for (const mode of MODES) {
      const t = makeTempDir(`soup-cli-tune-${mode}-`);
      try {
        const row =
          mode === 'train'
            ? await benchTrain(t.dir, trainBudgetMiB)
            : await benchExec(t.dir, 8, mode === 'exec' ? undefined : TORCH_SQ_TWIN);
        rows.push(row);
        log(
          `tune ${mode}${runs > 1 ? ` (run ${run}/${runs})` : ''}: soup chose ${row.choice}, grid best ` +
            `${row.gridBest}; tunedOverBestRatio ${row.tunedOverBestRatio} (goal >= 0.95), ` +
            `tuneCostRatio ${row.tuneCostRatio} (${row.tuneSeconds} s / ${row.gridSeconds} s; goal <= 0.35)`,
        );
        for (const line of row.tunerTable) log(`  ${line}`);
      } finally {
        t.cleanup();
      }
    }
  }
  const each = (key: 'tunedOverBestRatio' | 'tuneCostRatio') =>
    Object.fromEntries(MODES.map((m) => [m, rows.filter((r) => r.mode === m).map((r) => r[key])]));
  const byMode = (key: 'tunedOverBestRatio' | 'tuneCostRatio') =>
    Object.fromEntries(Object.entries(each(key)).map(([m, xs]) => [m, Number(median(xs).toFixed(3))]));
  const goal = (key: 'tunedOverBestRatio' | 'tuneCostRatio', ok: (x: number) => boolean, target: string) => ({
    target,
    met: Object.values(byMode(key)).every(ok),
    runsMeeting: `${rows.filter((r) => ok(r[key])).length} of ${rows.length}`,
  });
  tuneResult = {
    // The median of the runs of each mode (one run: its value).
    tunedOverBestRatio: byMode('tunedOverBestRatio'),
    tuneCostRatio: byMode('tuneCostRatio'),
    tuneRuns: runs,
    trainBudgetMiB,
    tuneEachRun: { tunedOverBestRatio: each('tunedOverBestRatio'), tuneCostRatio: each('tuneCostRatio') },
    tuneGoals: {
      tunedOverBestRatio: goal('tunedOverBestRatio', (x) => x >= 0.95, '>= 0.95 (the median of the runs)'),
      tuneCostRatio: goal('tuneCostRatio', (x) => x <= 0.35, '<= 0.35 (the median of the runs)'),
    },
    tune: rows,
    tuneLoadAverage1m: Number(loadavg()[0]!.toFixed(2)),
  };
  if (runs > 1) {
    log('');
    log('mode   tunedOverBestRatio (median; each run)        tuneCostRatio (median; each run)');
    for (const m of MODES) {
      const fmt = (key: 'tunedOverBestRatio' | 'tuneCostRatio'): string =>
        `${byMode(key)[m]} (${each(key)[m]!.join(', ')})`;
      log(`${m.padEnd(6)} ${fmt('tunedOverBestRatio').padEnd(44)} ${fmt('tuneCostRatio')}`);
    }
  }
}
const all = { ...runResult, ...tuneResult };
mkdirSync(new URL('../bench-results/', import.meta.url), { recursive: true });
writeFileSync(new URL('../bench-results/cli.json', import.meta.url), `${JSON.stringify(all, null, 2)}\n`);
if (json) process.stdout.write(`${JSON.stringify(all)}\n`);
