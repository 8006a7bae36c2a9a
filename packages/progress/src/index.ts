export { createProgress, type Progress, type ProgressOptions, type ProgressStream } from './create-progress';
export { fitFields } from './fit-fields';
export { formatDuration } from './format-duration';
export { withProgress } from './with-progress';
