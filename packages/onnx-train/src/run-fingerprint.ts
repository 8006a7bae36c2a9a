import { createHash } from 'node:crypto';

/** Canonical JSON: object keys sorted at every level, so equal configs hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A run's identity: the first 16 hex chars of sha256 over the canonical JSON of everything that
 * decides its trajectory (spec, dtype, seed, batch, schedule, optimizer, data hash). Two
 * sessions continue the same run only if their fingerprints match.
 */
export function runFingerprint(config: Readonly<Record<string, unknown>>): string {
  return createHash('sha256')
    .update(canonicalJson({ v: 1, ...config }))
    .digest('hex')
    .slice(0, 16);
}
