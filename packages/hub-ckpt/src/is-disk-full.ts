// The test for a full disk, whatever layer reported it (Node's errno, or this package's DiskFullError).
import { DiskFullError } from './errors';

/** Whether an error, or one of its causes, is a full disk (ENOSPC) or an exceeded quota (EDQUOT). */
export function isDiskFull(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 8;
    e = e.cause as typeof e, i++
  ) {
    if (e.code === 'ENOSPC' || e.code === 'EDQUOT') return true;
    if (e instanceof DiskFullError) return true;
  }
  return false;
}
