export {
  createProgress,
  fitFields,
  formatDuration,
  withProgress,
  type Progress,
  type ProgressOptions,
  type ProgressStream,
} from './progress';
export { ProgressError, type ProgressErrorCode, InvalidProgressOptionError } from './errors';
