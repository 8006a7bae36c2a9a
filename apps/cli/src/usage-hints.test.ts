// What a newcomer meets first, through the real bin: flags that word a refusal the same in every command, a
// --repo refusal that says what was meant, and `soup ckpt list` on a real directory store.
import { saveCacheEntry } from '@soup/batch-probe';
import { runNode, useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));

function soup(args: string[], cwd: string) {
  const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') };
  return runNode([bin, ...args], { cwd, env, timeoutMs: 20_000 });
}

describe('soup: usage hints', () => {
  it('--time-limit: train and run refuse 0 in the same words, and both document 1d', async () => {
    const cwd = useTempDir();
    const [train, run, trainHelp, runHelp] = await Promise.all([
      soup(['train', '--time-limit', '0'], cwd),
      soup(['run', '--time-limit', '0', '--', 'true'], cwd),
      soup(['train', '--help'], cwd),
      soup(['run', '--help'], cwd),
    ]);
    const reason = 'a duration must be longer than zero, got "0" (leave the flag out for none)';
    for (const [r, cmd] of [
      [train, 'train'],
      [run, 'run'],
    ] as const) {
      expect(r.code, cmd).toBe(EXIT_CODES.usage);
      expect(r.stderr).toBe(
        `soup: option '--time-limit <duration>' argument '0' is invalid. ${reason} (see: soup ${cmd} --help)\n`,
      );
    }
    expect(trainHelp.stdout.replace(/\s+/g, ' ')).toMatch(/--time-limit <duration> [^-]*\b1d\b/);
    expect(runHelp.stdout).toMatch(/^Durations: .*\b1d\b/m);
  });

  it('run --batch-size: a positive integer or auto, anything else refused before the store is opened', async () => {
    const cwd = useTempDir();
    const refused = await Promise.all(
      ['0', '-3', '2.5', 'many'].map((v) => soup(['run', '--batch-size', v, '--', 'true'], cwd)),
    );
    for (const [i, v] of ['0', '-3', '2.5', 'many'].entries()) {
      expect(refused[i]!.code, v).toBe(EXIT_CODES.usage);
      expect(refused[i]!.stderr).toBe(
        `soup: option '--batch-size <n|auto>' argument '${v}' is invalid. expected a positive integer or auto, got ` +
          `"${v}" (see: soup run --help)\n`,
      );
    }
  });

  it('--repo: a path or a Hub page URL is refused with what was meant', async () => {
    const cwd = useTempDir();
    const cases: [string, string][] = [
      ['./ckstore', 'file://./ckstore'],
      ['https://huggingface.co/me/x', 'me/x'],
    ];
    const runs = await Promise.all(cases.map(([repo]) => soup(['ckpt', 'status', '--repo', repo], cwd)));
    for (const [i, r] of runs.entries()) {
      expect(r.code).toBe(EXIT_CODES.usage);
      expect(r.stderr).toContain(`did you mean \`--repo ${cases[i]![1]}\`?`);
    }
  });

  it('ckpt list: its own help, a did-you-mean for a near miss, and a store that does not exist said so', async () => {
    const cwd = useTempDir();
    const [help, near, pull, list] = await Promise.all([
      soup(['ckpt', 'list', '--help'], cwd),
      soup(['ckpt', 'lis'], cwd),
      soup(['ckpt', 'pull', '--repo', 'file://nostore', '--dest', 'd'], cwd),
      soup(['ckpt', 'list', '--repo', 'file://nostore'], cwd),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: soup ckpt list \[options\]/);
    expect(near.code).toBe(EXIT_CODES.usage);
    expect(near.stderr).toBe("soup: unknown command 'lis' (did you mean list?) (see: soup ckpt --help)\n");
    expect(pull.code).toBe(EXIT_CODES.usage);
    expect(pull.stderr).toBe(
      `soup: dir ${join(cwd, 'nostore')} does not exist: nothing was ever pushed there (is the repo name right?)\n`,
    );
    expect(list.code).toBe(0);
    expect(list.stdout).toBe(`soup: dir ${join(cwd, 'nostore')}: does not exist (a first push creates it)\n`);
  });

  it('ckpt list after a push: step, files, bytes and when, counted as push and status count them', async () => {
    const cwd = useTempDir();
    const ck = join(cwd, 'out', 'checkpoint-3');
    mkdirSync(ck, { recursive: true });
    writeFileSync(join(ck, 'trainer_state.json'), '{"global_step":3,"max_steps":10}');
    writeFileSync(join(ck, 'w.bin'), 'abcdefgh');
    const push = await soup(['ckpt', 'push', 'out/checkpoint-3', '--repo', 'file://st', '--run', 'r'], cwd);
    expect(push.code, push.stderr).toBe(0);
    expect(push.stdout).toContain('pushed ckpt/checkpoint-3 to dir ');
    expect(push.stdout).toContain(': 2 files, 40 B, verified');
    const [list, json, status] = await Promise.all([
      soup(['ckpt', 'list', '--repo', 'file://st'], cwd),
      soup(['ckpt', 'list', '--repo', 'file://st', '--json'], cwd),
      soup(['ckpt', 'status', '--repo', 'file://st'], cwd),
    ]);
    const record = JSON.parse(json.stdout) as { checkpoints: { pushed_at: string }[] };
    const at = record.checkpoints[0]?.pushed_at ?? '';
    expect(Math.abs(Date.parse(at) - Date.now())).toBeLessThan(60_000);
    expect(record).toEqual({
      store: `dir ${join(cwd, 'st')}`,
      exists: true,
      checkpoints: [{ step: 3, path_in_repo: 'ckpt/checkpoint-3', files: 2, bytes: 40, pushed_at: at }],
    });
    expect(list.stdout.split('\n').slice(1, 3)).toEqual([
      'soup:   STEP  FOLDER             FILES  SIZE  PUSHED',
      `soup:   3     ckpt/checkpoint-3  2      40 B  ${at}`,
    ]);
    expect(status.stdout).toMatch(/^soup: {3}3 +ckpt\/checkpoint-3 +2 +40 B +yes$/m);
  });

  it('cache ls shows a long BASE cut to 40 characters; --json keeps it whole', async () => {
    const cwd = useTempDir();
    const base = `exec:python train.py ${'--flag value '.repeat(15)}`.trim();
    const provenance = { base, maxLength: 64, gpuName: 'cpu', budgetBytes: null, ceiling: 32 };
    const more = { bound: 'exact' as const, measurement: 'sampled-rss', savedAt: '2000-01-01T00:00:00Z' };
    const env = { SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') };
    const where = { env, homeDir: cwd, cwd };
    await saveCacheEntry({ ...where, key: 'a'.repeat(32), batchSize: 8, provenance: { ...provenance, ...more } });
    const [ls, json] = await Promise.all([soup(['cache', 'ls'], cwd), soup(['cache', 'ls', '--json'], cwd)]);
    const row = ls.stdout.split('\n').find((l) => l.startsWith(`soup: ${'a'.repeat(32)}`));
    expect(row).toContain(`${base.slice(0, 39)}… `);
    expect(row).not.toContain(base.slice(0, 40));
    expect(JSON.parse(json.stdout).entries[0].provenance.base).toBe(base);
  });

  it("init's next-step hint is shell-quoted, so it runs as printed", async () => {
    const cwd = useTempDir();
    const init = await soup(['init', '-c', "my conf's é.yaml"], cwd);
    expect(init.code, init.stderr).toBe(0);
    const q = "'my conf'\\''s é.yaml'";
    expect(init.stdout).toContain(`next: soup plan -c ${q}   then: soup train -c ${q}\n`);
  });

  it('run --batch-size auto says "capped" when the answer is the ceiling of the search, as train does', async () => {
    const cwd = useTempDir();
    // A probe that always fits: 8, 16, 32 (the default ceiling, 4 × start) all pass, so 32 is capped, not a limit.
    const probe = `${JSON.stringify(process.execPath)} -e "process.exit(0)" {batch_size}`;
    const trainer = [process.execPath, '-e', 'process.exit(0)', '{batch_size}'];
    const r = await soup(
      ['run', '--batch-size', 'auto', '--probe', probe, '--repo', 'file://st', '--', ...trainer],
      cwd,
    );
    // The probe's line comes before the launch; how this bare trainer's session ends is not what is tested here.
    expect(r.stdout).toMatch(
      /^soup: batch size 32 fits \(probed on .*, 3 trials, .*; capped: 32 is the ceiling of the search/m,
    );
  });
});
