import { createProgress, type Progress, type ProgressOptions, type ProgressStream } from '@soup/progress';

const stream: ProgressStream = { write: () => true, isTTY: false };
const options: ProgressOptions = { label: 'push', total: 4, unit: 'phase', stream };
export const bar: Progress = createProgress(options);
bar.update(1, 'verify');
// @ts-expect-error label is required
createProgress({ stream });
