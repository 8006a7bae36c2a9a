const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration such as `8h45m`, `90m`, `1h30m15s`, `45s`, `250ms` or `1.5h` (units ms, s, m, h, d,
 * each at most once, largest first); a bare number means seconds. Returns whole milliseconds (at least 1),
 * or undefined when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const s = text.trim().toLowerCase();
  if (s === '') return undefined;
  if (/^[0-9]+(?:\.[0-9]+)?$/.test(s)) return positive(Number(s) * 1000);
  const re = /([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)/gy;
  const order = ['d', 'h', 'm', 's', 'ms'];
  let total = 0;
  let last = -1;
  let at = 0;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    const rank = order.indexOf(m[2]!);
    if (rank <= last) return undefined;
    last = rank;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    at = re.lastIndex;
  }
  return at === s.length ? positive(total) : undefined;
}

function positive(ms: number): number | undefined {
  const whole = Math.round(ms);
  return Number.isSafeInteger(whole) && whole >= 1 ? whole : undefined;
}

/**
 * Why `text` is not a duration, worded for the person who typed it, or undefined when it is one. Every command
 * that takes a duration words its refusal with this, so `soup train` and `soup run` say the same thing.
 */
export function durationProblem(text: string): string | undefined {
  if (parseDuration(text) !== undefined) return undefined;
  if (/^\s*0*(?:\.0*)?\s*(?:ms|s|m|h|d)?\s*$/i.test(text) && /0/.test(text))
    return `a duration must be longer than zero, got "${text}" (leave the flag out for none)`;
  return `expected a duration like 8h45m, 90m, 30s, 500ms or 1d (a bare number is seconds), got "${text}"`;
}
