// Test-only helpers for several nodes on localhost: one `soup run` per node, each in its own uts namespace.
import { spawnUntil } from '@soup/test-utils';
import { SOUP_BIN } from './run-helpers';

/** `soup run` as node `rank` on host `node-<rank>` (its own uts namespace), resolved once stdout matches `marker`. */
export function startSoupNode(p: {
  cwd: string;
  rank: number;
  options: string[];
  argv: string[];
  env: NodeJS.ProcessEnv;
  marker: RegExp;
  timeoutMs?: number;
}) {
  const script = `hostname node-${p.rank} && exec "$0" "$@"`;
  const soup = [process.execPath, SOUP_BIN, 'run', ...p.options, '--', ...p.argv];
  return spawnUntil('unshare', ['--uts', 'sh', '-c', script, ...soup], p.marker, {
    cwd: p.cwd,
    env: p.env,
    timeoutMs: p.timeoutMs ?? 60_000,
  });
}
