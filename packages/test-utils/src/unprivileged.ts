// Permission tests as root: root reads and writes anything, so a test of "unreadable" or "read-only"
// runs its code in a child under another uid. As root, `setpriv` drops to nobody (65534) with no
// supplementary groups; as another user the child simply runs as that user. Either way the memory-cgroup
// tests (root only) and these permission tests run on one CI machine.
import { spawnSync } from 'node:child_process';
import { chownSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runProcess, type ChildResult, type RunNodeOptions } from './child';

/** The uid / gid the child runs as when the test runs as root. */
export const UNPRIVILEGED_ID = 65534;

/** Why an unprivileged child cannot be started here, or null when it can. */
export function unprivilegedUnavailable(): string | null {
  if (process.getuid?.() !== 0) return null;
  const r = spawnSync('setpriv', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? null : 'running as root and `setpriv` (util-linux) is not installed to drop privileges';
}

/** Hands `path` (recursively) to the unprivileged uid when running as root, so its child can use it. */
export function giveToUnprivileged(path: string): void {
  if (process.getuid?.() !== 0) return;
  chownSync(path, UNPRIVILEGED_ID, UNPRIVILEGED_ID);
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) giveToUnprivileged(join(path, name));
}

/**
 * Runs `node -e <code>` (ES module: `--input-type=module`) as a non-root user: under root via
 * `setpriv --reuid=65534 --regid=65534 --clear-groups`, else as the current user. The child prints
 * what the test asserts on; its uid is checked by the caller through `process.getuid()` if needed.
 */
export function runNodeUnprivileged(code: string, opts: RunNodeOptions = {}): Promise<ChildResult> {
  const node = [process.execPath, '--input-type=module', '-e', code, ...(opts.args ?? [])];
  if (process.getuid?.() !== 0) return runProcess(node[0]!, node.slice(1), opts);
  return runProcess(
    'setpriv',
    [`--reuid=${UNPRIVILEGED_ID}`, `--regid=${UNPRIVILEGED_ID}`, '--clear-groups', '--', ...node],
    opts,
  );
}
