// Where a soup.yaml field is: the line of every key, and the position of one field for a message.
import { isMap, isPair, isScalar, type Document, type LineCounter, type Node } from 'yaml';

export function fieldLines(doc: Document, lc: LineCounter): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (node: unknown, prefix: string): void => {
    if (!isMap(node)) return;
    for (const pair of node.items) {
      if (!isPair(pair) || !isScalar(pair.key)) continue;
      const path = prefix ? `${prefix}.${String(pair.key.value)}` : String(pair.key.value);
      const range = (pair.key as Node).range;
      if (range) out[path] = lc.linePos(range[0]).line;
      walk(pair.value, path);
    }
  };
  walk(doc.contents, '');
  return out;
}

/** Position of a field: its key when `onKey`, else its value; falls back to the nearest ancestor. */
export function locate(
  doc: Document,
  lc: LineCounter,
  segments: readonly string[],
  onKey: boolean,
): { line?: number; col?: number } {
  for (let n = segments.length; n >= 0; n--) {
    const parentSegs = segments.slice(0, Math.max(0, n - 1));
    const last = segments[n - 1];
    if (last === undefined) {
      const range = (doc.contents as Node | null)?.range;
      return range ? lc.linePos(range[0]) : { line: 1 };
    }
    const parent = parentSegs.length === 0 ? doc.contents : doc.getIn(parentSegs, true);
    if (!isMap(parent)) continue;
    const pair = parent.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === last);
    if (!pair) continue;
    const node = (onKey && n === segments.length ? pair.key : (pair.value ?? pair.key)) as Node | null;
    const range = node?.range ?? (pair.key as Node | null)?.range;
    if (range) return lc.linePos(range[0]);
  }
  return {};
}
