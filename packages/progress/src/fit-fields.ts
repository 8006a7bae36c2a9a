/** Visible length of a line with ANSI colour codes. */
function visibleLength(line: string): number {
  return [...line.replace(/\x1b\[[0-9;]*m/g, '')].length;
}

/** Cuts a line with ANSI codes to `width` visible characters (codes kept, colour reset at the cut). */
function cut(line: string, width: number): string {
  let visible = 0;
  let out = '';
  for (let i = 0; i < line.length; ) {
    const esc = /^\x1b\[[0-9;]*m/.exec(line.slice(i));
    if (esc) {
      out += esc[0];
      i += esc[0].length;
      continue;
    }
    if (visible >= width) return `${out}\x1b[0m`;
    const ch = String.fromCodePoint(line.codePointAt(i)!);
    out += ch;
    i += ch.length;
    visible += 1;
  }
  return out;
}

/**
 * Fits fields joined by two spaces into `width` visible characters by dropping whole fields from
 * the end, so no value is ever cut in the middle (`loss 2.3` never becomes `loss 2.`). Only a
 * first field wider than the terminal is cut, at a word boundary.
 */
export function fitFields(fields: readonly string[], width: number): string {
  const kept = fields.filter((f) => f.length > 0);
  while (kept.length > 1 && visibleLength(kept.join('  ')) > width) kept.pop();
  const line = kept.join('  ');
  if (visibleLength(line) <= width) return line;
  const hard = cut(line, width + 1);
  const plain = hard.replace(/\x1b\[[0-9;]*m/g, '');
  const space = plain.lastIndexOf(' ', width);
  return cut(line, space > 0 ? space : width).replace(/ +(\x1b\[0m)?$/, '$1');
}
