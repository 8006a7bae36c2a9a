import { parsePercent } from './_batch-config';

/**
 * Parses a headroom (what a micro-batch's measured peak must leave free of the budget): a percentage (`10%`) or a
 * fraction (`0.1`, `.1`, `0`) below 100 %. Returns the fraction in [0, 1), or undefined when the text is neither.
 */
export function parseHeadroom(text: string): number | undefined {
  const t = text.trim();
  const f = parsePercent(t) ?? (/^0?\.[0-9]+$|^0$/.test(t) ? Number(t) : Number.NaN);
  return f >= 0 && f < 1 ? f : undefined;
}
