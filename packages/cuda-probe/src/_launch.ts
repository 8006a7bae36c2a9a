// How a probe child is started under an address-space limit (RLIMIT_AS), without ever passing
// a user's command through a shell parser.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import { ProbeOptionsError } from './errors';

export type LimitMethod = 'prlimit' | 'ulimit' | 'none';

export interface Launch {
  file: string;
  args: string[];
  /** How the address-space limit is applied. */
  limitMethod: LimitMethod;
  /** The limit, in bytes (null when none). */
  addressSpaceBytes: number | null;
}

/** Absolute path of an executable found on PATH (or the path itself when absolute), else null. */
export function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const candidates = isAbsolute(name)
    ? [name]
    : (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here
    }
  }
  return null;
}

// `$1` is the limit in KiB; the program and its arguments follow as positional parameters and are
// exec'd as they are: the shell parses only this fixed script, never the command.
const ULIMIT_SCRIPT = 'ulimit -v "$1" || exit 125; shift; exec "$@"';

export interface BuildLaunchOptions {
  file: string;
  args: readonly string[];
  /** RLIMIT_AS for the child; null or undefined for none. */
  addressSpaceBytes?: number | null;
  /** May the `sh -c 'ulimit -v …; exec "$@"'` fallback be used when prlimit is absent? */
  allowShell: boolean;
  /** `auto` prefers prlimit, then the shell fallback when allowed. */
  method?: 'auto' | 'prlimit' | 'ulimit';
  env?: NodeJS.ProcessEnv;
  /** Field named in the error when no method is available. */
  field?: string;
}

export function buildLaunch(opts: BuildLaunchOptions): Launch {
  const bytes = opts.addressSpaceBytes ?? null;
  if (bytes === null) return { file: opts.file, args: [...opts.args], limitMethod: 'none', addressSpaceBytes: null };
  const method = opts.method ?? 'auto';
  const env = opts.env ?? process.env;
  if (method !== 'ulimit') {
    const prlimit = findExecutable('prlimit', env);
    if (prlimit) {
      return {
        file: prlimit,
        args: [`--as=${bytes}`, '--', opts.file, ...opts.args],
        limitMethod: 'prlimit',
        addressSpaceBytes: bytes,
      };
    }
    if (method === 'prlimit' || !opts.allowShell) {
      throw new ProbeOptionsError(
        `${opts.field ?? 'addressSpaceBytes'}: an address-space limit needs the prlimit program (util-linux, e.g. ` +
          `apt-get install util-linux), ` +
          'and this probe never runs a command through a shell; install prlimit or drop the limit',
        { field: opts.field ?? 'addressSpaceBytes' },
      );
    }
  }
  const sh = findExecutable('/bin/sh', env);
  if (!sh) {
    throw new ProbeOptionsError('neither prlimit nor /bin/sh is available to apply an address-space limit', {
      field: opts.field ?? 'addressSpaceBytes',
    });
  }
  const kib = Math.ceil(bytes / 1024);
  return {
    file: sh,
    args: ['-c', ULIMIT_SCRIPT, 'soup-probe', String(kib), opts.file, ...opts.args],
    limitMethod: 'ulimit',
    addressSpaceBytes: kib * 1024,
  };
}

/**
 * Fails at creation, not at the first trial: a program named without a path must be on PATH, one with a path must
 * exist and be executable (a `{batch_size}` in it is checked per trial).
 */
export function checkCommandProgram(program: string, cwd: string | undefined, env: NodeJS.ProcessEnv): void {
  if (!program.includes('{batch_size}') && !program.includes('/') && findExecutable(program, env) === null) {
    throw new ProbeOptionsError(`command: ${program} is not on PATH`, { field: 'command' });
  }
  if (!program.includes('{batch_size}') && program.includes('/')) {
    // A path: it must exist and be executable now, not at the first trial.
    const full = isAbsolute(program) ? program : resolvePath(cwd ?? process.cwd(), program);
    let isFile = false;
    try {
      isFile = statSync(full).isFile();
    } catch {
      throw new ProbeOptionsError(
        `command: ${program} does not exist (looked for ${full}); check the path, or run it through its ` +
          `interpreter (python train.py …)`,
        { field: 'command' },
      );
    }
    if (!isFile) throw new ProbeOptionsError(`command: ${program} is not a file`, { field: 'command' });
    try {
      accessSync(full, constants.X_OK);
    } catch {
      throw new ProbeOptionsError(
        `command: ${program} is not executable; chmod +x ${program}, or run it through its interpreter (e.g. bash ` +
          `${program} or python ${program})`,
        { field: 'command' },
      );
    }
  }
}
