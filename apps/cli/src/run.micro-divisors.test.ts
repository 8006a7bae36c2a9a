// The micro-batch of `soup run` and `soup probe --exec` under --global-batch-size: only divisors of
// G / world size are tried. G = 24 on a device that holds 10 answers m = 8, a = 3; G = 7 that holds 3
// answers m = 1, a = 7 with a warning. Real children: a trainer that raises V8's real allocation
// failure when m exceeds its capacity, and records the placeholders and env vars it got.
import { runNode, useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJson, runJsonOf, SOUP_BIN, soupEnv, soupRun, TINY_SAFETENSORS_JS } from '../test/run-helpers';

const TRAINER = `import { mkdirSync, writeFileSync } from 'node:fs';
const [m, a] = process.argv.slice(2, 4).map(Number);
const out = process.argv[4];
if (m > Number(process.env.CAP)) new ArrayBuffer(2 ** 44 * m); // more than the device holds: a real allocation failure
mkdirSync(out, { recursive: true });
const { SOUP_MICRO_BATCH_SIZE, SOUP_GRAD_ACCUM, SOUP_BATCH_SIZE } = process.env;
writeFileSync(out + '/result.json', JSON.stringify({ m, a, env: { SOUP_MICRO_BATCH_SIZE, SOUP_GRAD_ACCUM, SOUP_BATCH_SIZE } }));
writeFileSync(out + '/model.safetensors', ${TINY_SAFETENSORS_JS}); // the finished model soup pushes as final/
`;

function setup(cap: number): { cwd: string; env: NodeJS.ProcessEnv } {
  const cwd = useTempDir('soup-run-divisors-');
  writeFileSync(join(cwd, 'micro.mjs'), TRAINER);
  return { cwd, env: soupEnv(cwd, { CAP: String(cap) }) };
}

const PROBE = `${process.execPath} micro.mjs {micro_batch_size} {grad_accum} probe-out`;
const ARGV = [process.execPath, 'micro.mjs', '{micro_batch_size}', '{grad_accum}', '{output_dir}'];
const tried = (out: string): number[] => [...out.matchAll(/^soup:\s+batch\s+(\d+)\s/gm)].map((m) => Number(m[1]));

