// The options the supervisor's quick tests share: a session on a directory store in `cwd/store` that settles at once.
import { DirStore } from '@soup/hub-ckpt';
import { join } from 'node:path';
import type { SuperviseEvent, SuperviseOptions } from './supervise-options';

/** `argv` supervised with its checkpoints in `cwd/out`, no lease, every event pushed onto `events`. */
export function quickSession(cwd: string, argv: string[], events: SuperviseEvent[]): SuperviseOptions {
  return {
    argv,
    store: new DirStore({ root: join(cwd, 'store') }),
    outputDir: join(cwd, 'out'),
    cwd,
    env: process.env,
    signal: new AbortController().signal,
    settleMs: 0,
    pollMs: 50,
    pushNice: 0,
    leaseTtlMs: null,
    onEvent: (e) => events.push(e),
  };
}
