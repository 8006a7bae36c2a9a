import type { TierLike, TierParams } from './types';

/** Accepts both `fn({tier, gpuMemoryGb})` and the positional `fn(tier, gpuMemoryGb)`. */
export function tierArgs(first: TierParams | TierLike, gpuMemoryGb: number | null | undefined): TierParams {
  if (typeof first === 'object' && first !== null) return first;
  return { tier: first, gpuMemoryGb };
}

/** Python truthiness of a tier: `if not tier` is true for false, None and ''. */
export function tierIsOff(tier: TierLike): boolean {
  return tier === false || tier === null || tier === undefined || tier === '';
}

/** `gpuMemoryGb` as the original reads it: null when unknown (we also read NaN as unknown). */
export function knownGb(gpuMemoryGb: number | null | undefined): number | null {
  if (gpuMemoryGb === null || gpuMemoryGb === undefined || Number.isNaN(gpuMemoryGb)) return null;
  return gpuMemoryGb;
}

/** Python's `repr()` of a simple value, for messages that quote the original. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    const body = value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
    return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
  }
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Python's `f"{x:.0f}"`: round half to even on the exact binary value, `-0` kept,
 * `inf` / `nan` spelled as Python does, no exponent for large values.
 */
export function formatGb0(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  const floor = Math.floor(x);
  const frac = x - floor; // exact for doubles
  let n = floor;
  if (frac > 0.5 || (frac === 0.5 && floor % 2 !== 0)) n = floor + 1;
  const negativeZero = n === 0 && (x < 0 || Object.is(x, -0));
  return negativeZero ? '-0' : BigInt(n).toString();
}
