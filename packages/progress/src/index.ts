/** Draws work in progress: a redrawn bar on a TTY, a few progress lines in a pipe or a file. */
export { createProgress } from './create-progress';
/** Runs an async function under a progress bar: done with a summary once it resolves, failed when it throws. */
export { withProgress } from './with-progress';
/** Fits fields into a width by dropping whole fields from the end, never cutting a value. */
export { fitFields } from './fit-fields';
/** A duration as `12.3s`, `4m05s` or `1h02m`. */
export { formatDuration } from './format-duration';
export type { Progress, ProgressOptions, ProgressStream } from './types';