describe('[slow] divisors of G / world size: soup run and soup probe --exec', { timeout: 300_000 }, () => {
  it(
    'soup run: G = 24, capacity 10 → m = 8, a = 3 in {micro_batch_size} {grad_accum} ({batch_size} ' +
      'and the env vars too); G = 48 on 2 ranks → 8 × 3 × 2',
    async () => {
      const { cwd, env } = setup(10);
      const r = await soupRun(
        cwd,
        [
          '--repo',
          'file://store',
          '--global-batch-size',
          '24',
          '--budget',
          '2GiB',
          '--settle',
          '300ms',
          '--probe',
          PROBE,
        ],
        [...ARGV, '{batch_size}'],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      expect(tried(r.stdout + r.stderr).every((b) => 24 % b === 0)).toBe(true);
      expect(tried(r.stdout + r.stderr)).toContain(12);
      expect(r.stdout).toContain('micro 8 × 3 = 24 (probe)');
      expect(runJsonOf(r.stdout)).toMatchObject({
        batch_size: 24,
        micro_batch_size: 8,
        grad_accum: 3,
        micro_batch: '8 × 3 = 24',
        batch_source: 'probe',
      });
      expect(readJson(join(cwd, 'output', 'result.json'))).toEqual({
        m: 8,
        a: 3,
        env: { SOUP_MICRO_BATCH_SIZE: '8', SOUP_GRAD_ACCUM: '3', SOUP_BATCH_SIZE: '8' },
      });

      const two = setup(10);
      const r2 = await soupRun(
        two.cwd,
        [
          '--repo',
          'file://store',
          '--global-batch-size',
          '48',
          '--world-size',
          '2',
          '--budget',
          '2GiB',
          '--settle',
          '300ms',
          '--probe',
          PROBE,
        ],
        ARGV,
        two.env,
      );
      expect(r2.code, r2.stderr).toBe(0);
      expect(tried(r2.stdout + r2.stderr).every((b) => 24 % b === 0)).toBe(true);
      expect(runJsonOf(r2.stdout)).toMatchObject({
        batch_size: 48,
        micro_batch_size: 8,
        grad_accum: 3,
        micro_batch: '8 × 3 × 2 ranks = 48',
      });
    },
  );

  it('soup run: G = 7, capacity 3 → m = 1, a = 7, with a warning naming the divisor that did not fit', async () => {
    const { cwd, env } = setup(3);
    const r = await soupRun(
      cwd,
      ['--repo', 'file://store', '--global-batch-size', '7', '--budget', '2GiB', '--settle', '300ms', '--probe', PROBE],
      ARGV,
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(tried(r.stdout + r.stderr).sort()).toEqual([1, 7]);
    expect(r.stderr).toMatch(
      /micro-batch 1: no larger divisor of --global-batch-size 7 fits this device \(the next, 7, did not\), so each step accumulates 7 micro-batches of 1/,
    );
    expect(runJsonOf(r.stdout)).toMatchObject({ micro_batch_size: 1, grad_accum: 7, micro_batch: '1 × 7 = 7' });
    expect(readJson(join(cwd, 'output', 'result.json'))).toMatchObject({ m: 1, a: 7 });
  });

  it(
    'soup probe --exec answers m, never G: G = 24 capacity 10 → 8 (a = 3); G = 7 capacity 3 → 1 with ' + 'the warning',
    async () => {
      const { cwd, env } = setup(10);
      const probe = (G: number, e: NodeJS.ProcessEnv, extra: string[] = []) =>
        runNode(
          [
            SOUP_BIN,
            'probe',
            '--exec',
            PROBE,
            '--global-batch-size',
            String(G),
            '--budget',
            '2GiB',
            '--json',
            ...extra,
          ],
          { cwd, env: e, timeoutMs: 120_000 },
        );
      const r = await probe(24, env);
      expect(r.code, r.stderr).toBe(0);
      const j = JSON.parse(r.stdout) as {
        batch_size: number;
        micro_batch_size: number;
        grad_accum: number;
        global_batch_size: number;
        trials: { batch_size: number }[];
      };
      expect(j).toMatchObject({ batch_size: 8, micro_batch_size: 8, grad_accum: 3, global_batch_size: 24 });
      expect(j.trials.map((t) => t.batch_size).every((b) => 24 % b === 0)).toBe(true);
      // CAP stands for another device, which the cache key cannot see here (both are "cpu"): without --no-cache the
      // 8 found above would answer 7 (it fits, so 7 does).
      const seven = await probe(7, { ...env, CAP: '3' }, ['--no-cache']);
      expect(seven.code, seven.stderr).toBe(0);
      expect(JSON.parse(seven.stdout)).toMatchObject({ micro_batch_size: 1, grad_accum: 7 });
      expect(seven.stderr).toMatch(
        /micro-batch 1: no larger divisor of --global-batch-size 7 fits this device \(the next, 7, did not\)/,
      );
    },
  );

  it(
    '--headroom 50%: a micro-batch whose measured peak is above half the budget is refused (probe ' +
      '--exec and soup run)',
    async () => {
      const cwd = useTempDir('soup-run-headroom-');
      // A trainer holding m × 40 MiB for a moment: m = 16 peaks near 680 MiB, m = 8 near 360 MiB.
      writeFileSync(
        join(cwd, 'alloc.mjs'),
        `const b = Buffer.alloc(Number(process.argv[2]) * 40 * 1024 * 1024, 1);\nsetTimeout(() => ` +
          `console.log(b.length), 400);\n`,
      );
      const probe = `${process.execPath} alloc.mjs {micro_batch_size}`;
      const env = soupEnv(cwd);
      const exec = (extra: string[]) =>
        runNode(
          [
            SOUP_BIN,
            'probe',
            '--exec',
            probe,
            '--global-batch-size',
            '16',
            '--budget',
            '1000MiB',
            '--no-cache',
            '--json',
            ...extra,
          ],
          { cwd, env, timeoutMs: 120_000 },
        );
      const plain = await exec([]);
      expect(plain.code, plain.stderr).toBe(0);
      expect(JSON.parse(plain.stdout)).toMatchObject({ micro_batch_size: 16, grad_accum: 1 });
      const held = await exec(['--headroom', '50%']);
      expect(held.code, held.stderr).toBe(0);
      const j = JSON.parse(held.stdout) as {
        micro_batch_size: number;
        trials: { batch_size: number; result: string; detail: string | null }[];
      };
      expect(j.micro_batch_size).toBe(8);
      expect(j.trials.find((t) => t.batch_size === 16)).toMatchObject({
        result: 'not-fit',
        detail: expect.stringMatching(/above 50 % of the budget .*\(headroom 50 %\)/),
      });
      const run = await soupRun(
        cwd,
        [
          '--repo',
          'file://store',
          '--global-batch-size',
          '16',
          '--budget',
          '1000MiB',
          '--headroom',
          '50%',
          '--no-cache',
          '--settle',
          '300ms',
          '--probe',
          probe,
        ],
        [
          process.execPath,
          '-e',
          'require("fs").mkdirSync(process.argv[1], {recursive: true}); require("fs").writeFileSync(process.argv[1] ' +
            `+ "/model.safetensors", ${TINY_SAFETENSORS_JS})`,
          '{output_dir}',
        ],
        env,
      );
      expect(run.code, run.stderr).toBe(0);
      expect(runJsonOf(run.stdout)).toMatchObject({ micro_batch_size: 8, grad_accum: 2 });
    },
  );

  it('no divisor fits: says so, naming the largest size that fit (refused only by --headroom), exit 7', async () => {
    const cwd = useTempDir('soup-run-headroom-');
    writeFileSync(
      join(cwd, 'alloc.mjs'),
      `const b = Buffer.alloc(Number(process.argv[2]) * 40 * 1024 * 1024, 1);\nsetTimeout(() => ` +
        `console.log(b.length), 400);\n`,
    );
    const r = await runNode(
      [
        SOUP_BIN,
        'probe',
        '--exec',
        `${process.execPath} alloc.mjs {micro_batch_size}`,
        '--global-batch-size',
        '12',
        '--budget',
        '1000MiB',
        '--headroom',
        '95%',
        '--no-cache',
      ],
      { cwd, env: soupEnv(cwd), timeoutMs: 120_000 },
    );
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(
      /No divisor of --global-batch-size 12 fits with its headroom \(tried 12, 6, 3, 1\): the largest size that fit is 12, refused because peak [\d]+ bytes is above 5 % of the budget 1048576000 \(headroom 95 %\)/,
    );
  });

  it('usage errors name the flag and the fix (exit 2, nothing launched)', async () => {
    const { cwd, env } = setup(10);
    const cases: Array<[string[], string[], RegExp]> = [
      [['--batch-size', '4'], ARGV, /uses \{micro_batch_size\}: pass --global-batch-size G/],
      [
        ['--global-batch-size', '24', '--batch-size', '4', '--probe', PROBE],
        ARGV,
        /--batch-size and --global-batch-size together/,
      ],
      [
        ['--global-batch-size', '25', '--world-size', '2', '--probe', PROBE],
        ARGV,
        /--global-batch-size 25 is not a multiple of --world-size 2: .*pick G = 26/,
      ],
      [['--global-batch-size', '24'], ARGV, /--global-batch-size needs --probe/],
      [
        ['--batch-size', '4', '--headroom', '10%'],
        [process.execPath, 'micro.mjs', '{batch_size}'],
        /--headroom applies to the micro-batch probe: pass --global-batch-size G/,
      ],
      [['--global-batch-size', '24', '--headroom', '100%', '--probe', PROBE], ARGV, /--headroom.*below 100%/],
    ];
    for (const [options, argv, message] of cases) {
      const r = await soupRun(cwd, ['--repo', 'file://store', ...options], argv, env, 60_000);
      expect(r.code, `${options.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).not.toContain('launched trainer');
    }
  });
});
