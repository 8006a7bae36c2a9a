import { formatGb0, knownGb, tierArgs, tierIsOff } from './_args';
import { AUTO_FULL_THRESHOLD_GB, AUTO_SELECTIVE_THRESHOLD_GB } from './thresholds';
import type { TierLike, TierParams } from './types';

/**
 * A short human description of a tier, with the Python original's exact strings:
 * `"off"`, `"full (every block)"`, `"medium (every other block)"`, `"selective (attention only)"`,
 * `"auto → full (unknown VRAM)"`, `"auto → medium (VRAM 40GB)"` (GB rounded half-to-even like
 * Python's `:.0f`), and any other string returned as is. New: `'budget'` reads
 * `"budget (peak ≤ 1.50 GiB)"` when `memoryBudgetBytes` is given.
 *
 * Accepts `({tier, gpuMemoryGb, memoryBudgetBytes})` or `(tier, gpuMemoryGb)`.
 */
export function describeTier(params: TierParams): string;
export function describeTier(tier: TierLike, gpuMemoryGb?: number | null): string;
export function describeTier(first: TierParams | TierLike, gpuMemoryGb?: number | null): string {
  const params = tierArgs(first, gpuMemoryGb);
  const { tier } = params;
  if (tierIsOff(tier)) return 'off';
  if (tier === true || tier === 'full') return 'full (every block)';
  if (tier === 'medium') return 'medium (every other block)';
  if (tier === 'selective') return 'selective (attention only)';
  if (tier === 'auto') {
    const gb = knownGb(params.gpuMemoryGb);
    if (gb === null) return 'auto → full (unknown VRAM)';
    const shown = formatGb0(gb);
    if (gb < AUTO_FULL_THRESHOLD_GB) return `auto → full (VRAM ${shown}GB)`;
    if (gb <= AUTO_SELECTIVE_THRESHOLD_GB) return `auto → medium (VRAM ${shown}GB)`;
    return `auto → selective (VRAM ${shown}GB)`;
  }
  if (tier === 'budget' && typeof params.memoryBudgetBytes === 'number' && params.memoryBudgetBytes > 0) {
    return `budget (peak ≤ ${formatBytes(params.memoryBudgetBytes)})`;
  }
  return String(tier);
}

function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(2)} ${units[unit]}`;
}
