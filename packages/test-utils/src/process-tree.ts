// A test's view of a process tree, read from Linux /proc. The parent comes from /proc/<pid>/status (`PPid:`), not
// from /proc/<pid>/stat: the packages under test parse stat (@soup/hub-ckpt's readProcStat), and this helper, which
// @soup/hub-ckpt's own tests import, must neither import it nor repeat it.
import { readdirSync, readFileSync } from 'node:fs';

/** `pid` first, then every process below it (children before grandchildren), from /proc; gone ones left out. */
export function processTree(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const ppid = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${name}/status`, 'utf8'))?.[1];
      if (ppid !== undefined) parentOf.set(Number(name), Number(ppid));
    } catch {
      // exited meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++)
    for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  return tree;
}
