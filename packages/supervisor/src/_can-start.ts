// Whether the trainer's program can be started at all, checked before the store is touched: a command that cannot
// start (a typo in the interpreter's path) leaves no run record behind for the corrected command to trip over.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { SupervisorUsageError } from './errors';

function startable(path: string): 'ok' | 'ENOENT' | 'EACCES' {
  try {
    if (!statSync(path).isFile()) return 'EACCES';
    accessSync(path, constants.X_OK);
    return 'ok';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'ENOENT' : 'EACCES';
  }
}

/**
 * Refuses (SupervisorUsageError, field `argv`) a program that does not exist or is not executable: a path is
 * resolved against `cwd`, a bare name looked up on the trainer's `PATH` (not checked when it has none, or when the
 * name holds a placeholder). What spawn would say later, said before anything is written.
 */
export function assertCanStart(program: string, cwd: string, env: NodeJS.ProcessEnv): void {
  if (program === '' || program.includes('{')) return;
  let why: 'ok' | 'ENOENT' | 'EACCES';
  if (program.includes('/')) why = startable(resolve(cwd, program));
  else {
    const path = env.PATH;
    if (path === undefined || path === '') return;
    const found = path.split(delimiter).map((dir) => startable(join(resolve(cwd, dir || '.'), program)));
    why = found.includes('ok') ? 'ok' : found.includes('EACCES') ? 'EACCES' : 'ENOENT';
  }
  if (why === 'ok') return;
  const what = why === 'ENOENT' ? 'no such file' : 'not an executable file';
  const where = program.includes('/') ? '' : ' on PATH';
  throw new SupervisorUsageError(
    `cannot start the trainer ${JSON.stringify(program)}: ${why} (${what}${where}); nothing was written: correct ` +
      'the command and run again',
    { field: 'argv' },
  );
}
