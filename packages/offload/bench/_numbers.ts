// The bench's modes and the number helpers its tables use.
export const MODES = ['fused', 'segmented-keep', 'segmented-disk'] as const;
export type Mode = (typeof MODES)[number];
export const MiB = 2 ** 20;
export const round = (x: number, d = 0): number => Math.round(x * 10 ** d) / 10 ** d;
export const median = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
