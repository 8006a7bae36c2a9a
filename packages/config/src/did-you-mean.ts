/** Options of {@link didYouMean}. */
export interface DidYouMeanOptions {
  /** What the user typed. */
  input: string;
  /** The allowed spellings. */
  candidates: readonly string[];
  /**
   * Largest edit distance still suggested.
   * @default max(2, floor(input.length / 3))
   */
  maxDistance?: number;
}

/**
 * The closest allowed spelling to `input` (optimal string alignment distance, case-insensitive,
 * `-` and `_` treated alike), or undefined when nothing is close enough.
 */
export function didYouMean(opts: DidYouMeanOptions): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/-/g, '_');
  const input = norm(opts.input);
  const max = opts.maxDistance ?? Math.max(2, Math.floor(input.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of opts.candidates) {
    const c = norm(candidate);
    const d = editDistance(input, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return bestDistance <= max ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i]!;
      const prev = d[i - 1]!;
      let v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      row[j] = v;
    }
  }
  return d[a.length]![b.length]!;
}
