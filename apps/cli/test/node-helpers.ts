// Test-only helpers for several nodes on localhost: one `soup run` per node, each in its own uts namespace.
import { spawnUntil } from '@soup/test-utils';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SOUP_BIN } from './run-helpers';

export const NOBODY = 65534;

/** `soup run` as node `rank` on host `node-<rank>` (its own uts namespace), resolved once stdout matches `marker`. */
export function startSoupNode(p: {
  cwd: string;
  rank: number;
  options: string[];
  argv: string[];
  env: NodeJS.ProcessEnv;
  marker: RegExp;
  timeoutMs?: number;
  /** Runs as nobody (uid 65534), so the owner of each file says which node wrote it (every node: umask 0). */
  asNobody?: boolean;
}) {
  const drop = p.asNobody ? `setpriv --reuid ${NOBODY} --regid ${NOBODY} --clear-groups ` : '';
  const script = `hostname node-${p.rank} && umask 0 && exec ${drop}"$0" "$@"`;
  const soup = [process.execPath, SOUP_BIN, 'run', ...p.options, '--', ...p.argv];
  return spawnUntil('unshare', ['--uts', 'sh', '-c', script, ...soup], p.marker, {
    cwd: p.cwd,
    env: p.env,
    timeoutMs: p.timeoutMs ?? 60_000,
  });
}

/** Every file under `dir`, with its owner's uid. */
export function owners(dir: string): Array<{ path: string; uid: number }> {
  const out: Array<{ path: string; uid: number }> = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    if (e.isFile()) out.push({ path, uid: statSync(path).uid });
  }
  return out;
}
