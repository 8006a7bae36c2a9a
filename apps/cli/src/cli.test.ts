// The real bin, spawned: help, init, cache, and the one-line errors with their exit codes.
import { runNode, useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));

function soup(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }) {
  const env = { PATH: process.env.PATH, HOME: opts.cwd, NO_COLOR: '1', ...opts.env };
  return runNode([bin, ...args], { cwd: opts.cwd, env, timeoutMs: 60_000 });
}

describe('[slow] soup (bin)', { timeout: 120_000 }, () => {
  it('prints help for the program and every command', async () => {
    const cwd = useTempDir();
    const top = await soup(['--help'], { cwd });
    expect(top.code).toBe(0);
    for (const cmd of ['init', 'probe', 'cache', 'plan', 'train', 'ckpt']) expect(top.stdout).toContain(`  ${cmd}`);
    expect(top.stdout).toContain('Exit codes:');
    const commands = [
      ['init'],
      ['probe'],
      ['cache', 'ls'],
      ['cache', 'path'],
      ['cache', 'clear'],
      ['plan'],
      ['train'],
      ['ckpt', 'push'],
      ['ckpt', 'final'],
      ['ckpt', 'status'],
      ['ckpt', 'pull'],
      ['ckpt', 'resume'],
    ];
    for (const args of commands) {
      const r = await soup([...args, '--help'], { cwd });
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toMatch(new RegExp(`^Usage: soup ${args.join(' ')}`));
      expect(r.stdout, args.join(' ')).toContain('--json');
      expect(r.stderr).toBe('');
    }
    const version = await soup(['--version'], { cwd });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('init writes a config that validates, and refuses to overwrite', async () => {
    const cwd = useTempDir();
    const r = await soup(['init', '--template', 'small', '--json'], { cwd });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: true,
      template: 'small',
      files: ['soup.yaml', join('data', 'train.txt'), join('data', 'val.txt')],
      kept: [],
    });
    expect(readFileSync(join(cwd, 'soup.yaml'), 'utf8')).toContain('base: soup/small-gpt');
    expect(readFileSync(join(cwd, 'data', 'train.txt'), 'utf8').length).toBeGreaterThan(50_000);
    const again = await soup(['init'], { cwd });
    expect(again.code).toBe(EXIT_CODES.usage);
    expect(again.stderr).toBe(
      'soup: soup.yaml already exists; pass --force to overwrite it, or -c <file> to write another config\n',
    );
    const forced = await soup(['init', '--force'], { cwd });
    expect(forced.code).toBe(0);
    expect(readFileSync(join(cwd, 'soup.yaml'), 'utf8')).toContain('base: soup/tiny-gpt');
  });

  it('cache ls / path / clear work on the file the Python CLI shares', async () => {
    const cwd = useTempDir();
    const cachePath = join(cwd, 'cache.json');
    writeFileSync(
      cachePath,
      JSON.stringify({ dcaa220005fb718e145b37b330901237: 12, ffffffffffffffffffffffffffffffff: 3, bad: 'x' }),
    );
    const env = { SOUP_BATCH_CACHE_PATH: cachePath };
    const path = await soup(['cache', 'path'], { cwd, env });
    expect(path.stdout.trim()).toBe(cachePath);
    const ls = await soup(['cache', 'ls', '--json'], { cwd, env });
    expect(JSON.parse(ls.stdout)).toEqual({
      path: cachePath,
      entries: [
        { key: 'dcaa220005fb718e145b37b330901237', batch_size: 12, provenance: null },
        { key: 'ffffffffffffffffffffffffffffffff', batch_size: 3, provenance: null },
      ],
    });
    const human = await soup(['cache', 'ls'], { cwd, env });
    expect(human.stdout).toMatch(
      /KEY\s+BATCH SIZE\s+BASE\s+MAX LEN\s+GPU\s+BUDGET\s+CEILING\s+BOUND\s+JUDGED BY\s+SAVED\nsoup: dcaa220005fb718e145b37b330901237\s+12\s+-/,
    );
    expect(human.stdout).toContain('2 without provenance');
    const one = await soup(['cache', 'clear', '--key', 'ffffffffffffffffffffffffffffffff'], { cwd, env });
    expect(one.stdout).toContain('removed ffffffffffffffffffffffffffffffff');
    expect(Object.keys(JSON.parse(readFileSync(cachePath, 'utf8')))).toEqual(['dcaa220005fb718e145b37b330901237']);
    const badKey = await soup(['cache', 'clear', '--key', 'nothex'], { cwd, env });
    expect(badKey.code).toBe(EXIT_CODES.usage);
    const all = await soup(['cache', 'clear', '--json'], { cwd, env });
    expect(JSON.parse(all.stdout)).toEqual({ path: cachePath, removed: 1 });
    expect(existsSync(cachePath)).toBe(false);
  });

  it('bad flags: one line, exit 2', async () => {
    const cwd = useTempDir();
    for (const [args, want] of [
      [['train', '--bogus'], "soup: unknown option '--bogus' (see: soup train --help)\n"],
      [
        ['train', '--push-every-steps', 'ten'],
        "soup: option '--push-every-steps <n>' argument 'ten' is invalid. expected an integer >= 1, got \"ten\" " +
          '(see: soup train --help)\n',
      ],
      [['trian'], "soup: unknown command 'trian' (did you mean train?) (see: soup --help)\n"],
      [
        ['ckpt', 'push', 'dir', '--step', '3', '--run', 'r'],
        "soup: required option '--repo <repo>' not specified (see: soup ckpt push --help)\n",
      ],
      [
        ['init', '--template', 'huge'],
        "soup: option '-t, --template <name>' argument 'huge' is invalid. allowed choices are tiny, small. (see: " +
          'soup init --help)\n',
      ],
    ] as [string[], string][]) {
      const r = await soup(args, { cwd });
      expect(r.code, args.join(' ')).toBe(EXIT_CODES.usage);
      expect(r.stderr, args.join(' ')).toBe(want);
    }
  });

  it('bad config: one line per problem with file:line, exit 3; --json adds an error object', async () => {
    const cwd = useTempDir();
    const missing = await soup(['plan'], { cwd });
    expect(missing.code).toBe(EXIT_CODES.config);
    expect(missing.stderr).toBe('soup: soup.yaml: no such file; run `soup init` to write one, or pass -c <path>\n');
    await soup(['init'], { cwd });
    const text = readFileSync(join(cwd, 'soup.yaml'), 'utf8').replace('  batch_size: 16', '  bacth_size: 16');
    writeFileSync(join(cwd, 'soup.yaml'), text);
    const line = text.split('\n').findIndex((l) => l.includes('bacth_size')) + 1;
    const r = await soup(['train', '--json'], { cwd });
    expect(r.code).toBe(EXIT_CODES.config);
    expect(r.stderr).toBe(
      `soup: soup.yaml:${line}:3: training.bacth_size: unknown field; did you mean "batch_size"?\n`,
    );
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      error: {
        code: 'SOUP_CONFIG_INVALID',
        message: `soup.yaml:${line}:3: training.bacth_size: unknown field; did you mean "batch_size"?`,
        exit_code: EXIT_CODES.config,
      },
    });
  });
});
