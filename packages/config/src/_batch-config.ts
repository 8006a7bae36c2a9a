// soup.yaml's batch fields: the old `batch_size: auto` (refused, showing the new form) and
// `memory_headroom` percentages.
import { isMap, isPair, isScalar, type Document, type LineCounter, type Node } from 'yaml';
import type { ConfigIssue } from './errors';

/** The new form, shown wherever the old one is refused. */
export const NEW_BATCH_FORM =
  'batch_size: 32          # G, the global batch (sequences per optimizer step), an integer\n  micro_batch_size: ' +
  'auto  # m, the largest divisor of G that fits this device';

/**
 * `batch_size: auto` (before the global batch): an error naming the new form. The field is then
 * dropped from `data` so the schema does not report it a second time.
 */
export function oldBatchAuto(data: Record<string, unknown>, doc: Document, lc: LineCounter): ConfigIssue | null {
  const t = data.training;
  if (!t || typeof t !== 'object' || (t as Record<string, unknown>).batch_size !== 'auto') return null;
  delete (t as Record<string, unknown>).batch_size;
  const training = isMap(doc.contents)
    ? doc.contents.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === 'training')
    : undefined;
  const pair =
    training && isPair(training) && isMap(training.value)
      ? training.value.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === 'batch_size')
      : undefined;
  const range = pair && isPair(pair) ? ((pair.value as Node | null)?.range ?? (pair.key as Node).range) : undefined;
  return {
    path: 'training.batch_size',
    ...(range ? lc.linePos(range[0]) : {}),
    message:
      'auto is no longer a batch size: batch_size is now the global batch G, an integer fixed for the run, and ' +
      'the probe sizes the micro-batch. ' +
      `Write, under training:\n  ${NEW_BATCH_FORM}`,
  };
}

/** `10%` → 0.1; undefined when it is not a percentage. */
export function parsePercent(text: string): number | undefined {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$/.exec(text);
  return m ? Number(m[1]) / 100 : undefined;
}
