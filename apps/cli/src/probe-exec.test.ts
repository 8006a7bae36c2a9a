// soup probe --exec through the real bin: the trainer's own error shown, and the cache's
// provenance (budget, ceiling, what judged the answer) honoured and listed.
import { runNode, useTempDir } from '@soup/test-utils';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));

function soup(args: string[], cwd: string) {
  return runNode([bin, ...args], {
    cwd,
    timeoutMs: 180_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') },
  });
}

interface ProbeJson {
  batch_size: number;
  source: string;
  cache_key: string;
  saved: boolean | null;
  skipped_cache?: string;
  capped_from?: number;
  provenance: { budgetBytes: number | null; ceiling: number; bound: string; measurement: string } | null;
  trials: { batch_size: number; result: string; measurement: string | null }[];
}

describe('[slow] soup probe --exec', { timeout: 300_000 }, () => {
  it(
    "shows the last 20 lines of the trainer's stderr when a trial fails for a reason other than " +
      'memory, without SOUP_DEBUG',
    async () => {
      const cwd = useTempDir();
      writeFileSync(
        join(cwd, 'trainer.mjs'),
        `for (let i = 1; i <= 30; i++) console.error('log line ' + i);
console.error('hint: lower the batch if you run out of memory');
console.error('Traceback (most recent call last):\\n  File "train.py", line 3, in <module>\\n    row["text"]\\nKeyError: \\'text\\'');
process.exit(1);
`,
      );
      const r = await soup(
        ['probe', '--exec', `${process.execPath} trainer.mjs {batch_size}`, '--start', '4', '--no-cache'],
        cwd,
      );
      expect(r.code).not.toBe(0);
      expect(r.code).not.toBe(7); // not "nothing fits": the trainer crashed
      expect(r.stderr).toContain("--- last 20 lines of the trial's stderr ---");
      expect(r.stderr).toContain('log line 16\n');
      expect(r.stderr).not.toContain('log line 15\n');
      expect(r.stderr).toMatch(
        /hint: lower the batch if you run out of memory\nTraceback[\s\S]*KeyError: 'text'\nsoup: ---\n/,
      );
      expect(r.stderr.trim().split('\n').pop()).toMatch(
        /^soup: command .* for batch_size=4 failed \(exit code 1\): KeyError: 'text'/,
      );
    },
  );

  it(
    'caches with provenance; a stricter --budget does not take the cached answer; --refresh probes ' +
      'again; cache ls shows the fields',
    async () => {
      const cwd = useTempDir();
      // A "trainer" that holds batch_size × 32 MiB for a moment.
      writeFileSync(
        join(cwd, 'alloc.mjs'),
        `const b = Buffer.alloc(Number(process.argv[2]) * 32 * 1024 * 1024, 1);\nsetTimeout(() => ` +
          `console.log(b.length), 300);\n`,
      );
      const cmd = `${process.execPath} alloc.mjs {batch_size}`;
      const first = await soup(
        ['probe', '--exec', cmd, '--budget', '420MiB', '--start', '4', '--ceiling', '64', '--json'],
        cwd,
      );
      expect(first.code, first.stderr).toBe(0);
      const r1 = JSON.parse(first.stdout) as ProbeJson;
      expect(r1).toMatchObject({
        source: 'probe',
        saved: true,
        provenance: { budgetBytes: 420 * 2 ** 20, ceiling: 64, bound: 'exact', measurement: 'sampled-rss' },
      });
      expect(r1.trials.every((t) => t.measurement === 'sampled-rss')).toBe(true);
      expect(Object.values(JSON.parse(readFileSync(join(cwd, 'cache.json'), 'utf8')) as object)).toEqual([
        r1.batch_size,
      ]);

      const again = JSON.parse(
        (await soup(['probe', '--exec', cmd, '--budget', '420MiB', '--start', '4', '--ceiling', '64', '--json'], cwd))
          .stdout,
      ) as ProbeJson;
      expect(again).toMatchObject({ source: 'cache', batch_size: r1.batch_size, trials: [] });
      // Under a lower ceiling the exact answer says the ceiling fits: no trial, and the cache keeps the exact answer.
      const lower = await soup(['probe', '--exec', cmd, '--budget', '420MiB', '--start', '2', '--ceiling', '4'], cwd);
      expect(lower.code, lower.stderr).toBe(0);
      expect(lower.stdout).toContain(`batch size 4 (from the cache, key ${r1.cache_key}; exact,`);
      expect(lower.stdout).toContain(`; its ${r1.batch_size} fits, so the ceiling does; --refresh to probe again)`);
      expect(lower.stderr).not.toMatch(/trial/);
      expect(Object.values(JSON.parse(readFileSync(join(cwd, 'cache.json'), 'utf8')) as object)).toEqual([
        r1.batch_size,
      ]);

      const strict = await soup(
        ['probe', '--exec', cmd, '--budget', '200MiB', '--start', '4', '--ceiling', '64', '--json'],
        cwd,
      );
      expect(strict.code, strict.stderr).toBe(0);
      const r2 = JSON.parse(strict.stdout) as ProbeJson;
      expect(r2.source).toBe('probe');
      expect(r2.skipped_cache).toMatch(/looser than/);
      expect(r2.batch_size).toBeLessThan(r1.batch_size);

      const refreshed = JSON.parse(
        (
          await soup(
            ['probe', '--exec', cmd, '--budget', '200MiB', '--start', '4', '--ceiling', '64', '--refresh', '--json'],
            cwd,
          )
        ).stdout,
      ) as ProbeJson;
      expect(refreshed.source).toBe('probe');
      expect(refreshed.trials.length).toBeGreaterThan(0);

      const ls = JSON.parse((await soup(['cache', 'ls', '--json'], cwd)).stdout) as {
        entries: { batch_size: number; provenance: Record<string, unknown> }[];
      };
      expect(ls.entries).toEqual([
        {
          key: r1.cache_key,
          batch_size: refreshed.batch_size,
          provenance: expect.objectContaining({
            base: expect.stringMatching(/^exec:.* files:(.*,)?alloc\.mjs@[0-9a-f]{12}$/),
            max_length: 512,
            gpu: 'cpu',
            budget_bytes: 200 * 2 ** 20,
            ceiling: 64,
            bound: 'exact',
            measurement: 'sampled-rss',
            saved_at: expect.any(String),
          }),
        },
      ]);
      const human = await soup(['cache', 'ls'], cwd);
      expect(human.stdout).toMatch(/200 MiB\s+64\s+exact\s+sampled-rss/);
      // An --exec trainer never got a length from soup: no "512" in the MAX LEN column.
      expect(human.stdout).not.toMatch(/\b512\b/);
    },
  );

  it('an exceptions-only answer (no --budget) is returned but not cached unless asked', async () => {
    const cwd = useTempDir();
    writeFileSync(
      join(cwd, 'ok.mjs'),
      `process.exit(Number(process.argv[2]) <= 5 ? 0 : (console.error('RuntimeError: CUDA out of memory. Tried to ` +
        `allocate 2.00 GiB'), 1));\n`,
    );
    const cmd = `${process.execPath} ok.mjs {batch_size}`;
    const r = await soup(['probe', '--exec', cmd, '--start', '4', '--ceiling', '16', '--json'], cwd);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ batch_size: 5, source: 'probe', saved: false });
    expect(r.stderr).toMatch(/--cache-exceptions-only/);
    const asked = await soup(
      ['probe', '--exec', cmd, '--start', '4', '--ceiling', '16', '--cache-exceptions-only', '--json'],
      cwd,
    );
    expect(JSON.parse(asked.stdout)).toMatchObject({
      batch_size: 5,
      saved: true,
      provenance: { measurement: 'exceptions-only' },
    });
  });
});

