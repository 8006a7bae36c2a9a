import { microBatchText } from './_tell';

/**
 * `micro 4 × 4 = 16 (was 16 × 1 last session)`, or without the part in brackets for a first session or the same m
 * and accumulation.
 */
export function describeMicroBatch(
  now: { microBatchSize: number; accumulation: number; worldSize?: number },
  last: { micro_batch_size: number; grad_accum: number } | null | undefined,
): string {
  const text = `micro ${microBatchText(now.microBatchSize, now.accumulation, now.worldSize)}`;
  if (
    last === undefined ||
    last === null ||
    (last.micro_batch_size === now.microBatchSize && last.grad_accum === now.accumulation)
  )
    return text;
  return `${text} (was ${last.micro_batch_size} × ${last.grad_accum} last session)`;
}
