const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kib: 1024,
  kb: 1000,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  mb: 1000 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  gb: 1000 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  tb: 1000 ** 4,
};

/**
 * Parses a memory size: `6GiB`, `512MiB`, `1.5GB`, `6G` (a bare letter is binary, as in ulimit/docker),
 * or a plain number of bytes. Returns undefined when the text is not a size; the result is a whole
 * number of bytes, at least 1.
 */
export function parseBytes(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isSafeInteger(text) && text > 0 ? text : undefined;
  const m = /^\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) && bytes >= 1 ? bytes : undefined;
}
