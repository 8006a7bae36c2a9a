import { createProgress, type Progress, type ProgressOptions, type ProgressStream, withProgress } from '@soup/progress';

const stream: ProgressStream = { write: () => true, isTTY: false };
const options: ProgressOptions = { label: 'push', total: 5, unit: 'phase', stream };
const bar: Progress = createProgress(options);
export const done: Promise<number> = withProgress(
  bar,
  async () => 1,
  (n) => `${n} done`,
);
// @ts-expect-error label is required
createProgress({ total: 5 });
