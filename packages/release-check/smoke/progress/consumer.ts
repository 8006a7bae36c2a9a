import { createProgress, fitFields, formatDuration, type Progress, type ProgressStream } from '@soup/progress';

const stream: ProgressStream = { write: () => true, isTTY: false };
export const bar: Progress = createProgress({ label: 'train', total: 10, stream });
export const line: string = fitFields(['train', '1/10'], 40);
export const took: string = formatDuration(1500);
// @ts-expect-error label is required
createProgress({ stream });
