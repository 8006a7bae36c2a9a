// One CLI vocabulary: the same concept has one flag name, one default and one help text in every
// command; old spellings still work, hidden from --help, each with a one-line deprecation notice.
import { useTempDir } from '@soup/test-utils';
import type { Command, Option } from 'commander';
import { readFileSync, writeFileSync } from 'node:fs';
import { assetPath } from './_assets';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram, main } from './index';

function sub(path: string[]): Command {
  let cmd: Command = buildProgram();
  for (const name of path) cmd = cmd.commands.find((c) => c.name() === name)!;
  return cmd;
}
const option = (cmd: Command, long: string): Option | undefined => cmd.options.find((o) => o.long === long);
const help = (path: string[]): string => sub(path).helpInformation();

describe('one CLI vocabulary', () => {
  it('each shared concept has one flag, and one description, in every command that has it', () => {
    const shared: [string, string[][]][] = [
      ['--repo', [['train'], ['run']]],
      ['--output-dir', [['train'], ['run']]],
      ['--resume', [['train'], ['run']]],
      ['--keep-remote', [['train'], ['run'], ['ckpt', 'push']]],
      ['--budget', [['probe'], ['plan'], ['train'], ['run']]],
      ['--no-cache', [['probe'], ['plan'], ['train'], ['run']]],
      ['--no-predict', [['probe'], ['plan'], ['train'], ['run']]],
      ['--config', [['init'], ['probe'], ['plan'], ['train']]],
    ];
    for (const [flag, commands] of shared) {
      const options = commands.map((c) => option(sub(c), flag));
      for (const [i, o] of options.entries()) expect(o, `${commands[i]!.join(' ')} ${flag}`).toBeDefined();
      // The help text may differ only in its "(default: …)" tail (train reads soup.yaml first).
      const texts = new Set(options.map((o) => o!.description.replace(/ \(default: [^)]*\)| \(required\)/g, '')));
      expect([...texts], flag).toHaveLength(1);
    }
    // The same resume modes everywhere.
    expect(help(['train'])).toMatch(/--resume <mode>\s+auto: .*never: .*force: /s);
    expect(option(sub(['train']), '--resume')!.defaultValue).toBe('auto');
    expect(option(sub(['run']), '--resume')!.defaultValue).toBe('auto');
    // keep-remote: one default (3), also for ckpt push (was: all).
    expect(option(sub(['ckpt', 'push']), '--keep-remote')!.defaultValue).toBe(3);
    expect(help(['train'])).toMatch(/--keep-remote <n>[\s\S]*hub\.keep_remote, else 3/);
    expect(help(['run'])).toMatch(/--keep-remote <n>[\s\S]*default: 3\)/);
  });

  it("train's and run's options are described without the other command's behaviour", () => {
    // They share --output-dir, --repo, --resume…: one text each, so it must hold for both.
    for (const [mine, other] of [
      ['train', 'run'],
      ['run', 'train'],
    ] as const) {
      const strays = sub([mine])
        .options.filter((o) => o.description.includes(`soup ${other}`))
        .map((o) => `${o.long}: ${o.description}`);
      expect(strays, `soup ${mine} --help`).toEqual([]);
    }
  });

  it('old spellings are hidden from --help', () => {
    expect(help(['train'])).not.toMatch(/--hub-repo|--output </);
    expect(help(['init'])).not.toMatch(/-o, --output/);
  });

  it(
    'old spellings still work, each with a one-line notice: train --hub-repo / --output / --resume ' +
      'fallback, init -o',
    async () => {
      const cwd = useTempDir('soup-vocab-');
      const out: string[] = [];
      const err: string[] = [];
      const io = {
        cwd,
        env: { HOME: cwd, NO_COLOR: '1' },
        stdout: { write: (s: string) => void out.push(s) },
        stderr: { write: (s: string) => void err.push(s) },
      };
      expect(await main(['node', 'soup', 'init', '-o', 'old.yaml'], io)).toBe(0);
      expect(err.join('')).toBe(
        'soup: warning: --output is deprecated and goes away in the next minor release: use -c/--config\n',
      );
      expect(out.join('')).toContain('old.yaml');
      // A config with a field train refuses: the command stops after its options are mapped, before any work.
      writeFileSync(join(cwd, 'bad.yaml'), 'base: x\n');
      err.length = 0;
      const code = await main(
        ['node', 'soup', 'train', '-c', 'bad.yaml', '--hub-repo', 'file://s', '--output', 'o', '--resume', 'fallback'],
        io,
      );
      expect(code).toBe(3);
      const notices = err
        .join('')
        .split('\n')
        .filter((l) => l.startsWith('soup: warning: '));
      expect(notices).toEqual([
        'soup: warning: --hub-repo is deprecated and goes away in the next minor release: use --repo',
        'soup: warning: --output is deprecated and goes away in the next minor release: use --output-dir',
        'soup: warning: --resume fallback is deprecated and goes away in the next minor release: --resume auto now ' +
          'walks back past a corrupt checkpoint',
      ]);
    },
  );

  it('the init templates name the real default store, <output>-ckpt', () => {
    for (const t of ['tiny', 'small']) {
      const text = readFileSync(assetPath(`templates/${t}.yaml`), 'utf8');
      expect(text, t).toContain('default file://<output>-ckpt');
      expect(text, t).not.toContain('<output>/hub');
    }
  });
});
