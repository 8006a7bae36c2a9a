// Splits a command line into argv the way a POSIX shell tokenises words, and nothing more:
// no variables, no globs, no pipes, no redirections. The result is spawned without a shell.
import { ProbeOptionsError } from './errors';

const DOUBLE_QUOTE_ESCAPABLE = new Set(['\\', '"', '$', '`', '\n']);

/**
 * `python train.py --lr '1e-4' "--name=my run"` → `['python', 'train.py', '--lr', '1e-4', '--name=my run']`.
 * Single quotes keep everything literal; inside double quotes a backslash escapes `\ " $ \``;
 * outside quotes a backslash escapes the next character. An unclosed quote is an error.
 */
export function splitCommand(command: string, field = 'command'): string[] {
  const argv: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  const fail = (why: string): never => {
    throw new ProbeOptionsError(
      `${field}: ${why} in ${JSON.stringify(command)}; quote the argument or pass an argv array`,
      { field },
    );
  };
  while (i < command.length) {
    const c = command[i]!;
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end === -1) fail('unclosed single quote');
      word += command.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      inWord = true;
      i++;
      for (;;) {
        if (i >= command.length) fail('unclosed double quote');
        const d = command[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < command.length && DOUBLE_QUOTE_ESCAPABLE.has(command[i + 1]!)) {
          if (command[i + 1] !== '\n') word += command[i + 1];
          i += 2;
          continue;
        }
        word += d;
        i++;
      }
    } else if (c === '\\') {
      if (i + 1 >= command.length) fail('trailing backslash');
      if (command[i + 1] !== '\n') {
        word += command[i + 1];
        inWord = true;
      }
      i += 2;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) argv.push(word);
      word = '';
      inWord = false;
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) argv.push(word);
  if (argv.length === 0) fail('empty command');
  return argv;
}

/** Replaces every `{batch_size}` in every argument (after splitting, so it can never add words). */
export function substituteBatchSize(argv: readonly string[], batchSize: number): string[] {
  return argv.map((a) => a.replaceAll('{batch_size}', String(batchSize)));
}

/** A probe's `command`: a command line split as a shell would, or an argv array taken as it is. */
export function argvOf(command: unknown): string[] {
  if (typeof command === 'string') return splitCommand(command);
  if (Array.isArray(command) && command.length > 0 && command.every((a) => typeof a === 'string'))
    return [...(command as string[])];
  throw new ProbeOptionsError('command must be a non-empty string or a non-empty array of strings (argv)', {
    field: 'command',
  });
}
