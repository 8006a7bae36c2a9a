import { positiveInt } from './_validate';
import type { CacheLockOptions } from './types';
import type { LockOptions } from './_lock';

export function lockOptionsOf(options: CacheLockOptions): LockOptions {
  return {
    timeoutMs: positiveInt('lockTimeoutMs', options.lockTimeoutMs ?? 15_000),
    staleMs: positiveInt('staleLockMs', options.staleLockMs ?? 10_000),
  };
}
