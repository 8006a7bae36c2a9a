import { knownGb, tierArgs, tierIsOff } from './_args';
import { TierError } from './errors';
import { AUTO_FULL_THRESHOLD_GB, AUTO_SELECTIVE_THRESHOLD_GB } from './thresholds';
import type { Granularity, TierLike, TierParams } from './types';

/**
 * The granularity a trainer should apply for a tier, as in the Python original:
 * off (`false`/`null`/`''`) → `null`; `true`/`'full'` → `'full'`; `'medium'`/`'selective'` as is;
 * `'auto'` → `'full'` below 24 GB or when the memory is unknown, `'medium'` from 24 to 80 GB
 * inclusive, `'selective'` above 80 GB; `'budget'` → `null` (its plan comes from {@link planForBudget}); anything
 * else throws a {@link TierError} naming the known tiers, so a typo never turns recompute off silently.
 *
 * Accepts `resolveGranularity({tier, gpuMemoryGb})` or `resolveGranularity(tier, gpuMemoryGb)`.
 */
export function resolveGranularity(params: TierParams): Granularity | null;
export function resolveGranularity(tier: TierLike, gpuMemoryGb?: number | null): Granularity | null;
export function resolveGranularity(first: TierParams | TierLike, gpuMemoryGb?: number | null): Granularity | null {
  const { tier, gpuMemoryGb: gb } = tierArgs(first, gpuMemoryGb);
  if (tierIsOff(tier)) return null;
  if (tier === true || tier === 'full') return 'full';
  if (tier === 'medium') return 'medium';
  if (tier === 'selective') return 'selective';
  if (tier === 'auto') {
    const known = knownGb(gb);
    if (known === null) return 'full';
    if (known < AUTO_FULL_THRESHOLD_GB) return 'full';
    if (known <= AUTO_SELECTIVE_THRESHOLD_GB) return 'medium';
    return 'selective';
  }
  if (tier === 'budget') return null;
  throw new TierError(tier);
}