describe('[slow] soup probe --exec --device cuda (fake nvidia-smi on PATH)', { timeout: 300_000 }, () => {
  it(
    'CUDA_VISIBLE_DEVICES=1: the GPU actually used names the cache key, and the trainer is judged by ' +
      'its GPU memory',
    async () => {
      const cwd = useTempDir();
      const uuid = 'GPU-bbbb0000-1111-2222-3333-444455556666';
      const idle = {
        gpus: [
          '0, GPU-aaaa0000-1111-2222-3333-444455556666, NVIDIA A10G, 23028, 23000',
          `1, ${uuid}, NVIDIA H100 80GB HBM3, 81559, 2000`,
        ],
        apps: [] as string[],
      };
      const state = join(cwd, 'smi-state.json');
      writeFileSync(state, JSON.stringify(idle));
      // The fake nvidia-smi answers the two queries soup makes from the state file.
      writeFileSync(
        join(cwd, 'nvidia-smi'),
        `#!${process.execPath}\nconst s = JSON.parse(require('fs').readFileSync(${JSON.stringify(state)}` +
          `, 'utf8'));\nconst a = process.argv.slice(2).join(' ` +
          `');\nprocess.stdout.write(((a.includes('--query-gpu=') ? s.gpus : s.apps) || []).join('\\n') + '\\n');\n`,
        { mode: 0o755 },
      );
      // A trainer holding batch_size × 100 MiB of GPU 1 (listed per process) for a moment.
      writeFileSync(
        join(cwd, 'trainer.cjs'),
        `const fs = require('fs'); const b = Number(process.argv[2]); const idle = ${JSON.stringify(idle)};
const put = (s) => { fs.writeFileSync(${JSON.stringify(state)} + '.tmp', JSON.stringify(s)); fs.renameSync(${JSON.stringify(state)} + '.tmp', ${JSON.stringify(state)}); };
put({ gpus: [idle.gpus[0], '1, ${uuid}, NVIDIA H100 80GB HBM3, 81559, ' + Math.max(0, 2000 - b * 100)], apps: [process.pid + ', ${uuid}, ' + b * 100] });
setTimeout(() => { put(idle); process.exit(0); }, 900);\n`,
      );
      const r = await runNode(
        [
          bin,
          'probe',
          '--exec',
          `${process.execPath} trainer.cjs {batch_size}`,
          '--device',
          'cuda',
          '--start',
          '8',
          '--ceiling',
          '64',
          '--json',
        ],
        {
          cwd,
          timeoutMs: 180_000,
          env: {
            PATH: `${cwd}:${process.env.PATH}`,
            HOME: cwd,
            NO_COLOR: '1',
            SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
            CUDA_VISIBLE_DEVICES: '1',
          },
        },
      );
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as ProbeJson & { device: { name: string; memory_gb: number } };
      expect(out.device).toEqual({ name: 'NVIDIA H100 80GB HBM3', memory_gb: 79 });
      expect(out.batch_size).toBe(19);
      expect(out.provenance).toMatchObject({
        measurement: 'cuda-per-process',
        bound: 'exact',
        gpuName: 'NVIDIA H100 80GB HBM3',
      });
      expect(out.trials.every((t) => t.measurement === 'cuda-per-process')).toBe(true);
    },
  );
});
