import { probeBatchSize, type ProbeFn, type ProbeOutcome } from '@soup/batch-probe';

const probe: ProbeFn = async (batchSize: number): Promise<ProbeOutcome> => ({
  fits: batchSize <= 10,
  peakBytes: batchSize,
});
const result = await probeBatchSize(probe, { start: 4, ceiling: 64, multipleOf: 2 });
const size: number = result.batchSize;
// @ts-expect-error start must be a number
await probeBatchSize(probe, { start: '4' });
export { size };
