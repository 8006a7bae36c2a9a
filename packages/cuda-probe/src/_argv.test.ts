import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitCommand, substituteBatchSize } from './_argv';
import { ProbeOptionsError } from './errors';

describe('splitCommand', () => {
  it.each<[string, string[]]>([
    ['python train.py --bs {batch_size}', ['python', 'train.py', '--bs', '{batch_size}']],
    ['  a\t b  \n c ', ['a', 'b', 'c']],
    [`python train.py --lr '1e-4' "--name=my run"`, ['python', 'train.py', '--lr', '1e-4', '--name=my run']],
    [`echo 'it''s' "a \\"q\\" \\$HOME \\n"`, ['echo', 'its', 'a "q" $HOME \\n']],
    [`echo a\\ b c\\'d`, ['echo', 'a b', "c'd"]],
    [`x '' ""`, ['x', '', '']],
    [`cmd --opt="$HOME;rm -rf /" '|' '>' out`, ['cmd', '--opt=$HOME;rm -rf /', '|', '>', 'out']],
    [`pre'mid'"dle"post`, ['premiddlepost']],
  ])('%s', (command, argv) => {
    expect(splitCommand(command)).toEqual(argv);
  });

  it.each([`a 'b`, `a "b`, `a \\`, '', '   '])('refuses %j with an error naming the field', (command) => {
    expect(() => splitCommand(command)).toThrow(ProbeOptionsError);
    try {
      splitCommand(command, 'probe.command');
    } catch (err) {
      expect((err as ProbeOptionsError).field).toBe('probe.command');
      expect((err as Error).message).toMatch(/^probe\.command: /);
    }
  });

  it('round-trips any argv quoted with single quotes', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 0, maxLength: 12 }), { minLength: 1, maxLength: 6 }), (argv) => {
        const quoted = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
        expect(splitCommand(quoted)).toEqual(argv);
      }),
    );
  });
});

describe('substituteBatchSize', () => {
  it('replaces every occurrence, inside words too, and never adds words', () => {
    expect(substituteBatchSize(['run', '--bs={batch_size}', '{batch_size}', 'x{batch_size}y{batch_size}'], 16)).toEqual(
      ['run', '--bs=16', '16', 'x16y16'],
    );
  });
});
